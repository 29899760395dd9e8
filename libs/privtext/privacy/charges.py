"""Charges: what one release spends, on which unit, with its dominating pair as data.

A charge is a row of the privacy ledger. Build one with the constructors below; each records the unit it
protects (``params["unit"]``) and its dominating pair (``params["pair"]``, P = unit present || Q = unit
absent), which ``privacy.pairs`` turns into typed pairs. Exposures say which units a release touched.
The guarantees, adjacencies and the ledger's row-compatibility rule: docs/privacy-model.md ("The privacy
ledger").
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from privtext.errors import PrivtextError
from privtext.privacy.accounting import epsilon_of, event_to_json

GUARANTEES = ("secret_protection", "gdp", "approx_dp", "mldp", "empirical_mpl", "detection_recall", "none")
UNITS = ("secret", "value occurrence", "record", "user", "none", "empirical")


class MalformedExposures(PrivtextError, ValueError):
    """A charge's exposures the composer cannot account (null for a secret charge, bad counts); nothing written."""


@dataclass(frozen=True)
class Exposure:
    """How one unit met one release: ``occurrences`` independent draws of it, ``variant`` the index of
    its pair variant (-1: read as public, ``privacy.reads.UNPROTECTED``), ``records`` the records (users,
    for user-level adjacency) holding it in the data the release read (its group size)."""

    occurrences: int = 1
    variant: int = 0
    records: int = 1


@dataclass(frozen=True)
class Charge:
    """One privacy spend. Build it with the constructors below, not by hand."""

    dataset: str
    stage: str
    run_id: str
    mechanism: str
    guarantee: str
    params: dict
    spend: dict
    dp_event: str | None = None  # dp-accounting event as JSON (privacy.accounting.event_to_json)

    def __post_init__(self):
        if self.guarantee not in GUARANTEES:
            raise ValueError(f"unknown guarantee {self.guarantee!r}; allowed: {', '.join(GUARANTEES)}")
        if self.params.get("unit") not in UNITS:
            raise ValueError(f"a charge must name its unit (params['unit'] in {UNITS})")
        if self.guarantee in ("gdp", "approx_dp") and not self.dp_event:
            raise ValueError(f"a {self.guarantee} charge needs its dp_event")


def _params(params: dict | None, unit: str, pair: dict, deterministic: bool) -> dict:
    return {**(params or {}), "unit": unit, "pair": pair, "deterministic": bool(deterministic)}


def secret_charge(dataset, stage, run_id, mechanism, *, p: float, r: float, sigma: float, rounds: int,
                  releases_per_round: int, count_pmfs, params=None, deterministic=False) -> Charge:
    """SecPE (Alg. 2 x T, calibrated by Alg. 1): (p, r)-secret protection; one count pmf per variant."""
    pair = {"kind": "secret_mixture", "sigma": float(sigma), "rounds": int(rounds),
            "releases_per_round": int(releases_per_round),
            "count_pmfs": [[float(x) for x in np.asarray(pmf, dtype=np.float64)] for pmf in count_pmfs]}
    return Charge(dataset, stage, run_id, mechanism, "secret_protection",
                  _params(params, "secret", pair, deterministic), {"p": float(p), "r": float(r)})


def secret_event_charge(dataset, stage, run_id, mechanism, *, p: float, r: float, event, params=None,
                        deterministic=False, record_event=None) -> Charge:
    """(p, r)-secret protection of a DpEvent whose sensitivity already covers a whole secret (Aug-PE).
    ``record_event``: the same release for one record (sensitivity 1); with it a secret composes at its own
    group size g (the event scaled by g), also for a secret found after the charge (``privacy.reads``)."""
    pair = {"kind": "dp_event", **({"record_event": event_to_json(record_event)} if record_event is not None else {})}
    return Charge(dataset, stage, run_id, mechanism, "secret_protection",
                  _params(params, "secret", pair, deterministic), {"p": float(p), "r": float(r)},
                  event_to_json(event))


def dp_charge(dataset, stage, run_id, mechanism, *, event, delta: float, unit: str, params=None,
              deterministic=False) -> Charge:
    """(eps, delta)-DP for add/remove one ``unit`` (record or user) of a dp-accounting event."""
    if unit not in ("record", "user"):
        raise ValueError(f"a DP charge protects a record or a user, not {unit!r}")
    spend = {"epsilon": epsilon_of(event, delta), "delta": float(delta)}
    return Charge(dataset, stage, run_id, mechanism, "approx_dp",
                  _params(params, unit, {"kind": "dp_event"}, deterministic), spend, event_to_json(event))


def mldp_charge(dataset, stage, run_id, mechanism, *, epsilon: float, pure_epsilon: float, metric: str, k,
                params=None, deterministic=False) -> Charge:
    """eps-metric-LDP per replaced occurrence (e^(eps d(x,x')) for ``metric`` with factor ``k``);
    ``pure_epsilon``: its worst-case pure-LDP eps, used where the value meets other guarantees."""
    if not (math.isfinite(pure_epsilon) and pure_epsilon >= 0):
        raise ValueError("a metric-LDP charge needs a finite pure-LDP epsilon (else it has no guarantee: none_charge)")
    pair = {"kind": "pure", "epsilon": float(pure_epsilon)}
    return Charge(dataset, stage, run_id, mechanism, "mldp",
                  _params({**(params or {}), "metric": metric, "k": k}, "value occurrence", pair, deterministic),
                  {"epsilon": float(epsilon), "pure_epsilon": float(pure_epsilon)})


def none_charge(dataset, stage, run_id, mechanism, *, reason: str, params=None, deterministic=False) -> Charge:
    """An action without a formal guarantee (CusText, a gate override), recorded with its reason."""
    return Charge(dataset, stage, run_id, mechanism, "none",
                  _params({**(params or {}), "reason": reason}, "none", {"kind": "none"}, deterministic), {})


def measurement(dataset, stage, run_id, mechanism, *, guarantee: str, values: dict, params=None,
                deterministic=False) -> Charge:
    """A measured figure recorded in the ledger, not a guarantee and not budgeted (e.g. canary recall)."""
    if guarantee not in ("empirical_mpl", "detection_recall"):
        raise ValueError(f"{guarantee!r} is not a measurement")
    return Charge(dataset, stage, run_id, mechanism, guarantee,
                  _params(params, "empirical", {"kind": "none"}, deterministic), values)


def validate_exposures(charge: Charge, exposures) -> None:
    """Refuse (``MalformedExposures``) exposures the composer could not account, before anything is
    written: empty exposures ``{}`` (of any charge: a release that exposed no unit names none, None or a read
    set says "every unit" / "what it read"); a secret charge must name its secrets (null = "every secret"
    gives the composer no secret to account) unless it carries the set of records it read
    (``params["read"]``, joined to the secrets by the ledger: ``privacy.reads``); unit ids are non-empty
    strings; occurrences and records are integers >= 1 (records: the units holding the secret in the data
    the release read); a variant indexes the charge's count pmfs."""
    where = f"{charge.stage}/{charge.mechanism} charge ({charge.params['unit']})"
    if isinstance(exposures, dict) and not exposures:
        raise MalformedExposures(f"{where}: exposures are empty ({{}}); name the units it exposed, or pass None with "
                                 "the records it read (params['read'])")
    if exposures is None:
        if charge.params["unit"] == "secret" and not charge.params.get("read"):
            raise MalformedExposures(f"{where}: exposures are null; a secret charge must name the secrets it exposed "
                                     "({secret_id: Exposure(occurrences, variant, records)})")
        return
    if not isinstance(exposures, dict):
        raise MalformedExposures(f"{where}: exposures must be a dict secret_id -> Exposure or int, got "
                                 f"{type(exposures).__name__}")
    variants = len(charge.params["pair"].get("count_pmfs") or [None])

    def whole(x) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

    for unit, e in exposures.items():
        if not (isinstance(unit, str) and unit):
            raise MalformedExposures(f"{where}: a unit id must be a non-empty string (a keyed secret_id), got {unit!r}")
        e = e if isinstance(e, Exposure) else Exposure(occurrences=e)
        if not (whole(e.occurrences) and e.occurrences >= 1 and whole(e.records) and e.records >= 1):
            raise MalformedExposures(f"{where}: occurrences and records must be integers >= 1, got {e.occurrences!r}, "
                                     f"{e.records!r}")
        if not (whole(e.variant) and 0 <= e.variant < variants):
            raise MalformedExposures(f"{where}: variant {e.variant!r} is not one of the charge's {variants} "
                                     "pair variant(s)")


# ---------------------------------------------------------------------------------------------
# Serialisation: the ledger's row format (docs/privacy-model.md, "Row compatibility")
# ---------------------------------------------------------------------------------------------

CHARGE_FIELDS = ("dataset", "stage", "run_id", "mechanism", "guarantee", "params", "spend", "dp_event")


def as_exposures(exposures: dict) -> dict[str, Exposure]:
    """``{unit: Exposure | int}`` with every value an Exposure (an int is a count of occurrences)."""
    return {str(u): (e if isinstance(e, Exposure) else Exposure(occurrences=int(e))) for u, e in exposures.items()}


def exposure_rows(exposures: dict | None) -> list[dict] | None:
    """Exposures as the ledger stores them: one ``{unit, occurrences, variant, records}`` per unit; None
    (every unit, or the units the release read) stays None."""
    if exposures is None:
        return None
    return [{"unit": u, "occurrences": e.occurrences, "variant": e.variant, "records": e.records}
            for u, e in as_exposures(exposures).items()]


def json_value(value):
    """``json.dumps``'s ``default`` for charge fields: numpy scalars and arrays as numbers, anything else as text."""
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def dumps(obj) -> str:
    """A charge field (params, spend) or a whole charge as the ledger's JSON text (sorted keys)."""
    return json.dumps(obj, sort_keys=True, default=json_value)


def charge_to_json(charge: Charge, exposures: dict | None = None) -> str:
    """One JSON object: the charge as the ledger records it (``privtext privacy compose`` reads these)."""
    obj = {k: getattr(charge, k) for k in CHARGE_FIELDS}
    obj["exposures"] = exposure_rows(exposures)
    return dumps(obj)


def charge_from_json(text: str) -> tuple[dict, list | None]:
    """``charge_to_json``'s text back as (a ledger entry without its row metadata, its exposure rows)."""
    obj = json.loads(text)
    return {k: obj.get(k) for k in CHARGE_FIELDS}, obj.get("exposures")
