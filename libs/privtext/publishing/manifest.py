"""An export's ``manifest.json``: its rows and files, the privacy of what it holds (methods, ledger entries,
guarantees), the gate's outcome, the masking and detection figures, the published table version."""
from __future__ import annotations

import datetime as dt

from privtext.clusant import masking


def masking_summary(target: str, summary: list) -> dict | None:
    """The sanitized export's span counts (``clusant.masking``, from the staged rows' params): the share of
    spans written as [TYPE], which types and why, and the share left as written (allow-list), in figures and
    words."""
    if target != "sanitized_documents":
        return None
    combined = masking.from_params([r["params"] for r in summary])
    return {**(combined or {}), "in_words": masking.words(combined)}


def build_manifest(target: str, date: str, run_id: str, version: str, files: list[dict], first_format: str,
                   summary: list, entries: list[dict], gate: str, detection: dict | None, table: str,
                   table_version: int) -> dict:
    """The export's ``manifest.json``: rows, files (under ``version/``), privacy, gate, detection, table."""
    return {
        "target": target, "date": date, "publish_run_id": run_id,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(),
        "rows": sum(f["rows"] for f in files if f["format"] == first_format),
        "files": sorted(({**f, "path": f"{version}/{f['path']}"} for f in files), key=lambda f: f["path"]),
        "privacy": {"methods": sorted({r["method"] for r in summary}), "params": sorted({r["params"] for r in summary}),
                    "source_run_ids": sorted({r["run_id"] for r in summary}),
                    "ledger_entry_ids": [e["entry_id"] for e in entries],
                    "guarantees": sorted({e["guarantee"] for e in entries})},
        "gate": {"outcome": gate},
        "masking": masking_summary(target, summary),
        "detection": None if detection is None else {
            "measured_on": "canary documents", "canaries": detection["params"].get("canaries"),
            **{k: detection["spend"]["overall"][k] for k in ("recall", "coverage")},
            "by_type": {t: {k: v[k] for k in ("recall", "coverage")}
                        for t, v in detection["spend"]["by_type"].items()}},
        "published_table": {"name": table, "version": table_version},
    }
