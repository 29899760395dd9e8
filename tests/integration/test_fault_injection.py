"""Crash safety of ingest: the stage's process group is killed (SIGKILL, by PID) at two points — after
the quarantine commit, before the documents write; and while executors write the documents' files —
then the date is rerun: every table's rows for the date equal a clean run's, and every file the
snapshots reference exists (the killed write's files are never referenced)."""
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

from privtext.cli import main

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
