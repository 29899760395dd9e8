"""Configuration of the mPL / AmPL leakage audit (section ``ampl`` of the top-level Settings)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from privtext.strict import StrictModel

AdversaryKind = Literal["rnn", "lstm", "transformer"]


class AmplSettings(StrictModel):
    # learned adversaries (Sec. 2.4): which ones the audit trains, and their training schedule
    adversaries: tuple[AdversaryKind, ...] = ("transformer", "lstm", "rnn")
    epochs: int = Field(20, gt=0)
    hidden_size: int = Field(128, gt=0)
    num_layers: int = Field(2, gt=0)
    heads: int = Field(4, gt=0)  # transformer only; must divide hidden_size
    dropout: float = Field(0.1, ge=0, lt=1)
    batch_size: int = Field(64, gt=0)
    lr: float = Field(1e-3, gt=0)  # Adam, Sec. 2.4
    plateau_factor: float = Field(0.5, gt=0, lt=1)  # ReduceLROnPlateau on the validation MSE
    plateau_patience: int = Field(2, ge=0)
    val_fraction: float = Field(0.25, gt=0, lt=1)  # of the training batch: 60/20 of an 80/20 outer split
    # prior model: "shared" = one network on the released and the placeholder view; "separate" = two runs
    prior_model: Literal["shared", "separate"] = "shared"
    # posterior approximation (Sec. 2.4): softmax(-||x_hat - x_i||^2 / (tau_base * temperature)),
    # tau_base = 2 * the adversary's validation MSE per dimension (Gaussian residual model);
    # "calibrated": temperature scaling on the validation split (adversary.shared_scale: one scale for the posterior and
    # the prior)
    temperature: float | Literal["calibrated"] = "calibrated"
    posterior_floor: float = Field(1e-6, ge=0, lt=1)  # mix with uniform (Prop. 5, A1: clipped posteriors)
    # PBmPL check (Def. 4, Eq. 12, Prop. 4)
    triplets: int = Field(100_000, gt=0)
    delta_target: float = Field(0.05, gt=0, lt=1)
    p_fail_bound: Literal["hoeffding", "chernoff"] = "hoeffding"
    pass_rule: Literal["ratio", "confidence"] = "confidence"
    max_log10_p_fail: float = Field(-3.0, le=0)  # pass_rule=confidence: pass iff log10 p_fail <= this
    # AmPL tuning (Sec. 3, Eq. 14, Eq. 16)
    lambda_1: float = Field(1.0, ge=0)  # weight of the violation ratio
    lambda_2: float = Field(1.0, ge=0)  # weight of the expected utility loss
    alpha_grid: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    alpha_start: tuple[float, float] = (0.5, 1.0)  # (alpha_1 for PII, alpha_2 for PoII)
    tune_rounds: int = Field(5, gt=0)
    # the nightly export's loop (pipelines.retune): after a refused audit, re-sanitize at the next lower
    # alpha_grid values (alpha * every tier eps), at most this many rounds, each charged; 0: no loop
    retune_rounds: int = Field(2, ge=0)
    poii_fraction: float = Field(0.1, gt=0, lt=1)  # App. E.1: top 10% most PII-similar tokens
    device: Literal["auto", "cpu", "cuda"] = "auto"
    torch_threads: int | None = Field(None, gt=0)
    # stage ``audit`` / ``privtext tune sanitize``: the document sample the adversaries train on, collected
    # to the driver (O(max_documents * max_tokens) tokens, in memory only)
    audit_eps: float | None = Field(None, gt=0)  # mPL bound to audit; None: the sanitizer's PII-tier eps
    max_documents: int = Field(2000, ge=10)
    min_documents: int = Field(20, ge=10)  # fewer documents with sensitive tokens: the audit refuses to run
    # distinct held-out secrets whose value (and draw epoch) no training document holds; fewer: unauditable, the
    # audit refuses (ampl.audit, "unseen units"). 44 = ceil(ln 0.01 / ln 0.9): a release keeping a share
    # 2 * delta_target (0.1) of values verbatim has a kept one among them with probability >= 0.99
    min_unseen_secrets: int = Field(44, ge=1)
    max_tokens: int = Field(64, ge=4)  # tokens per document (a window around the first sensitive token)
    window_days: int = Field(1, ge=1)  # audit the date's releases (1) or a reference window ending at it

    @model_validator(mode="after")
    def _check(self) -> "AmplSettings":
        grid = self.alpha_grid
        if not grid or list(grid) != sorted(set(grid)) or grid[0] <= 0 or grid[-1] > 1:
            raise ValueError("alpha_grid must be strictly increasing values in (0, 1]")
        if any(a not in grid for a in self.alpha_start) or self.alpha_start[0] > self.alpha_start[1]:
            raise ValueError("alpha_start must be two alpha_grid values with alpha_1 <= alpha_2")
        if self.hidden_size % self.heads:
            raise ValueError("heads must divide hidden_size")
        if not self.adversaries:
            raise ValueError("adversaries must name at least one of rnn, lstm, transformer")
        return self
