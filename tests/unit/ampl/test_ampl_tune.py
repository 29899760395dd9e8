import numpy as np

from privtext.ampl.settings import AmplSettings
from privtext.ampl.synthetic import synthetic_secrets
from privtext.ampl.tune import TuneStep, coordinate_search, expected_losses, neighbours, tune

GRID = (0.25, 0.5, 0.75, 1.0)
EPS = 2.0


def _data():
    rng = np.random.default_rng(0)
    return synthetic_secrets(rng, n_docs=200, length=10, dim=6, n_pii=5, n_poii=5, mentions=4)


def test_neighbours_keep_alpha_1_at_most_alpha_2():
    assert sorted(neighbours((0.5, 0.5), GRID)) == [(0.25, 0.5), (0.5, 0.75)]
    assert sorted(neighbours((0.25, 1.0), GRID)) == [(0.25, 0.75), (0.5, 1.0)]


def test_expected_utility_loss_falls_as_alphas_grow_and_remap_helps():
    secrets, candidates = _data()
    losses = [expected_losses(secrets, candidates, EPS, (a, a)) for a in GRID]
    plain = [u for u, _ in losses]
    assert all(x > y for x, y in zip(plain, plain[1:]))  # less noise, less distortion (Eq. 14)
    assert all(r <= u + 1e-12 for u, r in losses)  # the Eq. 15 remap never hurts in expectation


def test_utility_only_objective_moves_alphas_up():
    secrets, candidates = _data()
    seen = []

    def evaluate(alphas):  # AmPL-U (lambda_1 = 0): the objective is the exact L_utility
        seen.append(alphas)
        utility, remapped = expected_losses(secrets, candidates, EPS, alphas)
        return TuneStep(alphas, 0.0, utility, remapped, utility)

    result = coordinate_search(evaluate, GRID, (0.25, 0.5), rounds=10)
    assert result.alphas == (1.0, 1.0)
    assert len(seen) == len(set(seen))  # each alpha pair is audited once
    assert result.best.objective == min(step.objective for step in result.history)


def test_privacy_weighted_tuning_lowers_alphas_when_the_adversary_finds_violations():
    # Four coupled mentions per document at alpha * eps = 2: the learned adversary aggregates them and
    # finds mPL > eps on ~8% of triplets (measured: 0.084 at (0.75, 1.0), 0.036 at (0.5, 1.0)); with
    # privacy weighted 20x over utility one step of AmPL must move towards stronger noise.
    secrets, candidates = _data()
    settings = AmplSettings(epochs=8, hidden_size=16, num_layers=1, heads=2, batch_size=16, dropout=0.0,
                            triplets=4000, device="cpu", alpha_grid=GRID, alpha_start=(0.75, 1.0), tune_rounds=1,
                            lambda_1=1.0, lambda_2=0.05, temperature=1.0)
    result = tune(secrets, candidates, eps=EPS, adversary="transformer", settings=settings,
                  rng=np.random.default_rng(1))
    start = result.history[0]
    assert start.alphas == (0.75, 1.0) and start.violation_ratio > 0.02
    assert sum(result.alphas) < sum(start.alphas)
    assert result.best.violation_ratio < start.violation_ratio
    assert result.best.objective < start.objective
