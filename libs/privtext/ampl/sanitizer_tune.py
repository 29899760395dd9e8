"""AmPL applied to CluSanT (``privtext tune sanitize``): the tier eps of the sanitizer as AmPL's alphas.

eps_PII = alpha_1 * eps_base and eps_PoII = alpha_2 * eps_base (alpha_1 <= alpha_2, eps_base = the
configured PoII eps), each entity type's CluSanT mechanism rebuilt at its tier's eps over the same
public vocabulary and clustering. A release draws a replacement phrase per sensitive token from the
mechanism given the sanitizer's embedding of the value, as the stage does, and shows the adversary the
audit encoder's vector of the phrase as written; the expected utility loss (Eq. 14) is exact, from the
mechanism's probabilities over the whole vocabulary in the sanitizer's space, with pi the sample's secret
frequencies, and the Eq. 15 remap is computed per type over the vocabulary (a post-processing, Prop. 1). Spans of types
the sanitizer does not cover are released as the zero vector (masked) at every alphas.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from privtext.ampl.documents import DocumentBatch
from privtext.ampl.remap import bayes_remap
from privtext.ampl.sequences import ReleasedSequences
from privtext.ampl.utility import cosine_cost, expected_utility_loss
from privtext.clusant.mechanism import CluSanT, build_mechanism

TIER_NAMES = {1: "PII", 2: "PoII"}


def mechanisms_at(base: Mapping[str, CluSanT], tiers: Mapping[str, str], method: str, eps_base: float,
                  alphas) -> dict[str, CluSanT]:
    """Each type's mechanism rebuilt at alpha_tier * eps_base (same vocabulary, clustering and k)."""
    scale = {"PII": alphas[0], "PoII": alphas[1]}
    return {t: build_mechanism(method, m.vocab, m.labels, scale[tiers[t]] * eps_base, m.k) for t, m in base.items()}


Draws = dict[str, tuple[np.ndarray, np.ndarray]]  # entity type -> (drawn vocabulary rows, candidate rows)


def clusant_release(batch: DocumentBatch, mechanisms: Mapping[str, CluSanT], values: np.ndarray,
                    released_vectors: Callable[[Draws], dict[str, np.ndarray]],
                    rng: np.random.Generator) -> ReleasedSequences:
    """Every sensitive token replaced by a draw of its type's mechanism, as the stage does: the mechanism
    reads the sanitizer's embedding of the value (``values``, one row per candidate), and the adversary sees
    ``released_vectors(draws)``: per type, the audit encoder's vector of each drawn phrase as written."""
    secrets = batch.secrets
    released = secrets.embeddings.copy()
    ids = secrets.secret_ids
    types = np.asarray(batch.candidate_types, dtype=object)
    mask = secrets.mask
    released[mask] = 0.0
    draws, at = {}, {}
    for etype, mech in mechanisms.items():
        at[etype] = mask & (types[np.maximum(ids, 0)] == etype)
        if at[etype].any():
            draws[etype] = (mech.sample(rng, values[ids[at[etype]]]), ids[at[etype]])
    for etype, vectors in released_vectors(draws).items():
        released[at[etype]] = vectors
    return ReleasedSequences(released.astype(np.float32), mask, secrets.embeddings, secrets.lengths)


def clusant_losses(batch: DocumentBatch, mechanisms: Mapping[str, CluSanT], values: np.ndarray) -> tuple[float, float]:
    """(L_utility, remapped L_utility) over the covered secrets, weighted by their frequencies, with the cost
    of Eq. 14 the cosine distance in the sanitizer's space (``values``: its embedding of each candidate)."""
    ids = batch.secrets.secret_ids[batch.secrets.mask]
    counts = np.bincount(ids, minlength=len(batch.candidates)).astype(np.float64)
    types = np.asarray(batch.candidate_types, dtype=object)
    total = plain = remapped = 0.0
    for etype, mech in mechanisms.items():
        rows = np.flatnonzero((types == etype) & (counts > 0))
        if rows.size == 0:
            continue
        prior = counts[rows]
        log_channel = mech.log_probabilities(values[rows])
        cost = cosine_cost(values[rows], mech.vocab)
        choice = bayes_remap(prior, log_channel, cost).choice
        weight = prior.sum()
        plain += weight * expected_utility_loss(prior, log_channel, cost)
        remapped += weight * expected_utility_loss(prior, log_channel, cost[:, choice])
        total += weight
    return (plain / total, remapped / total) if total else (0.0, 0.0)
