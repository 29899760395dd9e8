"""The composed spend: what ``privacy.composition.compose`` returns and checks, reports and the ledger read.

One typed record per guarantee, each for its worst unit (``None``: no charge of that guarantee), and the
one tolerance every limit is compared with (``exceeds``). ``to_dict`` is the public serialisation (JSON
reports, MLflow metrics); its keys are the field names.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

NEAR_LIMIT = 0.8  # a unit is "near the limit" above this share of it
TOLERANCE = 1e-12  # relative: a figure equal to its limit up to float rounding is within it


def exceeds(value, limit: float):
    """Whether ``value`` is over ``limit`` beyond float rounding (relative ``TOLERANCE``); NaN exceeds (fail
    closed). Elementwise for an array of values."""
    within = np.asarray(value) <= limit * (1 + TOLERANCE)
    return ~within if within.ndim else not within


@dataclass(frozen=True)
class SecretSpend:
    """(p, r)-secret protection of the most exposed secret, composed per secret over every pair it met
    (``privacy.secret_composition``): its smallest prior ``p``, posterior bound ``r`` and ``r_over_p``."""

    p: float
    r: float
    r_over_p: float
    secrets: int
    secrets_near_limit: int
    secrets_over_limit: int
    releases: int
    exactly_composed: int
    unit: str = "secret"
    method: str = "per-secret PLD (Renyi-screened), pessimistic upper bound"
    prior: str = "p over the values of the secret's entity type and surface format (both published)"


@dataclass(frozen=True)
class DpSpend:
    """(epsilon, delta)-DP of every record/user-level event composed (PLD accountant, an upper bound);
    ``unit``: "record", "user" or "record/user"."""

    epsilon: float
    delta: float
    releases: int
    unit: str


@dataclass(frozen=True)
class MldpSpend:
    """Metric-LDP eps of the most drawn value string, summed over its draws of every type the detector gave it,
    and the largest sum of pure-LDP eps of one string; ``values``: the strings charged."""

    epsilon: float
    values: int
    values_near_limit: int
    pure_epsilon: float
    releases: int
    unit: str = "value"


@dataclass(frozen=True)
class ComposedSpend:
    """The composed spend of a ledger per guarantee (each None when nothing of it was charged)."""

    mldp: MldpSpend | None = None
    approx_dp: DpSpend | None = None
    secret_protection: SecretSpend | None = None

    def to_dict(self) -> dict:
        """``{guarantee: {field: value}}`` for the guarantees charged (the former dict of ``compose``)."""
        return {k: asdict(v) for k, v in (("mldp", self.mldp), ("approx_dp", self.approx_dp),
                                           ("secret_protection", self.secret_protection)) if v is not None}
