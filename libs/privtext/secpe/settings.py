"""Config section ``secpe``: SecPE synthetic text (Alg. 2-3) and its Aug-PE baseline."""
from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator

from privtext.strict import StrictModel


class SecpeSettings(StrictModel):
    method: Literal["secpe", "aug_pe"] = "secpe"
    n_syn: int = Field(8, ge=1)  # N_syn: synthetic texts released (over all labels)
    variations: int = Field(2, ge=1)  # L: VARIATION(., L) per survivor; the first pool is N_syn * L
    rounds: int = Field(2, ge=1)  # T: rounds of Alg. 3 (one SecretClustering release each)
    clusters: int = Field(20, ge=1)  # K: public KMeans centres in all (split over labels by public size)
    # D_pub of Alg. 2: the documents without a secret, the generator's round-0 samples, or auto (documents when
    # every label has >= K / #labels of them, else generator); ``secret_clustering.choose_public_source``
    public_source: Literal["documents", "generator", "auto"] = "auto"
    # the label vocabulary, declared public (prompts and per-label centres); empty: the public documents' labels.
    # Documents with another label are not read. A corpus with no public document needs it to stay labelled.
    labels: tuple[str, ...] = ()
    p: float = Field(1e-4, gt=0, lt=1)  # prior success p of a reconstruction attack (Def. 3.2)
    r_over_p: float = Field(10.0, gt=1)  # budget r = r_over_p * p (capped at 1); inf = no protection
    clip_radius: float = Field(1.0, gt=0)  # R (Remark 3.4: 1 for L2-normalised embeddings)
    use_labels: bool = True  # per-label evolution when documents carry labels
    kmeans_max_iter: int = Field(30, ge=1)
    # share of documents (by a hash of doc_id, ``platform.spark.held_out``) that synthesize never sees and
    # evaluate scores; 0: evaluate scores the corpus synthesize voted with (the report says so)
    holdout_fraction: float = Field(0.2, ge=0, lt=1)

    @field_validator("labels")
    @classmethod
    def _distinct_labels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value) or any(not v for v in value):
            raise ValueError("secpe.labels must be distinct non-empty strings")
        return value

    @property
    def r(self) -> float:
        return 1.0 if math.isinf(self.r_over_p) else min(1.0, self.r_over_p * self.p)
