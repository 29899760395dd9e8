"""Stage ``publish``: a staged date partition -> ``published.<target>`` + export files, behind the audit gate.

``privtext run publish --target sanitized_documents --date D``

The gate (``gate_decision`` and the checks no override passes), the keyed pseudonyms of published
``doc_id``s, and the order of the writes that makes the manifest's rename the export's commit:
docs/products/export.md, "How publish runs".
"""
from __future__ import annotations

import datetime as dt
import getpass
import hashlib
import json
import math
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from privtext.clusant import masking
from privtext.errors import Refused, UsageError
from privtext.ledger import Ledger
from privtext.lineage import lineage_problems, staged_state
from privtext.pii.hashing import doc_pseudonym, load_hmac_key
from privtext.platform import erasure, zones
from privtext.platform.config import ObjectStoreSettings
from privtext.platform.context import RunContext
from privtext.platform.leases import check_held
from privtext.platform.storage import filesystem, move_dir
from privtext.platform.tables import LEAKAGE_AUDITS
from privtext.privacy.budget import none_charge
from privtext.settings import resolve_uri
from privtext.stages import DEFAULT_TARGET, STAGES, TARGETS

DP_GUARANTEES = ("secret_protection", "gdp", "approx_dp")
NO_GUARANTEE_METHODS = ("custext",)
FILE_SCHEMA = StructType([StructField(n, t) for n, t in (("path", StringType()), ("format", StringType()),
                                                         ("rows", LongType()), ("bytes", LongType()),
                                                         ("sha256", StringType()))])


class PublishRefused(Refused):
    """The gate (or the staged data's missing guarantee) refuses the publish; nothing was written.
    ``reasons``: each check that refused, in words."""

    def __init__(self, message: str, reasons: list[str] | None = None):
        super().__init__(message)
        self.reasons = list(reasons or [message])


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


def gate_decision(audits: list[dict], wanted: list[str], staged_runs: list[str]) -> list[str]:
    """Why the audit gate refuses (empty: it passes). ``audits``: the (target, date) rows of
    ``protected.leakage_audits``; ``wanted``: adversaries that must have passed; ``staged_runs``: the
    run ids now in the staged partition."""
    current = ",".join(sorted(staged_runs))
    candidates = [r for r in audits if r.get("release") == "candidate"]
    problems = []
    for adversary in wanted or sorted({r["adversary"] for r in candidates}) or ["any adversary"]:
        mine = [r for r in candidates if r["adversary"] == adversary]
        if not mine:
            problems.append(f"no leakage audit by {adversary}")
        for r in mine:
            if r.get("staged_runs") != current:
                problems.append(f"the {adversary} audit is stale: it read staged run(s) {r.get('staged_runs')}, "
                                f"the partition now holds {current} (rerun the audit)")
            elif not r.get("valid"):
                controls = {c["release"]: c["passed"] for c in audits
                            if c.get("release", "").startswith("control_") and c["run_id"] == r["run_id"]}
                bad = [c for c, ok in controls.items() if ok != (c == "control_uniform")] or ["missing"]
                problems.append(f"the {adversary} audit is invalid: its negative control(s) misbehaved "
                                f"({', '.join(sorted(bad))}); the audit cannot tell leaking from safe releases")
            elif not r["passed"] and r["violation_ratio"] >= r["delta_target"]:
                problems.append(f"{adversary} found leakage: violation ratio {r['violation_ratio']:.4g} "
                                f">= delta target {r['delta_target']:.4g} at eps {r['eps']:g} (a lower bound)")
            elif not r["passed"]:
                problems.append(f"{adversary}: violation ratio {r['violation_ratio']:.4g} is below the delta target "
                                f"{r['delta_target']:.4g} but not confidently (Prop. 4: log10 p_fail "
                                f"{r.get('log10_p_fail', 0.0):.2f} > ampl.max_log10_p_fail); audit more triplets "
                                "or documents")
    return problems


def _audits(ctx: RunContext, target: str) -> list[dict]:
    return [r.asDict() for r in ctx.lakehouse.read(LEAKAGE_AUDITS, date=ctx.date).where(F.col("target") == target)
            .select("adversary", "eps", "violation_ratio", "delta_target", "log10_p_fail", "passed", "release", "valid",
                    "staged_runs", "run_id").collect()]


def verbatim_tail(observed: int, expected: float) -> float:
    """Chernoff bound on Pr[X >= observed] for X a sum of independent Bernoulli draws with mean ``expected``:
    exp(-mu) (e mu / x)^x for x > mu, else 1 (valid for any Poisson-binomial sum)."""
    if observed <= expected:
        return 1.0
    if expected <= 0:
        return 0.0
    return math.exp(observed - expected + observed * math.log(expected / observed))


def verbatim_problem(verbatim: int, expected: float, replaced: int, maximum: float, significance: float) -> list[str]:
    """The gate's verbatim check: draws equal to their input beyond ``publish.max_verbatim_share`` that the
    mechanism's own probability of drawing the input (``expected``) does not explain at ``significance``."""
    excess = verbatim - maximum * replaced
    if excess <= 0 or verbatim_tail(verbatim, expected) >= significance:
        return []
    return [f"{verbatim} of {replaced} replaced values are published as they came in (same normalized value), where "
            f"the mechanism's own draws explain {expected:.2g} (Pr >= {verbatim}: "
            f"{verbatim_tail(verbatim, expected):.1e} < publish.verbatim_significance {significance:g}): the "
            "sanitizer left them unchanged"]


VERBATIM_SUMS = ("verbatim", "verbatim_expected", "n_replaced")  # summed per staging run with the summary


def _verbatim(summary: list) -> tuple[int, float, int]:
    """(verbatim draws, their expected count, replaced values) of the staged partition, from its summary rows."""
    v, e, r = (sum(row[c] or 0 for row in summary) for c in VERBATIM_SUMS)
    return int(v), float(e), int(r)


def _detection_problems(ctx: RunContext, target: str, entries: list[dict]) -> tuple[list[str], dict | None]:
    """The staged release's detection lineage (``privtext.lineage.lineage_problems``): the spans, settings and
    canary measurement of the detect_pii run it was sanitized from, not the date's latest measurement."""
    staged = ctx.lakehouse.read(TARGETS[target].staged, date=ctx.date)
    params = [r["params"] for r in staged.select("params").distinct().collect()]  # O(runs)
    return lineage_problems(ctx.lakehouse, ctx.settings, entries, ctx.date, params,
                            ctx.settings.publish.min_canary_recall)


def deterministic_runs(entries: list[dict], run_ids: set[str]) -> list[str]:
    """The staged runs whose ledger charges say fixed-seed noise (never publishable)."""
    return sorted({e["run_id"] for e in entries if e["run_id"] in run_ids and e["params"].get("deterministic")})


def pseudonymous(staged, key: bytes):
    """The staged rows with each ``doc_id`` replaced by its keyed pseudonym (``doc_pseudonym``)."""
    pseudonym = F.udf(lambda doc_id: None if doc_id is None else doc_pseudonym(key, doc_id), StringType())
    return staged.withColumn("doc_id", pseudonym("doc_id"))


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _sha256(fs: pafs.FileSystem, path: str) -> str:
    digest = hashlib.sha256()
    with fs.open_input_stream(path) as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _export_task(folder_uri: str, store: ObjectStoreSettings, formats: tuple[str, ...], schema: pa.Schema):
    """``mapInArrow``: write this task's rows as one file per format, yield (path, format, rows, bytes, sha256)."""

    def run(batches):
        batches = [b for b in batches if b.num_rows]
        if not batches:
            return
        table = pa.Table.from_batches(batches).select(schema.names).cast(schema)
        fs, folder = filesystem(folder_uri, store)
        fs.create_dir(folder, recursive=True)
        name = f"part-{uuid.uuid4().hex}"
        out = []
        for fmt in formats:
            path = f"{folder}/{name}.{fmt}"
            if fmt == "parquet":
                pq.write_table(table, path, filesystem=fs, compression="zstd")
            else:
                with fs.open_output_stream(path) as stream:
                    for row in table.to_pylist():
                        line = json.dumps({k: v.isoformat() if isinstance(v, dt.date) else v for k, v in row.items()},
                                          ensure_ascii=False)
                        stream.write(line.encode("utf-8") + b"\n")
            out.append({"path": f"{name}.{fmt}", "format": fmt, "rows": table.num_rows,
                        "bytes": fs.get_file_info(path).size, "sha256": _sha256(fs, path)})
        yield pa.RecordBatch.from_pylist(out, schema=pa.schema([("path", pa.string()), ("format", pa.string()),
                                                                ("rows", pa.int64()), ("bytes", pa.int64()),
                                                                ("sha256", pa.string())]))

    return run


def commit_manifest(fs: pafs.FileSystem, date_dir: str, manifest: dict) -> str:
    """Write ``manifest.json`` under a temporary name and rename it over the previous one (the commit)."""
    tmp = f"{date_dir}/_manifest-{uuid.uuid4().hex}.json"
    with fs.open_output_stream(tmp) as stream:
        stream.write(json.dumps(manifest, indent=2, sort_keys=True, default=str).encode())
    fs.move(tmp, f"{date_dir}/manifest.json")
    return f"{date_dir}/manifest.json"


def _delete_dir(fs: pafs.FileSystem, path: str) -> None:
    if fs.get_file_info(path).type == pafs.FileType.Directory:
        fs.delete_dir(path)


def _committed_by(fs: pafs.FileSystem, date_dir: str) -> str | None:
    """The publish run whose manifest is the date's committed one now."""
    with fs.open_input_stream(f"{date_dir}/manifest.json") as stream:
        return json.loads(stream.read()).get("publish_run_id")


def _remove_other_versions(fs: pafs.FileSystem, date_dir: str, keep: str) -> None:
    for info in fs.get_file_info(pafs.FileSelector(date_dir)):
        if info.base_name != keep:
            _delete_dir(fs, info.path)


def gate_outcome(audit_gated: bool, require_audit: bool, problems: list[str], override: bool) -> str:
    """The gate's outcome: ``refused`` (problems, no override), ``override``, ``not_required`` (audit
    skipped, demos), ``passed``, or ``ledger_charged`` for targets gated by their own DP charge."""
    if not audit_gated:
        return "ledger_charged"
    if problems:
        return "override" if override else "refused"
    return "passed" if require_audit else "not_required"


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
        problems += missed + verbatim_problem(*_verbatim(summary), settings.publish.max_verbatim_share,
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


def _masking(target: str, summary: list) -> dict | None:
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
        "masking": _masking(target, summary),
        "detection": None if detection is None else {
            "measured_on": "canary documents", "canaries": detection["params"].get("canaries"),
            **{k: detection["spend"]["overall"][k] for k in ("recall", "coverage")},
            "by_type": {t: {k: v[k] for k in ("recall", "coverage")}
                        for t, v in detection["spend"]["by_type"].items()}},
        "published_table": {"name": table, "version": table_version},
    }


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
        task = _export_task(f"{root}/{target}/{date}/_tmp-{version}", store, tuple(settings.publish.formats), schema)
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
        _delete_dir(fs, tmp_dir)
        _delete_dir(fs, f"{date_dir}/{version}")
        raise
    if _committed_by(fs, date_dir) == ctx.run_id:  # else a later publisher's manifest names its own files
        _remove_other_versions(fs, date_dir, keep=version)
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
        task = _export_task(f"{root}/{target}/{day.isoformat()}/_tmp-{version}", store,
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
        _delete_dir(fs, tmp_dir)
        _delete_dir(fs, f"{date_dir}/{version}")
        raise
    _remove_other_versions(fs, date_dir, keep=version)
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
