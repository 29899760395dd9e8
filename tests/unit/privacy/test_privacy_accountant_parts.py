"""The accountant's parts, each on its own: typed pairs, the screen and the exact phase of the per-secret
composition, the one limit tolerance, and the ledger's row compatibility (docs/privacy-model.md).

Independent computations: Gaussian closed forms (a Gaussian of shift mu has Renyi divergence a mu^2 / 2 and
blow-up 1 - Phi(Phi^-1(1 - p) - mu); Gaussians compose as sqrt(sum mu^2)). Negative controls: a release
without noise has no bound; an understated count (one occurrence for two) gives a figure below the truth.
"""
import dataclasses
import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from privtext.privacy.accounting import event_to_json, gaussian_event
from privtext.privacy.budget import (
    BudgetExceeded,
    ComposedSpend,
    Exposure,
    SecretSpend,
    charge_from_json,
    charge_to_json,
    check,
    compose,
    dp_charge,
    exceeds,
    exposure_arrays,
    flatten,
    mldp_charge,
    secret_charge,
)
from privtext.privacy.pairs import ORDERS, EventPair, MixturePair, UnknownPair, UnprotectedPair, pair_of
from privtext.privacy.secret_composition import (
    EXACT_WORST,
    HOPELESS,
    PairCache,
    Screen,
    exact_blowup,
    exact_slots,
    screen,
    secret_exposures,
)
from privtext.settings import DatasetBudget

P = 1e-4
BUDGET = DatasetBudget(r_over_p_max=50.0, eps_max=10.0, delta_max=1e-5, mldp_eps_max=100.0)
SIGMA, Z = 5.0, 4.0  # SecPE noise (one record, always sampled: mu = sqrt(2) / sigma), a record-level Gaussian
A = np.asarray(ORDERS)


def truth_r(*mus: float) -> float:
    return float(norm.sf(norm.isf(P) - math.sqrt(sum(m * m for m in mus))))


def gaussian_secret(run="a", p=P) -> dict:
    charge = secret_charge("d", "synthesize", run, "secpe", p=p, r=10 * P, sigma=SIGMA, rounds=1,
                           releases_per_round=2, count_pmfs=[[0.0, 1.0], [0.5, 0.5]])
    return json.loads(charge_to_json(charge, {"s1": Exposure(1, 0, 1)}))


def test_exceeds_is_the_one_tolerance_and_fails_closed_on_nan():
    assert not exceeds(50.0 * (1 + 1e-13), 50.0) and not exceeds(50.0, 50.0)  # float rounding of a limit
    assert exceeds(50.0 * (1 + 1e-9), 50.0) and exceeds(float("nan"), 50.0)
    assert exceeds(np.array([49.0, 50.0, 50.1, np.nan]), 50.0).tolist() == [False, False, True, True]
    spend = SecretSpend(p=P, r=float("nan"), r_over_p=float("nan"), secrets=1, secrets_near_limit=0,
                        secrets_over_limit=0, releases=1, exactly_composed=0)
    with pytest.raises(BudgetExceeded, match="r_over_p_max"):  # a NaN figure is refused, never passed
        check(ComposedSpend(secret_protection=spend), BUDGET, "d")


def test_pairs_are_typed_frozen_read_from_rows_and_meet_their_closed_forms():
    row = gaussian_secret()
    mix = pair_of(row, 0)
    assert mix == MixturePair(SIGMA, 1, 2, (0.0, 1.0)) and pair_of(row, 1).count_pmf == (0.5, 0.5)
    assert pair_of(row, -1) == UnprotectedPair()  # read as public: no guarantee
    with pytest.raises(dataclasses.FrozenInstanceError):
        mix.sigma = 1.0
    assert mix.rdp() == pytest.approx(A * (math.sqrt(2) / SIGMA) ** 2 / 2, rel=1e-6)
    event = EventPair(event_to_json(gaussian_event(Z)), 3)  # a group of 3 records: mu = 3 / z
    assert event.rdp() == pytest.approx(A * (3 / Z) ** 2 / 2, rel=1e-6)
    assert np.isinf(UnprotectedPair().rdp()).all() and UnprotectedPair().pld() is None
    augpe = secret_charge("d", "synthesize", "b", "x", p=P, r=10 * P, sigma=SIGMA, rounds=1,
                          releases_per_round=2, count_pmfs=[[0.0, 1.0]])
    augpe = {**json.loads(charge_to_json(augpe)), "dp_event": event_to_json(gaussian_event(Z))}
    augpe["params"]["pair"] = {"kind": "dp_event", "record_event": event_to_json(gaussian_event(30.0))}
    assert pair_of(augpe, 0, 4) == EventPair(event_to_json(gaussian_event(30.0)), 4)  # at the secret's own count
    del augpe["params"]["pair"]["record_event"]
    assert pair_of(augpe, 0, 4) == EventPair(event_to_json(gaussian_event(Z)), 1)
    augpe["params"]["pair"]["kind"] = "a newer kind"
    with pytest.raises(UnknownPair, match="a newer kind"):
        pair_of(augpe, 0)


def _secrets(entries):
    exposures = [exposure_arrays(e["exposures"]) for e in entries]
    return secret_exposures(entries, exposures, flatten(exposures), [i for i, e in enumerate(entries)
                                                                     if e["guarantee"] == "approx_dp"])


def test_the_screen_phase_alone_is_the_renyi_bound_of_each_secret():
    """s1 meets SecPE once, s2 twice and a record-level Gaussian at its count 3: per secret, the screen's
    Renyi divergences are the closed form's, and its bound is min_a (e^{D_a} p)^{(a-1)/a} above the truth."""
    secpe = secret_charge("d", "synthesize", "a", "secpe", p=P, r=10 * P, sigma=SIGMA, rounds=1,
                          releases_per_round=2, count_pmfs=[[0.0, 1.0]])
    dped = dp_charge("d", "train_dped", "b", "dped", event=gaussian_event(Z), delta=1e-5, unit="record")
    entries = [json.loads(charge_to_json(secpe, {"s1": 1, "s2": 2})),
               json.loads(charge_to_json(dped, {"s2": Exposure(1, 0, 3)}))]
    se = _secrets(entries)
    sc = screen(se, PairCache())
    mus = {"s1": [math.sqrt(2) / SIGMA], "s2": [math.sqrt(2) / SIGMA] * 2 + [3 / Z]}
    for slot, secret in enumerate(["s1", "s2"]):
        mu2 = sum(m * m for m in mus[secret])
        assert sc.rdp[slot] == pytest.approx(A * mu2 / 2, rel=1e-6)
        by_hand = min(1.0, float(np.min(np.exp((A - 1) / A * (A * mu2 / 2 + math.log(P))))))
        assert sc.bound[slot] == pytest.approx(by_hand, rel=1e-9)
        assert sc.bound[slot] >= truth_r(*mus[secret])
    assert sc.p.tolist() == [P, P] and sc.group.tolist() == [1, 3]
    # negative control: the record event at an understated group (1 record where 3 hold s2): below the truth
    one = _secrets([entries[0], json.loads(charge_to_json(dped, {"s2": Exposure(1, 0, 1)}))])
    assert screen(one, PairCache()).bound[1] < truth_r(*mus["s2"])


def test_the_exact_phase_alone_composes_a_secrets_pairs_to_the_gdp_closed_form():
    cache = PairCache()
    mix = MixturePair(SIGMA, 1, 2, (0.0, 1.0))
    pairs = (mix, mix, EventPair(event_to_json(gaussian_event(Z)), 3))
    truth = truth_r(math.sqrt(2) / SIGMA, math.sqrt(2) / SIGMA, 3 / Z)
    assert truth <= exact_blowup(pairs, P, cache) <= truth * 1.01
    assert exact_blowup(pairs[1:], P, cache) < truth  # negative control: one SecPE release fewer
    assert exact_blowup(pairs + (UnprotectedPair(),), P, cache) == 1.0  # no noise: no bound


def test_the_exact_phase_composes_the_worst_and_the_uncertified_but_not_the_hopeless():
    """Slots by screen ratio bound/p: 7 slots, two over the limit beyond the worst EXACT_WORST, one hopeless."""
    ratios = np.array([1.0, 60.0, 2.0, 70.0, 3.0, 4.0, 80.0])  # worst four: 6, 3, 1, 5
    rdp = np.ones((7, len(ORDERS)))
    rdp[6] = HOPELESS  # the worst slot is hopeless: its screen bound stands
    p = np.full(7, P)
    sc = Screen(rdp=rdp, p=p, pure=np.zeros(7), group=np.ones(7, dtype=np.int64), bound=ratios * P)
    assert exact_slots(sc, limit=50.0) == [1, 3, 5]
    assert EXACT_WORST == 4 and exact_slots(sc, limit=2.5) == [1, 3, 4, 5]  # 4 (ratio 3) is over 2.5


def test_old_ledger_rows_keep_composing_with_their_meaning():
    """Rows as the ledger wrote them before pair variants, group sizes and entity types existed (exposures
    without ``variant``/``records``, a record-level row on everyone, an untyped mldp row) compose, and to
    exactly what today's rows of the same charges compose to (docs/privacy-model.md, "Row compatibility")."""
    secret = {"dataset": "reviews", "stage": "synthesize", "run_id": "a", "mechanism": "secpe_histogram",
              "guarantee": "secret_protection", "dp_event": None,
              "params": {"unit": "secret", "deterministic": False, "pair": {
                  "kind": "secret_mixture", "sigma": SIGMA, "rounds": 1, "releases_per_round": 2,
                  "count_pmfs": [[0.0, 1.0]]}},
              "spend": {"p": P, "r": 10 * P}, "exposures": [{"unit": "s1", "occurrences": 1}]}
    record = {"dataset": "reviews", "stage": "train_dped", "run_id": "b", "mechanism": "dped",
              "guarantee": "approx_dp", "dp_event": event_to_json(gaussian_event(Z)),
              "params": {"unit": "record", "deterministic": False, "pair": {"kind": "dp_event"}},
              "spend": {"epsilon": 1.0, "delta": 1e-5}, "exposures": None}
    value = {"dataset": "reviews", "stage": "sanitize", "run_id": "c", "mechanism": "clusant", "guarantee": "mldp",
             "dp_event": None, "params": {"unit": "value occurrence", "deterministic": False, "metric": "D_k", "k": 4,
                                          "pair": {"kind": "pure", "epsilon": 0.5}},
             "spend": {"epsilon": 2.0, "pure_epsilon": 0.5}, "exposures": [{"unit": "v1", "occurrences": 3}]}
    old = [charge_from_json(json.dumps(row))[0] | {"exposures": row["exposures"]} for row in (secret, record, value)]
    got = compose(old, [exposure_arrays(e["exposures"]) for e in old], BUDGET)
    truth = truth_r(math.sqrt(2) / SIGMA, 1 / Z)
    assert truth <= got.secret_protection.r <= truth * 1.01 and got.mldp.epsilon == 6.0
    today = [json.loads(charge_to_json(c, e)) for c, e in (
        (secret_charge("reviews", "synthesize", "a", "secpe_histogram", p=P, r=10 * P, sigma=SIGMA, rounds=1,
                       releases_per_round=2, count_pmfs=[[0.0, 1.0]]), {"s1": Exposure(1, 0, 1)}),
        (dp_charge("reviews", "train_dped", "b", "dped", event=gaussian_event(Z), delta=1e-5, unit="record"), None),
        (mldp_charge("reviews", "sanitize", "c", "clusant", epsilon=2.0, pure_epsilon=0.5, metric="D_k", k=4),
         {"v1": 3}))]
    assert compose(today, [exposure_arrays(e["exposures"]) for e in today], BUDGET) == got
