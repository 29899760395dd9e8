"""Configuration of DPED (dped-paper.txt, Alg. 1): teachers, aggregation noise, student."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from privtext.strict import StrictModel


class NoiseSplit(StrictModel):
    """Shares of the total privacy budget (in mu^2 / zCDP units, which add up exactly for Gaussians).

    Shares of mechanisms that are not run (``vocabulary`` in public mode, ``hidden`` for the
    output-only variant, ``vote`` for hidden-only) are dropped and the rest renormalised.
    """

    vocabulary: float = Field(0.05, ge=0)
    threshold: float = Field(0.05, ge=0)
    hidden: float = Field(0.6, ge=0)
    vote: float = Field(0.3, ge=0)


class DpedSettings(StrictModel):
    # partition and teachers (Alg. 1 lines 2-5)
    n_teachers: int = Field(50, ge=1)
    shard_salt: str = "dped"
    dim: int = Field(100, ge=2)
    window: int = Field(5, ge=1)
    negatives: int = Field(5, ge=1)
    epochs: int = Field(5, ge=1)
    # initial step size, linear decay; gradients of a mini-batch are summed (word2vec's per-pair SGD),
    # and 0.1 (not word2vec's 0.025) reaches a sensible baseline in a few epochs on 20NG
    # (see benchmarks/word_vectors/dped_eval.py)
    lr: float = Field(0.1, gt=0)
    batch_size: int = Field(1024, ge=1)
    min_count: int = Field(2, ge=1)  # teacher-internal: words rarer than this in a shard stay untrained
    subsample: float = Field(1e-4, gt=0)  # word2vec frequent-word subsampling t
    # aggregation (Eq. 1-2, Sec. 3.4)
    clip_hidden: float = Field(1.0, gt=0)  # C_h
    top_k: int = Field(10, ge=1)  # each teacher votes for a set of k context words
    threshold: float = Field(5.0, ge=0)  # T: answer only if max vote + N(0, sigma_T^2) >= T
    epsilon: float = Field(4.0, gt=0)
    delta: float = Field(1e-5, gt=0, lt=1)
    noise_split: NoiseSplit = NoiseSplit()
    # refuse before charging when even unanimous teachers' answers would be below this signal/noise
    # (aggregation.best_case_snr; 0 disables)
    min_snr: float = Field(1.0, ge=0)
    # vocabulary: public word list alone, or intersected with a DP selection
    vocabulary_mode: Literal["public", "dp_selection"] = "dp_selection"
    max_vocab: int | None = Field(5000, ge=1)  # dp_selection keeps the words with the largest noisy counts
    vocab_words_per_unit: int = Field(200, ge=1)  # L0 bound: distinct words a user/document contributes
    vocab_threshold_sigmas: float = Field(4.0, ge=0)  # keep a word if noisy count >= this * sigma
    # student (Eq. 3-4)
    variant: Literal["combined", "output_only", "hidden_only"] = "combined"
    student_epochs: int = Field(30, ge=1)
    student_lr: float = Field(0.01, gt=0)
    student_batch_size: int = Field(256, ge=1)

    @model_validator(mode="after")
    def _some_budget(self):
        if self.noise_split.threshold <= 0:
            raise ValueError("noise_split.threshold must be > 0: the consensus check must be noisy")
        if self.vocabulary_mode == "dp_selection" and self.noise_split.vocabulary <= 0:
            raise ValueError("noise_split.vocabulary must be > 0 when vocabulary_mode is dp_selection")
        return self

    def active_shares(self) -> dict[str, float]:
        """Budget shares of the mechanisms this configuration runs, normalised to sum to 1."""
        shares = {"threshold": self.noise_split.threshold}
        if self.vocabulary_mode == "dp_selection":
            shares["vocabulary"] = self.noise_split.vocabulary
        if self.variant != "output_only":
            shares["hidden"] = self.noise_split.hidden
        if self.variant != "hidden_only":
            shares["vote"] = self.noise_split.vote
        total = sum(shares.values())
        return {k: v / total for k, v in shares.items() if v > 0}
