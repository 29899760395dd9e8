"""Composition: a ledger's charges composed per protected unit into a ``ComposedSpend``.

Per (entity type, value): metric-LDP eps summed over its draws; per record/user: every DP event with the
PLD accountant; per secret: ``privacy.secret_composition``. The maths and why: docs/privacy-model.md ("The
privacy ledger"). A charge without exposures (None) is a charge on EVERYONE: it touches every unit of its
kind.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from dp_accounting import dp_event as dpe

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
    """``spend[field]`` of the mldp charges summed per (entity type, value) (eps * occurrences of each
    exposure). A charge naming its ``entity_type`` adds to that type's key; one without (an older row) to
    every type of its value, or to the value's own key ("", value) when no typed charge names it. Returns
    (keys, sums, everyone): ``everyone`` is the sum over mldp charges without exposures (every key spends it)."""
    is_mldp = np.array([c["guarantee"] == "mldp" for c in charges], dtype=bool)
    weight = np.array([float(c["spend"].get(field, 0.0)) if m else 0.0 for c, m in zip(charges, is_mldp)])
    types = np.array([(c["params"].get("entity_type") or "") if m else "" for c, m in zip(charges, is_mldp)],
                     dtype=object)
    rows = np.flatnonzero(is_mldp[flat.charge]) if len(flat.charge) else np.zeros(0, dtype=np.int64)
    frame = pd.DataFrame({"type": types[flat.charge[rows]], "unit": flat.unit[rows],
                          "w": weight[flat.charge[rows]] * flat.occ[rows]})
    typed = frame[frame["type"] != ""].groupby(["type", "unit"])["w"].sum()
    untyped = frame[frame["type"] == ""].groupby("unit")["w"].sum()
    typed_units = typed.index.get_level_values("unit")
    alone = untyped[~untyped.index.isin(typed_units)]
    keys = [(t, flat.units[u]) for t, u in typed.index] + [("", flat.units[u]) for u in alone.index]
    sums = np.concatenate([typed.to_numpy() + untyped.reindex(typed_units).fillna(0.0).to_numpy(), alone.to_numpy()])
    everyone = float(sum(weight[i] for i, e in enumerate(exposures) if e is None and is_mldp[i]))
    return keys, sums.astype(np.float64), everyone


def compose_mldp(charges, exposures, flat, budget) -> MldpSpend | None:
    """The metric-LDP spend of the most drawn (entity type, value) against ``budget.mldp_eps_max``."""
    releases = sum(c["guarantee"] == "mldp" for c in charges)
    if not releases:
        return None
    keys, per_key, everyone = mldp_per_value(charges, exposures, flat, "epsilon")
    _, per_key_pure, everyone_pure = mldp_per_value(charges, exposures, flat, "pure_epsilon")
    values = per_key + everyone if keys else np.array([everyone])
    return MldpSpend(epsilon=float(values.max()), values=len(keys),
                     values_near_limit=int((values > NEAR_LIMIT * budget.mldp_eps_max).sum()),
                     pure_epsilon=float((per_key_pure + everyone_pure).max() if keys else everyone_pure),
                     releases=releases)


def mldp_schedule(charges: list[dict]) -> dict:
    """The data-independent bound on any (type, value)'s metric-LDP spend, from the ledger's public schedule.

    A sanitize night records its surrogate draw (``params["draw"]``: the epoch and mechanism, and
    ``params["draw_eps"]``: the largest eps of any of the mechanism's types) on every entry it writes,
    charged or not, and charges each (type, value) at most once per draw (``surrogates``): so a (type,
    value) has spent at most the sum of ``draw_eps`` over the distinct draws of the ledger, whatever the
    data held. Older mldp charges without a draw (``legacy``) add their eps times their largest occurrences;
    those without exposures their eps. Returns {"bound", "draws", "draw_eps" (draw -> eps), "legacy"}. The bound
    depends on which nights ran and under which settings, never on which values occurred."""
    draws: dict[str, float] = {}
    legacy = 0.0
    for c in charges:
        draw = c["params"].get("draw")
        if draw:
            draws[draw] = max(draws.get(draw, 0.0), float(c["params"].get("draw_eps", 0.0)))
        elif c["guarantee"] == "mldp":
            occ = max((int(e["occurrences"]) for e in c.get("exposures") or []), default=1)
            legacy += float(c["spend"].get("epsilon", 0.0)) * occ
    return {"bound": sum(draws.values()) + legacy, "draws": len(draws), "draw_eps": draws, "legacy": legacy}
