"""What a sanitized release did with its spans, as every verdict states it: replaced, masked, left as written.

A span is written as ``[TYPE]`` only when its type has no public replacement vocabulary (not in
``clusant.entity_types``, or no vocabulary source yields candidates): a configuration fact, the same for
every value and every night (``stages.sanitize``: no masking depends on counts); or when the detector typed
its value string in more than ``clusant.types_per_value`` types within one draw's epoch (the extra types are
masked, so that a string's spend per draw stays bounded: ``stages.sanitize.capped_strings``). A span equal to a
``clusant.allow_list`` entry is left as written. The summary (``summary``) travels in the staged rows'
``params`` (``masking``), so the demo, ``privtext status``, the report and the export's manifest all read
the same figures (``combine`` over the runs of a date, ``words`` for one sentence). It also names the entity
types the detection run did not look for (``pii.entities`` without them): their values are not spans at all.
"""
from __future__ import annotations

import json
from typing import Iterable

WHY_MASKED = ("no public replacement vocabulary for the type (not in clusant.entity_types, or no vocabulary "
              "source yields candidates)")
HOW_TO_AVOID = ("give the type a vocabulary (clusant.entity_types, clusant.vocabulary.extra) or allow-list its "
                "public values (clusant.allow_list)")


def summary(spans: int, replaced: int, masked_by_type: dict[str, int], allowed: int, allow_list: int,
            not_detected: Iterable[str] = (), capped: int = 0, types_per_value: int = 0) -> dict:
    """The release's span counts: ``masked_share`` of the spans written as [TYPE], which types, why; and
    ``not_detected``: the types privtext detects by default that the detection run left out (``pii.entities``),
    whose values the release writes as they are. ``capped``: of the masked spans, those of a value string already
    drawn in ``types_per_value`` other types in the epoch (``clusant.types_per_value``)."""
    masked = int(sum(masked_by_type.values()))
    why = [WHY_MASKED] if masked > capped else []
    if capped:
        why.append(f"{capped:,} of them hold a value already drawn in {types_per_value} other type(s) this epoch "
                   f"(clusant.types_per_value {types_per_value}: the detector typed one string several ways)")
    return {"spans": int(spans), "replaced": int(replaced), "masked": masked, "allowed": int(allowed),
            "masked_share": masked / spans if spans else 0.0, "allowed_share": allowed / spans if spans else 0.0,
            "masked_types": {t: int(n) for t, n in sorted(masked_by_type.items()) if n},
            "why_masked": "; ".join(why), "allow_list_entries": int(allow_list),
            "not_detected": sorted(set(not_detected)), "capped": int(capped), "types_per_value": int(types_per_value)}


def combine(summaries: list[dict]) -> dict | None:
    """One summary over several (the staged runs of a date); None when there is none."""
    if not summaries:
        return None
    types: dict[str, int] = {}
    for s in summaries:
        for t, n in s["masked_types"].items():
            types[t] = types.get(t, 0) + n
    return summary(sum(s["spans"] for s in summaries), sum(s["replaced"] for s in summaries), types,
                   sum(s["allowed"] for s in summaries), max(s["allow_list_entries"] for s in summaries),
                   {t for s in summaries for t in s.get("not_detected", ())},  # rows staged before it: none
                   sum(s.get("capped", 0) for s in summaries), max(s.get("types_per_value", 0) for s in summaries))


def from_params(params: list[str]) -> dict | None:
    """The combined summary of staged rows' ``params`` strings (those without one are skipped)."""
    found = []
    for p in params:
        try:
            m = json.loads(p or "{}").get("masking")
        except ValueError:
            m = None
        if m:
            found.append(m)
    return combine(found)


def words(s: dict | None) -> str:
    """One sentence: the masked share, the types and why; the allow-listed share."""
    if s is None:
        return "masking: not recorded (staged before the masking summary existed)"
    off = (f"; not detected under this configuration (pii.entities leaves out {', '.join(s['not_detected'])}): "
           "such values are written as they are") if s.get("not_detected") else ""
    if not s["spans"]:
        return "no detected span" + off
    head = (f"{s['replaced']:,} of {s['spans']:,} spans replaced by look-alikes; "
            f"{s['masked']:,} ({s['masked_share']:.1%}) masked as [TYPE]")
    if s["masked"]:
        types = ", ".join(f"{t} {n:,}" for t, n in s["masked_types"].items())
        head += f" ({types}): {s['why_masked']}; to avoid, {HOW_TO_AVOID}"
    if s["allowed"]:
        head += (f"; {s['allowed']:,} ({s['allowed_share']:.1%}) left as written, equal to one of the "
                 f"{s['allow_list_entries']} allow-listed public values")
    return head + off
