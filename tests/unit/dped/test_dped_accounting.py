import numpy as np
import pytest

from privtext.dped.aggregation import calibrate, dped_event, sensitivities, sigmas, split_noise
from privtext.dped.settings import DpedSettings
from privtext.privacy.accounting import epsilon_of


@pytest.mark.parametrize("mode,variant", [("dp_selection", "combined"), ("public", "output_only")])
def test_calibrated_noise_meets_target_and_is_smallest(mode, variant):
    s = DpedSettings(epsilon=2.0, delta=1e-5, vocabulary_mode=mode, variant=variant, n_teachers=20, top_k=4)
    m = 300
    nm = calibrate(s, m)
    assert epsilon_of(dped_event(s, nm, m), s.delta) <= s.epsilon * (1 + 1e-3)
    # 10% less noise on every mechanism must exceed the target
    less = type(nm)(**{k: (None if v is None else 0.9 * v) for k, v in vars(nm).items()})
    assert epsilon_of(dped_event(s, less, m), s.delta) > s.epsilon
    # RDP cross-check is an upper bound too, so it cannot be below the (tighter) PLD figure by much
    assert epsilon_of(dped_event(s, nm, m), s.delta, accountant="rdp") >= s.epsilon * 0.99
    assert (nm.hidden is None) == (variant == "output_only")
    assert (nm.vocabulary is None) == (mode == "public")


def test_sensitivities_and_sigmas():
    s = DpedSettings(n_teachers=10, clip_hidden=2.0, top_k=3, vocab_words_per_unit=16)
    sens = sensitivities(s)
    assert sens == {"threshold": 1.0, "hidden": 0.4, "vote": pytest.approx(np.sqrt(6)), "vocabulary": 4.0}
    nm = split_noise(1.5, s, 100)
    sig = sigmas(s, nm)
    assert sig["hidden"] == pytest.approx(nm.hidden * 0.4)
    # total is exactly (1/z)-GDP: sum over mechanisms of count / z_i^2 == 1 / z^2
    total = 100 * (nm.threshold ** -2 + nm.hidden ** -2 + nm.vote ** -2) + nm.vocabulary ** -2
    assert total == pytest.approx(1.5 ** -2)


def test_dped_event_matches_gdp_closed_form():
    # M queries x (check + hidden + votes) are Gaussians, so the whole run is exactly mu-GDP with
    # mu^2 = sum count / z^2 (Dong et al. 2019); delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
    from scipy.optimize import brentq
    from scipy.stats import norm

    s = DpedSettings(epsilon=2.0, delta=1e-5, vocabulary_mode="public", n_teachers=10, top_k=3)
    m = 500
    nm = calibrate(s, m)
    mu = np.sqrt(m * (nm.threshold ** -2 + nm.hidden ** -2 + nm.vote ** -2))
    closed = brentq(lambda e: norm.cdf(-e / mu + mu / 2) - np.exp(e) * norm.cdf(-e / mu - mu / 2) - s.delta, 1e-6, 50)
    pld = epsilon_of(dped_event(s, nm, m), s.delta)
    # the pessimistic PLD is an upper bound, within its discretisation of the exact value
    assert closed <= pld <= closed * 1.01
