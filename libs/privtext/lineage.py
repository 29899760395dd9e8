"""A release's lineage as content, not names: what the publish gate checks before a sanitized export.

A name (a run id) can be reused or a later run can replace what it named, so every link is a digest of
what was actually read:

- ``partition_state``: the files of one date's partition of a Delta table (their paths are unique per
  write, so any rewrite, even under the same run id, changes it) and the table version it was read at.
- ``settings_digest``: the detection settings that decide what is a span (entity types, recognizers,
  thresholds, secrets mode: the whole ``pii`` section).
- the documents: ``partition_state`` of the date's ``restricted.documents`` (``documents_state``) at the
  snapshot a stage read. Delta files are immutable and a re-ingest writes new ones, so the same state is
  the same content: a corrected re-delivery under the same doc_ids, even of one character, changes it (a
  byte-identical one does too: a rerun of detect_pii then costs what it costs, never a leak).
- ``detect_pii`` records the spans state, the settings digest and the documents state it read in its
  canary measurement (the ``detection_recall`` ledger entry); ``sanitize`` finds the measurement of the
  spans it read (``detection_lineage``), refuses (``DocumentsChanged``, nothing charged) when the
  documents it reads are not those detection read, and writes the lineage (with the documents state it
  read) into the staged rows' ``params``; the audit records the staged partition's state it read
  (``staged_state``).
- ``publish`` (``lineage_problems``) refuses when the staged rows record no lineage (unless
  ``publish.min_canary_recall`` is 0: detection checks off, e.g. rows staged before lineage), when the spans
  partition or the detection settings changed since, when the documents detection read are not those
  sanitize read or those of the date now (a re-delivery since), when the audit read another staged state,
  or when the lineage's own canary measurement is below ``publish.min_canary_recall`` or has no canary of
  a configured type that has a canary generator (the types the release claims to protect).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json

from privtext.errors import Refused
from privtext.pii.canaries import GENERATORS


class DocumentsChanged(Refused):
    """The date's documents are not those detect_pii found the spans in (a re-delivery since): nothing
    may be sanitized or published from those spans until detect_pii has read the documents again."""


def settings_digest(pii) -> str:
    """sha256 (16 hex) of the ``pii`` settings: any change of entity types or recognizers changes it."""
    return hashlib.sha256(json.dumps(pii.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:16]


def partition_state(lakehouse, spec, day: dt.date, version: int | None = None) -> str:
    """``files:<sha256 of the date partition's file paths and sizes>`` of the snapshot at ``version``
    (default: the current one). Another date's write leaves it unchanged; any write of this date changes it."""
    from privtext.platform.delta_commit import files_matching
    from privtext.platform.table_spec import LakehouseError

    column = f"partition.{spec.date_column}"
    try:
        table = lakehouse.delta_table(spec, version)
    except LakehouseError:  # no such table yet: an empty partition
        return "files:none"
    files = sorted(f"{a['path']}:{a['size_bytes']}"
                   for a in files_matching(table, None) if a.get(column) == day)
    return "files:" + hashlib.sha256("\n".join(files).encode()).hexdigest()[:16]


def staged_state(lakehouse, spec, day: dt.date, run_ids, version: int | None = None) -> str:
    """What an audit read and the gate compares: the staged run ids and the partition's file state."""
    return f"{','.join(sorted(run_ids))}@{partition_state(lakehouse, spec, day, version)}"


def documents_state(lakehouse, day: dt.date, version: int | None = None) -> str:
    """The state of the date's ``restricted.documents`` partition at ``version`` (module doc)."""
    from privtext.platform.tables import DOCUMENTS

    return partition_state(lakehouse, DOCUMENTS, day, version)


def rerun_detect(day: dt.date, run: str) -> str:
    return (f"the documents of {day.isoformat()} changed since the detect_pii run {run} found the spans in them "
            f"(a re-delivery): rerun detect_pii for {day.isoformat()}, then sanitize and the audit")


def claimed_types(pii) -> list[str]:
    """The configured types a sanitized release claims to protect and canaries can measure."""
    return [t for t in pii.detected_entities() if t in GENERATORS]


def detection_lineage(lakehouse, settings, entries: list[dict], day: dt.date, version: int | None = None,
                      documents_version: int | None = None) -> dict:
    """The detect_pii run whose spans the date's ``pii_spans`` partition holds now, as ``sanitize`` records it
    in the staged rows: the partition's state, the canary measurement recording this very state (its run,
    entry id, the detection settings' digest and the documents state it read), or, without one,
    ``canary_entry_id`` None and the current settings' digest; and ``documents_state``: the documents the
    caller reads (at ``documents_version``). Raises ``DocumentsChanged`` when the measurement's documents
    are not those."""
    from privtext.platform.tables import PII_SPANS

    state = partition_state(lakehouse, PII_SPANS, day, version)
    documents = documents_state(lakehouse, day, documents_version)
    mine = [e for e in entries if e["guarantee"] == "detection_recall" and e["params"].get("spans_state") == state
            and e["params"].get("date") == day.isoformat()]
    if not mine:
        return {"detect_run_id": None, "canary_entry_id": None, "spans_state": state,
                "settings_digest": settings_digest(settings.pii), "detected_documents_state": None,
                "documents_state": documents, "entities": settings.pii.detected_entities()}
    entry = max(mine, key=lambda e: e["created_at"])
    detected = entry["params"].get("documents_state")
    if detected != documents:
        raise DocumentsChanged(rerun_detect(day, entry["run_id"]))
    return {"detect_run_id": entry["run_id"], "canary_entry_id": entry["entry_id"], "spans_state": state,
            "settings_digest": entry["params"].get("settings_digest"), "detected_documents_state": detected,
            "documents_state": documents,  # the types detection looked for (measurements before it: today's)
            "entities": entry["params"].get("entities", settings.pii.detected_entities())}


def staged_lineages(params: list[str]) -> list[dict | None]:
    """The ``lineage`` of each distinct staged ``params`` JSON (None where a row records none)."""
    out = []
    for p in params:
        try:
            out.append(json.loads(p or "{}").get("lineage"))
        except (ValueError, AttributeError):
            out.append(None)
    return out


def lineage_problems(lakehouse, settings, entries: list[dict], day: dt.date, params: list[str],
                     minimum: float) -> tuple[list[str], dict | None]:
    """Why the staged release's detection lineage refuses publishing (empty: it holds), and the canary
    measurement behind the release (the manifest's detection figures). ``params``: the staged partition's
    distinct ``params`` JSON."""
    from privtext.platform.tables import PII_SPANS

    lineages = staged_lineages(params)
    if not lineages or any(x is None for x in lineages) or len({json.dumps(x, sort_keys=True) for x in lineages}) > 1:
        return (["the staged release records no single detect_pii lineage (spans state, canary measurement, "
                 "settings digest): rerun sanitize, then the audit"] if minimum > 0 else []), None
    lineage = lineages[0]
    run = lineage["detect_run_id"] or "(unmeasured)"
    problems = []
    if lineage["spans_state"] != partition_state(lakehouse, PII_SPANS, day):
        problems.append(f"a detect_pii run after {run} replaced the spans the staged release was sanitized from: "
                        "rerun sanitize, then the audit")
    detected, read = lineage.get("detected_documents_state"), lineage.get("documents_state")
    if read is None or read != documents_state(lakehouse, day) or (lineage["canary_entry_id"] and detected != read):
        problems.append(rerun_detect(day, run))
    if lineage["settings_digest"] != settings_digest(settings.pii):
        problems.append("the detection settings (pii entity types, recognizers) changed since the detect_pii "
                        f"run {run} "
                        "behind the staged release: rerun detect_pii, sanitize and the audit")
    entry = next((e for e in entries if e["entry_id"] == lineage["canary_entry_id"]), None)
    if entry is None:
        if minimum > 0:
            problems.append(f"no detection recall measured for the detect_pii run behind the staged release ({run}; "
                            "run detect_pii with pii.canaries.count > 0, then sanitize and the audit)")
        return problems, None
    by_type = entry["spend"].get("by_type", {})
    missing = [t for t in claimed_types(settings.pii) if t not in by_type]
    if missing:
        problems.append(f"the detect_pii run {lineage['detect_run_id']} behind the staged release measured no canary "
                        f"of {', '.join(missing)} (a configured type it did not detect, or pii.canaries.count too "
                        "small to plant every type): rerun detect_pii, sanitize and the audit")
    recall = entry["spend"]["overall"]["recall"]
    if recall < minimum:
        problems.append(f"detection recall on canaries {recall:.3f} < publish.min_canary_recall {minimum:g}: "
                        "missed values would be published verbatim")
    return problems, entry
