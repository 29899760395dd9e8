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
   log10 of the Prop. 4 failure bound for ``delta_target``. With ``units``, only the secrets whose unit the
   adversary never saw are scored (``unseen``), and the calibration of step 2 uses the validation secrets
   unseen in the fit split.
4. Utility loss: mean App. E.2 cost between the original and released embeddings on held-out docs.

What it shows: a LOWER bound on leakage -- what this adversary class extracts on this population
(Sec. 3, "scope of the audit"); a pass is evidence, never a certificate. Its negative controls
(``controls``) check that the same pipeline fails an identity release and passes a uniform one.

**Unseen units** (issue 45). The guarantee's unit is a value in all its occurrences within one draw (consistent
surrogates: one draw per (type, value) per epoch, reused for every occurrence; ``clusant.surrogates``), and its
adjacency swaps the value at ALL those positions. An adversary trained on documents holding another occurrence
of the audited value has seen that value's original next to its surrogate: it is told the secret, and reads it
back wherever the surrogate recurs. That is the linkage consistency discloses by design (equal surrogates mean
equal originals within the epoch), not a belief shift the guarantee bounds, and on real mail it was most of the
violations (recurring addresses). So with ``units`` (a label per replaced position: the value and its draw
epoch) a held-out secret is scored only if no position of the training and validation documents holds its
unit. What still fails: any leak the adversary learns ACROSS values (identity, a share kept verbatim, a
surrogate that is a learnable function of its value) shows on unseen values too; and a release reusing one
surrogate across epochs (a deterministic pseudonym) shows when the window spans two epochs, because the label
carries the epoch and the adversary has learnt the earlier epoch's pair. Fewer than
``settings.min_unseen_secrets`` distinct unseen secrets: ``UnauditableError`` (the gate fails closed). The
alternatives x_j stay all candidates of x_i's group, seen or not (a seen x_j only adds the equality pattern's
disclosure: conservative).
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


class UnauditableError(ValueError):
    """Too few held-out secrets whose unit the adversary never saw: the audit cannot decide (fails closed)."""


def unseen(train_units: np.ndarray, test_units: np.ndarray) -> np.ndarray:
    """Per held-out position: True if no training or validation position holds its unit (module doc)."""
    return ~np.isin(np.asarray(test_units), np.asarray(train_units))


def unit_labels(secret_ids: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """[n, L] integer label of each sensitive position's unit, (secret, draw epoch of its document), -1
    elsewhere (``secret_ids`` as ``SecretSequences.secret_ids``; ``draws``: one epoch per document)."""
    secret_ids = np.asarray(secret_ids, dtype=np.int64)
    draws = np.asarray(draws, dtype=np.int64)
    span = int(secret_ids.max(initial=0)) + 1
    first = int(draws.min()) if draws.size else 0
    return np.where(secret_ids >= 0, (draws - first)[:, None] * span + secret_ids, -1)


@dataclass(frozen=True)
class AuditDiagnostics:
    """What the audit measured along the way (for benchmarks and MLflow metrics; no private values)."""

    posterior: TrainedAdversary
    prior: TrainedAdversary
    baseline_mse: float  # predict-the-training-mean MSE on the validation split
    mpl_values: np.ndarray
    copy_weights: dict  # adjacency group -> w of the released view's copy component (groups without one: 0)
    unseen_secrets: int = -1  # distinct held-out units the adversary never saw (-1: no ``units``, all scored)
    scored_observations: int = -1  # held-out positions whose unit is unseen (-1: all)


def passes(ratio: float, log10_fail: float, delta: float, settings: AmplSettings) -> bool:
    """Pass rule: ``ratio``: violation ratio <= delta; ``confidence``: additionally the Prop. 4 bound
    is at most 10**max_log10_p_fail (so p <= delta holds at that significance)."""
    if settings.pass_rule == "ratio":
        return ratio <= delta
    return ratio < delta and log10_fail <= settings.max_log10_p_fail


def audit_with_diagnostics(train_batch: ReleasedSequences, test_batch: ReleasedSequences, candidates: np.ndarray,
                           truth: np.ndarray, *, adversary: str, eps, settings: AmplSettings,
                           rng: np.random.Generator, delta_target: float | None = None, groups=None,
                           distance: Distance | None = None,
                           units: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[AuditResult, AuditDiagnostics]:
    """Run the audit (module docstring); ``truth``: the candidate index of every replaced position of
    ``test_batch`` (row-major order); ``eps``: one bound, or one per candidate (each secret is audited at
    the eps its type was sanitized with); ``groups``: each candidate's entity type (x_j is drawn from
    x_i's type: the mechanism's adjacency; the type itself is released by design); ``distance``: the
    metric of the audited guarantee (default Euclidean on ``candidates``); ``delta_target`` defaults to
    ``settings.delta_target``; ``units``: (train, test) unit labels of every replaced position of
    ``train_batch`` and ``test_batch`` (row-major): only unseen units are scored (module doc)."""
    eps = np.broadcast_to(np.asarray(eps, dtype=np.float64), (len(candidates),))
    if np.any(eps <= 0):
        raise ValueError("eps must be positive")
    if not test_batch.mask.any():
        raise ValueError("the test batch has no replaced positions to audit")
    delta = settings.delta_target if delta_target is None else delta_target
    scored, unseen_count, calibration = None, -1, None
    fit_rows, val_rows = split_rows(rng, train_batch.n, settings.val_fraction)
    if units is not None:
        train_units, test_units = (np.asarray(u) for u in units)
        if train_units.shape != (int(train_batch.mask.sum()),) or test_units.shape != (int(test_batch.mask.sum()),):
            raise ValueError("units must label every replaced position of the train and the test batch")
        scored = unseen(train_units, test_units)
        unseen_count = len(np.unique(test_units[scored]))
        if unseen_count < settings.min_unseen_secrets:
            raise UnauditableError(
                f"{unseen_count} held-out secret(s) whose value the adversary never saw in its training documents "
                f"(ampl.min_unseen_secrets = {settings.min_unseen_secrets}): the others recur in them, and their "
                "recurrence is the linkage consistent surrogates disclose, not what the audit can score. Audit "
                "more documents (ampl.max_documents, ampl.window_days) or a night with more distinct values")
        # calibrate on validation secrets unseen in the fit split, the population that is scored; too few: on all
        # of them (a memorised value sharpens the scale: more violations, the conservative side)
        row_of = np.repeat(np.arange(train_batch.n), train_batch.mask.sum(1))
        val_units = train_units[np.isin(row_of, val_rows)]
        keep = np.flatnonzero(unseen(train_units[np.isin(row_of, fit_rows)], val_units))
        if len(np.unique(val_units[keep])) >= settings.min_unseen_secrets:
            calibration = keep
    fit, val = train_batch.take(fit_rows), train_batch.take(val_rows)
    seed = int(rng.integers(0, 2**31 - 1))
    if settings.prior_model == "shared":
        post_model, prior_model = train_shared(adversary, fit, val, settings, seed)
    else:
        post_model = train_adversary(adversary, fit, val, settings, seed, placeholder=False)
        prior_model = train_adversary(adversary, fit, val, settings, seed, placeholder=True)
    candidates = np.asarray(candidates, dtype=np.float64)
    # one scale for both views, calibrated on the validation split, never on the audited documents
    scale = shared_scale((post_model, prior_model), val, candidates, settings.posterior_floor, settings.temperature,
                         rows=calibration)
    weights = fit_copy_weights(post_model, val, candidates, scale, settings.posterior_floor, groups, rows=calibration)
    post = posterior_of(post_model, test_batch, candidates, scale, settings.posterior_floor,
                        copy_component(test_batch, candidates, truth, weights, groups))
    prior = posterior_of(prior_model, test_batch, candidates, scale, settings.posterior_floor)
    t = true_secret_triplets(rng, truth, candidates, settings.triplets, groups, distance, eligible=scored)
    values = mpl(post.log_prob(t.obs, t.i), post.log_prob(t.obs, t.j),
                 prior.log_prob(t.obs, t.i), prior.log_prob(t.obs, t.j), t.dist)
    ratio = violation_ratio(values, eps[t.i])
    log_fail = log10_p_fail(ratio, settings.triplets, delta, settings.p_fail_bound)
    result = AuditResult(eps=float(eps.min()), triplets=settings.triplets, violation_ratio=ratio, delta_target=delta,
                         log10_p_fail=log_fail, utility_loss=realized_utility_loss(test_batch),
                         passed=passes(ratio, log_fail, delta, settings))
    return result, AuditDiagnostics(post_model, prior_model, mean_baseline_mse(fit, val), values, weights,
                                    unseen_count, -1 if scored is None else int(scored.sum()))


def audit(train_batch: ReleasedSequences, test_batch: ReleasedSequences, candidates: np.ndarray,
          truth: np.ndarray, *, adversary: str = "transformer", eps: float, settings: AmplSettings,
          rng: np.random.Generator, delta_target: float | None = None, groups=None,
          distance: Distance | None = None, units: tuple[np.ndarray, np.ndarray] | None = None) -> AuditResult:
    """One audit row for (target, date, adversary): see ``audit_with_diagnostics``."""
    return audit_with_diagnostics(train_batch, test_batch, candidates, truth, adversary=adversary, eps=eps,
                                  settings=settings, rng=rng, delta_target=delta_target, groups=groups,
                                  distance=distance, units=units)[0]


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
