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


def _mu_of(eps: float, delta: float) -> float:
    """GDP mu for (eps, delta), solved from delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    return brentq(lambda mu: norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2) - delta, 1e-3,
                  50)


def test_best_case_snr_matches_closed_form():
    # hidden_only + public vocabulary: the hidden mean gets share s_h of mu^2 over M queries, so
    # sigma_h = (2 C_h / N) * sqrt(M / s_h) / mu and the unanimous-teacher SNR is C_h / (sigma_h sqrt d)
    from privtext.dped.aggregation import best_case_snr

    s = DpedSettings(epsilon=8.0, delta=1e-5, vocabulary_mode="public", variant="hidden_only", n_teachers=300,
                     dim=25, clip_hidden=2.0)
    m = 418
    share = s.noise_split.hidden / (s.noise_split.hidden + s.noise_split.threshold)
    sigma = 2 * s.clip_hidden / s.n_teachers * np.sqrt(m / share) / _mu_of(8.0, 1e-5)
    snr = best_case_snr(s, calibrate(s, m), m)
    assert set(snr) == {"hidden"}
    assert snr["hidden"] == pytest.approx(s.clip_hidden / (sigma * np.sqrt(s.dim)), rel=1e-3)


def test_best_case_snr_of_votes_matches_closed_form():
    # output_only: sigma_v = sqrt(2k) * sqrt(M / s_v) / mu; a unanimous bin holds N votes against the
    # largest of M noisy bins, ~ sigma_v sqrt(2 ln M)
    from privtext.dped.aggregation import best_case_snr

    s = DpedSettings(epsilon=4.0, delta=1e-5, vocabulary_mode="public", variant="output_only", n_teachers=200, top_k=5)
    m = 300
    share = s.noise_split.vote / (s.noise_split.vote + s.noise_split.threshold)
    sigma = np.sqrt(2 * s.top_k) * np.sqrt(m / share) / _mu_of(4.0, 1e-5)
    snr = best_case_snr(s, calibrate(s, m), m)
    assert set(snr) == {"vote"}
    assert snr["vote"] == pytest.approx(s.n_teachers / (sigma * np.sqrt(2 * np.log(m))), rel=1e-3)


def test_noise_dominated_run_is_refused_and_useful_one_is_not():
    from privtext.dped.aggregation import NoiseDominated, require_signal
    from privtext.errors import Refused

    # base.yaml's defaults (N=50, d=100, 5,000 queries) at eps 4: noise ~ 40x the largest possible hidden signal
    noisy = DpedSettings(epsilon=4.0, delta=1e-5)
    with pytest.raises(NoiseDominated, match="nothing charged") as refused:
        require_signal(noisy, calibrate(noisy, 5000), 5000)
    assert isinstance(refused.value, Refused) and "N=50" in str(refused.value)
    # negative control: many teachers, few queries, low dimension clear the bar and pass
    ok = noisy.model_copy(update={"n_teachers": 300, "dim": 10, "variant": "hidden_only", "vocabulary_mode": "public",
                                  "epsilon": 8.0})
    assert require_signal(ok, calibrate(ok, 400), 400)["hidden"] > 1
    # min_snr 0 disables the gate
    assert require_signal(noisy.model_copy(update={"min_snr": 0.0}), calibrate(noisy, 5000), 5000)["hidden"] < 0.1
