"""AmPL applied to CluSanT (``privtext tune sanitize``): the tier eps of the sanitizer as AmPL's alphas.

eps_PII = alpha_1 * eps_base and eps_PoII = alpha_2 * eps_base (alpha_1 <= alpha_2, eps_base = the
configured PoII eps), each entity type's CluSanT mechanism rebuilt at its tier's eps over the same
public vocabulary and clustering. A release draws a replacement phrase per sensitive token from the
mechanism (its embedding is the vocabulary row); the expected utility loss (Eq. 14) is exact, from the
mechanism's probabilities over the whole vocabulary, with pi the sample's secret frequencies, and the
Eq. 15 remap is computed per type over the vocabulary (a post-processing, Prop. 1). Spans of types the
sanitizer does not cover are released as the zero vector (masked) at every alphas.
"""
from __future__ import annotations

from collections.abc import Mapping

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


def clusant_release(batch: DocumentBatch, mechanisms: Mapping[str, CluSanT], rng: np.random.Generator) -> ReleasedSequences:
    """Every sensitive token replaced by a draw of its type's mechanism (vocabulary embedding)."""
    secrets = batch.secrets
    released = secrets.embeddings.copy()
    ids = secrets.secret_ids
    types = np.asarray(batch.candidate_types, dtype=object)
    mask = secrets.mask
    released[mask] = 0.0
    for etype, mech in mechanisms.items():
        at = mask & (types[np.maximum(ids, 0)] == etype)
        if at.any():
            drawn = mech.sample(rng, batch.candidates[ids[at]])
            released[at] = mech.vocab[drawn]
    return ReleasedSequences(released.astype(np.float32), mask, secrets.embeddings, secrets.lengths)


def clusant_losses(batch: DocumentBatch, mechanisms: Mapping[str, CluSanT]) -> tuple[float, float]:
    """(L_utility, remapped L_utility) over the covered secrets, weighted by their frequencies."""
    ids = batch.secrets.secret_ids[batch.secrets.mask]
    counts = np.bincount(ids, minlength=len(batch.candidates)).astype(np.float64)
    types = np.asarray(batch.candidate_types, dtype=object)
    total = plain = remapped = 0.0
    for etype, mech in mechanisms.items():
        rows = np.flatnonzero((types == etype) & (counts > 0))
        if rows.size == 0:
            continue
        prior = counts[rows]
        log_channel = mech.log_probabilities(batch.candidates[rows])
        cost = cosine_cost(batch.candidates[rows], mech.vocab)
        choice = bayes_remap(prior, log_channel, cost).choice
        weight = prior.sum()
        plain += weight * expected_utility_loss(prior, log_channel, cost)
        remapped += weight * expected_utility_loss(prior, log_channel, cost[:, choice])
        total += weight
    return (plain / total, remapped / total) if total else (0.0, 0.0)
