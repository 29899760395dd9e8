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

``s3``: the same small lakehouse with every zone and the exports in a SeaweedFS store (``local_s3``), each
role with its own key: the analyst's and officer's keys are refused (1 = refused), the pipeline's forgets;
every object of the buckets is scanned through the S3 API before and after.

    .venv/bin/python benchmarks/platform/forget.py faults [--users 3 --days 2 --per-day 10]
    .venv/bin/python benchmarks/platform/forget.py s3
    .venv/bin/python benchmarks/platform/forget.py scale [--docs 100000 --user-docs 50]
"""
from __future__ import annotations

import argparse
import datetime as dt
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    f = sub.add_parser("faults")
    f.add_argument("--users", type=int, default=3)
    f.add_argument("--days", type=int, default=2)
    f.add_argument("--per-day", type=int, default=10)
    for name in ("s3",):
        o = sub.add_parser(name)
        o.add_argument("--users", type=int, default=3)
        o.add_argument("--days", type=int, default=2)
        o.add_argument("--per-day", type=int, default=10)
    s = sub.add_parser("scale")
    s.add_argument("--docs", type=int, default=100_000)
    s.add_argument("--users", type=int, default=1000)
    s.add_argument("--user-docs", type=int, default=50)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.1f}", flush=True)
    {"faults": faults, "scale": scale, "s3": s3}[args.what](args)


if __name__ == "__main__":
    main()
