"""The mPL audit of one release with one learned adversary (Sec. 2.4 + Def. 4, Eq. 12, Prop. 4).

1. Split the training documents into fit/validation (``val_fraction``; with an outer 80/20
   train/test split this is the paper's 60/20/20).
2. Train the posterior adversary on the release and the prior adversary on the placeholder release:
   one network on both views (``prior_model: shared``, the default) or two runs with the same
   architecture and seed (``separate``), see ``adversary``. On the validation split: one Gaussian scale
   for both views (``shared_scale``), then the released view's copy weight per adjacency group
   (``fit_copy_weights``: "the released token itself, with probability w").
3. On the held-out documents, sample S triplets (x_i, x_j, y): y a replaced position, x_i its TRUE
   secret, x_j another candidate (``mpl.true_secret_triplets``); mPL from the two posteriors (Def. 2:
   the Gaussian softmax, the released view's mixed with its copy component); violation ratio (Eq. 12);
   log10 of the Prop. 4 failure bound for ``delta_target``.
4. Utility loss: mean App. E.2 cost between the original and released embeddings on held-out docs.

What it shows: a LOWER bound on leakage -- what this adversary class extracts on this population
(Sec. 3, "scope of the audit"); a pass is evidence, never a certificate. Its negative controls
(``controls``) check that the same pipeline fails an identity release and passes a uniform one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privtext.ampl.adversary import (
    TrainedAdversary,
    copy_component,
    fit_copy_weights,
    mean_baseline_mse,
    posterior_of,
    shared_scale,
    train_adversary,
    train_shared,
)
from privtext.ampl.mpl import Distance, log10_p_fail, mpl, true_secret_triplets, violation_ratio
from privtext.ampl.sequences import ReleasedSequences, SecretSequences, split_rows
from privtext.ampl.settings import AmplSettings
from privtext.ampl.utility import realized_utility_loss


@dataclass(frozen=True)
class AuditResult:
    eps: float
    triplets: int
    violation_ratio: float
    delta_target: float
    log10_p_fail: float
    utility_loss: float
    passed: bool


@dataclass(frozen=True)
class AuditDiagnostics:
    """What the audit measured along the way (for benchmarks and MLflow metrics; no private values)."""

    posterior: TrainedAdversary
    prior: TrainedAdversary
    baseline_mse: float  # predict-the-training-mean MSE on the validation split
    mpl_values: np.ndarray
    copy_weights: dict  # adjacency group -> w of the released view's copy component (groups without one: 0)


def passes(ratio: float, log10_fail: float, delta: float, settings: AmplSettings) -> bool:
    """Pass rule: ``ratio``: violation ratio <= delta; ``confidence``: additionally the Prop. 4 bound
    is at most 10**max_log10_p_fail (so p <= delta holds at that significance)."""
    if settings.pass_rule == "ratio":
        return ratio <= delta
    return ratio < delta and log10_fail <= settings.max_log10_p_fail


def audit_with_diagnostics(train_batch: ReleasedSequences, test_batch: ReleasedSequences, candidates: np.ndarray,
                           truth: np.ndarray, *, adversary: str, eps, settings: AmplSettings,
                           rng: np.random.Generator, delta_target: float | None = None, groups=None,
                           distance: Distance | None = None) -> tuple[AuditResult, AuditDiagnostics]:
    """Run the audit (module docstring); ``truth``: the candidate index of every replaced position of
    ``test_batch`` (row-major order); ``eps``: one bound, or one per candidate (each secret is audited at
    the eps its type was sanitized with); ``groups``: each candidate's entity type (x_j is drawn from
    x_i's type: the mechanism's adjacency; the type itself is released by design); ``distance``: the
    metric of the audited guarantee (default Euclidean on ``candidates``); ``delta_target`` defaults to
    ``settings.delta_target``."""
    eps = np.broadcast_to(np.asarray(eps, dtype=np.float64), (len(candidates),))
    if np.any(eps <= 0):
        raise ValueError("eps must be positive")
    if not test_batch.mask.any():
        raise ValueError("the test batch has no replaced positions to audit")
    delta = settings.delta_target if delta_target is None else delta_target
    fit_rows, val_rows = split_rows(rng, train_batch.n, settings.val_fraction)
    fit, val = train_batch.take(fit_rows), train_batch.take(val_rows)
    seed = int(rng.integers(0, 2**31 - 1))
    if settings.prior_model == "shared":
        post_model, prior_model = train_shared(adversary, fit, val, settings, seed)
    else:
        post_model = train_adversary(adversary, fit, val, settings, seed, placeholder=False)
        prior_model = train_adversary(adversary, fit, val, settings, seed, placeholder=True)
    candidates = np.asarray(candidates, dtype=np.float64)
    # one scale for both views, calibrated on the validation split, never on the audited documents
    scale = shared_scale((post_model, prior_model), val, candidates, settings.posterior_floor, settings.temperature)
    weights = fit_copy_weights(post_model, val, candidates, scale, settings.posterior_floor, groups)
    post = posterior_of(post_model, test_batch, candidates, scale, settings.posterior_floor,
                        copy_component(test_batch, candidates, truth, weights, groups))
    prior = posterior_of(prior_model, test_batch, candidates, scale, settings.posterior_floor)
    t = true_secret_triplets(rng, truth, candidates, settings.triplets, groups, distance)
    values = mpl(post.log_prob(t.obs, t.i), post.log_prob(t.obs, t.j),
                 prior.log_prob(t.obs, t.i), prior.log_prob(t.obs, t.j), t.dist)
    ratio = violation_ratio(values, eps[t.i])
    log_fail = log10_p_fail(ratio, settings.triplets, delta, settings.p_fail_bound)
    result = AuditResult(eps=float(eps.min()), triplets=settings.triplets, violation_ratio=ratio, delta_target=delta,
                         log10_p_fail=log_fail, utility_loss=realized_utility_loss(test_batch),
                         passed=passes(ratio, log_fail, delta, settings))
    return result, AuditDiagnostics(post_model, prior_model, mean_baseline_mse(fit, val), values, weights)


def audit(train_batch: ReleasedSequences, test_batch: ReleasedSequences, candidates: np.ndarray,
          truth: np.ndarray, *, adversary: str = "transformer", eps: float, settings: AmplSettings,
          rng: np.random.Generator, delta_target: float | None = None, groups=None,
          distance: Distance | None = None) -> AuditResult:
    """One audit row for (target, date, adversary): see ``audit_with_diagnostics``."""
    return audit_with_diagnostics(train_batch, test_batch, candidates, truth, adversary=adversary, eps=eps,
                                  settings=settings, rng=rng, delta_target=delta_target, groups=groups,
                                  distance=distance)[0]


CONTROLS = ("control_identity", "control_uniform")


def control_release(secrets: SecretSequences, candidates: np.ndarray, control: str,
                    rng: np.random.Generator) -> ReleasedSequences:
    """A negative control of the audit: ``control_identity`` releases every secret unchanged (must
    fail), ``control_uniform`` replaces each by a uniformly drawn candidate (leaks nothing: must pass)."""
    if control == "control_identity":
        ids = secrets.secret_ids
    elif control == "control_uniform":
        ids = np.where(secrets.mask, rng.integers(0, len(candidates), size=secrets.secret_ids.shape), -1)
    else:
        raise ValueError(f"unknown control {control!r}; allowed: {', '.join(CONTROLS)}")
    return secrets.release(ids, candidates)


def controls_valid(identity: AuditResult, uniform: AuditResult) -> bool:
    """The audit is valid only if its controls behave: identity fails and uniform passes."""
    return (not identity.passed) and uniform.passed
