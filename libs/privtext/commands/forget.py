"""``privtext forget`` and ``privtext retention run``: erase a person's data (GDPR Art. 17, CCPA) or the raw
text older than ``retention.restricted_days``, from every table and export that holds it, then the files that
held it (``platform.erasure``: partition rewrites, then a vacuum with retention 0, local zones and object
stores alike).

A forget (``--user-id``, ``--doc-id``, repeatable, or ``--from-file``), under the ``forget`` lease (one erasure
at a time), run with the pipeline's store key:

1. finds the subject's documents (``restricted.documents`` by user_id or doc_id) and refuses nothing: an id held
   nowhere and never erased is reported and nothing is written;
2. tombstones each subject (and each document of an erased user) in ``protected.erasures``: its keyed id
   (``pii.hashing.subject_key``), never the id. From here on ingest quarantines their records as ``erased``;
3. waits for the ingests in flight (they may have read the tombstones before these), then, in passes: finds the
   documents again (tombstoning those an ingest added), waits until no run of any date holding them is in
   flight (``wait_for_runs``: stage leases), and deletes, in this order, the staged sanitized documents, the
   published rows (their keyed pseudonyms) after re-issuing the export of each date that held one
   (``stages.publish.erase``, the published zone's one writer), the embeddings, spans, the quarantine's raw
   records (by the ``user_id`` / ``doc_id`` fields they carry) and last the documents, so a rerun after a crash
   at any point finds the same documents. A run of such a date that started during a pass may have read rows
   the pass had not deleted yet: the passes repeat until one deletes nothing (``MAX_PASSES``);
4. waits for every run in flight (its snapshot may name the rewritten files), then purges the files the
   rewrites removed from these tables (``--no-purge`` leaves them to ``privtext vacuum``: the negative control
   of the byte scan);
5. records per subject the rows deleted per table (``status: erased``), once: a rerun that deletes nothing
   for an already erased subject writes nothing.

So a forget while nights of other dates run (or of the same dates) never rewrites a date partition under a
run of that date, never deletes a file a run in flight may still read, and leaves no row of the subject that
such a run wrote: it finishes after them (docs/operations.md, "Erasure").

The ledger keeps every charge and DP releases (synthetic documents, word vectors) stay: their guarantees
cover the person's presence (docs/privacy-model.md). Retention erases whole date partitions of the
restricted zone before a cut-off date with the same machinery and records one ``retention`` row.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import re
import time
import unicodedata
import uuid
from dataclasses import dataclass

from pyspark.sql import functions as F

from privtext.errors import Refused, UsageError
from privtext.pii.hashing import load_hmac_key, subject_key
from privtext.platform import erasure, leases, storage
from privtext.platform.context import RunContext, parse_date
from privtext.platform.leases import stage_lease
from privtext.platform.store_access import can_read
from privtext.platform.table_spec import LakehouseError
from privtext.platform.tables import (
    DOC_EMBEDDINGS,
    DOCUMENTS,
    ERASURES,
    PII_SPANS,
    PUBLISHED_SANITIZED_DOCUMENTS,
    QUARANTINE,
    STAGED_SANITIZED_DOCUMENTS,
)
from privtext.settings import ZONES
from privtext.stages import publish

log = logging.getLogger("privtext")

MAX_ID_CHARS = 256
RUN_DATE = re.compile(r"-(\d{4}-\d{2}-\d{2})$")  # a stage lease is named <stage>[-<target>]-<date>
WAIT_POLL_S = 0.5
MAX_PASSES = 5  # deletion passes before a forget gives up (runs kept bringing the subjects' rows back)
DOC_TABLES = (STAGED_SANITIZED_DOCUMENTS, DOC_EMBEDDINGS, PII_SPANS)  # per-document rows keyed by doc_id
RESTRICTED_TABLES = (DOCUMENTS, QUARANTINE, PII_SPANS, DOC_EMBEDDINGS, STAGED_SANITIZED_DOCUMENTS)
# the order of deletion: staged before published (a concurrent publish then has nothing of theirs to publish),
# documents last (a rerun after a crash finds the same documents)
ERASED_TABLES = (STAGED_SANITIZED_DOCUMENTS, PUBLISHED_SANITIZED_DOCUMENTS, DOC_EMBEDDINGS, PII_SPANS, QUARANTINE,
                 DOCUMENTS)


@dataclass(frozen=True)
class Subjects:
    users: tuple[str, ...] = ()
    docs: tuple[str, ...] = ()

    def labels(self) -> list[tuple[str, str]]:
        return [("user", u) for u in self.users] + [("doc", d) for d in self.docs]


def _checked(value: str, where: str) -> str:
    """An id as given; a blank one, one with control characters or lone surrogates, or one over
    ``MAX_ID_CHARS`` is a ``UsageError`` naming where it is (not the value)."""
    problem = ("is blank" if not value.strip() else
               f"is longer than {MAX_ID_CHARS} characters" if len(value) > MAX_ID_CHARS else
               "holds a control character" if any(unicodedata.category(c) in ("Cc", "Cs") for c in value) else None)
    if problem:
        raise UsageError(f"{where}: the id {problem}; nothing was erased")
    return value


def parse_subjects(user_ids: list[str], doc_ids: list[str], from_file: str | None) -> Subjects:
    """The subjects of a forget: ``--user-id`` / ``--doc-id`` values and the lines of ``--from-file``
    (``user:ID`` or ``doc:ID``; blank lines and ``#`` comments skipped). Any malformed entry refuses the whole
    list (``UsageError``), before anything is read or written."""
    users = [_checked(u, f"--user-id #{i}") for i, u in enumerate(user_ids, start=1)]
    docs = [_checked(d, f"--doc-id #{i}") for i, d in enumerate(doc_ids, start=1)]
    if from_file:
        try:
            with open(from_file, encoding="utf-8", newline="") as file:
                lines = [line.removesuffix("\r") for line in file.read().split("\n")]  # an id may hold U+2028
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"--from-file {from_file}: cannot read it ({type(error).__name__}); "
                             "nothing was erased") from None
        for n, line in enumerate(lines, start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            kind, sep, value = line.partition(":")
            if not sep or kind.strip() not in ("user", "doc"):
                raise UsageError(f"--from-file {from_file} line {n}: expected 'user:ID' or 'doc:ID'; "
                                 "nothing was erased")
            (users if kind.strip() == "user" else docs).append(_checked(value, f"--from-file {from_file} line {n}"))
    if not users and not docs:
        raise UsageError("privtext forget needs --user-id, --doc-id or --from-file")
    return Subjects(tuple(dict.fromkeys(users)), tuple(dict.fromkeys(docs)))


def _require_pipeline_key(settings) -> None:
    """On object storage, refuse before anything is read unless this process's key reads every zone (the
    pipeline identity; the store itself refuses the others' writes)."""
    lakehouse = settings.lakehouse
    unreadable = [z for z in ZONES if not storage.is_local(lakehouse.zone_root(z)) and not can_read(lakehouse, z)]
    if unreadable:
        raise Refused(f"erasure runs with the pipeline identity's store key; this environment's key cannot read "
                      f"{' and '.join(unreadable)}")


def _record(ctx: RunContext, rows: list[dict]) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    ctx.lakehouse.append_rows(ERASURES,
                              [{"erasure_id": ctx.run_id, "before": None, "rows": None, "created_at": now, **r}
                                         for r in rows])


def runs_in_flight(settings) -> dict[str, tuple[str, dt.date]]:
    """The stage runs holding their lease now: lease name -> (run id, data date)."""
    runs = {}
    for name, owner in leases.live(settings.lakehouse).items():
        match = RUN_DATE.search(name)
        try:
            runs[name] = (owner["run_id"], dt.date.fromisoformat(match.group(1)))
        except (AttributeError, ValueError):  # not a stage lease (erasure, create-tables, mlflow-store)
            continue
    return runs


def current_runs(settings, prefix: str = "") -> set[tuple[str, str]]:
    """(lease name, run id) of the stage runs in flight now whose lease name starts with ``prefix``."""
    return {(name, run) for name, (run, _) in runs_in_flight(settings).items() if name.startswith(prefix)}


def wait_for_runs(settings, dates=frozenset(), runs=frozenset()) -> None:
    """Return once no stage run of ``dates`` holds its lease (seen free twice, ``WAIT_POLL_S`` apart: a pipeline
    goes from one stage to the next within that) and none of ``runs`` ((lease name, run id) pairs) does. A run
    whose process died or whose lease expired is not waited for (``leases.live``). Without a bound: a forget
    finishes after the runs it waits for."""
    free, needed, logged = 0, 2 if dates else 1, False
    while True:
        busy = sorted(name for name, (run_id, day) in runs_in_flight(settings).items()
                      if day in dates or (name, run_id) in runs)
        free = 0 if busy else free + 1
        if free == needed:
            return
        if busy and not logged:
            log.info("forget waits for the runs in flight: %s", ", ".join(busy))
            logged = True
        time.sleep(WAIT_POLL_S)


def _erase_subjects(ctx: RunContext, key: bytes, subjects: Subjects, purge_files: bool) -> dict:
    lakehouse, settings = ctx.lakehouse, ctx.settings
    users, requested_docs = list(subjects.users), list(subjects.docs)

    def find() -> list:  # O(the subjects' documents)
        return (lakehouse.read(DOCUMENTS).where(F.col("user_id").isin(users) | F.col("doc_id").isin(requested_docs))
                .select("doc_id", "user_id", "ingest_date").distinct().collect())

    found = find()
    owner = {r["doc_id"]: ("user", r["user_id"]) for r in found if r["user_id"] in users}
    owner.update({d: ("doc", d) for d in requested_docs})
    user_id, quarantined_doc = erasure.raw_record_ids(F.col("raw_record"))
    quarantine_key = F.when(user_id.isin(users), F.concat(F.lit("user\x00"), user_id)).otherwise(
        F.concat(F.lit("doc\x00"), quarantined_doc))

    def selected(spec):
        doc_ids = sorted(owner)
        if spec is QUARANTINE:
            return user_id.isin(users) | quarantined_doc.isin(doc_ids)
        return F.col("doc_id").isin(doc_ids) | (F.col("user_id").isin(users) if spec is DOCUMENTS else F.lit(False))

    def subject_of(spec, k: str) -> tuple[str, str]:
        if spec is QUARANTINE:
            kind, _, value = k.partition("\x00")
            return owner.get(value, ("doc", value)) if kind == "doc" else ("user", value)
        return owner[k]

    keys = {label: subject_key(key, *label) for label in subjects.labels()}
    erased = erasure.erasure_rows(lakehouse)
    tombstoned = {r["subject_key"] for r in erased}
    held = {owner[r["doc_id"]] for r in found if r["doc_id"] in owner}
    if any(label not in held and keys[label] not in tombstoned for label in keys):  # held by other tables only?
        for spec in DOC_TABLES + (QUARANTINE,):
            held |= {subject_of(spec, k) for day in erasure.matches(
                lakehouse, spec, selected(spec), quarantine_key if spec is QUARANTINE else F.col("doc_id")).values()
                for k in day}
        held |= {owner[d] for d in publish.published_rows(ctx, sorted(owner))}
    known = [label for label in subjects.labels() if label in held or keys[label] in tombstoned]
    unknown = len(keys) - len(known)
    if not known:
        return {"erasure_id": None, "subjects": 0, "unknown": unknown, "rows": {}, "exports_reissued": 0,
                "message": "no table holds the given id(s) and none was erased before: nothing to forget, "
                           "nothing written"}
    # an unknown subject's later rows are not erased (nothing is written for it)
    users = [u for u in users if ("user", u) in known]
    requested_docs = [d for d in requested_docs if ("doc", d) in known]
    owner = {d: o for d, o in owner.items() if o in known}

    def tombstone() -> None:  # the known subjects and each document of a known user, once
        wanted = {keys[label]: label[0] for label in known}
        wanted.update({subject_key(key, "doc", d): "doc" for d, o in owner.items() if o[0] == "user" and o in known})
        new = [{"kind": kind, "subject_key": k, "status": "tombstoned"} for k, kind in wanted.items()
               if k not in tombstoned]
        if new:
            _record(ctx, new)
            tombstoned.update(r["subject_key"] for r in new)

    tombstone()
    # an ingest in flight may have read the tombstones before these: wait for it, then find what it wrote
    wait_for_runs(settings, runs=current_runs(settings, "ingest-"))
    counts: dict[tuple[str, str], dict[str, int]] = {label: {} for label in known}

    def add(spec, deleted: dict[str, int]) -> None:
        for k, n in deleted.items():
            label = subject_of(spec, k)
            if label in counts:
                counts[label][spec.qualified_name] = counts[label].get(spec.qualified_name, 0) + n

    reissued, dates = 0, set()
    for _ in range(MAX_PASSES):  # a pass that deletes nothing ends the erasure
        found = find()
        owner.update({r["doc_id"]: ("user", r["user_id"]) for r in found if r["user_id"] in users})
        tombstone()
        dates |= {r["ingest_date"] for r in found}
        wait_for_runs(settings, dates)  # a run of these dates commits before the rewrite, not against it
        deleted_any = False
        for spec in ERASED_TABLES:
            if spec is PUBLISHED_SANITIZED_DOCUMENTS:
                by_doc, n = publish.erase(ctx, [d for d, o in owner.items() if o in known])
                add(spec, by_doc)
                reissued, deleted_any = reissued + n, deleted_any or bool(by_doc)
            else:
                key_column = quarantine_key if spec is QUARANTINE else F.col("doc_id")
                deleted = erasure.delete_where(lakehouse, spec, selected(spec), key_column)
                add(spec, deleted)
                deleted_any = deleted_any or bool(deleted)
        if not deleted_any:
            break
    else:
        raise LakehouseError(f"the subjects' rows were written again by other runs in each of {MAX_PASSES} passes; "
                             "rerun privtext forget once they are done (the tombstones stand)")
    files = {}
    if purge_files:  # a run in flight may read files of a snapshot older than the rewrites: it ends first
        wait_for_runs(settings, runs=current_runs(settings))
        files = {spec.qualified_name: erasure.purge(lakehouse, spec) for spec in ERASED_TABLES
                 if lakehouse.exists(spec)}
    done = {r["subject_key"] for r in erased if r["status"] == "erased"}
    records = [{"kind": label[0], "subject_key": keys[label], "status": "erased",
                "rows": {spec.qualified_name: counts[label].get(spec.qualified_name, 0) for spec in ERASED_TABLES}}
               for label in known if counts[label] or keys[label] not in done]
    if records:
        _record(ctx, records)
    totals = {spec.qualified_name: sum(c.get(spec.qualified_name, 0) for c in counts.values())
              for spec in ERASED_TABLES}
    return {"erasure_id": ctx.run_id, "subjects": len(known), "unknown": unknown, "rows": totals,
            "exports_reissued": reissued, "files_removed": files if purge_files else "not purged (--no-purge)"}


def forget(settings, subjects: Subjects, purge_files: bool = True) -> dict:
    """Erase ``subjects`` everywhere (see the module); returns the counts (no id). Idempotent; a rerun after a
    crash at any point completes the erasure."""
    _require_pipeline_key(settings)
    key = load_hmac_key(settings.run.hmac_key_env, settings.run.hmac_key_file, settings.run.deterministic)
    run_id = uuid.uuid4().hex
    with stage_lease(settings.lakehouse, "erasure", run_id):
        ctx = RunContext.create(settings, pipeline="forget", run_id=run_id)
        return _erase_subjects(ctx, key, subjects, purge_files)


def retention_cutoff(days: int, today: dt.date) -> dt.date:
    """Raw text is kept ``days`` days: data dates before ``today - days`` are erased."""
    return today - dt.timedelta(days=days)


def retention(settings, today: dt.date | None = None, purge_files: bool = True) -> dict:
    """Erase the restricted zone's date partitions older than ``retention.restricted_days`` (documents, quarantine,
    spans, embeddings, staged sanitized documents), purge their files and record one ``retention`` row. The ledger,
    the published tables and the exports stay. Off (nothing read or written) while the key is unset."""
    days = settings.retention.restricted_days
    if days is None:
        return {"retention": "off (retention.restricted_days is not set)", "rows": {}}
    _require_pipeline_key(settings)
    before = retention_cutoff(days, today or dt.datetime.now(dt.timezone.utc).date())
    run_id = uuid.uuid4().hex
    with stage_lease(settings.lakehouse, "erasure", run_id):
        ctx = RunContext.create(settings, pipeline="retention", run_id=run_id)
        last = before - dt.timedelta(days=1)
        wait_for_runs(settings, {day for _, day in runs_in_flight(settings).values() if day <= last})
        rows = {spec.qualified_name: sum(erasure.delete_where(ctx.lakehouse, spec, F.lit(True), F.lit("old"),
                                                              upto=last).values())
                for spec in RESTRICTED_TABLES}
        files = {}
        if purge_files:
            wait_for_runs(settings, runs=current_runs(settings))
            files = {spec.qualified_name: erasure.purge(ctx.lakehouse, spec) for spec in RESTRICTED_TABLES}
        if any(rows.values()):
            _record(ctx,
                    [{"kind": "retention", "subject_key": None, "status": "erased", "rows": rows, "before": before}])
    return {"erasure_id": run_id, "before": before.isoformat(), "rows": rows, "files_removed": files}


def cmd_forget(args) -> int:
    from privtext.settings import load_settings

    subjects = parse_subjects(args.user_id, args.doc_id, args.from_file)  # before the settings: a bad list stops here
    print(json.dumps(forget(load_settings(args.conf), subjects, purge_files=not args.no_purge), indent=2, default=str))
    return 0


def cmd_retention(args) -> int:
    from privtext.settings import load_settings

    today = parse_date(args.date)
    print(json.dumps(retention(load_settings(args.conf), today, purge_files=not args.no_purge), indent=2, default=str))
    return 0


def register(sub) -> None:
    """``privtext forget`` and ``privtext retention run``."""
    parser = sub.add_parser("forget", help="erase a user's or document's data from every table and export, and the "
                                           "files that held it (protected.erasures records it, keyed)")
    parser.add_argument("--user-id", action="append", default=[], help="a user_id to erase (repeatable)")
    parser.add_argument("--doc-id", action="append", default=[], help="a doc_id to erase (repeatable)")
    parser.add_argument("--from-file", help="a file of 'user:ID' / 'doc:ID' lines")
    parser.add_argument("--no-purge", action="store_true", help=argparse.SUPPRESS)  # the byte scan's negative control
    parser.set_defaults(func=cmd_forget)
    retention_parser = sub.add_parser("retention", help="raw-text retention (retention.restricted_days)")
    retention_sub = retention_parser.add_subparsers(dest="retention_command", required=True)
    run = retention_sub.add_parser("run", help="erase restricted data dates older than retention.restricted_days")
    run.add_argument("--date", help="the day it runs for, YYYY-MM-DD (default: today, UTC)")
    run.add_argument("--no-purge", action="store_true", help=argparse.SUPPRESS)
    run.set_defaults(func=cmd_retention)
