"""Stage ``publish``: a staged date partition -> ``published.<target>`` + export files, behind the gate.

``privtext run publish --target sanitized_documents --date D``

The stage reads the staged rows, the ledger and the audits, runs the gate's checks (``privtext.publishing.gate``),
replaces the published partition and writes the export (``publishing.files``, ``publishing.manifest``); it
also erases published rows (``erase``). The gate, the keyed pseudonyms of published ``doc_id``s, and the order
of the writes that makes the manifest's rename the export's commit: docs/products/export.md, "How publish runs".
"""
from __future__ import annotations

import datetime as dt
import getpass
import json
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from privtext.errors import UsageError
from privtext.ledger import Ledger
from privtext.lineage import lineage_problems, staged_state
from privtext.pii.hashing import doc_pseudonym, load_hmac_key
from privtext.platform import erasure, zones
from privtext.platform.context import RunContext
from privtext.platform.leases import check_held
from privtext.platform.storage import filesystem, move_dir
from privtext.platform.tables import LEAKAGE_AUDITS
from privtext.privacy.budget import none_charge
from privtext.publishing.files import (
    FILE_SCHEMA,
    commit_manifest,
    committed_by,
    delete_dir,
    export_task,
    remove_other_versions,
)
from privtext.publishing.gate import (
    DP_GUARANTEES,
    NO_GUARANTEE_METHODS,
    VERBATIM_SUMS,
    PublishRefused,
    deterministic_runs,
    gate_decision,
    gate_outcome,
    verbatim_counts,
    verbatim_problem,
    verbatim_tail,
)
from privtext.publishing.manifest import build_manifest
from privtext.settings import resolve_uri
from privtext.stages import DEFAULT_TARGET, STAGES, TARGETS

# the stage's names callers and tests use (the gate's checks and the manifest commit are its parts)
__all__ = ["PublishRefused", "PublishResult", "add_arguments", "build_manifest", "commit_manifest",
           "deterministic_runs", "erase", "gate_decision", "gate_outcome", "pseudonymous", "published_rows", "run",
           "verbatim_problem", "verbatim_tail"]


@dataclass
class PublishResult:
    target: str
    rows: int
    files: int
    gate: str  # passed | override | not_required
    export_dir: str
    published_version: int


def add_arguments(parser) -> None:
    parser.add_argument("--target", choices=sorted(STAGES["publish"].targets), default=DEFAULT_TARGET)
    parser.add_argument("--override-gate", dest="override_gate", action="store_true",
                        help="publish although the leakage audit did not pass (recorded in the ledger)")
    parser.add_argument("--reason", help="why the gate is overridden (required with --override-gate)")


def _audits(ctx: RunContext, target: str) -> list[dict]:
    return [r.asDict() for r in ctx.lakehouse.read(LEAKAGE_AUDITS, date=ctx.date).where(F.col("target") == target)
            .select("adversary", "eps", "violation_ratio", "delta_target", "log10_p_fail", "passed", "release", "valid",
                    "staged_runs", "run_id").collect()]


def _detection_problems(ctx: RunContext, target: str, entries: list[dict]) -> tuple[list[str], dict | None]:
    """The staged release's detection lineage (``privtext.lineage.lineage_problems``): the spans, settings and
    canary measurement of the detect_pii run it was sanitized from, not the date's latest measurement."""
    staged = ctx.lakehouse.read(TARGETS[target].staged, date=ctx.date)
    params = [r["params"] for r in staged.select("params").distinct().collect()]  # O(runs)
    return lineage_problems(ctx.lakehouse, ctx.settings, entries, ctx.date, params,
                            ctx.settings.publish.min_canary_recall)


def pseudonymous(staged, key: bytes):
    """The staged rows with each ``doc_id`` replaced by its keyed pseudonym (``doc_pseudonym``)."""
    pseudonym = F.udf(lambda doc_id: None if doc_id is None else doc_pseudonym(key, doc_id), StringType())
    return staged.withColumn("doc_id", pseudonym("doc_id"))


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _refuse_unpublishable(ctx: RunContext, target: str, summary: list, entries: list[dict],
                          audit_gated: bool) -> None:
    """Refuse, override or not: no guarantee (CusText), fixed-seed noise, or a synthetic run without a DP charge."""
    date, run_ids = ctx.date.isoformat(), {r["run_id"] for r in summary}
    methods = sorted({r["method"] for r in summary})
    if any(m in NO_GUARANTEE_METHODS for m in methods):
        raise PublishRefused(f"publish refused for target {target} date {date}: sanitized with {', '.join(methods)}, "
                             "which has no privacy guarantee across clusters (CusText); rerun sanitize with clusant "
                             "or santext")
    fixed = deterministic_runs(entries, run_ids)
    if fixed or ctx.settings.run.deterministic:
        raise PublishRefused(f"publish refused for target {target} date {date}: run.deterministic releases (fixed-seed "
                             f"noise) are never published ({', '.join(fixed) or 'this publish run'}); rerun without it")
    if not audit_gated:
        charged = {e["run_id"] for e in entries if e["guarantee"] in DP_GUARANTEES}
        missing = sorted(run_ids - charged)
        if missing:
            raise PublishRefused(f"publish refused for target {target} date {date}: no ledger charge with a DP "
                                 f"guarantee for staging run(s) {', '.join(missing)}")


def _pass_gate(ctx: RunContext, ledger: Ledger, entries: list[dict], target: str, audit_gated: bool,
               override_gate: bool, reason: str | None, summary: list) -> tuple[str, dict | None]:
    """Check the gate; refuse, or record an override / skipped audit in the ledger. Returns (outcome, detection)."""
    settings, date = ctx.settings, ctx.date.isoformat()
    problems = (gate_decision(_audits(ctx, target), list(settings.publish.audit_adversaries),
                              [staged_state(ctx.lakehouse, TARGETS[target].staged, ctx.date,
                                            {r["run_id"] for r in summary})])
                if audit_gated and settings.publish.require_audit else [])
    detection = None
    if audit_gated:
        missed, detection = _detection_problems(ctx, target, entries)
        problems += missed + verbatim_problem(*verbatim_counts(summary), settings.publish.max_verbatim_share,
                                              settings.publish.verbatim_significance)
    gate = gate_outcome(audit_gated, settings.publish.require_audit, problems, override_gate)
    if gate == "refused":
        ctx.tracked.log_params({"publish.target": target, "publish.gate": "refused",
                                "publish.refused": "; ".join(problems)})
        raise PublishRefused(f"publish refused for target {target} date {date}: leakage audit gate not passed: "
                             + "; ".join(problems), problems)
    if gate in ("override", "not_required"):
        why = reason if problems else "publish.require_audit is false (demo)"
        ledger.charge(none_charge(settings.run.dataset, "publish", ctx.run_id, f"gate_{gate}", reason=why,
                                  params={"target": target, "date": date, "who": _who(), "why": why,
                                          "gate_problems": problems}, deterministic=settings.run.deterministic),
                      tracked=ctx.tracked)
    return gate, detection


def _export(ctx: RunContext, ledger: Ledger, target: str, staged, schema: pa.Schema, summary: list, gate: str,
            detection: dict | None, table: str, table_version: int) -> tuple[dict, int]:
    """Write the export files into a fresh version folder and commit its manifest. Returns (manifest, files)."""
    settings, date = ctx.settings, ctx.date.isoformat()
    root = resolve_uri(settings.publish.export_path)
    store = settings.lakehouse.zone_store("published")
    fs, base = filesystem(root, store)
    date_dir = f"{base}/{target}/{date}"
    version = uuid.uuid4().hex
    tmp_dir = f"{date_dir}/_tmp-{version}"
    run_ids = {r["run_id"] for r in summary}
    try:
        task = export_task(f"{root}/{target}/{date}/_tmp-{version}", store, tuple(settings.publish.formats), schema)
        files = [r.asDict() for r in staged.mapInArrow(task, FILE_SCHEMA).collect()]  # O(files)
        fs.create_dir(tmp_dir, recursive=True)
        move_dir(fs, tmp_dir, f"{date_dir}/{version}")
        entries = [e for e in ledger.entries(settings.run.dataset)
                   if (e["run_id"] in run_ids and e["stage"] != "publish") or e["run_id"] == ctx.run_id
                   or (detection is not None and e["entry_id"] == detection["entry_id"])]
        manifest = build_manifest(target, date, ctx.run_id, version, files, settings.publish.formats[0], summary,
                                  entries, gate, detection, table, table_version)
        check_held()  # fencing: a publisher whose lease was taken over never commits a manifest
        commit_manifest(fs, date_dir, manifest)
    except BaseException:  # the previous manifest and its files are untouched; drop this attempt's files
        delete_dir(fs, tmp_dir)
        delete_dir(fs, f"{date_dir}/{version}")
        raise
    if committed_by(fs, date_dir) == ctx.run_id:  # else a later publisher's manifest names its own files
        remove_other_versions(fs, date_dir, keep=version)
    return manifest, len(files)


def _reissue(ctx: RunContext, target: str, day: dt.date, rows, removed: int) -> bool:
    """Re-write the date's export from ``rows`` (the published partition without erased rows) into a fresh
    version folder and commit a manifest saying so (``reissued``: when, why, how many rows left; no id), then
    delete the older folders. False when the date has no export."""
    settings = ctx.settings
    root, store = resolve_uri(settings.publish.export_path), settings.lakehouse.zone_store("published")
    fs, base = filesystem(root, store)
    date_dir = f"{base}/{target}/{day.isoformat()}"
    if fs.get_file_info(f"{date_dir}/manifest.json").type != pafs.FileType.File:
        return False
    with fs.open_input_stream(f"{date_dir}/manifest.json") as stream:
        manifest = json.loads(stream.read())
    version = uuid.uuid4().hex
    tmp_dir = f"{date_dir}/_tmp-{version}"
    try:
        task = export_task(f"{root}/{target}/{day.isoformat()}/_tmp-{version}", store,
                           tuple(settings.publish.formats), TARGETS[target].published.schema)
        files = [r.asDict() for r in rows.mapInArrow(task, FILE_SCHEMA).collect()]  # O(files)
        fs.create_dir(tmp_dir, recursive=True)
        move_dir(fs, tmp_dir, f"{date_dir}/{version}")
        manifest.update(
            files=sorted(({**f, "path": f"{version}/{f['path']}"} for f in files), key=lambda f: f["path"]),
            rows=sum(f["rows"] for f in files if f["format"] == settings.publish.formats[0]),
            reissued=manifest.get("reissued", []) + [{"at": dt.datetime.now(dt.timezone.utc).isoformat(),
                                                      "reason": "erasure", "rows_removed": removed,
                                                      "erasure_run_id": ctx.run_id}])
        check_held()
        commit_manifest(fs, date_dir, manifest)
    except BaseException:
        delete_dir(fs, tmp_dir)
        delete_dir(fs, f"{date_dir}/{version}")
        raise
    remove_other_versions(fs, date_dir, keep=version)
    return True


def _pseudonyms(ctx: RunContext, doc_ids: list[str]) -> dict[str, str]:
    settings = ctx.settings.run
    key = load_hmac_key(settings.hmac_key_env, settings.hmac_key_file, settings.deterministic)
    return {doc_pseudonym(key, d): d for d in doc_ids}


def published_rows(ctx: RunContext, doc_ids: list[str], target: str = DEFAULT_TARGET) -> dict[str, int]:
    """Rows of ``published.<target>`` per restricted ``doc_id`` (found through their keyed pseudonyms)."""
    published = TARGETS[target].published
    if not doc_ids or not ctx.lakehouse.exists(published):
        return {}
    by_pseudonym = _pseudonyms(ctx, doc_ids)
    hits = erasure.matches(ctx.lakehouse, published, F.col("doc_id").isin(sorted(by_pseudonym)), F.col("doc_id"))
    found: dict[str, int] = {}
    for counts in hits.values():
        for p, n in counts.items():
            found[by_pseudonym[p]] = found.get(by_pseudonym[p], 0) + n
    return found


def erase(ctx: RunContext, doc_ids: list[str], target: str = DEFAULT_TARGET) -> tuple[dict[str, int], int]:
    """Erase these restricted ``doc_id``s from the published zone: the export of every date holding one of
    their keyed pseudonyms is re-issued without them (``_reissue``), then the published table's rows are
    deleted (``platform.erasure.delete_where`` through the publisher handle; ``purge`` deletes the old files).
    Exports go first: a rerun after a crash still finds the dates in the table. Returns (rows deleted per
    doc_id, exports re-issued)."""
    published = TARGETS[target].published
    if not doc_ids or not ctx.lakehouse.exists(published):
        return {}, 0
    by_pseudonym = _pseudonyms(ctx, doc_ids)
    selected = F.col("doc_id").isin(sorted(by_pseudonym))
    hits = erasure.matches(ctx.lakehouse, published, selected, F.col("doc_id"))
    reissued = sum(_reissue(ctx, target, day, ctx.lakehouse.read(published, date=day).where(~selected),
                            sum(counts.values())) for day, counts in sorted(hits.items()))
    deleted = erasure.delete_where(zones.publisher(ctx.lakehouse), published, selected, F.col("doc_id"))
    return {by_pseudonym[p]: n for p, n in deleted.items()}, reissued


def run(ctx: RunContext, target: str = DEFAULT_TARGET, override_gate: bool = False,
        reason: str | None = None) -> PublishResult:
    if target not in STAGES["publish"].targets:
        raise UsageError(f"unknown target {target!r}; allowed: {', '.join(STAGES['publish'].targets)}")
    if override_gate and not (reason or "").strip():
        raise PublishRefused("--override-gate needs --reason \"...\" (recorded in the privacy ledger)")
    staged_spec, published_spec = TARGETS[target].staged, TARGETS[target].published
    audit_gated = TARGETS[target].audit_gated
    settings, date = ctx.settings, ctx.date.isoformat()
    staged = ctx.lakehouse.read(staged_spec, date=ctx.date)
    params = F.col("params") if "params" in staged.columns else F.lit("").alias("params")
    sums = [F.sum(c).alias(c) for c in VERBATIM_SUMS if c in staged.columns]
    summary = (staged.groupBy("method", params, "run_id")  # O(runs)
               .agg(F.count(F.lit(1)).alias("count"), *sums).collect())
    if not summary:
        raise PublishRefused(f"nothing staged for target {target} date {date}; run the stage that stages it first")
    ledger = Ledger(ctx.lakehouse, settings)
    entries = ledger.entries(settings.run.dataset)
    _refuse_unpublishable(ctx, target, summary, entries, audit_gated)
    if "doc_id" in staged.columns:  # published doc_ids are keyed pseudonyms, never the input's ids
        key = load_hmac_key(settings.run.hmac_key_env, settings.run.hmac_key_file, settings.run.deterministic)
        staged = pseudonymous(staged, key)
    gate, detection = _pass_gate(ctx, ledger, entries, target, audit_gated, override_gate, reason, summary)
    rows = staged.select(*published_spec.schema.names)
    partitions = ({"date": [ctx.date]} if published_spec.date_column else
                  {c: sorted({r[c] for r in rows.select(c).distinct().collect()})
                   for c in published_spec.partition_by})
    written = zones.publisher(ctx.lakehouse).replace_partitions(published_spec, rows, partitions)
    manifest, files = _export(ctx, ledger, target, rows, published_spec.schema, summary, gate, detection,
                              published_spec.qualified_name, written.version)
    ctx.tracked.log_params({"publish.target": target, "publish.gate": gate})
    ctx.tracked.log_dict(manifest, f"publish/{target}-{date}-manifest.json")
    return PublishResult(target=target, rows=manifest["rows"], files=files, gate=gate,
                         export_dir=f"{resolve_uri(settings.publish.export_path)}/{target}/{date}",
                         published_version=written.version)
