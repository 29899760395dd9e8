"""Span sanitization with one CluSanT mechanism per entity type, and its privacy-ledger parameters.

Each configured entity type gets a public vocabulary (``vocabulary.py``), embedded once (cached), a
public clustering (``clustering.py``) and a mechanism (``mechanism.py``) with the eps of its tier
(PII stricter than PoII). ``replace`` maps a batch of (type, span embedding) to replacement phrases,
vectorised per type. Guarantee per span: eps_type-metric-LDP (see ``mechanism.py``); spans are
sanitized independently, so a document's spans of one secret compose additively in eps.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .clustering import cluster_vocabulary
from .mechanism import METRIC, CluSanT, build_mechanism
from .settings import ClusantSettings
from .vocabulary import Encode, Generate, build_vocabulary, embed_vocabulary


@dataclass(frozen=True)
class TypeSanitizer:
    entity_type: str
    tier: str
    phrases: tuple[str, ...]
    mechanism: CluSanT


class ClusantSanitizer:
    def __init__(self, settings: ClusantSettings, per_type: Mapping[str, TypeSanitizer]):
        self.settings = settings
        self.per_type = dict(per_type)

    @classmethod
    def build(
        cls,
        settings: ClusantSettings,
        tier_of: Callable[[str], str],
        encode: Encode,
        model_name: str,
        exclude: Iterable[str] = (),
        generate: Generate | None = None,
        cache_dir: str | None = None,
    ) -> "ClusantSanitizer":
        """Vocabulary, embeddings (cached in ``cache_dir``, default ``settings.cache_dir``), clusters, mechanism per type."""
        exclude = list(exclude) if settings.exclude_private_values else []
        per_type = {}
        for entity_type in settings.entity_types:
            phrases = build_vocabulary(entity_type, settings.vocabulary, exclude, generate)
            emb = embed_vocabulary(entity_type, phrases, encode, model_name, cache_dir or settings.cache_dir)
            rng = np.random.default_rng([settings.vocabulary.seed, len(phrases)])  # public clustering
            labels = cluster_vocabulary(emb, settings.clustering, settings.n_clusters, rng)
            tier = tier_of(entity_type)
            mech = build_mechanism(settings.method, emb, labels, settings.eps_for(entity_type, tier), settings.k)
            per_type[entity_type] = TypeSanitizer(entity_type, tier, tuple(phrases), mech)
        return cls(settings, per_type)

    def replace(self, rng: np.random.Generator, entity_types: Sequence[str], embeddings: np.ndarray) -> list[str | None]:
        """A public replacement for every span (row i: type ``entity_types[i]``, embedding row i).

        None for a type without a configured vocabulary (the caller masks those spans)."""
        types = np.asarray(entity_types, dtype=object)
        out: list[str | None] = [None] * len(types)
        for entity_type, ts in self.per_type.items():
            rows = np.flatnonzero(types == entity_type)
            if rows.size:
                for row, idx in zip(rows, ts.mechanism.sample(rng, embeddings[rows])):
                    out[row] = ts.phrases[idx]
        return out

    def ledger_params(self) -> dict:
        """Parameters of the ledger record of a sanitization run (one 'mldp' entry per span type)."""
        return ledger_params(self.settings, {t: (ts.tier, ts.mechanism) for t, ts in self.per_type.items()})


def ledger_params(settings: ClusantSettings, mechanisms: Mapping[str, tuple[str, CluSanT]]) -> dict:
    """Ledger parameters: guarantee, metric, eps per tier and type, k, clusters, vocabulary sizes, bound note."""
    by_type = {t: m.guarantee() for t, (_, m) in mechanisms.items()}
    first = next(iter(by_type.values()), {})
    return {
        "guarantee": "mldp" if all(g["guarantee"] == "mldp" for g in by_type.values()) else "none",
        "mechanism": settings.method,
        "metric": METRIC,
        "k": first.get("k", settings.k),  # santext: 1, custext: inf
        "clustering": settings.clustering if settings.method != "santext" else "singletons",
        "eps_by_tier": dict(settings.eps),
        "eps_by_type": {t: g["eps"] for t, g in by_type.items()},
        "tier_by_type": {t: tier for t, (tier, _) in mechanisms.items()},
        "ldp_eps_by_type": {t: g["ldp_eps"] for t, g in by_type.items()},
        "n_clusters_by_type": {t: g["n_clusters"] for t, g in by_type.items()},
        "vocabulary_size_by_type": {t: g["vocabulary_size"] for t, g in by_type.items()},
        "bound_note": first.get("bound_note", ""),
    }
