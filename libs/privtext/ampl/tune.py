"""AmPL's perturb-audit-adapt loop (Sec. 3 steps 1-3, Eq. 14) with Bayesian remapping (step 4).

Each evaluation of alphas = (alpha_1, alpha_2): perturb every sensitive token with the tiered EM at
alpha_l * eps (Eq. 16), train the learned adversary on the release and audit it (violation ratio at
the base eps), and compute the expected utility loss L_utility (Eq. 14, exact over the mechanism, with
pi the empirical secret frequencies and c the App. E.2 cost), with and without the remap of Eq. 15.
Adaptation: coordinate descent on ``alpha_grid``: from ``alpha_start``, evaluate the neighbours one
grid step away in each alpha (keeping alpha_1 <= alpha_2), move to the best one while it lowers
L = lambda_1 * violation + lambda_2 * utility loss, for at most ``tune_rounds`` moves.

The loop's perturbations only serve the audit: the documents/test split and the noise are the same for
every evaluated alpha (common random numbers make the comparison paired), and the final release must be
a fresh draw at the chosen alphas from a production generator.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privtext.ampl.audit import audit
from privtext.ampl.perturb import perturb, tiered_em_log_probs
from privtext.ampl.remap import bayes_remap
from privtext.ampl.sequences import ReleasedSequences, SecretSequences, split_rows
from privtext.ampl.settings import AmplSettings
from privtext.ampl.utility import cosine_cost, expected_utility_loss

Alphas = tuple[float, float]


@dataclass(frozen=True)
class TuneStep:
    alphas: Alphas
    violation_ratio: float
    utility_loss: float
    utility_loss_remapped: float
    objective: float


@dataclass(frozen=True)
class TuneResult:
    alphas: Alphas
    best: TuneStep
    history: tuple[TuneStep, ...]  # every evaluation, in order


def secret_prior(secrets: SecretSequences) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (secret id, tier) pairs of the documents and their empirical frequencies pi."""
    mask = secrets.mask
    pairs = np.stack([secrets.secret_ids[mask], secrets.tiers[mask].astype(np.int64)], axis=1)
    uniq, counts = np.unique(pairs, axis=0, return_counts=True)
    return uniq[:, 0], uniq[:, 1], counts / counts.sum()


def expected_losses(secrets: SecretSequences, candidates: np.ndarray, eps: float, alphas) -> tuple[float, float]:
    """(L_utility, L_utility after the Eq. 15 remap) of the tiered EM on these documents' secrets."""
    ids, tiers, prior = secret_prior(secrets)
    log_channel = tiered_em_log_probs(candidates[ids], tiers, candidates, eps, alphas)
    cost = cosine_cost(candidates[ids], candidates)
    remap = bayes_remap(prior, log_channel, cost)
    return (expected_utility_loss(prior, log_channel, cost),
            expected_utility_loss(prior, log_channel, cost[:, remap.choice]))


def neighbours(alphas: Alphas, grid: tuple[float, ...]) -> list[Alphas]:
    """Grid points one step away in one coordinate, with alpha_1 <= alpha_2."""
    idx = [grid.index(a) for a in alphas]
    out = []
    for axis in (0, 1):
        for step in (-1, 1):
            moved = list(idx)
            moved[axis] += step
            if 0 <= moved[axis] < len(grid) and moved[0] <= moved[1]:
                out.append((grid[moved[0]], grid[moved[1]]))
    return out


def coordinate_search(evaluate: Callable[[Alphas], TuneStep], grid: tuple[float, ...], start: Alphas,
                      rounds: int) -> TuneResult:
    """Greedy descent of the objective over the alpha grid (Sec. 3 step 3); evaluations are cached."""
    cache: dict[Alphas, TuneStep] = {}
    history: list[TuneStep] = []

    def run(alphas: Alphas) -> TuneStep:
        if alphas not in cache:
            cache[alphas] = evaluate(alphas)
            history.append(cache[alphas])
        return cache[alphas]

    current = run(start)
    for _ in range(rounds):
        best = min((run(a) for a in neighbours(current.alphas, grid)), key=lambda s: s.objective, default=current)
        if best.objective >= current.objective:
            break
        current = best
    return TuneResult(alphas=current.alphas, best=current, history=tuple(history))


def tune(secrets: SecretSequences, candidates: np.ndarray, *, eps: float, adversary: str,
         settings: AmplSettings, rng: np.random.Generator) -> TuneResult:
    """The AmPL loop on documents with two-tier secrets (1 = PII, 2 = PoII), tiered EM over ``candidates``."""
    return tune_release(
        secrets,
        lambda alphas, gen: secrets.release(perturb(gen, secrets, candidates, eps, alphas), candidates),
        lambda alphas: expected_losses(secrets, candidates, eps, alphas),
        candidates, eps=eps, adversary=adversary, settings=settings, rng=rng)


def tune_release(secrets: SecretSequences, release: Callable[[Alphas, np.random.Generator], ReleasedSequences],
                 losses: Callable[[Alphas], tuple[float, float]], candidates: np.ndarray, *, eps: float,
                 adversary: str, settings: AmplSettings, rng: np.random.Generator, groups=None,
                 distance=None) -> TuneResult:
    """The loop for any tiered mechanism: ``release(alphas, rng)`` draws the release of the documents of
    ``secrets``, ``losses(alphas)`` gives (L_utility, remapped L_utility); the audit runs at ``eps`` with
    the adjacency ``groups`` and the metric ``distance`` of the guarantee (``audit_with_diagnostics``)."""
    train_rows, test_rows = split_rows(rng, secrets.mask.shape[0], 0.2)
    truth = secrets.take(test_rows).truth()
    noise_seed, audit_seed = (int(s) for s in rng.integers(0, 2**31 - 1, size=2))

    def evaluate(alphas: Alphas) -> TuneStep:
        released = release(alphas, np.random.default_rng(noise_seed))
        result = audit(released.take(train_rows), released.take(test_rows), candidates, truth, adversary=adversary,
                       eps=eps, settings=settings, rng=np.random.default_rng(audit_seed), groups=groups,
                       distance=distance)
        utility, remapped = losses(alphas)
        objective = settings.lambda_1 * result.violation_ratio + settings.lambda_2 * utility
        return TuneStep(alphas, result.violation_ratio, utility, remapped, objective)

    return coordinate_search(evaluate, settings.alpha_grid, settings.alpha_start, settings.tune_rounds)
