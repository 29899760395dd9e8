"""The published format class and the secret's prior (issue 33), by exact computation.

The sanitized export publishes each value's surface format (``clusant.surface_format``): its pure-LDP
pair holds only between values of the same type and format. The ledger therefore states p as the prior
over the values of the secret's type AND format (``privacy.budget``). This file shows, with an exact
Bayes-optimal attack on a concrete mechanism whose every candidate-vs-reference pair is dominated by the
ledger's composed pair, that

* per (type, format) class, the ledger's figure at the class-conditional prior is never below the true
  success, for a prior spread over formats (and so neither is the prior-weighted total);
* negative controls: read as an unconditional prior, the ledger's figure IS below the truth once a format
  holds 1% of the prior; with the format hidden (one class) it is not.

The mechanism, for n equally likely candidates of one class (candidate k holds the secret): Y ~ N(mu e_k, I)
(vs the reference N(0, I): exactly the mu-GDP pair of SecPE's released count, one record sampled every
round) and n-ary randomized response reporting k with probability e^eps / (e^eps + n - 1) (vs uniform: an
eps-DP pair, dominated by the binary randomized response of the sanitizer's pure eps). The MAP attack
picks argmax_k mu y_k + eps [k = reported]; its success is a 1-D integral (quadrature on a 1e-3 grid,
log-space powers), independent of the ledger's PLD code:
    s(n) = q int phi(y - mu) Phi(y + eps/mu)^(n-1) dy + (1 - q) int phi(y - mu) Phi(y - eps/mu) Phi(y)^(n-2) dy.
"""
import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from privtext.privacy.budget import (
    ComposedSpend,
    SecretSpend,
    charge_to_json,
    compose,
    describe,
    exposure_arrays,
    mldp_charge,
    secret_charge,
)
from privtext.settings import DatasetBudget

MU, EPS = 1.0, 0.5
NO_LIMIT = DatasetBudget(r_over_p_max=1e9, eps_max=10.0, delta_max=1e-5, mldp_eps_max=100.0)


def exact_success(n: int, mu: float = MU, eps: float = EPS) -> float:
    """The Bayes-optimal reconstruction success among n equally likely candidates (module docstring)."""
    step = 1e-3
    y = np.arange(-12.0, mu + 12.0, step)
    q = math.exp(eps) / (math.exp(eps) + n - 1)
    density = norm.pdf(y - mu)
    told = np.sum(density * np.exp((n - 1) * norm.logcdf(y + eps / mu))) * step
    misled = np.sum(density * np.exp(norm.logcdf(y - eps / mu) + (n - 2) * norm.logcdf(y))) * step
    return q * told + (1 - q) * misled


def ledger_r(p: float, mu: float = MU, eps: float = EPS) -> SecretSpend:
    """The ledger's composed figure for one secret: SecPE (one record, every round: mu = sqrt(T m) / sigma)
    and one sanitized occurrence at pure eps, at prior p."""
    synth = secret_charge("d", "synthesize", "a", "secpe_histogram", p=p, r=10 * p, sigma=2.0 / mu, rounds=2,
                          releases_per_round=2, count_pmfs=[[0.0, 1.0]])
    sanitize = mldp_charge("d", "sanitize", "c", "clusant", epsilon=1.0, pure_epsilon=eps, metric="D_k", k=1)
    entries = [json.loads(charge_to_json(synth, {"s": 1})), json.loads(charge_to_json(sanitize, {"s": 1}))]
    return compose(entries, [exposure_arrays(e["exposures"]) for e in entries], NO_LIMIT).secret_protection


def test_exact_success_matches_the_closed_form_without_randomized_response():
    """Sanity of the quadrature: eps = 0, n = 2 is P(Y_k > Y_j) = Phi(mu / sqrt 2)."""
    assert exact_success(2, MU, 1e-12) == pytest.approx(norm.cdf(MU / math.sqrt(2)), abs=1e-6)


@pytest.mark.parametrize("masses", [(0.9, 0.09, 0.01), (0.98, 0.02), (0.5, 0.3, 0.2)])
def test_per_format_class_the_figure_is_never_below_the_truth(masses):
    p_value = 1e-3  # every candidate value is equally likely overall: class f holds masses[f] / p_value of them
    total_truth = total_ledger = 0.0
    for mass in masses:
        n = round(mass / p_value)
        truth, got = exact_success(n), ledger_r(1.0 / n).r  # the class-conditional prior is 1 / n
        assert truth <= got <= 1.0
        total_truth += mass * truth
        total_ledger += mass * got
    assert total_truth <= total_ledger


def test_negative_controls_the_unconditional_reading_understates_a_published_format():
    p_value = 1e-3
    masses = (0.9, 0.09, 0.01)
    truth = sum(m * exact_success(round(m / p_value)) for m in masses)
    unconditional = ledger_r(p_value).r
    assert truth > unconditional * 1.1  # a 1%-format: reading p over all formats would understate the spend
    assert exact_success(round(1 / p_value)) <= unconditional  # the format hidden: one class, the figure holds


def test_the_report_states_the_prior_per_type_and_format():
    spent = ledger_r(1e-3)
    assert "surface format" in spent.prior
    assert "among the values of its entity type and surface format" in describe(ComposedSpend(secret_protection=spent),
                                                                                 NO_LIMIT)[0]
