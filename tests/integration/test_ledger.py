"""The privacy ledger: budget refusal, composition, concurrent charges from two processes."""
import json
import subprocess
import sys
import textwrap

import pytest
from deltalake import DeltaTable

from privtext.ledger import BudgetExceeded, Ledger
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.tables import PRIVACY_LEDGER
from privtext.privacy.accounting import epsilon_of, gaussian_event
from privtext.privacy.budget import dp_charge, mldp_charge, secret_charge
from privtext.privacy.secret_protection import r_from_mu
from privtext.settings import ConfigError
from tests_support import make_budget_settings


def make_ledger(root):
    settings = make_budget_settings(root)
    lake = Lakehouse(None, settings.lakehouse)
    lake.create(PRIVACY_LEDGER)
    return Ledger(lake, settings)


SIGMA = 6.0  # one record holding the secret, sampled every round: each run is a Gaussian of mu = sqrt(2 T) / sigma


def sp_charge(run="r1", p=1e-3, rounds=2, dataset="reviews"):
    return secret_charge(dataset, "synthesize", run, "secpe_histogram", p=p, r=5 * p, sigma=SIGMA, rounds=rounds,
                         releases_per_round=2, count_pmfs=[[0.0, 1.0]])


def test_secret_protection_composes_per_secret_and_refuses_over_budget(tmp_path):
    ledger = make_ledger(tmp_path)  # r_over_p_max = 10
    p, mu1 = 1e-3, 2.0 / SIGMA  # sqrt(2 releases * 2 rounds) / sigma
    one = ledger.charge(sp_charge(), {"s1": 1}).secret_protection
    exact = r_from_mu(p, mu1)  # closed form, Lemma 3.3; the pessimistic PLD is an upper bound within its grid
    assert exact <= one.r <= exact * 1.01
    # another secret's run does not add to s1: per-unit composition
    ledger.charge(sp_charge("r2"), {"s2": 1})
    assert ledger.spent("reviews").secret_protection.r == pytest.approx(one.r, rel=1e-9)
    k = 1
    with pytest.raises(BudgetExceeded, match=r"r/p = .* > r_over_p_max = 10"):
        while True:  # runs on s1 compose as sqrt(k) mu1 (Gaussians), never as k * r
            ledger.charge(sp_charge(f"s1-{k}"), {"s1": 1})
            k += 1
    allowed = max(j for j in range(1, 50) if r_from_mu(p, mu1 * j**0.5) <= 10 * p * 0.999)
    assert k == allowed
    assert len(ledger.entries("reviews")) == k + 1  # the refused charge wrote nothing


def test_gaussian_events_compose_with_pld_against_eps_max(tmp_path):
    ledger = make_ledger(tmp_path)  # eps_max = 2 at delta 1e-5
    event = gaussian_event(sigma=8.0, count=4)
    charge = dp_charge("reviews", "train_dped", "r1", "gaussian", event=event, delta=1e-5, unit="record")
    one = ledger.charge(charge).approx_dp.epsilon
    assert one == pytest.approx(epsilon_of(event, 1e-5), rel=1e-9)
    two = ledger.charge(charge).approx_dp.epsilon
    assert one < two < 2 * one  # composition is sub-additive for Gaussians, and not free
    with pytest.raises(BudgetExceeded, match="eps_max = 2"):
        for _ in range(20):
            ledger.charge(charge)
    assert ledger.spent("reviews").approx_dp.epsilon <= 2.0


def mk_mldp(eps=2.0, run="r"):
    return mldp_charge("reviews", "sanitize", run, "clusant", epsilon=eps, pure_epsilon=40.0, metric="D_k", k=16)


def test_mldp_sums_per_value_over_occurrences_and_nights(tmp_path):
    ledger = make_ledger(tmp_path)  # mldp_eps_max = 20
    for night in range(3):  # value v on three nights, twice on the first; w once a night
        ledger.charge(mk_mldp(run=f"n{night}"), {"v": 2 if night == 0 else 1, "w": 1})
    spent = ledger.spent("reviews").mldp
    assert spent.epsilon == pytest.approx(2.0 * 4) and spent.values == 2
    ledger.charge(mk_mldp(run="n3"), {"v": 6})  # 8 + 12 = 20: at the limit
    with pytest.raises(BudgetExceeded, match="metric-LDP epsilon of one value = 22"):
        ledger.charge(mk_mldp(run="n4"), {"v": 1})
    with pytest.raises(BudgetExceeded):
        ledger.charge(mk_mldp(run="n4"), {"w": 8})  # w: 3 * 2 + 16 = 22 > 20
    ledger.charge(mk_mldp(run="n4"), {"w": 7})  # w: 6 + 14 = 20


def test_a_value_charged_on_30_dates_composes_to_30_times(tmp_path):
    settings = make_budget_settings(tmp_path, mldp_eps_max=1000.0)
    lake = Lakehouse(None, settings.lakehouse)
    lake.create(PRIVACY_LEDGER)
    ledger = Ledger(lake, settings)
    ledger.charge_many([(mk_mldp(run=f"d{d}"), {"v": 1}) for d in range(30)])
    ledger.charge(mk_mldp(run="rerun"), {"v": 1})  # a rerun of one date charges again
    assert ledger.spent("reviews").mldp.epsilon == pytest.approx(2.0 * 31)


def test_charge_many_is_all_or_nothing(tmp_path):
    ledger = make_ledger(tmp_path)
    with pytest.raises(BudgetExceeded):
        ledger.charge_many([(mk_mldp(run="a"), {"v": 1}), (mk_mldp(eps=30.0, run="a"), {"w": 1})])
    assert ledger.entries("reviews") == []


def test_the_ledger_is_compacted_and_keeps_every_entry(tmp_path):
    """Once the ledger holds ``lakehouse.compact_files`` files (one per commit) they are rewritten into one: a
    charge reads a few files, not one per past commit; entries, composed spend and refusals unchanged."""
    settings = make_budget_settings(tmp_path / "a")
    ledgers = {}
    for name, every in (("compacted", 4), ("plain", 32)):
        lake = Lakehouse(None, settings.lakehouse.model_copy(update={"root": str(tmp_path / name),
                                                                     "compact_files": every}))
        lake.create(PRIVACY_LEDGER)
        ledgers[name] = Ledger(lake, settings)
        for i in range(10):
            ledgers[name].charge(mk_mldp(eps=1.0, run=f"r{i}"), {f"v{i % 3}": 1})
    tables = {name: DeltaTable(led.lakehouse.table_uri(PRIVACY_LEDGER)) for name, led in ledgers.items()}
    assert tables["plain"].get_add_actions().num_rows == 10 and tables["compacted"].get_add_actions().num_rows < 4
    assert [h.get("privtext.operation") for h in tables["compacted"].history()].count("COMPACT") == 3  # 4th, 7th, 10th
    entries = {name: [(e["run_id"], e["spend"]) for e in led.entries("reviews")] for name, led in ledgers.items()}
    assert entries["compacted"] == entries["plain"] and len(entries["plain"]) == 10
    assert ledgers["compacted"].spent("reviews") == ledgers["plain"].spent("reviews")
    with pytest.raises(BudgetExceeded):  # v0 holds 4 x eps 1: 17 more passes mldp_eps_max 20
        ledgers["compacted"].charge(mk_mldp(eps=17.0, run="over"), {"v0": 1})


def test_guarantees_meet_on_one_secret(tmp_path):
    """A secret replaced by sanitize and released by SecPE composes both: its pure-LDP occurrences
    make the (p, r) check fail where SecPE alone would pass."""
    ledger = make_ledger(tmp_path)
    ledger.charge(sp_charge(), {"s1": 1})
    ledger.charge(mldp_charge("reviews", "sanitize", "z", "clusant", epsilon=1.0, pure_epsilon=0.05, metric="D_k",
                              k=1), {"s2": 1})
    assert ledger.spent("reviews").secret_protection.r_over_p < 10
    with pytest.raises(BudgetExceeded, match="secret protection"):
        ledger.charge(mldp_charge("reviews", "sanitize", "z2", "clusant", epsilon=1.0, pure_epsilon=3.0, metric="D_k",
                                  k=1), {"s1": 1})


def test_unknown_dataset_is_refused(tmp_path):
    ledger = make_ledger(tmp_path)
    with pytest.raises(ConfigError, match=r"privacy.budgets.yelp"):
        ledger.charge(sp_charge(dataset="yelp"), {"s1": 1})
    assert ledger.entries() == []


def test_deterministic_runs_are_recorded_as_such(tmp_path):
    settings = make_budget_settings(tmp_path, deterministic=True)
    lake = Lakehouse(None, settings.lakehouse)
    lake.create(PRIVACY_LEDGER)
    ledger = Ledger(lake, settings)
    ledger.charge(sp_charge(), {"s1": 1})
    assert ledger.entries()[0]["params"]["deterministic"] is True


CHARGER = textwrap.dedent("""
    import sys, json
    from privtext.ledger import BudgetExceeded, Ledger, LedgerBusy
    from privtext.platform.lakehouse import Lakehouse
    from privtext.privacy.budget import mldp_charge
    from tests_support import make_budget_settings
    settings = make_budget_settings(sys.argv[1])
    ledger = Ledger(Lakehouse(None, settings.lakehouse), settings)
    accepted = refused = busy = 0
    for i in range(8):
        while True:  # a busy ledger refuses with nothing charged: the stage runs again
            try:
                ledger.charge(mldp_charge("reviews", "sanitize", sys.argv[2] + str(i), "m", epsilon=2.0,
                                          pure_epsilon=1.0, metric="D_k", k=1), {"v": 1})
                accepted += 1
            except BudgetExceeded:
                refused += 1
            except LedgerBusy:
                busy += 1
                continue
            break
    print(json.dumps({"accepted": accepted, "refused": refused, "busy": busy}))
""")


def test_concurrent_charges_from_two_processes_never_exceed_the_budget(tmp_path):
    import os

    ledger = make_ledger(tmp_path)
    script = tmp_path / "charger.py"
    script.write_text(CHARGER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.path.dirname(__file__) + "/..",  # tests_support
                                                                   os.environ.get("PYTHONPATH")) if p)}
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path), name], stdout=subprocess.PIPE, text=True,
                              env=env)
             for name in ("a", "b")]
    results = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    accepted = sum(r["accepted"] for r in results)
    # budget mldp_eps_max = 20: exactly 10 charges of eps 2 on value v fit; 16 were attempted
    assert accepted == 10 and sum(r["refused"] for r in results) == 6
    assert ledger.spent("reviews").mldp.epsilon == pytest.approx(20.0) and len(ledger.entries("reviews")) == 10


def test_budget_show_cli_reports_one_account_over_every_dataset(tmp_path, capsys):
    import yaml

    from privtext.cli import main

    budget = {"r_over_p_max": 10.0, "eps_max": 2.0, "delta_max": 1e-5, "mldp_eps_max": 20.0}
    settings = make_budget_settings(tmp_path)
    settings.privacy.budgets["other"] = settings.privacy.budgets["reviews"].model_copy(update={"r_over_p_max": 40.0})
    lake = Lakehouse(None, settings.lakehouse)
    lake.create(PRIVACY_LEDGER)
    ledger = Ledger(lake, settings)
    ledger.charge(sp_charge(), {"s1": 1, "s2": 1})
    both = ledger.charge(sp_charge("r2", dataset="other"), {"s1": 1}).secret_protection  # s1 twice: sqrt(2) mu
    assert both.r == pytest.approx(r_from_mu(1e-3, 2 ** 0.5 * 2 / SIGMA), rel=1e-2)
    conf = tmp_path / "c.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": str(tmp_path)},
                                    "privacy": {"budgets": {"reviews": budget,
                                                            "other": {**budget, "r_over_p_max": 40.0}}}}))
    assert main(["--conf", str(conf), "budget", "show", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["charges"] == 2 and report["spent"]["secret_protection"]["secrets"] == 2
    assert report["spent"]["secret_protection"]["r_over_p"] == pytest.approx(both.r_over_p)
    assert report["limits"]["r_over_p_max"] == 10.0  # the strictest budget in play
    assert {d: v["charges"] for d, v in report["datasets"].items()} == {"reviews": 1, "other": 1}
    assert report["datasets"]["other"]["usage"][0]["spent"] == pytest.approx(both.r_over_p)
    assert report["datasets"]["other"]["usage"][0]["limit"] == 40.0
    assert main(["--conf", str(conf), "budget", "show"]) == 0
    words = capsys.readouterr().out
    assert "one account: 2 charge(s) of dataset(s) other, reviews" in words
    assert "most exposed of 2 secrets" in words and f"{both.r_over_p:.3g} times the prior" in words


def test_charge_is_mirrored_to_the_stage_mlflow_run(tmp_path):
    import mlflow

    from privtext.platform.tracking import stage_run

    ledger = make_ledger(tmp_path)
    tracking = ledger.settings.tracking.model_copy(update={"enabled": True})
    settings = ledger.settings.model_copy(update={"tracking": tracking})
    with stage_run(settings, "test", "synthesize", "2026-01-01", "run-1") as tracked:
        ledger.charge(sp_charge(), {"s1": 1}, tracked=tracked)
        run_id = tracked.run_id
    run = mlflow.get_run(run_id)
    assert run.data.metrics["privacy.secret_protection.r"] == pytest.approx(5e-3)
    assert run.data.metrics["privacy.total.secret_protection.r_over_p"] == pytest.approx(
        r_from_mu(1e-3, 2 / SIGMA) / 1e-3, rel=1e-2)
    assert run.data.tags["privtext.run_id"] == "run-1" and run.data.tags["stage"] == "synthesize"
    artifacts = [a.path for a in mlflow.MlflowClient().list_artifacts(run_id, "privacy")]
    assert artifacts == ["privacy/synthesize-secpe_histogram.json"]
    # the params (sigma, count pmfs: functions of the secrets' structure; records read) stay in the ledger
    mirrored = mlflow.artifacts.load_dict(f"runs:/{run_id}/privacy/synthesize-secpe_histogram.json")
    assert "params" not in mirrored["charge"] and "sigma" not in str(mirrored) and "count_pmfs" not in str(mirrored)
    assert mirrored["charge"]["spend"] == {"p": 1e-3, "r": pytest.approx(5e-3)}
