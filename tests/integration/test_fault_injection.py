"""Crash safety: a stage's process group is killed (SIGKILL, by PID) mid-run, its rerun is killed at the stage's
second kill point (the second crash on the first one's leftovers), then the date is rerun to completion.

ingest, after the quarantine commit and while executors write the documents' files: every table's rows
for the date equal a clean run's and every file the snapshots reference exists (the killed writes' files
are never referenced). publish of a new release over an old one, after the published table commit and
while the export files are written: after each kill the export is still the old one, whole, and the last
rerun leaves the new rows and the new export with nothing of the killed attempts. sanitize, after the ledger
charge while executors write and after the staged data commit: the staged rows equal a clean run's and the
values are charged once (the reruns record their draws in ``none`` entries)."""
import functools
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from deltalake import DeltaTable
from jvm_archive import java_options, spark_archive

from integration.test_publish import DATE, TARGET, audit, check_export, make_ctx, published, stage
from privtext.cli import main
from privtext.stages import publish

DAY = "2026-04-01"
# Sizes: a stage's fixed costs (Spark jobs, workers) dominate its time (ingest in one process, load ~10: 8,000
# lines 31 s, 40,000 lines 36 s); each kill point still lies inside a write, polled every 5 ms.
INGEST_LINES = 10_000  # every 1,000th line broken: 9,990 documents and 10 quarantined records
SANITIZE_DOCUMENTS = 5_000
# Each stage's kill points, in order: the first run is killed at the first, its rerun at the second, a point
# reached when the run's own files show (``before``: the files that were there when it started).
KILL_POINTS = {
    "after the quarantine commit":
        lambda lake, before: (lake / "restricted/quarantine/_delta_log/00000000000000000001.json").exists(),
    "during the documents write": lambda lake, before: bool(_parquet(lake / "restricted/documents") - before),
}


# The killed runs' Spark as the module's in-process session (tests/conftest.py): 2 shuffle partitions, not 200;
# their driver JVMs map Spark's classes from a class-data archive (``archived_classes``)
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}


@pytest.fixture(scope="module", autouse=True)
def archived_classes():
    """The six killed runs' cold driver JVMs load Spark's classes from one archive (tests/jvm_archive.py): a
    killed ingest run's JVM ~10 CPU s less; what they run and where they are killed is unchanged."""
    SPARK_CONF["spark.driver.extraJavaOptions"] = java_options(spark_archive())


def _conf(tmp_path, name, **sections):
    conf = tmp_path / f"{name}.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": str(tmp_path / name)}, "tracking": {"enabled": False},
                                    "run": {"deterministic": True},
                                    "spark": {"master": "local[2]", "conf": SPARK_CONF},
                                    **sections}))
    return conf


def _env(tmp_path):
    # TMPDIR: the killed process's Spark scratch stays inside the test's folder
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TMPDIR": str(tmp_path)}


def _parquet(folder: Path) -> set[str]:
    """The parquet files under ``folder`` now (os.walk skips a folder removed while it is listed)."""
    return {os.path.join(d, f) for d, _, names in os.walk(folder) for f in names if f.endswith(".parquet")}


def _kill_at(args, env, reached, what):
    """Start the CLI with ``args`` in its own process group, SIGKILL the group once ``reached()``. The run (its JVM
    and Spark workers too) is niced: on two busy cores (`make test`'s other worker) the polling test process must
    be scheduled within the few hundred milliseconds a kill point lasts (a documents write ends in its commit), or
    the kill lands after it."""
    proc = subprocess.Popen(["nice", "-n", "19", sys.executable, "-m", "privtext.cli", *args], env=env,
                            start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not reached() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, f"{what} finished before the kill point was reached"
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM, no exit hooks
    proc.wait()


def _kill_in_turn(args, env, points: dict, watched, after_kill):
    """Run ``args`` once per kill point, in order (each run the rerun of the one killed before it), killed once
    ``points[point](before)`` holds, ``before`` being ``watched()`` when that run started; ``after_kill(point)``
    checks what each kill left."""
    for point, reached in points.items():
        _kill_at(args, env, functools.partial(reached, watched()), point)
        after_kill(point)


def _snapshot(lake: Path):
    """Rows per table for the date, and whether every referenced file exists."""
    out = {}
    for table, column in (("documents", "ingest_date"), ("quarantine", "ingest_date")):
        dt = DeltaTable(str(lake / "restricted" / table))
        assert all(os.path.exists(uri) for uri in dt.file_uris())
        rows = dt.to_pyarrow_table().to_pylist()
        out[table] = sorted(json.dumps({k: v for k, v in r.items() if k != "run_id"}, default=str, sort_keys=True)
                            for r in rows if str(r[column]) == DAY)
    return out


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("input") / "in.jsonl"
    lines = [json.dumps({"doc_id": f"d{i}", "text": f"message number {i} about order {i * 7}"})
             for i in range(INGEST_LINES)]
    lines[10::1000] = ["{broken"] * len(lines[10::1000])
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def clean_run(spark, tmp_path_factory, sample):
    folder = tmp_path_factory.mktemp("clean-run")
    assert main(["--conf", str(_conf(folder, "clean")), "run", "ingest", "--input", str(sample), "--date", DAY]) == 0
    return _snapshot(folder / "clean")


def test_kill_9_twice_then_rerun_equals_a_clean_run(tmp_path, sample, clean_run):
    assert len(clean_run["documents"]) == 9_990 and len(clean_run["quarantine"]) == 10
    crash, lake = _conf(tmp_path, "crash"), tmp_path / "crash"
    assert main(["--conf", str(crash), "init"]) == 0  # in this process: the tables exist before the killed run
    documents = lake / "restricted/documents"

    def never_committed(point):
        assert DeltaTable(str(documents)).version() == 0, point  # the documents were never committed

    _kill_in_turn(["--conf", str(crash), "run", "ingest", "--input", str(sample), "--date", DAY], _env(tmp_path),
                  {p: functools.partial(reached, lake) for p, reached in KILL_POINTS.items()},
                  lambda: _parquet(documents), never_committed)
    assert main(["--conf", str(crash), "run", "ingest", "--input", str(sample), "--date", DAY]) == 0  # lease taken over
    assert _snapshot(lake) == clean_run


PUBLISH_KILL_POINTS = {  # a date published once (version 1) is republished with new staged rows
    "after the published table commit": lambda lake, date_dir, before: (
        lake / "published/sanitized_documents/_delta_log" / f"{2:020d}.json").exists(),
    "while the export files are written": lambda lake, date_dir, before: bool(set(date_dir.glob("_tmp-*")) - before),
}


def test_publish_killed_twice_keeps_the_old_export_whole_and_the_rerun_equals_a_clean_run(spark, tmp_path):
    ctx = make_ctx(tmp_path, "pub-1")
    old, new = [f"old release {i}" for i in range(300)], [f"new release {i}" for i in range(300)]
    stage(ctx, old, run_id="san-1")
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.02, True)])
    publish.run(ctx, TARGET)
    stage(ctx, new, run_id="san-2")
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.02, True)])

    conf = tmp_path / "publish.yaml"
    conf.write_text(yaml.safe_dump({
        "lakehouse": {"root": ctx.settings.lakehouse.root}, "tracking": {"enabled": False},
        "publish": ctx.settings.publish.model_dump(mode="json"),
        "run": {"hmac_key_file": ctx.settings.run.hmac_key_file},
        "spark": {"master": "local[2]", "conf": SPARK_CONF}}))
    date_dir = Path(ctx.settings.publish.export_path) / TARGET / DATE.isoformat()

    def old_export_whole(point):
        manifest = json.loads((date_dir / "manifest.json").read_text())
        assert manifest["rows"] == len(old) and manifest["published_table"]["version"] == 1, point

    lake = Path(ctx.settings.lakehouse.root)
    _kill_in_turn(["--conf", str(conf), "run", "publish", "--target", TARGET, "--date", DATE.isoformat()],
                  _env(tmp_path), {p: functools.partial(reached, lake, date_dir)
                                   for p, reached in PUBLISH_KILL_POINTS.items()},
                  lambda: set(date_dir.glob("_tmp-*")), old_export_whole)
    assert main(["--conf", str(conf), "run", "publish", "--target", TARGET, "--date", DATE.isoformat()]) == 0
    assert published(ctx) == sorted(new)
    assert check_export(date_dir, new)["published_table"]["version"] > 1  # no leftover of the killed attempts


SANITIZE_KILL_POINTS = {  # sanitize charges the ledger first, then writes the staged documents
    "after the ledger charge, while executors write": lambda lake, before: bool(
        _parquet(lake / "restricted/sanitized_documents") - before),
    "after the staged data commit": lambda lake, before: (
        lake / "restricted/sanitized_documents/_delta_log" / f"{1:020d}.json").exists(),
}


def _sanitize_conf(tmp_path, name, cache):
    # eps so large that each value's draw is the value itself: the staged text does not depend on batching. The
    # quality and utility jobs after the staged commit off (test_sanitize covers them; not in the draw's key)
    return _conf(tmp_path, name, clusant={
        "entity_types": ["PERSON"], "n_clusters": 4, "k": 4.0, "eps": {"PII": 1000.0, "PoII": 1000.0},
        "vocabulary": {"size": 40}, "cache_dir": str(cache),
        "metrics": {"perplexity": False, "similarity": False, "max_documents": 0, "utility_documents": 0}},
        privacy={"budgets": {"default": {"r_over_p_max": 50.0, "eps_max": 10.0, "delta_max": 1e-5,
                                         "mldp_eps_max": 1e9}}})


def _sanitize_inputs(spark, conf, names):
    """``SANITIZE_DOCUMENTS`` documents, each naming a public vocabulary name (a PERSON span) and a ticket (a
    placeholder)."""
    import datetime as dt

    from privtext.platform.context import RunContext
    from privtext.platform.tables import DOCUMENTS, PII_SPANS
    from privtext.settings import load_settings
    from tests_support import document, write_rows

    ctx = RunContext.create(load_settings(conf, environ={}), date=DAY)
    docs, spans = [], []
    for i in range(SANITIZE_DOCUMENTS):
        name = names[i % len(names)]
        text = f"Hello {name}, ticket T{i:05d} is closed."
        docs.append(document(f"d{i}", text, DAY))
        for start, end, entity, sid in ((6, 6 + len(name), "PERSON", f"sid-{name}"),
                                        (text.index("T"), text.index("T") + 6, "TICKET", f"sid-T{i}")):
            spans.append({"doc_id": f"d{i}", "entity_type": entity, "start": start, "end": end, "score": 0.9,
                          "tier": "PII", "secret_id": sid, "run_id": "detect", "date": dt.date.fromisoformat(DAY)})
    write_rows(ctx, DOCUMENTS, docs, {"ingest_date": [DAY]})
    write_rows(ctx, PII_SPANS, spans, {"date": [DAY]})


def _sanitize_snapshot(lake: Path):
    """Staged rows of the date (without run_id), every referenced file present, and the ledger's
    sanitize charges per run as (guarantee, entity type, exposures)."""
    staged = DeltaTable(str(lake / "restricted/sanitized_documents"))
    assert all(os.path.exists(uri) for uri in staged.file_uris())
    spans = sorted(f"{a['path']}:{a['size_bytes']}" for a in pa.table(DeltaTable(str(lake / "restricted/pii_spans"))
                   .get_add_actions(flatten=True)).to_pylist())
    state = "files:" + hashlib.sha256("\n".join(spans).encode()).hexdigest()[:16]  # this lakehouse's spans

    def comparable(row):  # the lineage names this lakehouse's spans files: checked here, then set aside
        params = json.loads(row["params"])
        assert params["lineage"]["spans_state"] == state
        lineage = {**params["lineage"], "spans_state": "this lakehouse's"}
        if lineage.get("documents_state"):  # the documents' files of this lakehouse too
            lineage["documents_state"] = "this lakehouse's"
        return {**row, "params": {**params, "lineage": lineage}}

    rows = sorted(json.dumps({k: v for k, v in comparable(r).items() if k != "run_id"}, default=str, sort_keys=True)
                  for r in staged.to_pyarrow_table().to_pylist())
    charges = {}
    for e in DeltaTable(str(lake / "protected/privacy_ledger")).to_pyarrow_table().to_pylist():
        if e["stage"] == "sanitize":
            exposures = sorted((x["unit"], x["occurrences"]) for x in e["exposures"] or [])
            charges.setdefault(e["run_id"], []).append((e["guarantee"], json.loads(e["params"]).get("entity_type"),
                                                        exposures))
    return rows, [sorted(c) for c in charges.values()]


@pytest.fixture(scope="module")
def sanitize_clean(spark, tmp_path_factory):
    from privtext.clusant.vocabulary import cached_vocabulary
    from privtext.settings import load_settings

    folder = tmp_path_factory.mktemp("sanitize-clean")
    cache = folder / "vocab-cache"
    conf = _sanitize_conf(folder, "clean", cache)
    settings = load_settings(conf, environ={})
    # the vocabulary's phrases, as the stage reads them (no encoder: the stage embeds them with its own)
    names = [n for n in cached_vocabulary("PERSON", settings.clusant.vocabulary, str(cache)) if n.isascii()][:20]
    _sanitize_inputs(spark, conf, names)
    assert main(["--conf", str(conf), "run", "sanitize", "--date", DAY]) == 0
    return cache, names, _sanitize_snapshot(folder / "clean")


def test_sanitize_killed_twice_then_rerun_equals_a_clean_run_and_charges_the_values_once(spark, tmp_path,
                                                                                         sanitize_clean):
    cache, names, (clean_rows, clean_charges) = sanitize_clean
    assert len(clean_rows) == SANITIZE_DOCUMENTS and len(clean_charges) == 1  # one run, one charge set: PERSON only
    assert [(g, t, len(x)) for g, t, x in clean_charges[0]] == [("mldp", "PERSON", 20)]
    conf, lake = _sanitize_conf(tmp_path, "crash", cache), tmp_path / "crash"
    _sanitize_inputs(spark, conf, names)
    # charge-before-release, never refunded: each killed run's charges stay; a rerun reproduces the same draws
    # (one per value and epoch, keyed) and charges nothing new: a `none` entry records its draw
    rerun = [("none", None, [])]
    kills = []

    def charged_before_the_write(point):
        kills.append(point)
        assert sorted(_sanitize_snapshot(lake)[1]) == sorted(clean_charges + [rerun] * (len(kills) - 1)), point
        # killed inside the write (nothing committed), then right after its commit (version 1, no later one)
        assert DeltaTable(str(lake / "restricted/sanitized_documents")).version() == len(kills) - 1, point

    _kill_in_turn(["--conf", str(conf), "run", "sanitize", "--date", DAY], _env(tmp_path),
                  {p: functools.partial(reached, lake) for p, reached in SANITIZE_KILL_POINTS.items()},
                  lambda: _parquet(lake / "restricted/sanitized_documents"), charged_before_the_write)
    assert main(["--conf", str(conf), "run", "sanitize", "--date", DAY]) == 0  # lease taken over
    rows, charges = _sanitize_snapshot(lake)
    assert rows == clean_rows
    assert sorted(charges) == sorted(clean_charges + [rerun] * 2)
