"""The ledger's accountant (``privacy.accountant.LedgerAccountant``: supports / compose / get_epsilon / spend, one
error type): figures against independent computations, rows it does not know refused by it and by its callers
(the ledger's composition, ``privtext privacy compose``), never skipped."""
import json
import math

import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from privtext.cli import main
from privtext.ledger import composed_spend
from privtext.privacy.accountant import LedgerAccountant
from privtext.privacy.accounting import gaussian_event
from privtext.privacy.budget import (
    Exposure,
    charge_to_json,
    dp_charge,
    exposure_arrays,
    measurement,
    mldp_charge,
    none_charge,
    secret_charge,
)
from privtext.privacy.pairs import UnknownPair, UnsupportedCharge
from privtext.settings import DatasetBudget

BUDGET = DatasetBudget(r_over_p_max=1e6, eps_max=100.0, delta_max=1e-5, mldp_eps_max=1e6)


def row(charge, exposures=None) -> dict:
    return json.loads(charge_to_json(charge, exposures))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon of a mu-GDP mechanism at delta (Balle & Wang 2018, Thm. 8; Dong, Roth & Su 2019):
    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), solved for eps."""
    return brentq(lambda e: norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) - delta, 0.0, 100.0)


def known_rows() -> list[dict]:
    return [row(dp_charge("d", "train_dped", "a", "dped", event=gaussian_event(4.0, count=3), delta=1e-5,
                          unit="record")),
            row(dp_charge("d", "train_dped", "b", "dped", event=gaussian_event(6.0), delta=1e-5, unit="user")),
            row(secret_charge("d", "synthesize", "c", "secpe", p=1e-4, r=5e-4, sigma=40.0, rounds=2,
                              releases_per_round=2, count_pmfs=[[0.0, 1.0]]), {"s1": Exposure(1, 0, 1)}),
            row(mldp_charge("d", "sanitize", "e", "clusant", epsilon=2.0, pure_epsilon=6.0, metric="D_k", k=4,
                            params={"entity_type": "PERSON"}), {"s1": 2, "s2": 1}),
            row(mldp_charge("d", "sanitize", "f", "clusant", epsilon=4.0, pure_epsilon=9.0, metric="D_k", k=4,
                            params={"entity_type": "LOCATION"}), {"s3": 3}),
            row(mldp_charge("d", "sanitize", "g", "clusant", epsilon=0.5, pure_epsilon=1.0, metric="D_k", k=4)),
            row(measurement("d", "detect_pii", "h", "canaries", guarantee="detection_recall", values={"recall": 1.0})),
            row(none_charge("d", "publish", "i", "gate_override", reason="sign-off"))]


def accountant_of(rows) -> LedgerAccountant:
    accountant = LedgerAccountant(BUDGET)
    for r in rows:
        assert accountant.compose(r, exposure_arrays(r["exposures"])) is accountant  # chains, as dp_accounting's
    return accountant


def test_get_epsilon_is_the_gaussian_closed_form_at_any_target_delta():
    """Record/user events compose as Gaussians: sigma 4 three times and sigma 6 once is one Gaussian of
    mu = sqrt(3/16 + 1/36); the PLD figure is an upper bound within its discretization of the exact one."""
    accountant = accountant_of(known_rows())
    mu = math.sqrt(3 / 4**2 + 1 / 6**2)
    for delta in (1e-5, 1e-3):
        exact = gaussian_epsilon(mu, delta)
        assert exact <= accountant.get_epsilon(delta) <= exact + 1e-3
    assert accountant.get_epsilon(1e-3) < accountant.get_epsilon(1e-5)  # the target delta is the one asked
    assert accountant.spend().approx_dp.epsilon == accountant.get_epsilon(BUDGET.delta_max)
    assert LedgerAccountant(BUDGET).get_epsilon(1e-5) == 0.0  # nothing composed: no loss
    assert accountant_of(known_rows()[2:]).get_epsilon(1e-5) == 0.0  # no record/user event among them


def test_spend_sums_each_values_draws_per_type_and_adds_the_charges_on_everyone():
    """By hand: s1 as PERSON 2 draws x eps 2, s3 as LOCATION 3 x 4, and 0.5 on every value: worst 12.5, the
    pure-LDP sum of the same value 3 x 9 + 1."""
    mldp = accountant_of(known_rows()).spend().mldp
    assert (mldp.epsilon, mldp.pure_epsilon, mldp.values, mldp.releases) == (12.5, 28.0, 3, 3)


def test_every_row_the_platform_writes_is_supported():
    """The negative control of the refusals below: today's rows of every guarantee, and rows in the old
    format (exposures without variant or records, mldp without its entity type), compose."""
    accountant = LedgerAccountant(BUDGET)
    assert all(accountant.supports(r) for r in known_rows())
    old = json.loads(json.dumps(known_rows()))
    for r in old:
        r["exposures"] = [{"unit": e["unit"], "occurrences": e["occurrences"]} for e in r["exposures"] or []] or None
        r["params"].pop("entity_type", None)
    assert all(accountant.supports(r) for r in old) and accountant_of(old).spend().mldp.epsilon == 12.5


@pytest.mark.parametrize("change, error, words", [
    (lambda r: r.update(guarantee="renyi_dp"), UnsupportedCharge, "guarantee 'renyi_dp'"),
    (lambda r: r["params"]["pair"].update(kind="a newer kind"), UnknownPair, "pair kind 'a newer kind'"),
    (lambda r: r["params"].pop("pair"), UnknownPair, "a secret charge needs a pair"),
    (lambda r: r.update(guarantee="approx_dp", params={**r["params"], "unit": "record"},
                        dp_event=json.dumps({"type": "NewerDpEvent"})), UnsupportedCharge, "dp_event cannot be read"),
])
def test_a_row_it_does_not_know_is_refused_not_skipped(change, error, words):
    rows = known_rows()
    newer = rows[2]  # the secret charge
    change(newer)
    accountant = LedgerAccountant(BUDGET)
    assert not accountant.supports(newer)
    with pytest.raises(error, match=words):
        accountant.compose(newer, exposure_arrays(newer["exposures"]))
    assert accountant.charges == []  # nothing half-composed
    assert issubclass(error, UnsupportedCharge)  # one error type for callers


def test_the_ledger_composition_refuses_a_newer_row_instead_of_ignoring_it():
    """``ledger.composed_spend`` (every budget check and report) goes through the accountant: a row of a
    guarantee this version does not know fails closed. Control: without it the same ledger composes."""
    rows = known_rows()
    assert composed_spend(rows, BUDGET).mldp.epsilon == 12.5
    newer = {**rows[0], "guarantee": "renyi_dp"}
    with pytest.raises(UnsupportedCharge, match="renyi_dp"):
        composed_spend(rows + [newer], BUDGET)


def test_privtext_privacy_compose_names_the_line_it_cannot_compose(tmp_path, capsys):
    rows = known_rows()
    path = tmp_path / "charges.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows[:2]))
    assert main(["privacy", "compose", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["approx_dp"]["releases"] == 2  # control
    path.write_text("\n".join(json.dumps(r) for r in [rows[0], {**rows[1], "guarantee": "renyi_dp"}]))
    with pytest.raises(SystemExit, match="line 2: .*guarantee 'renyi_dp'"):
        main(["privacy", "compose", str(path)])
