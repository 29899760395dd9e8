"""Per-secret composition of the budget module against independent computations.

* Monte Carlo Neyman-Pearson: B(p) = P(L > t) with Q(L > t) = p, where L is the composed privacy loss
  of the secret's observations. Both are estimated from draws under P alone (Q(E) = E_P[e^-L 1_E]),
  so the tail at p = 1e-4 needs no rare-event sampling under Q.
* Closed form: one record sampled every round is a Gaussian, B(p) = 1 - Phi(Phi^-1(1-p) - mu).
Negative control: Thm. 3's sum of r (the old ledger) falls outside the Monte Carlo interval.
"""
import functools
import json
import math

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm

from privtext.privacy import secret_protection as sp
from privtext.privacy.budget import (
    BudgetExceeded,
    ComposedSpend,
    charge_from_json,
    charge_to_json,
    check,
    compose,
    exposure_arrays,
    mixture_rdp,
    pure_rdp,
    secret_charge,
)
from privtext.settings import DatasetBudget

P = 1e-4
DEFAULT = DatasetBudget(r_over_p_max=50.0, eps_max=10.0, delta_max=1e-5, mldp_eps_max=100.0)


def _calibrated(rho):
    """SecretNoise sigma for a secret held by records with sampling probabilities ``rho``, r/p = 10, T = 2
    (calibrated once per ``rho`` for the module: the search is most of a test's time)."""
    return _calibrate(tuple(rho))


@functools.cache
def _calibrate(rho: tuple):
    sigma, _, _, _ = sp.calibrate_sigma(np.ones((len(rho), 1)), np.asarray(rho), P, 10 * P, rounds=2)
    return sigma, sp.poisson_binomial_pmf(list(rho))


def _composed(pmf, sigma, runs):
    charge = json.loads(charge_to_json(secret_charge("d", "s", "r", "m", p=P, r=10 * P, sigma=sigma, rounds=2,
                                                     releases_per_round=2, count_pmfs=[pmf]), {"s": 1}))
    entries = [charge] * runs
    return compose(entries, [exposure_arrays(e["exposures"]) for e in entries], DEFAULT).secret_protection


def _monte_carlo_blowup(pmf, sigma, rounds, n, seed):
    """(estimate, 99% interval) of B(P) for ``rounds`` independent rounds of the mixture pair."""
    rng = np.random.default_rng(seed)
    w = np.asarray(pmf)
    s = math.sqrt(2) * np.arange(len(w)) / sigma
    loss = np.zeros(n)
    for _ in range(rounds):
        k = rng.choice(len(w), size=n, p=w)
        x = rng.normal(s[k], 1.0)
        loss += logsumexp(np.outer(x, s) - 0.5 * s**2, b=w, axis=1)
    order = np.argsort(-loss)
    q_tail = np.cumsum(np.exp(-loss[order])) / n  # Q(L >= loss_(i)) estimated under P
    m = int(np.searchsorted(q_tail, P))  # the NP rejection region: the m largest losses
    est = m / n
    half = 2.576 * math.sqrt(est * (1 - est) / n)
    return est, (est - half, est + half)


@pytest.mark.parametrize("rho", [[1.0], [1.0, 0.8, 0.6, 0.45, 0.3]])
@pytest.mark.parametrize("runs", [1, 2, 5])
def test_composed_blowup_agrees_with_neyman_pearson_monte_carlo(rho, runs):
    sigma, pmf = _calibrated(rho)
    got = _composed(pmf, sigma, runs)
    est, (lo, hi) = _monte_carlo_blowup(pmf, sigma, 2 * runs, n=400_000, seed=runs)
    # the pessimistic PLD is an upper bound: within the MC interval, or above it by the grid's rounding
    assert lo <= got.r <= hi * 1.02, (got.r, est, lo, hi)
    if len(rho) == 1:  # a single always-sampled record: a Gaussian, closed form
        assert got.r == pytest.approx(sp.r_from_mu(P, 2 * math.sqrt(runs) / sigma), rel=1e-2)
    if runs > 1:  # negative control: the sum of r (Thm. 3) understates what five runs give
        assert runs * 10 * P < lo


def test_five_runs_on_one_secret_are_refused_by_the_default_budget():
    sigma, pmf = _calibrated([1.0])
    three, five = _composed(pmf, sigma, 3), _composed(pmf, sigma, 5)
    assert five.r_over_p >= 100  # Monte Carlo of the audit: 102.9
    check(ComposedSpend(secret_protection=three), DEFAULT, "d")  # 3 runs: r/p ~ 43 <= 50
    with pytest.raises(BudgetExceeded, match="r_over_p_max = 50"):
        check(ComposedSpend(secret_protection=five), DEFAULT, "d")


def test_compose_cli_reads_calibrate_json(tmp_path, capsys):
    from privtext.cli import main

    incidence = tmp_path / "inc.csv"
    incidence.write_text("record_id,secret_id\nr1,s1\n")
    cmd = ["--conf", "conf/local.yaml", "privacy"]  # the CLI in this process (test_privacy_cli.py: the same way)
    assert main(cmd + ["calibrate", "--p", "1e-4", "--r-over-p", "10", "--rounds", "2", "--incidence",
                       str(incidence), "--json"]) == 0
    line = capsys.readouterr().out
    charge, exposures = charge_from_json(line)
    assert charge["params"]["pair"]["kind"] == "secret_mixture" and exposures[0]["unit"] == "s1"
    charges = tmp_path / "five.jsonl"
    charges.write_text(line * 5)
    assert main(cmd + ["compose", str(charges), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["secret_protection"]["p"] == 1e-4 and out["secret_protection"]["r"] / 1e-4 >= 100


def test_mixture_rdp_matches_the_gaussian_closed_form_and_pure_rdp_is_bounded():
    orders = (1.5, 2.0, 8.0, 64.0)
    got = mixture_rdp([0.0, 1.0], sigma=4.0, releases_per_round=2, orders=orders)
    assert got == pytest.approx([a * (math.sqrt(2) / 4.0) ** 2 / 2 for a in orders], rel=1e-6)
    eps = 1.3
    assert np.all(pure_rdp(eps, orders) <= np.minimum(eps, np.asarray(orders) * eps**2 / 2) + 1e-12)


def test_a_mixture_is_no_worse_than_its_worst_atom():
    """Sampling with rho < 1 helps: the exact per-secret B is below the always-sampled Gaussian's."""
    sigma, _ = _calibrated([1.0, 1.0])
    mixed = _composed(sp.poisson_binomial_pmf([0.5, 0.5]), sigma, 1).r
    worst = sp.r_from_mu(P, 2 * 2 / sigma)  # C = 2 always
    assert mixed < worst and mixed > sp.r_from_mu(P, 2 * 1 / sigma) * 0.5


@pytest.mark.parametrize("records", [1, 3])
def test_stages_meet_on_one_secret_in_one_currency(records):
    """SecPE (one record, always sampled: Gaussian mu1 = sqrt(2)/sigma), a record-level DPED Gaussian
    event (mu2 = g/z for a secret held by g records) and sanitized occurrences compose on the secret."""
    from privtext.privacy.accounting import gaussian_event
    from privtext.privacy.budget import Exposure, dp_charge, mldp_charge

    sigma, z = 5.0, 4.0
    synth = secret_charge("d", "synthesize", "a", "secpe", p=P, r=10 * P, sigma=sigma, rounds=1, releases_per_round=2,
                          count_pmfs=[[0.0, 1.0]])
    dped = dp_charge("d", "train_dped", "b", "dped", event=gaussian_event(z), delta=1e-5, unit="record")
    entries = [json.loads(charge_to_json(synth, {"s1": Exposure(1, 0, records)})), json.loads(charge_to_json(dped))]
    got = compose(entries, [exposure_arrays(e["exposures"]) for e in entries], DEFAULT)
    mu = math.sqrt(2 / sigma**2 + (records / z) ** 2)
    assert sp.r_from_mu(P, mu) <= got.secret_protection.r <= sp.r_from_mu(P, mu) * 1.01
    assert got.approx_dp.unit == "record"
    sanitize = mldp_charge("d", "sanitize", "c", "clusant", epsilon=1.0, pure_epsilon=0.5, metric="D_k", k=1)
    entries.append(json.loads(charge_to_json(sanitize, {"s1": 2})))
    more = compose(entries, [exposure_arrays(e["exposures"]) for e in entries], DEFAULT)
    assert more.secret_protection.r > got.secret_protection.r * 1.5  # two occurrences at pure eps 0.5
    assert more.mldp.epsilon == 2.0 and more.mldp.pure_epsilon == 1.0


def test_a_hopeless_secret_is_refused_without_an_exact_composition():
    """A frequent value replaced at a large pure eps makes the Renyi screen fail at every order; the
    ledger keeps the screen's bound (fail closed) instead of building an enormous PLD."""
    from privtext.privacy.budget import mldp_charge

    synth = secret_charge("d", "synthesize", "a", "secpe", p=P, r=10 * P, sigma=5.0, rounds=1, releases_per_round=2,
                          count_pmfs=[[0.0, 1.0]])
    sanitize = mldp_charge("d", "sanitize", "c", "clusant", epsilon=8.0, pure_epsilon=100.0, metric="D_k", k=16)
    entries = [json.loads(charge_to_json(synth, {"s1": 1})), json.loads(charge_to_json(sanitize, {"s1": 38}))]
    got = compose(entries, [exposure_arrays(e["exposures"]) for e in entries], DEFAULT)
    assert got.secret_protection.r == 1.0 and got.secret_protection.exactly_composed == 0
    with pytest.raises(BudgetExceeded):
        check(got, DEFAULT, "d")


def test_a_record_event_scales_per_secret_by_its_own_counts_and_misses_secrets_it_did_not_read():
    """A record-level Gaussian (z) that read s1 in 3 records and s2 in none: s1 composes with mu = 3 / z
    (closed form), s2's figure is SecPE's alone. A secret row on everyone (no exposures) composes too."""
    from privtext.privacy.accounting import gaussian_event
    from privtext.privacy.budget import Exposure, dp_charge

    sigma, z = 5.0, 4.0
    synth = secret_charge("d", "synthesize", "a", "secpe", p=P, r=10 * P, sigma=sigma, rounds=1, releases_per_round=2,
                          count_pmfs=[[0.0, 1.0]])
    dped = dp_charge("d", "train_dped", "b", "dped", event=gaussian_event(z), delta=1e-5, unit="record")
    entries = [json.loads(charge_to_json(synth, {"s1": 1, "s2": 1})),
               json.loads(charge_to_json(dped, {"s1": Exposure(1, 0, 3), "s3": Exposure(1, 0, 9)}))]
    got = compose(entries, [exposure_arrays(e["exposures"]) for e in entries], DEFAULT).secret_protection
    mu1, mu2 = math.sqrt(2) / sigma, 3 / z
    truth = norm.sf(norm.isf(P) - math.hypot(mu1, mu2))
    assert truth <= got.r <= truth * 1.01 and got.secrets == 2  # s3 met no secret charge: no p, no account
    assert got.secrets_near_limit == 0
    on_everyone = [json.loads(charge_to_json(synth, None))]
    alone = compose(on_everyone, [None], DEFAULT).secret_protection  # was a numpy casting error
    assert norm.sf(norm.isf(P) - mu1) <= alone.r <= norm.sf(norm.isf(P) - mu1) * 1.01


def test_mldp_sums_per_value_string_across_types_by_hand_as_compose_does():
    """Each value string's metric-LDP spend is the sum of eps * occurrences over the charges that exposed it,
    whatever type each gave it (typed or not), plus those without exposures (every value); other guarantees do
    not count. By hand, against compose's worst and count."""
    from privtext.privacy.budget import flatten, mldp_charge, mldp_per_value

    def typed(run, eps, entity_type=None):
        return mldp_charge("d", "sanitize", run, "clusant", epsilon=eps, pure_epsilon=3 * eps, metric="D_k", k=4,
                           params={"entity_type": entity_type} if entity_type else None)

    person, org = typed("a", 2.0, "PERSON"), typed("b", 4.0, "ORGANIZATION")
    untyped, on_everyone = typed("c", 1.0), typed("w", 0.5)
    synth = secret_charge("d", "synthesize", "e", "secpe", p=P, r=10 * P, sigma=5.0, rounds=1, releases_per_round=2,
                          count_pmfs=[[0.0, 1.0]])
    entries = [json.loads(charge_to_json(person, {"v1": 3, "v2": 1})), json.loads(charge_to_json(org, {"v1": 5})),
               json.loads(charge_to_json(untyped, {"v1": 2, "v4": 1})), json.loads(charge_to_json(on_everyone)),
               json.loads(charge_to_json(synth, {"v3": 1}))]
    exposures = [exposure_arrays(e["exposures"]) for e in entries]
    keys, sums, everyone = mldp_per_value(entries, exposures, flatten(exposures))
    by_hand = {"v1": 2.0 * 3 + 4.0 * 5 + 1.0 * 2, "v2": 2.0, "v4": 1.0}
    assert dict(zip(keys, sums.tolist())) == by_hand and everyone == 0.5
    composed = compose(entries, exposures, DEFAULT).mldp
    assert composed.epsilon == pytest.approx(max(by_hand.values()) + everyone) and composed.values == 3
