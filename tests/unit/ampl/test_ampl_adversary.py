import numpy as np
import pytest
import torch

from privtext.ampl.adversary import mean_baseline_mse, nearest_candidate, resolve_device, train_adversary
from privtext.ampl.audit import audit_with_diagnostics, passes
from privtext.ampl.sequences import ReleasedSequences, split_rows
from privtext.ampl.settings import AmplSettings
from privtext.ampl.synthetic import synthetic_secrets

TINY = AmplSettings(epochs=12, hidden_size=16, num_layers=1, heads=2, batch_size=16, dropout=0.0, triplets=4000,
                    device="cpu")


def _data(seed=0, n_docs=200):
    rng = np.random.default_rng(seed)
    secrets, candidates = synthetic_secrets(rng, n_docs=n_docs, length=10, dim=6, n_pii=5, n_poii=5, mentions=4)
    return rng, secrets, candidates


def _leaked(secrets, candidates):
    return secrets.release(secrets.secret_ids, candidates)  # released = original: the answer is in the input


def _not_leaked(rng, secrets, candidates):
    # sensitive tokens replaced by independent uniform candidates; context carries nothing either
    ids = np.where(secrets.mask, rng.integers(0, candidates.shape[0], size=secrets.mask.shape), -1)
    return secrets.release(ids, candidates)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "transformer"])
def test_adversary_learns_a_leak_and_nothing_without_one(kind):
    rng, secrets, candidates = _data()
    fit, val = split_rows(rng, secrets.mask.shape[0], 0.25)
    for release, leaks in ((_leaked(secrets, candidates), True), (_not_leaked(rng, secrets, candidates), False)):
        train, valid = release.take(fit), release.take(val)
        model = train_adversary(kind, train, valid, TINY, seed=1)
        base = mean_baseline_mse(train, valid)
        assert len(model.epoch_seconds) == TINY.epochs and model.val_mse == pytest.approx(
            np.mean((model.predict(valid) - valid.targets()) ** 2))
        if leaks:
            # MSE of the mean predictor is the per-dim variance (~1 here); a reader of the answer
            # gets far below it within a few epochs
            assert model.val_mse < 0.5 * base
        else:
            # nothing to learn: no model beats the mean by more than sampling noise (50 docs x 4
            # positions x 6 dims: ~1200 squared errors, relative s.e. ~ sqrt(2/1200) ~ 4%)
            assert model.val_mse > 0.85 * base


def test_predictions_follow_target_order_and_padding_is_ignored():
    rng, secrets, candidates = _data(n_docs=60)
    release = _leaked(secrets, candidates)
    model = train_adversary("lstm", release.take(np.arange(40)), release.take(np.arange(40, 60)), TINY, seed=0)
    garbage = release.released.copy()
    pad = np.arange(release.mask.shape[1])[None, :] >= release.lengths[:, None]
    garbage[pad] = 1e3  # values after a document's end must not change its predictions
    noisy = ReleasedSequences(garbage, release.mask, release.original, release.lengths)
    test = release.take(np.arange(40, 60))
    np.testing.assert_allclose(model.predict(test), model.predict(noisy.take(np.arange(40, 60))), atol=1e-5)
    assert model.predict(test).shape == test.targets().shape


def test_audit_flags_a_leaking_release_and_passes_a_blind_one():
    rng, secrets, candidates = _data(n_docs=240)
    train_rows, test_rows = split_rows(rng, secrets.mask.shape[0], 0.2)
    results = {}
    for name, release in (("leak", _leaked(secrets, candidates)), ("blind", _not_leaked(rng, secrets, candidates))):
        result, diag = audit_with_diagnostics(release.take(train_rows), release.take(test_rows), candidates,
                                              secrets.take(test_rows).truth(), adversary="transformer", eps=0.5,
                                              settings=TINY,
                                              rng=np.random.default_rng(5))
        assert result.triplets == TINY.triplets and diag.mpl_values.shape == (TINY.triplets,)
        results[name] = result
    assert results["leak"].utility_loss == pytest.approx(0.0, abs=1e-6)
    assert results["blind"].utility_loss > 0.2
    assert results["leak"].violation_ratio > 0.3 and not results["leak"].passed
    assert results["blind"].violation_ratio < results["leak"].violation_ratio / 3


def test_pass_rules():
    ratio_rule = TINY.model_copy(update={"pass_rule": "ratio"})
    assert passes(0.05, 0.0, 0.05, ratio_rule) and not passes(0.06, -9.0, 0.05, ratio_rule)
    assert passes(0.01, -5.0, 0.05, TINY) and not passes(0.01, -2.0, 0.05, TINY)  # max_log10_p_fail = -3


def test_device_resolution():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError):
            resolve_device("cuda")


def test_settings_validation():
    with pytest.raises(ValueError):
        AmplSettings(alpha_grid=(0.5, 0.2))
    with pytest.raises(ValueError):
        AmplSettings(alpha_start=(1.0, 0.5))
    with pytest.raises(ValueError):
        AmplSettings(hidden_size=10, heads=4)
    with pytest.raises(ValueError):
        AmplSettings(unknown_key=1)


def test_streaming_standardizer_matches_direct_moments():
    from privtext.ampl.adversary import Standardizer

    _, secrets, candidates = _data(n_docs=50)
    release = _leaked(secrets, candidates)
    scaler = Standardizer.fit(release, chunk=7)
    real = np.arange(release.mask.shape[1])[None, :] < release.lengths[:, None]
    np.testing.assert_allclose(scaler.in_mean, release.released[real].mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scaler.in_std, release.released[real].std(0) + 1e-6, rtol=1e-5)
    np.testing.assert_allclose(scaler.out_mean, release.targets().mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scaler.out_std, release.targets().std(0) + 1e-6, rtol=1e-5)


def test_nearest_candidate_matches_the_full_difference_tensor_in_chunks():
    """The calibration's true candidates, found in row chunks, equal the brute-force argmin over the
    [targets, candidates, d] tensor it replaces, targets equal to a candidate included (distance 0)."""
    rng = np.random.default_rng(3)
    candidates = rng.normal(size=(40, 16))
    candidates[7] = candidates[3]  # a duplicate: ties go to the lower index in both
    targets = np.vstack([candidates[[3, 0, 39, 12]], rng.normal(size=(57, 16))])
    brute = np.argmin(((targets[:, None, :] - candidates[None, :, :]) ** 2).sum(axis=2), axis=1)
    for chunk in (40, 41 * 40, 1 << 24):  # one row per chunk, a ragged last chunk, one chunk
        got = nearest_candidate(targets, candidates, chunk_elems=chunk)
        np.testing.assert_array_equal(got, brute)
    assert list(got[:4]) == [3, 0, 39, 12]
    assert nearest_candidate(np.zeros((0, 16)), candidates).shape == (0,)
