"""Composition: a ledger's charges composed per protected unit into a ``ComposedSpend``.

Per value string (its key, across the types the detector gave it): metric-LDP eps summed over its draws;
per record/user: every DP event with the
PLD accountant; per secret: ``privacy.secret_composition``. The maths and why: docs/privacy-model.md ("The
privacy ledger"). A charge without exposures (None) is a charge on EVERYONE: it touches every unit of its
kind.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from dp_accounting import dp_event as dpe

from privtext.pii.hashing import normalize_value
from privtext.privacy.accounting import epsilon_of, event_from_json
from privtext.privacy.charges import as_exposures
from privtext.privacy.secret_composition import compose_secrets
from privtext.privacy.spend import NEAR_LIMIT, ComposedSpend, DpSpend, MldpSpend


@dataclass
class FlatExposures:
    """Exposures of all charges as parallel arrays (charge index, unit code, occurrences, variant, records);
    ``units``: the unit id of each code."""

    charge: np.ndarray
    unit: np.ndarray
    occ: np.ndarray
    variant: np.ndarray
    records: np.ndarray
    units: list = field(default_factory=list)


def flatten(exposures: list) -> FlatExposures:
    """``exposures``: per charge None (everyone) or (units, occurrences, variants, records) arrays."""
    parts = [(i, e) for i, e in enumerate(exposures) if e is not None]
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return FlatExposures(z, z, z, z, z, [])
    units = np.concatenate([np.asarray(e[0], dtype=object) for _, e in parts])
    codes, uniques = pd.factorize(units)
    return FlatExposures(np.concatenate([np.full(len(e[0]), i) for i, e in parts]), codes,
                         np.concatenate([np.asarray(e[1], dtype=np.int64) for _, e in parts]),
                         np.concatenate([np.asarray(e[2], dtype=np.int64) for _, e in parts]),
                         np.concatenate([np.asarray(e[3], dtype=np.int64) for _, e in parts]), list(uniques))


def exposure_arrays(exposures: dict | list | None):
    """A charge's exposures (dict unit -> Exposure|int, or the ledger's list of dicts) as arrays; rows of
    an older format without ``variant`` or ``records`` read as variant 0 and one record."""
    if exposures is None:
        return None
    if isinstance(exposures, dict):
        items = as_exposures(exposures)
        return (list(items), [e.occurrences for e in items.values()], [e.variant for e in items.values()],
                [e.records for e in items.values()])
    return ([e["unit"] for e in exposures], [e["occurrences"] for e in exposures],
            [e.get("variant", 0) for e in exposures], [e.get("records", 1) for e in exposures])


def compose(charges: list[dict], exposures: list, budget) -> ComposedSpend:
    """Composed spend of the ledger per guarantee, each for its worst unit, with counts of units near
    the limit. ``charges``: ledger entries (dicts with guarantee, params, spend, dp_event);
    ``exposures``: per charge, ``exposure_arrays`` output or None. ``budget``: the limits in force."""
    flat = flatten(exposures)
    record_events = record_event_indices(charges)
    return ComposedSpend(mldp=compose_mldp(charges, exposures, flat, budget),
                         approx_dp=compose_record_events(charges, record_events, budget.delta_max),
                         secret_protection=compose_secrets(charges, exposures, flat, budget, record_events))


def record_event_indices(charges: list[dict]) -> list[int]:
    """The charges that are record/user-level DP events (each covers every record or user)."""
    return [i for i, c in enumerate(charges) if c["guarantee"] in ("gdp", "approx_dp")
            and c["params"].get("unit") in ("record", "user")]


def compose_record_events(charges: list[dict], record_events: list[int], delta: float) -> DpSpend | None:
    """Every record/user-level DpEvent (each covers every record) composed: eps at ``delta``."""
    if not record_events:
        return None
    events = [event_from_json(charges[i]["dp_event"]) for i in record_events]
    event = events[0] if len(events) == 1 else dpe.ComposedDpEvent(events)
    units = sorted({charges[i]["params"]["unit"] for i in record_events})
    return DpSpend(epsilon=epsilon_of(event, delta), delta=delta,
                   releases=len(record_events), unit="/".join(units))


def mldp_per_value(charges: list[dict], exposures: list, flat: FlatExposures, field: str = "epsilon"):
    """``spend[field]`` of the mldp charges summed per value STRING (eps * occurrences of each exposure), across
    the types the detector gave it: a row's unit is the string's key whatever its ``entity_type`` (the person
    behind a string meets every draw of it). Returns (units, sums, everyone): ``everyone`` is what every value
    spends: the mldp charges without exposures, plus ``unnamed_strings`` (older rows of code types).

    A row is composed on its own units unless it names no string unit (``names_string_units``): an older
    sanitize row of a code type named only the letters-and-digits key, so the string it drew is not named;
    it counts for every value, once per (type, draw) (a draw charged a key at most once), or, without a draw
    (per-document rows), each row eps times its largest occurrences: an over-count, never an under-count."""
    is_mldp = np.array([c["guarantee"] == "mldp" for c in charges], dtype=bool)
    weight = np.array([float(c["spend"].get(field, 0.0)) if m else 0.0 for c, m in zip(charges, is_mldp)])
    named = np.array([m and names_string_units(c) for c, m in zip(charges, is_mldp)], dtype=bool)
    rows = np.flatnonzero(named[flat.charge]) if len(flat.charge) else np.zeros(0, dtype=np.int64)
    frame = pd.DataFrame({"unit": flat.unit[rows], "w": weight[flat.charge[rows]] * flat.occ[rows]})
    sums = frame.groupby("unit")["w"].sum()
    units = [flat.units[u] for u in sums.index]
    everyone = float(sum(weight[i] for i, e in enumerate(exposures) if e is None and is_mldp[i]))
    return units, sums.to_numpy(dtype=np.float64), everyone + unnamed_strings(charges, exposures, field)


def names_string_units(charge: dict) -> bool:
    """Whether an mldp row's exposures name the units of the strings it drew: rows that say so
    (``params["string_units"]``, sanitize since the per-string unit), rows of a type keyed on the string
    itself (``pii.hashing.normalize_value``: NFKC, case, spaces, edge punctuation) and untyped rows (never
    written by sanitize). Not: an older row of a code type, keyed on letters and digits only."""
    params = charge["params"]
    entity_type = params.get("entity_type")
    return bool(params.get("string_units")) or not entity_type or string_keyed(entity_type)


def string_keyed(entity_type: str) -> bool:
    """Whether ``entity_type``'s secret key is the string's own key (not letters and digits only)."""
    return normalize_value(entity_type, _PROBE) == normalize_value("", _PROBE)


_PROBE = "A-1 b"  # a code type keys it "a1b", every other type "a-1 b"


def unnamed_strings(charges: list[dict], exposures: list, field: str = "epsilon") -> float:
    """What every value spends for the older code-type rows that name no string unit (``mldp_per_value``)."""
    per_draw: dict = {}
    total = 0.0
    for c, e in zip(charges, exposures):
        if c["guarantee"] != "mldp" or names_string_units(c) or e is None:
            continue
        spent = float(c["spend"].get(field, 0.0)) * max((int(x) for x in e[1]), default=1)
        draw = c["params"].get("draw")
        if draw:
            key = (c["params"]["entity_type"], draw)
            per_draw[key] = max(per_draw.get(key, 0.0), spent)
        else:
            total += spent
    return total + sum(per_draw.values())


def compose_mldp(charges, exposures, flat, budget) -> MldpSpend | None:
    """The metric-LDP spend of the most drawn value string, across its types, against ``budget.mldp_eps_max``."""
    releases = sum(c["guarantee"] == "mldp" for c in charges)
    if not releases:
        return None
    units, per_unit, everyone = mldp_per_value(charges, exposures, flat, "epsilon")
    _, per_unit_pure, everyone_pure = mldp_per_value(charges, exposures, flat, "pure_epsilon")
    values = per_unit + everyone if units else np.array([everyone])
    return MldpSpend(epsilon=float(values.max()), values=len(units),
                     values_near_limit=int((values > NEAR_LIMIT * budget.mldp_eps_max).sum()),
                     pure_epsilon=float((per_unit_pure + everyone_pure).max() if units else everyone_pure),
                     releases=releases)


def mldp_schedule(charges: list[dict]) -> dict:
    """The data-independent bound on any value string's metric-LDP spend, from the ledger's public schedule.

    A sanitize night records its surrogate draw on every entry it writes, charged or not: ``params["draw"]``
    (the epoch and mechanism) and ``params["draw_string_eps"]``, the most one string can spend in the draw (the
    sum of the ``clusant.types_per_value`` largest eps of the mechanism's types, or of all of them for rows written
    before that cap). It charges each (type, value) at most once per draw (``surrogates``) and draws a string in at
    most that many types, so a string has spent at most the sum of ``draw_string_eps`` over the distinct draws of the
    ledger, whatever the data held. Draws recorded before ``draw_string_eps`` (``older``) add, per type their
    rows charged, that type's eps (a string met each at most once in the draw); mldp charges without a draw
    (``legacy``) add their eps times their largest occurrences, those without exposures their eps. Returns
    {"bound", "draws", "draw_eps" (draw -> its bound), "older", "legacy"}. For the draws of this policy the
    bound depends on which nights ran and under which settings, never on which values occurred; the older
    and legacy terms are constants of the rows written before it."""
    draws: dict[str, float] = {}
    older: dict[str, dict[str, float]] = {}
    legacy = 0.0
    for c in charges:
        params, eps = c["params"], float(c["spend"].get("epsilon", 0.0))
        draw = params.get("draw")
        if draw and "draw_string_eps" in params:
            draws[draw] = max(draws.get(draw, 0.0), float(params["draw_string_eps"]))
        elif draw:
            types = older.setdefault(draw, {})
            if c["guarantee"] == "mldp":
                entity_type = params.get("entity_type") or ""
                types[entity_type] = max(types.get(entity_type, 0.0), eps)
        elif c["guarantee"] == "mldp":
            occ = max((int(e["occurrences"]) for e in c.get("exposures") or []), default=1)
            legacy += eps * occ
    per_draw = {d: draws.get(d, 0.0) + sum(older.get(d, {}).values()) for d in draws.keys() | older.keys()}
    older_total = sum(sum(t.values()) for t in older.values())
    return {"bound": sum(per_draw.values()) + legacy, "draws": len(per_draw), "draw_eps": per_draw,
            "older": older_total, "legacy": legacy}
