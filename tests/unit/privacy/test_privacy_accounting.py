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
    # whose delta(eps) is Remark C.1's closed form; the pessimistic PLD (grid 1e-4) is an upper bound
    # within a relative 1e-3 of it.
    sigma, rounds, eps = 3.0, 8, 1.0
    mu = acc.gdp_mu_for_sigma(1.0, sigma, rounds)
    exact = gdp_delta(mu, eps)
    pld = acc.delta_of(acc.gaussian_event(sigma, 1.0, rounds), eps)
    assert exact <= pld <= exact * (1 + 1e-3)


def test_rdp_is_an_upper_bound_on_pld_epsilon():
    event = acc.gaussian_event(4.0, 1.0, 20)
    e_pld, e_rdp = acc.epsilon_of(event, 1e-6), acc.epsilon_of(event, 1e-6, accountant="rdp")
    assert e_pld <= e_rdp <= 1.5 * e_pld


def test_calibrate_noise_multiplier_is_smallest_on_the_safe_side():
    rounds, eps, delta = 10, 1.0, 1e-5
    z = acc.calibrate_noise_multiplier(lambda s: acc.gaussian_event(s, 1.0, rounds), eps, delta)
    assert acc.epsilon_of(acc.gaussian_event(z, 1.0, rounds), delta) <= eps
    assert acc.epsilon_of(acc.gaussian_event(z * 0.999, 1.0, rounds), delta) > eps
    # analytic Gaussian mechanism (Balle & Wang 2018) for the composed sqrt(T)/sigma-GDP mechanism
    assert z == pytest.approx(dpa.get_sigma_gaussian(eps, delta) * math.sqrt(rounds), rel=1e-3)


def test_gdp_compose_and_mu_for_sigma():
    assert acc.gdp_compose([3.0, 4.0]) == pytest.approx(5.0)
    assert acc.gdp_compose([]) == 0.0
    assert acc.gdp_mu_for_sigma(2.0, 4.0, rounds=4) == pytest.approx(1.0)
    assert acc.gdp_compose([acc.gdp_mu_for_sigma(1.0, 2.0)] * 9) == pytest.approx(acc.gdp_mu_for_sigma(1.0, 2.0, 9))
    with pytest.raises(ValueError):
        acc.gdp_compose([-1.0])


def test_augpe_sigma_meets_the_pr_budget_exactly():
    p, r, rounds = 1e-4, 1e-3, 5
    sigma = acc.augpe_sigma(p, r, rounds)
    assert acc.gdp_mu_for_sigma(1.0, sigma, rounds) == pytest.approx(mu_from_pr(p, r))
    assert acc.augpe_sigma(p, 2 * p, rounds) > sigma  # tighter budget, more noise
    with pytest.raises(ValueError):
        acc.augpe_sigma(1e-3, 1e-4, rounds)
    assert np.isfinite(sigma)
