"""Tests of privtext.privacy.accounting against closed forms (Gaussian mechanism, mu-GDP)."""
import math

import dp_accounting as dpa
import numpy as np
import pytest

from privtext.privacy import accounting as acc
from privtext.privacy.secret_protection import gdp_delta, mu_from_pr


def test_event_json_round_trip_nested():
    g = acc.gaussian_event(2.0, 1.0, 10)
    mog = dpa.dp_event.MixtureOfGaussiansDpEvent(1.5, [0.0, 1.0, 2.0], [0.5, 0.3, 0.2])
    sampled = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(1.0)), 50)
    event = dpa.ComposedDpEvent([mog, g, sampled, dpa.LaplaceDpEvent(0.7)])
    text = acc.event_to_json(event)
    assert acc.event_from_json(text) == event
    assert acc.event_to_json(acc.event_from_json(text)) == text
    # re-accounting a deserialized event gives the same epsilon (small event: keep the test fast)
    small = dpa.ComposedDpEvent([dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(2.0)), g])
    again = acc.event_from_json(acc.event_to_json(small))
    assert acc.epsilon_of(again, 1e-6) == acc.epsilon_of(small, 1e-6)


def test_event_from_json_rejects_unknown_type():
    with pytest.raises(ValueError):
        acc.event_from_json('{"type": "os.system"}')


def test_composed_gaussian_matches_gdp_closed_form():
    # T Gaussian releases of sensitivity 1 and noise sigma are exactly mu-GDP with mu = sqrt(T)/sigma,
    # whose delta(eps) is Remark C.1's closed form; the pessimistic PLD (grid 1e-4) gives an epsilon
    # at that delta on the safe side and close to it.
    sigma, rounds, eps = 3.0, 8, 1.0
    exact = gdp_delta(math.sqrt(rounds) / sigma, eps)
    pld = acc.epsilon_of(acc.gaussian_event(sigma, 1.0, rounds), exact)
    assert eps <= pld <= eps * (1 + 1e-3)


def test_rdp_is_an_upper_bound_on_pld_epsilon():
    event = acc.gaussian_event(4.0, 1.0, 20)
    e_pld, e_rdp = acc.epsilon_of(event, 1e-6), acc.epsilon_of(event, 1e-6, accountant="rdp")
    assert e_pld <= e_rdp <= 1.5 * e_pld


def test_augpe_sigma_meets_the_pr_budget_exactly():
    p, r, rounds = 1e-4, 1e-3, 5
    sigma = acc.augpe_sigma(p, r, rounds)
    assert math.sqrt(rounds) / sigma == pytest.approx(mu_from_pr(p, r))  # sqrt(T)/sigma-GDP
    assert acc.augpe_sigma(p, 2 * p, rounds) > sigma  # tighter budget, more noise
    with pytest.raises(ValueError):
        acc.augpe_sigma(1e-3, 1e-4, rounds)
    assert np.isfinite(sigma)
