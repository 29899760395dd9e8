"""Crash safety: a stage's process group is killed (SIGKILL, by PID) mid-run, then the date is rerun.

ingest, after the quarantine commit and while executors write the documents' files: every table's rows
for the date equal a clean run's and every file the snapshots reference exists (the killed write's files
are never referenced). publish of a new release over an old one, after the published table commit and
while the export files are written: the export is still the old one, whole, and the rerun leaves the
new rows and the new export with nothing of the killed attempt."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable

from integration.test_publish import DATE, TARGET, audit, check_export, make_ctx, published, stage
from privtext.cli import main
from privtext.stages import publish

DAY = "2026-04-01"
KILL_POINTS = {
    "after the quarantine commit": lambda lake: (lake / "restricted/quarantine/_delta_log/00000000000000000001.json").exists(),
    "during the documents write": lambda lake: any((lake / "restricted/documents").rglob("*.parquet")),
}


def _conf(tmp_path, name):
    conf = tmp_path / f"{name}.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": str(tmp_path / name)}, "tracking": {"enabled": False},
                                    "run": {"deterministic": True},
                                    "spark": {"master": "local[2]", "conf": {"spark.ui.enabled": "false"}}}))
    return conf


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
    lines = [json.dumps({"doc_id": f"d{i}", "text": f"message number {i} about order {i * 7}"}) for i in range(40_000)]
    lines[10::1000] = ["{broken"] * len(lines[10::1000])
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def clean_run(spark, tmp_path_factory, sample):
    folder = tmp_path_factory.mktemp("clean-run")
    assert main(["--conf", str(_conf(folder, "clean")), "run", "ingest", "--input", str(sample), "--date", DAY]) == 0
    return _snapshot(folder / "clean")


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_kill_9_then_rerun_equals_a_clean_run(tmp_path, sample, clean_run, point):
    assert len(clean_run["documents"]) == 39_960 and len(clean_run["quarantine"]) == 40
    crash, lake = _conf(tmp_path, "crash"), tmp_path / "crash"
    # TMPDIR: the killed process's Spark scratch stays inside the test's folder
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TMPDIR": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "privtext.cli", "--conf", str(crash), "init"], env=env, check=True,
                   capture_output=True)
    proc = subprocess.Popen([sys.executable, "-m", "privtext.cli", "--conf", str(crash), "run", "ingest", "--input",
                             str(sample), "--date", DAY], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not KILL_POINTS[point](lake) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the stage finished before the kill point was reached"
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM, no exit hooks
    proc.wait()
    assert DeltaTable(str(lake / "restricted/documents")).version() == 0  # the documents were never committed

    assert main(["--conf", str(crash), "run", "ingest", "--input", str(sample), "--date", DAY]) == 0  # lease taken over
    assert _snapshot(lake) == clean_run


PUBLISH_KILL_POINTS = {  # a date published once (version 1) is republished with new staged rows
    "after the published table commit": lambda lake, date_dir: (
        lake / "published/sanitized_documents/_delta_log" / f"{2:020d}.json").exists(),
    "while the export files are written": lambda lake, date_dir: any(date_dir.glob("_tmp-*")),
}


@pytest.mark.parametrize("point", list(PUBLISH_KILL_POINTS))
def test_publish_killed_keeps_the_old_export_whole_and_the_rerun_equals_a_clean_run(spark, tmp_path, point):
    ctx = make_ctx(tmp_path, "pub-1")
    old, new = [f"old release {i}" for i in range(300)], [f"new release {i}" for i in range(300)]
    stage(ctx, old, run_id="san-1")
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.02, True)], staged_runs="san-1")
    publish.run(ctx, TARGET)
    stage(ctx, new, run_id="san-2")
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.02, True)], staged_runs="san-2")

    conf = tmp_path / "publish.yaml"
    conf.write_text(yaml.safe_dump({
        "lakehouse": {"root": ctx.settings.lakehouse.root}, "tracking": {"enabled": False},
        "publish": ctx.settings.publish.model_dump(mode="json"), "run": {"hmac_key_file": ctx.settings.run.hmac_key_file},
        "spark": {"master": "local[2]", "conf": {"spark.ui.enabled": "false"}}}))
    date_dir = Path(ctx.settings.publish.export_path) / TARGET / DATE.isoformat()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "privtext.cli", "--conf", str(conf), "run", "publish", "--target",
                             TARGET, "--date", DATE.isoformat()], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not PUBLISH_KILL_POINTS[point](Path(ctx.settings.lakehouse.root), date_dir) and proc.poll() is None \
            and time.time() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "publish finished before the kill point was reached"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    manifest = json.loads((date_dir / "manifest.json").read_text())
    assert manifest["rows"] == len(old) and manifest["published_table"]["version"] == 1  # the old export, whole

    assert main(["--conf", str(conf), "run", "publish", "--target", TARGET, "--date", DATE.isoformat()]) == 0
    assert published(ctx) == sorted(new)
    assert check_export(date_dir, new)["published_table"]["version"] > 1  # no leftover of the killed attempt
