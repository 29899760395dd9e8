"""``privtext forget``: the kill -9 matrix and the time to forget one user.

``faults``: a small lakehouse (``--users`` users x ``--days`` dates x ``--per-day`` documents each, derived
rows and an export per date; user 0's documents carry three unique tokens) is copied once per kill point;
``privtext forget --user-id user0`` runs in its own process group and is SIGKILLed as soon as the point is
reached (a file or Delta log version appears), then rerun to completion. Each point prints whether user 0
is gone from every table (rows) and every file (a byte scan of the lakehouse and exports, Parquet values
decoded), the other users' row counts are unchanged, and the erasure is recorded:
``fault.<point>: erased=1 others_unchanged=1 scan_hits=0 recorded=1``.

``scale``: ``--docs`` documents over 1 and over 10 dates (derived rows for each), one user's share
``--user-docs``; prints the seconds to forget that user and what was rewritten (dates, rows), side by side.

``nights``: real nights through the CLI on ``conf/local.yaml`` with only the lakehouse root (so MLflow's store
and artifacts, under it by default), the export and report folders and ``TMPDIR`` moved into one folder: a
night, a re-run of it and a second night of ``privtext pipeline run nightly_sanitized_export`` on the demo
sample (``--docs`` documents a night; one user's documents carry ``NIGHT_TOKENS``; without the leakage audit,
``publish.require_audit`` off: on a few hundred sample messages it can refuse a night, as it must when a secret
has no other value of its format to be audited against), ``privtext report`` of each
date, every command's stdout/stderr (``-v``) kept as a log. Then every file under the lakehouse (MLflow's
``mlflow.db`` and ``mlruns`` apart), the exports, the reports, the logs, ``TMPDIR`` and the project's model
caches is scanned for the tokens and the user's id, per area: before the forget, on a copy forgotten with
``--no-purge`` (the negative control: both must find them), and after ``privtext forget --user-id`` (0 hits),
then after a re-ingest of night 1's input (the user's records quarantined as ``erased``). The other users' rows
per table and a checksum of their published text, before and after.

``retention``: the same small lakehouse over three dates, ``privtext retention run`` with ``restricted_days`` 1 on
the third: every file (local folder, then every object of a SeaweedFS store's buckets through the S3 API) is
scanned for each date's restricted doc ids before and after (the first date's must be gone, the others'
stay), and the published rows counted (they stay).

``s3``: the same small lakehouse with every zone and the exports in a SeaweedFS store (``local_s3``), each
role with its own key: the analyst's and officer's keys are refused (1 = refused), the pipeline's forgets;
every object of the buckets is scanned through the S3 API before and after.

    .venv/bin/python benchmarks/platform/forget.py faults [--users 3 --days 2 --per-day 10]
    .venv/bin/python benchmarks/platform/forget.py s3
    .venv/bin/python benchmarks/platform/forget.py nights [--docs 300 --out DIR]
    .venv/bin/python benchmarks/platform/forget.py retention [--store local|s3]
    .venv/bin/python benchmarks/platform/forget.py scale [--docs 100000 --user-docs 50]
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
START = dt.date(2026, 1, 10)
TOKENS = ("QZTOKEN1001", "QZTOKEN1002", "QZTOKEN1003")  # planted in user 0's documents only
TABLES = ("restricted/documents", "restricted/quarantine", "restricted/pii_spans", "restricted/doc_embeddings",
          "restricted/sanitized_documents", "published/sanitized_documents")


def settings_for(root: Path):
    from privtext.settings import load_settings

    return load_settings(None, overrides=conf_dict(root), environ={})


def conf_dict(root: Path) -> dict:
    return {"lakehouse": {"root": str(root / "lake")}, "tracking": {"enabled": False}, "run": {"deterministic": True},
            "publish": {"export_path": str(root / "exports")},
            "spark": {"master": "local[2]", "conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}}}


def user(i: int) -> str:
    return f"user{i}@example.org"


def build(settings, users: int, days: int, per_day: int, user0_docs: int) -> None:
    """``per_day`` documents per date, the first ``user0_docs`` of them user 0's (its texts carry ``TOKENS``), the
    rest spread over the other users; two quarantined raw records of user 0 per date; one spans, embedding,
    staged and published row per document and an export per date; all written through the lakehouse."""
    from pyspark.sql import functions as F

    from privtext.pii.hashing import DETERMINISTIC_TEST_KEY, doc_pseudonym
    from privtext.platform.context import RunContext
    from privtext.platform.storage import filesystem
    from privtext.platform.tables import (
        DOC_EMBEDDINGS,
        DOCUMENTS,
        PII_SPANS,
        PUBLISHED_SANITIZED_DOCUMENTS,
        QUARANTINE,
        STAGED_SANITIZED_DOCUMENTS,
    )
    from privtext.settings import resolve_uri

    ctx = RunContext.create(settings)
    lake = ctx.lakehouse
    fs, exports = filesystem(resolve_uri(settings.publish.export_path), settings.lakehouse.zone_store("published"))
    pseudonym = F.udf(lambda d: doc_pseudonym(DETERMINISTIC_TEST_KEY, d))
    token = F.element_at(F.array(*map(F.lit, TOKENS)), (F.col("id") % 3 + 1).cast("int"))
    for d in range(days):
        day = START + dt.timedelta(days=d)
        owner = F.when(F.col("id") < user0_docs, 0).otherwise(1 + (F.col("id") - user0_docs) % (users - 1))
        docs = ctx.spark.range(per_day).select(
            F.concat(F.lit(f"{day}-"), F.col("id").cast("string")).alias("doc_id"),
            F.concat(F.lit("user"), owner.cast("string"), F.lit("@example.org")).alias("user_id"),
            F.concat(F.lit("Hello, order "), F.when(owner == 0, token).otherwise(F.concat(F.lit("N"), F.col("id"))),
                     F.lit(" ships soon.")).alias("text"),
            F.lit(None).cast("string").alias("label"), F.create_map().cast("map<string,string>").alias("metadata"),
            F.lit(day).alias("ingest_date"), F.lit("bench").alias("run_id"))
        lake.replace_partitions(DOCUMENTS, docs, {"ingest_date": [day]})
        base = lake.read(DOCUMENTS, date=day)
        lake.replace_partitions(QUARANTINE, base.where(F.col("user_id") == user(0)).limit(2).select(
            F.to_json(F.struct("doc_id", "user_id", "text")).alias("raw_record"),
            F.lit("malformed JSON").alias("reason"),
            F.lit("in.jsonl").alias("source_file"), F.lit(1).cast("long").alias("line_no"), "ingest_date", "run_id"),
            {"ingest_date": [day]})
        dated, date = {"date": [day]}, F.col("ingest_date").alias("date")
        lake.replace_partitions(PII_SPANS, base.select(
            "doc_id", F.lit("PERSON").alias("entity_type"), F.lit(0).alias("start"), F.lit(5).alias("end"),
            F.lit(0.9).alias("score"), F.lit("PII").alias("tier"), F.lit("s").alias("secret_id"), "run_id", date),
                                dated)
        lake.replace_partitions(DOC_EMBEDDINGS, base.select(
            "doc_id", F.array(*[F.lit(0.5)] * 4).cast("array<float>").alias("embedding"), F.lit("m").alias("model"),
            F.lit(4).alias("dim"), "run_id", date), dated)
        sanitized = base.select("doc_id", F.col("text").alias("sanitized_text"), F.lit(1).alias("n_spans"),
                                F.lit(1).alias("n_replaced"), F.lit("clusant").alias("method"),
                                F.lit("{}").alias("params"), "run_id", date)
        lake.replace_partitions(STAGED_SANITIZED_DOCUMENTS, sanitized.select(
            "*", F.lit(0).alias("verbatim"), F.lit(0.0).alias("verbatim_expected")), dated)
        lake.as_publisher().replace_partitions(PUBLISHED_SANITIZED_DOCUMENTS,
                                               sanitized.withColumn("doc_id", pseudonym("doc_id")),
                                               dated)
        folder = f"{exports}/sanitized_documents/{day.isoformat()}"
        fs.create_dir(f"{folder}/v0", recursive=True)
        table = lake.read(PUBLISHED_SANITIZED_DOCUMENTS, date=day).toArrow()
        pq.write_table(table, f"{folder}/v0/part-0.parquet", filesystem=fs)
        with fs.open_output_stream(f"{folder}/manifest.json") as out:
            out.write(json.dumps({"target": "sanitized_documents", "date": day.isoformat(), "rows": table.num_rows,
                                  "files": [{"path": "v0/part-0.parquet", "format": "parquet",
                                             "rows": table.num_rows}]}).encode())


def rows_by_user(root: Path, users: int) -> dict:
    """Rows per table and user (documents by user_id; the rest through doc ids / pseudonyms), read with delta-rs."""
    from deltalake import DeltaTable

    from privtext.pii.hashing import DETERMINISTIC_TEST_KEY, doc_pseudonym

    docs = DeltaTable(str(root / "lake" / TABLES[0])).to_pyarrow_table(columns=["doc_id", "user_id"]).to_pylist()
    owner = {r["doc_id"]: r["user_id"] for r in docs}
    owner.update({doc_pseudonym(DETERMINISTIC_TEST_KEY, d): u for d, u in list(owner.items())})
    counts = {}
    for table in TABLES:
        data = DeltaTable(str(root / "lake" / table)).to_pyarrow_table()
        for r in data.to_pylist():
            who = (json.loads(r["raw_record"]).get("user_id") if "raw_record" in r
                   else owner.get(r["doc_id"], "erased"))
            counts[(table, who)] = counts.get((table, who), 0) + 1
    return counts


def scan(root: Path, needles) -> int:
    """Files holding any needle: bytes, and Parquet files' decoded values."""
    hits = 0
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            data = open(path, "rb").read()
            if data[:4] == b"PAR1":
                try:
                    data += json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
                except Exception:  # noqa: BLE001  a partial file of a killed write: bytes only
                    pass
            hits += any(n.encode() in data for n in needles)
    return hits


def log_versions(root: Path, table: str) -> int:
    return len(list((root / "lake" / table / "_delta_log").glob("*.json")))


def kill_points(base: dict[str, int]):
    """name -> reached(root): a file the forget writes at that point exists."""
    def newer(table):
        return lambda root: log_versions(root, table) > base[table]

    def reissuing(root):
        return any(p.name != "v0" and p.is_dir() for p in (root / "exports" / "sanitized_documents").glob("*/*"))

    return {"after_tombstone": newer("protected/erasures"), "export_reissue": reissuing,
            "after_published_rewrite": newer("published/sanitized_documents"),
            "after_staged_rewrite": newer("restricted/sanitized_documents"),
            "after_spans_rewrite": newer("restricted/pii_spans"),
            "after_quarantine_rewrite": newer("restricted/quarantine"),
            "after_documents_rewrite": newer("restricted/documents"),
            "during_purge": lambda root: log_versions(root, "restricted/documents") > base["restricted/documents"] + 1}


def cli(root: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(root), "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-m", "privtext.cli", "--conf", str(root / "conf.yaml"), *args], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def faults(args) -> None:
    with tempfile.TemporaryDirectory(prefix="forget-faults-") as tmp:
        template = Path(tmp) / "template"
        build(settings_for(template), args.users, args.days, args.users * args.per_day, args.per_day)
        before = rows_by_user(template, args.users)
        assert scan(template, TOKENS + (user(0),)) > 0  # the negative control: the tokens are there
        base = {t: log_versions(template, t) for t in TABLES + ("protected/erasures",)}
        for name, reached in kill_points(base).items():
            root = Path(tmp) / name
            shutil.copytree(template, root)
            (root / "conf.yaml").write_text(yaml.safe_dump(conf_dict(root)))
            proc = cli(root, "forget", "--user-id", user(0))
            deadline = time.time() + 600
            while not reached(root) and proc.poll() is None and time.time() < deadline:
                time.sleep(0.005)
            killed = proc.poll() is None
            if killed:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rerun = cli(root, "forget", "--user-id", user(0))
            rc = rerun.wait()
            after = rows_by_user(root, args.users)
            erased = not any(n for (t, who), n in after.items() if who == user(0))
            others = all(after.get(k, 0) == n for k, n in before.items() if k[1] != user(0))
            from deltalake import DeltaTable
            records = DeltaTable(str(root / "lake" / "protected" / "erasures")).to_pyarrow_table().to_pylist()
            print(f"fault.{name}: killed={int(killed)} rerun_rc={rc} erased={int(erased)} "
                  f"others_unchanged={int(others)} "
                  f"scan_hits={scan(root, TOKENS + (user(0),))} "
                  f"recorded={int(any(r['status'] == 'erased' for r in records))}",
                  flush=True)
            shutil.rmtree(root)


def scale(args) -> None:
    from privtext.commands.forget import Subjects, forget

    for days in (1, 10):
        with tempfile.TemporaryDirectory(prefix="forget-scale-") as tmp:
            root = Path(tmp)
            build(settings_for(root), args.users, days, args.docs // days, max(2, args.user_docs // days))
            start = time.perf_counter()
            result = forget(settings_for(root), Subjects(users=(user(0),)))
            seconds = time.perf_counter() - start
            print(f"forget_seconds_{days}_dates: {seconds:.1f}", flush=True)
            print(f"forget_rows_{days}_dates: {json.dumps(result['rows'])}", flush=True)
            print(f"forget_rewritten_partitions_{days}_dates: {days} per table "
                  f"({args.docs // days} documents each)", flush=True)


def scan_store(fs, roots: list[str], needles) -> int:
    """Objects under ``roots`` (bucket paths) holding any needle: bytes, and Parquet objects' decoded values."""
    import pyarrow.fs as pafs

    hits = 0
    for root in roots:
        for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
            if info.type != pafs.FileType.File:
                continue
            with fs.open_input_stream(info.path) as stream:
                data = stream.read()
            if data[:4] == b"PAR1":
                data += json.dumps(pq.read_table(info.path, filesystem=fs).to_pylist(), default=str).encode()
            hits += any(n.encode() in data for n in needles)
    return hits


def s3(args) -> None:
    """The same forget with every zone and the exports in a SeaweedFS store, each role with its own key: the
    analyst's and officer's keys are refused, the pipeline's erases; objects scanned through the S3 API."""
    from privtext.commands.forget import Subjects, forget
    from privtext.errors import Refused
    from privtext.platform.local_s3 import s3_conf, seaweedfs
    from privtext.platform.storage import filesystem
    from privtext.settings import load_settings

    with seaweedfs() as store, tempfile.TemporaryDirectory(prefix="forget-s3-") as tmp:
        settings = load_settings(None, overrides=s3_conf(store, conf_dict(Path(tmp))), environ={})
        os.environ.update(store.env("pipeline"))
        build(settings, args.users, args.days, args.users * args.per_day, args.per_day)
        fs, _ = filesystem(settings.lakehouse.zone_root("restricted"), settings.lakehouse.object_store)
        roots = sorted({b for b in store.buckets.values()})
        needles = TOKENS + (user(0),)
        print(f"s3.scan_before: {scan_store(fs, roots, needles)}", flush=True)
        for identity in ("analyst", "officer"):
            os.environ.update(store.env(identity))
            try:
                forget(settings, Subjects(users=(user(0),)))
                print(f"s3.{identity}_refused: 0", flush=True)
            except Refused:
                print(f"s3.{identity}_refused: 1", flush=True)
        os.environ.update(store.env("pipeline"))
        start = time.perf_counter()
        result = forget(settings, Subjects(users=(user(0),)))
        print(f"s3.forget_seconds: {time.perf_counter() - start:.1f}", flush=True)
        print(f"s3.rows: {json.dumps(result['rows'])}", flush=True)
        fs, _ = filesystem(settings.lakehouse.zone_root("restricted"), settings.lakehouse.object_store)
        print(f"s3.scan_after: {scan_store(fs, roots, needles)}", flush=True)


NIGHT_DATES = ("2026-01-20", "2026-01-21")
FORGOTTEN = "forgetme.q7x2@example.org"  # the user whose documents carry NIGHT_TOKENS
NIGHT_TOKENS = ("zorblaxquent", "vimtrodeskal", "quibnerflotz")  # lower-case words no detector tags: published as is
NIGHT_KEY = "privtext-forget-nights-benchmark-key-0001"  # the pipeline's HMAC key of this run (not a secret)
PROJECT = Path(__file__).resolve().parents[2]


def night_input(root: Path, day: str, seed: int, docs: int) -> tuple[Path, list[str]]:
    """The demo sample of ``docs`` messages (``privtext sample-data``), doc ids prefixed with the date; the
    most frequent user becomes ``FORGOTTEN`` and its texts end with ``NIGHT_TOKENS`` in turn. Returns the file and
    that user's doc ids."""
    raw = root / f"sample-{day}.jsonl"
    subprocess.run([sys.executable, "-m", "privtext.cli", "sample-data", "--n", str(docs), "--seed", str(seed),
                    "--out", str(raw)], check=True, stdout=subprocess.DEVNULL, cwd=PROJECT)
    rows = [json.loads(line) for line in raw.read_text().splitlines()]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["user_id"]] = counts.get(r["user_id"], 0) + 1
    chosen, mine = max(counts, key=counts.get), []
    for r in rows:
        r["doc_id"] = f"{day}-{r['doc_id']}"
        if r["user_id"] == chosen:
            r["user_id"] = FORGOTTEN
            r["text"] += f" (ref {NIGHT_TOKENS[len(mine) % len(NIGHT_TOKENS)]})"
            mine.append(r["doc_id"])
    path = root / f"night-{day}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    raw.unlink()
    return path, mine


def night_env(root: Path) -> dict:
    return {**os.environ, "PRIVTEXT_LAKEHOUSE__ROOT": str(root / "lake"),
            "PRIVTEXT_PUBLISH__EXPORT_PATH": str(root / "exports"),
            "PRIVTEXT_PUBLISH__REPORT_PATH": str(root / "reports"), "PRIVTEXT_HMAC_KEY": NIGHT_KEY,
            "PRIVTEXT_PUBLISH__REQUIRE_AUDIT": "false",
            "TMPDIR": str(root / "tmp"), "PYTHONPATH": os.pathsep.join(sys.path)}


def privtext(root: Path, log: str, *args: str) -> float:
    """``privtext -v --conf conf/local.yaml ARGS`` from the project folder, stdout and stderr into
    ``logs/<log>.log``; returns its seconds (a failure stops the benchmark)."""
    (root / "logs").mkdir(exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    start = time.perf_counter()
    with open(root / "logs" / f"{log}.log", "ab") as out:
        rc = subprocess.run([sys.executable, "-m", "privtext.cli", "-v", "--conf", "conf/local.yaml", *args],
                            cwd=PROJECT, env=night_env(root), stdout=out, stderr=subprocess.STDOUT).returncode
    if rc:
        raise SystemExit(f"privtext {args[0]} exited {rc}: see {root / 'logs' / log}.log")
    return time.perf_counter() - start


def areas(root: Path) -> dict[str, list[Path]]:
    lake = root / "lake"
    return {"lakehouse": [lake], "mlflow_store": [lake / "mlflow.db"], "mlflow_artifacts": [lake / "mlruns"],
            "exports": [root / "exports"], "reports": [root / "reports"], "logs": [root / "logs"],
            "tmp": [root / "tmp"], "model_caches": [PROJECT / "cache"]}


def scan_areas(root: Path, needles) -> dict[str, int]:
    """Files holding any needle per area (the lakehouse row counts every file under it, MLflow's too)."""
    hits = {}
    for name, paths in areas(root).items():
        hits[name] = sum(scan_file(p, needles) if p.is_file() else scan(p, needles) for p in paths if p.exists())
    return hits


def scan_file(path: Path, needles) -> int:
    data = path.read_bytes()
    return int(any(n.encode() in data for n in needles))


def others(root: Path, mine: list[str]) -> dict:
    """The other users' rows per table and a sha256 of their published (pseudonym, text) rows."""
    from deltalake import DeltaTable

    from privtext.pii.hashing import doc_pseudonym

    key = NIGHT_KEY.encode()
    gone = set(mine) | {doc_pseudonym(key, d) for d in mine}
    counts = {}
    for table in TABLES:
        path = root / "lake" / table
        if not (path / "_delta_log").exists():
            continue
        rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
        counts[table] = sum(FORGOTTEN not in r["raw_record"] and r["reason"] != "erased" if "raw_record" in r
                            else r["doc_id"] not in gone for r in rows)  # an ``erased`` record is the user's
        if table.startswith("published"):
            texts = sorted(f"{r['doc_id']}\t{r['sanitized_text']}" for r in rows if r["doc_id"] not in gone)
            counts["published_text_sha256"] = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    return counts


def erased_records(root: Path, day: str) -> dict[str, int]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(root / "lake" / "restricted" / "quarantine")).to_pyarrow_table().to_pylist()
    reasons: dict[str, int] = {}
    for r in rows:
        if str(r["ingest_date"]) == day:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    return reasons


def nights(args) -> None:
    root = Path(args.out or tempfile.mkdtemp(prefix="forget-nights-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"nights.root: {root}", flush=True)
    inputs, mine = {}, []
    for seed, day in enumerate(NIGHT_DATES, start=1):
        inputs[day], docs = night_input(root, day, seed, args.docs)
        mine += docs
    print(f"nights.forgotten_user_documents: {len(mine)} of {args.docs * len(NIGHT_DATES)}", flush=True)
    needles = NIGHT_TOKENS + (FORGOTTEN,)
    for step, day in (("night1", NIGHT_DATES[0]), ("rerun1", NIGHT_DATES[0]), ("night2", NIGHT_DATES[1])):
        seconds = privtext(root, step, "pipeline", "run", "nightly_sanitized_export", "--date", day,
                           "--input", str(inputs[day]), "--skip", "audit")
        seconds += privtext(root, f"report-{step}", "report", "--date", day)
        print(f"nights.{step}_seconds: {seconds:.0f} (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"nights.scan_before_forget: {json.dumps(scan_areas(root, needles))}", flush=True)
    before = others(root, mine)
    print(f"nights.others_before: {json.dumps(before)}", flush=True)

    control = root.parent / f"{root.name}-no-purge"  # the negative control: the same forget without the purge
    shutil.copytree(root, control, ignore=shutil.ignore_patterns("_locks"))
    privtext(control, "forget-no-purge", "forget", "--user-id", FORGOTTEN, "--no-purge")
    print(f"nights.scan_no_purge: {json.dumps(scan_areas(control, needles))}", flush=True)
    shutil.rmtree(control)

    seconds = privtext(root, "forget", "forget", "--user-id", FORGOTTEN)
    print(f"nights.forget_seconds: {seconds:.0f} (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"nights.scan_after_forget: {json.dumps(scan_areas(root, needles))}", flush=True)
    after = others(root, mine)
    print(f"nights.others_after: {json.dumps(after)}", flush=True)
    print(f"nights.others_unchanged: {int(after == before)}", flush=True)

    seconds = privtext(root, "rerun-after-forget", "run", "ingest", "--date", NIGHT_DATES[0], "--input",
                       str(inputs[NIGHT_DATES[0]]))
    print(f"nights.rerun_after_forget_seconds: {seconds:.0f}", flush=True)
    print(f"nights.rerun_quarantine_reasons: {json.dumps(erased_records(root, NIGHT_DATES[0]))}", flush=True)
    print(f"nights.scan_after_rerun: {json.dumps(scan_areas(root, needles))}", flush=True)
    print(f"nights.others_after_rerun_unchanged: {int(others(root, mine) == before)}", flush=True)


def retention_scan(args) -> None:
    """Retention N = 1 over three dates, on a local lakehouse and on SeaweedFS S3, with the byte scan."""
    from privtext.commands.forget import retention
    from privtext.platform.context import RunContext
    from privtext.platform.local_s3 import s3_conf, seaweedfs
    from privtext.platform.storage import filesystem
    from privtext.platform.tables import PUBLISHED_SANITIZED_DOCUMENTS
    from privtext.settings import load_settings

    days = [START + dt.timedelta(days=d) for d in range(3)]

    def run(where: str, settings, files_holding) -> None:
        build(settings, args.users, 3, args.users * args.per_day, args.per_day)
        lake = RunContext.create(settings).lakehouse
        before = {str(d): files_holding((f"{d}-",)) for d in days}
        rows_before = lake.delta_table(PUBLISHED_SANITIZED_DOCUMENTS).to_pyarrow_table().num_rows
        kept = settings.model_copy(update={"retention": settings.retention.model_copy(update={"restricted_days": 1})})
        start = time.perf_counter()
        result = retention(kept, today=days[2])
        print(f"retention.{where}.seconds: {time.perf_counter() - start:.1f}", flush=True)
        print(f"retention.{where}.before: {result['before']}", flush=True)
        print(f"retention.{where}.rows: {json.dumps(result['rows'])}", flush=True)
        print(f"retention.{where}.files_holding_doc_ids_before: {json.dumps(before)}", flush=True)
        print(f"retention.{where}.files_holding_doc_ids_after: "
              f"{json.dumps({str(d): files_holding((f'{d}-',)) for d in days})}", flush=True)
        rows_after = lake.delta_table(PUBLISHED_SANITIZED_DOCUMENTS).to_pyarrow_table().num_rows
        print(f"retention.{where}.published_rows: {rows_before} -> {rows_after}", flush=True)

    if args.store == "local":
        with tempfile.TemporaryDirectory(prefix="forget-retention-") as tmp:
            run("local", settings_for(Path(tmp)), lambda needles: scan(Path(tmp), needles))
        return
    with seaweedfs() as store, tempfile.TemporaryDirectory(prefix="forget-retention-s3-") as tmp:  # keys before Spark
        settings = load_settings(None, overrides=s3_conf(store, conf_dict(Path(tmp))), environ={})
        os.environ.update(store.env("pipeline"))
        fs, _ = filesystem(settings.lakehouse.zone_root("restricted"), settings.lakehouse.object_store)
        buckets = sorted(set(store.buckets.values()))
        run("s3", settings, lambda needles: scan_store(fs, buckets, needles))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    f = sub.add_parser("faults")
    f.add_argument("--users", type=int, default=3)
    f.add_argument("--days", type=int, default=2)
    f.add_argument("--per-day", type=int, default=10)
    for name in ("s3", "retention"):
        o = sub.add_parser(name)
        o.add_argument("--users", type=int, default=3)
        o.add_argument("--days", type=int, default=2)
        o.add_argument("--per-day", type=int, default=10)
        o.add_argument("--store", choices=("local", "s3"), default="local", help="retention: where (one a process)")
    s = sub.add_parser("scale")
    s.add_argument("--docs", type=int, default=100_000)
    s.add_argument("--users", type=int, default=1000)
    s.add_argument("--user-docs", type=int, default=50)
    n = sub.add_parser("nights")
    n.add_argument("--docs", type=int, default=300)
    n.add_argument("--out", help="the run's folder (default: a new temporary one; kept)")
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.1f}", flush=True)
    {"faults": faults, "scale": scale, "s3": s3, "nights": nights, "retention": retention_scan}[args.what](args)


if __name__ == "__main__":
    main()
