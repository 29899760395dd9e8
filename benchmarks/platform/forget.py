"""``privtext forget``: the kill -9 matrix and the time to forget one user.

``faults``: a small lakehouse (``--users`` users x ``--days`` dates x ``--per-day`` documents each, derived
rows and an export per date; user 0's documents carry three unique tokens) is copied once per kill point;
``privtext forget --user-id user0`` runs in its own process group and is SIGKILLed as soon as the point is
reached (a file or Delta log version appears), then rerun to completion. Each point prints whether user 0
is gone from every table (rows) and every file (a byte scan of the lakehouse and exports, Parquet values
decoded), the other users' row counts are unchanged, and the erasure is recorded:
``fault.<point>: erased=1 others_unchanged=1 scan_hits=0 recorded=1``.

``scale``: ``--docs`` documents over 1 and over 10 dates (derived rows for each), one user's share
``--user-docs``; prints the seconds to forget that user and what it rewrote per table (files and bytes replaced
and written, rows written), the exports re-issued and the Parquet files left on disk, side by side.

``nights``: real nights through the CLI on ``conf/local.yaml`` with only the lakehouse root (so MLflow's store
and artifacts, under it by default), the export and report folders and ``TMPDIR`` moved into one folder: a
night, a re-run of it and a second night of ``privtext pipeline run nightly_sanitized_export`` on the demo
sample (``--docs`` documents a night; one user's documents carry ``NIGHT_TOKENS``; the leakage audit runs, with
its MLflow parameters, rows and artifacts, and ``publish.require_audit`` is off so that its verdict, printed,
does not stop the benchmark), ``privtext report`` of each date, every command's stdout/stderr (``-v``) kept as a
log. Then every file under the lakehouse (MLflow's ``mlflow.db`` and ``mlruns`` apart), the exports, the
reports, the logs, ``TMPDIR`` and the project's model caches is scanned for the tokens and the user's id, per
area: before the forget, on a copy forgotten with ``--no-purge`` (the negative control: both must find them),
and after ``privtext forget --user-id`` (0 hits), then after a re-ingest of night 1's input (the user's records
quarantined as ``erased``). The other users' rows per table and a checksum of their published text, before and
after.

``retention``: the same small lakehouse over three dates, ``privtext retention run`` with ``restricted_days`` 1 on
the third: every file (local folder, then every object of a SeaweedFS store's buckets through the S3 API) is
scanned for each date's restricted doc ids before and after (the first date's must be gone, the others'
stay), and the published rows counted (they stay).

``cluster``: the same small lakehouse on a standalone Spark cluster over a SeaweedFS S3 store with per-role keys
(``cluster``'s docstring): only the pipeline's key forgets; the analyst's and officer's are refused by the code
and, with the code's check switched off, by the store, on their forget, their deletes and their purge.

    .venv/bin/python benchmarks/platform/forget.py faults [--users 3 --days 2 --per-day 10]
    .venv/bin/python benchmarks/platform/forget.py cluster
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
import re
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


def rows_by_user(settings) -> dict:
    """Rows per table and user (documents by user_id; the rest through doc ids / pseudonyms; a row whose
    document is gone counts as ``erased``), read with delta-rs on any store (this process's key)."""
    from privtext.pii.hashing import DETERMINISTIC_TEST_KEY, doc_pseudonym
    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.tables import ALL_TABLES

    lake = Lakehouse(None, settings.lakehouse)
    specs = {spec.qualified_name.replace(".", "/"): spec for spec in ALL_TABLES}
    docs = lake.delta_table(specs[TABLES[0]]).to_pyarrow_table(columns=["doc_id", "user_id"]).to_pylist()
    owner = {r["doc_id"]: r["user_id"] for r in docs}
    owner.update({doc_pseudonym(DETERMINISTIC_TEST_KEY, d): u for d, u in list(owner.items())})
    counts = {}
    for table in TABLES:
        for r in lake.delta_table(specs[table]).to_pyarrow_table().to_pylist():
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
        before = rows_by_user(settings_for(template))
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
            after = rows_by_user(settings_for(root))
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


def snapshot_files(settings) -> dict[str, dict[str, tuple[int, int]]]:
    """table -> {file: (bytes, rows)} of each erased table's current snapshot (its Delta log's add actions)."""
    import pyarrow as pa

    from privtext.commands.forget import ERASED_TABLES
    from privtext.platform.lakehouse import Lakehouse

    lake = Lakehouse(None, settings.lakehouse)
    return {spec.qualified_name: {a["path"]: (a["size_bytes"], a["num_records"])
                                  for a in pa.table(lake.delta_table(spec).get_add_actions(flatten=True)).to_pylist()}
            for spec in ERASED_TABLES}


def rewritten(before: dict, after: dict) -> dict[str, dict[str, int]]:
    """Per table: the files the forget replaced (no longer in the snapshot) and wrote, with their bytes and rows."""
    out = {}
    for table, files in before.items():
        gone = [files[f] for f in files.keys() - after[table].keys()]
        new = [after[table][f] for f in after[table].keys() - files.keys()]
        out[table] = {"files_replaced": len(gone), "bytes_replaced": sum(b for b, _ in gone),
                      "files_written": len(new), "bytes_written": sum(b for b, _ in new),
                      "rows_written": sum(r for _, r in new), "rows_in_table": sum(r for _, r in after[table].values())}
    return out


def folder_files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def scale(args) -> None:
    """Per layout (1 and 10 dates): the build, then the forget of user 0 timed, with what it rewrote per table
    (files and bytes replaced and written, rows written), the exports' files and the files left on disk."""
    from privtext.commands.forget import Subjects, forget

    for days in (1, 10):
        with tempfile.TemporaryDirectory(prefix="forget-scale-") as tmp:
            root = Path(tmp)
            start = time.perf_counter()
            build(settings_for(root), args.users, days, args.docs // days, max(2, args.user_docs // days))
            print(f"build_seconds_{days}_dates: {time.perf_counter() - start:.1f}", flush=True)
            before, exports = snapshot_files(settings_for(root)), folder_files(root / "exports")
            on_disk = sum(1 for _ in (root / "lake").rglob("*.parquet"))
            load = os.getloadavg()[0]
            start = time.perf_counter()
            result = forget(settings_for(root), Subjects(users=(user(0),)))
            seconds = time.perf_counter() - start
            print(f"forget_seconds_{days}_dates: {seconds:.1f} (load {load:.1f} -> {os.getloadavg()[0]:.1f})",
                  flush=True)
            print(f"forget_rows_{days}_dates: {json.dumps(result['rows'])}", flush=True)
            for table, what in rewritten(before, snapshot_files(settings_for(root))).items():
                print(f"forget_rewrite_{days}_dates.{table}: {json.dumps(what)}", flush=True)
            after = folder_files(root / "exports")
            print(f"forget_exports_{days}_dates: files {len(exports)} -> {len(after)}, bytes {sum(exports.values())} "
                  f"-> {sum(after.values())}, re-issued {result['exports_reissued']}", flush=True)
            print(f"forget_parquet_files_on_disk_{days}_dates: {on_disk} -> "
                  f"{sum(1 for _ in (root / 'lake').rglob('*.parquet'))} "
                  f"(purged {json.dumps(result['files_removed'])})", flush=True)


def holding_objects(fs, roots: list[str], needles) -> list[str]:
    """Objects under ``roots`` (bucket paths) holding any needle: bytes, and Parquet objects' decoded values."""
    import pyarrow.fs as pafs

    found = []
    for root in roots:
        for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
            if info.type != pafs.FileType.File:
                continue
            with fs.open_input_stream(info.path) as stream:
                data = stream.read()
            if data[:4] == b"PAR1":
                data += json.dumps(pq.read_table(info.path, filesystem=fs).to_pylist(), default=str).encode()
            if any(n.encode() in data for n in needles):
                found.append(info.path)
    return found


def scan_store(fs, roots: list[str], needles) -> int:
    return len(holding_objects(fs, roots, needles))


def role_cli(root: Path, store, identity: str, log: str, *args: str, check: bool = True) -> tuple[int, float, str]:
    """``privtext -v --conf root/conf.yaml ARGS`` in its own process holding ``identity``'s store key only (its
    output into ``root/logs/<log>.log``: a failure's last line is the exception); ``check=False`` switches the
    forget's own key check off first, so that only the store can refuse. Returns (exit code, seconds, the output's
    last line)."""
    from privtext.platform.store_access import STORE_KEYS

    env = {**{k: v for k, v in os.environ.items() if k not in STORE_KEYS}, **store.env(identity),
           "TMPDIR": str(root / "tmp"), "PYTHONPATH": os.pathsep.join(sys.path)}
    code = ("import sys; from privtext.commands import forget; from privtext.cli import main; "
            + ("" if check else "forget._require_pipeline_key = lambda settings: None; ")
            + "sys.exit(main(sys.argv[1:]))")
    (root / "logs").mkdir(exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    start = time.perf_counter()
    with open(root / "logs" / f"{log}.log", "wb") as out:
        rc = subprocess.run([sys.executable, "-c", code, "-v", "--conf", str(root / "conf.yaml"), *args], env=env,
                            stdout=out, stderr=subprocess.STDOUT).returncode
    return rc, time.perf_counter() - start, redacted(store, outcome((root / "logs" / f"{log}.log").read_text()))


def outcome(output: str) -> str:
    """A command's refusal or exception line (``privtext: ...``, ``OSError: ...``), with the S3 error code the
    store answered, if any; else its last line."""
    lines = [line for line in output.splitlines() if line.strip()]
    failures = [line for line in lines if line.startswith("privtext: ") or re.match(r"[\w.]+(Error|Exception): ", line)]
    code = re.search(r"<Code>(\w+)</Code>.*?<Resource>([^<]*)</Resource>", output)
    return (failures[-1] if failures else lines[-1] if lines else "") + (
        f" (the store: {code.group(1)} on {code.group(2)})" if code else "")


def redacted(store, text: str) -> str:
    for secret in store.secrets():
        text = text.replace(secret, "<key>")
    return text[:300]


def cluster(args) -> None:
    """``privtext forget`` on a standalone Spark cluster (a master and two workers, their executors holding the
    pipeline's key: ``local_cluster``) over a SeaweedFS S3 store with per-role keys (``local_s3``): every zone and
    the exports in buckets. The lakehouse is built as the pipeline; then, each in its own process holding one key:
    the analyst's and the officer's ``privtext forget`` (refused by the code), the same with the code's key check
    switched off (what does the store answer?) and their deletes of the objects holding user 0's data; the
    pipeline's ``forget --no-purge``; the analyst's and officer's purge of the files that forget replaced (the
    deletion itself); the pipeline's ``forget``. After each step, with the pipeline's key: the objects holding
    user 0's tokens or id (every object of every bucket read through the S3 API) and the rows per table."""
    from pyspark.sql import SparkSession

    from privtext.commands.forget import ERASED_TABLES
    from privtext.platform import erasure
    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.local_cluster import cluster_conf, project_zip, standalone_cluster
    from privtext.platform.local_s3 import s3_conf, seaweedfs
    from privtext.platform.storage import filesystem
    from privtext.platform.tables import ERASURES
    from privtext.settings import load_settings

    c1 = "-XX:TieredStopAtLevel=1"  # the JIT of privtext's own JVMs (tests/integration/test_cluster.py)
    needles = TOKENS + (user(0),)
    with seaweedfs() as store, tempfile.TemporaryDirectory(prefix="forget-cluster-") as tmp, standalone_cluster(
            workers=2, cores=1, memory="1200m", env={**store.env("pipeline"), "SPARK_DAEMON_JAVA_OPTS": c1}) as spark:
        root = Path(tmp)
        conf = s3_conf(store, cluster_conf(spark, project_zip(root / "privtext.zip"), conf_dict(root)))
        conf["spark"]["conf"]["spark.executor.extraJavaOptions"] = c1
        (root / "conf.yaml").write_text(yaml.safe_dump(conf))
        settings = load_settings(None, overrides=conf, environ={})
        buckets = sorted(set(store.buckets.values()))

        def holding(identity: str) -> None:  # this process's key: the role's (the same variable names)
            os.environ.update(store.env(identity))

        def state(step: str) -> tuple[list[str], dict]:
            holding("pipeline")
            fs, _ = filesystem(settings.lakehouse.zone_root("restricted"), settings.lakehouse.object_store)
            objects, rows = holding_objects(fs, buckets, needles), rows_by_user(settings)
            mine = {t: n for (t, who), n in rows.items() if who in (user(0), "erased")}
            print(f"cluster.{step}: objects holding user 0's tokens or id {len(objects)}, its rows "
                  f"{sum(mine.values())} {json.dumps(mine)}, local files {scan(root, needles)}", flush=True)
            return objects, rows

        holding("pipeline")
        start = time.perf_counter()
        build(settings, args.users, args.days, args.users * args.per_day, args.per_day)
        SparkSession.getActiveSession().stop()  # the cluster's cores go to the next application
        print(f"cluster.build_seconds: {time.perf_counter() - start:.1f} (as the pipeline, on {spark.url})", flush=True)
        objects, before = state("built")

        def denied_deletes(identity: str, paths: list[str]) -> str:
            holding(identity)
            fs, _ = filesystem(settings.lakehouse.zone_root("restricted"), settings.lakehouse.object_store)
            errors = []
            for path in paths:
                try:
                    fs.delete_file(path)
                except OSError as error:
                    errors.append(redacted(store, str(error).splitlines()[0]))
            return f"{len(errors)} of {len(paths)} refused" + (f", e.g. {errors[0]}" if errors else "")

        for identity in ("analyst", "officer"):
            rc, _, line = role_cli(root, store, identity, f"{identity}-forget", "forget", "--user-id", user(0))
            print(f"cluster.{identity}.forget: exit {rc}: {line}", flush=True)
            rc, _, line = role_cli(root, store, identity, f"{identity}-forget-unchecked", "forget", "--user-id",
                                   user(0), check=False)
            print(f"cluster.{identity}.forget_without_the_code_check: exit {rc}: {line}", flush=True)
            print(f"cluster.{identity}.delete_objects: {denied_deletes(identity, objects)}", flush=True)
        state("after_analyst_and_officer")

        rc, seconds, _ = role_cli(root, store, "pipeline", "pipeline-forget-no-purge", "forget", "--user-id", user(0),
                                  "--no-purge")
        print(f"cluster.pipeline.forget_no_purge: exit {rc}, {seconds:.1f} s (load {os.getloadavg()[0]:.1f})",
              flush=True)
        replaced, _ = state("after_pipeline_forget_no_purge")
        for identity in ("analyst", "officer"):
            holding(identity)
            purges = {}
            for spec in ERASED_TABLES:
                try:
                    purges[spec.qualified_name] = f"removed {erasure.purge(Lakehouse(None, settings.lakehouse), spec)}"
                except Exception as error:  # noqa: BLE001  the store's answer is what is printed
                    purges[spec.qualified_name] = redacted(store, str(error).splitlines()[0])
            print(f"cluster.{identity}.purge: {json.dumps(purges)}", flush=True)
            print(f"cluster.{identity}.delete_replaced_objects: {denied_deletes(identity, replaced)}", flush=True)
        state("after_analyst_and_officer_purge")

        rc, seconds, _ = role_cli(root, store, "pipeline", "pipeline-forget", "forget", "--user-id", user(0))
        print(f"cluster.pipeline.forget: exit {rc}, {seconds:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
        _, after = state("after_pipeline_forget")
        print(f"cluster.others_unchanged: {int(all(after.get(k) == n for k, n in before.items() if k[1] != user(0)))}",
              flush=True)
        holding("pipeline")
        records = Lakehouse(None, settings.lakehouse).delta_table(ERASURES).to_pyarrow_table().to_pylist()
        print(f"cluster.erasures: {json.dumps(sorted((r['kind'], r['status']) for r in records))}", flush=True)
        print(f"cluster.applications: {[a['name'] for a in spark.state()['completedapps']]}", flush=True)


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


def audits(root: Path) -> dict:
    """What the leakage audit left: its rows per (date, release, passed) and MLflow's audit artifacts (files under
    ``mlruns/**/artifacts/audit``) and runs with its ``adversaries`` parameter (the scan covers all of them)."""
    import sqlite3

    from deltalake import DeltaTable

    rows = DeltaTable(str(root / "lake" / "protected" / "leakage_audits")).to_pyarrow_table().to_pylist()
    outcome: dict[str, int] = {}
    for r in rows:
        k = f"{r['date']} {r['release']} passed={int(r['passed'])}"
        outcome[k] = outcome.get(k, 0) + 1
    artifacts = [p for p in (root / "lake" / "mlruns").rglob("*") if p.is_file() and "audit" in p.parent.parts]
    with sqlite3.connect(root / "lake" / "mlflow.db") as db:
        runs = db.execute("SELECT count(DISTINCT run_uuid) FROM params WHERE key = 'adversaries'").fetchone()[0]
    return {"rows": outcome, "artifact_files": len(artifacts), "mlflow_runs_with_audit_params": runs}


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
                           "--input", str(inputs[day]))
        seconds += privtext(root, f"report-{step}", "report", "--date", day)
        print(f"nights.{step}_seconds: {seconds:.0f} (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"nights.audits: {json.dumps(audits(root))}", flush=True)
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
    for name in ("cluster", "retention"):
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
    modes = {"faults": faults, "scale": scale, "cluster": cluster, "nights": nights, "retention": retention_scan}
    modes[args.what](args)


if __name__ == "__main__":
    main()
