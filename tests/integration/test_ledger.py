"""The privacy ledger: budget refusal, composition, concurrent charges from two processes."""
import json
import subprocess
import sys
import textwrap

import pytest
from deltalake import DeltaTable

from privtext.platform.ledger import BudgetExceeded, Charge, Ledger
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.tables import PRIVACY_LEDGER
from privtext.privacy.accounting import epsilon_of, event_to_json, gaussian_event
from tests_support import make_budget_settings


def make_ledger(root):
    settings = make_budget_settings(root)
    lake = Lakehouse(None, settings.lakehouse)
    lake.create(PRIVACY_LEDGER)
    return Ledger(lake, settings)


def sp_charge(r, p=1e-3, run="r1"):
    return Charge("reviews", "synthesize", run, "secret_clustering", "secret_protection",
                  {"rounds": 2}, {"p": p, "r": r})


def test_secret_protection_composes_by_summing_r_and_refuses_over_budget(tmp_path):
    ledger = make_ledger(tmp_path)  # budget r_over_p_max = 10 at p = 1e-3 -> r <= 1e-2
    total = ledger.charge(sp_charge(4e-3))
    assert total["secret_protection"]["r"] == pytest.approx(4e-3)
    total = ledger.charge(sp_charge(5e-3, run="r2"))
    assert total["secret_protection"]["r"] == pytest.approx(9e-3)
    with pytest.raises(BudgetExceeded, match="r/p = 11 > r_over_p_max = 10"):
        ledger.charge(sp_charge(2e-3, run="r3"))
    assert len(ledger.entries("reviews")) == 2  # the refused charge wrote nothing
    assert DeltaTable(ledger.lakehouse.table_uri(PRIVACY_LEDGER)).version() == 2


def test_gaussian_events_compose_with_pld_against_eps_max(tmp_path):
    ledger = make_ledger(tmp_path)  # eps_max = 2 at delta 1e-5
    event = gaussian_event(sigma=8.0, count=4)
    charge = Charge("reviews", "train_dped", "r1", "gaussian", "approx_dp", {}, {"sigma": 8.0}, event_to_json(event))
    one = ledger.charge(charge)["approx_dp"]["epsilon"]
    assert one == pytest.approx(epsilon_of(event, 1e-5), rel=1e-9)
    two = ledger.charge(charge)["approx_dp"]["epsilon"]
    assert one < two < 2 * one  # composition is sub-additive for Gaussians, and not free
    with pytest.raises(BudgetExceeded, match="eps_max = 2"):
        for _ in range(20):
            ledger.charge(charge)
    spent = ledger.spent("reviews")["approx_dp"]["epsilon"]
    assert spent <= 2.0


def test_mldp_composes_within_a_scope_and_in_parallel_across_scopes(tmp_path):
    ledger = make_ledger(tmp_path)  # mldp_eps_max = 20
    mk = lambda eps, scope: Charge("reviews", "sanitize", "r", "clusant", "mldp", {"k": 2}, {"epsilon": eps, "scope": scope})
    ledger.charge(mk(8, "2026-01-01"))
    ledger.charge(mk(8, "2026-01-02"))
    assert ledger.spent("reviews")["mldp"]["epsilon"] == 8
    ledger.charge(mk(8, "2026-01-01"))  # a re-release of the same documents composes: 16
    with pytest.raises(BudgetExceeded, match="metric-LDP epsilon = 24"):
        ledger.charge(mk(8, "2026-01-01"))


CHARGER = textwrap.dedent("""
    import sys, json
    from privtext.platform.ledger import BudgetExceeded, Charge, Ledger
    from privtext.platform.lakehouse import Lakehouse
    from tests_support import make_budget_settings
    settings = make_budget_settings(sys.argv[1])
    ledger = Ledger(Lakehouse(None, settings.lakehouse), settings)
    accepted = refused = 0
    for i in range(8):
        try:
            ledger.charge(Charge("reviews", "synthesize", sys.argv[2] + str(i), "m", "secret_protection", {}, {"p": 1e-3, "r": 1e-3}))
            accepted += 1
        except BudgetExceeded:
            refused += 1
    print(json.dumps({"accepted": accepted, "refused": refused}))
""")


def test_concurrent_charges_from_two_processes_never_exceed_the_budget(tmp_path):
    import os

    ledger = make_ledger(tmp_path)
    script = tmp_path / "charger.py"
    script.write_text(CHARGER)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(__file__) + "/.."}
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path), name], stdout=subprocess.PIPE, text=True, env=env)
             for name in ("a", "b")]
    results = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    accepted = sum(r["accepted"] for r in results)
    # budget r <= 10 * p: exactly 10 charges of r = p fit; 16 were attempted
    assert accepted == 10 and sum(r["refused"] for r in results) == 6
    spent = ledger.spent("reviews")["secret_protection"]
    assert spent["r"] == pytest.approx(1e-2) and len(ledger.entries("reviews")) == 10


def test_budget_show_cli_reports_composed_spend(tmp_path, capsys):
    import yaml

    from privtext.cli import main

    ledger = make_ledger(tmp_path)
    ledger.charge(sp_charge(4e-3))
    conf = tmp_path / "c.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": str(tmp_path)},
                                    "privacy": {"budgets": {"reviews": {"r_over_p_max": 10.0}}}}))
    assert main(["--conf", str(conf), "budget", "show", "--dataset", "reviews"]) == 0
    report = json.loads(capsys.readouterr().out)["reviews"]
    assert report["charges"] == 1
    assert report["spent"]["secret_protection"]["r_over_p"] == pytest.approx(4.0)
    assert report["budget"]["r_over_p_max"] == 10.0


def test_charge_is_mirrored_to_the_stage_mlflow_run(tmp_path):
    import mlflow

    from privtext.platform.tracking import stage_run

    ledger = make_ledger(tmp_path)
    settings = ledger.settings.model_copy(update={"tracking": ledger.settings.tracking.model_copy(update={"enabled": True})})
    with stage_run(settings, "test", "synthesize", "2026-01-01", "run-1") as tracked:
        ledger.charge(sp_charge(3e-3), tracked=tracked)
        run_id = tracked.run_id
    run = mlflow.get_run(run_id)
    assert run.data.metrics["privacy.secret_protection.r"] == pytest.approx(3e-3)
    assert run.data.metrics["privacy.total.secret_protection.r_over_p"] == pytest.approx(3.0)
    assert run.data.tags["privtext.run_id"] == "run-1" and run.data.tags["stage"] == "synthesize"
    artifacts = [a.path for a in mlflow.MlflowClient().list_artifacts(run_id, "privacy")]
    assert artifacts == ["privacy/synthesize-secret_clustering.json"]
