"""Real concurrent processes: two ingests of the same date leave exactly one set of rows (the second
refuses, exit 3); an ingest of another date at the same time succeeds."""
import json
import os
import subprocess
import sys

import yaml
from deltalake import DeltaTable
from jvm_archive import java_options, spark_archive


def test_same_date_one_writer_other_date_proceeds(tmp_path):
    lake = tmp_path / "lake"
    conf = tmp_path / "conf.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": str(lake)}, "tracking": {"enabled": False},
                                    "run": {"deterministic": True},
                                    "spark": {"master": "local[1]", "conf": {
                                        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
                                        # the cold driver JVMs map Spark's classes from the tests' class-data
                                        # archive (tests/jvm_archive.py) instead of loading them from the jars
                                        "spark.driver.extraJavaOptions": java_options(spark_archive())}}}))
    sample = tmp_path / "in.jsonl"
    sample.write_text("".join(json.dumps({"doc_id": str(i), "text": f"message {i}"}) + "\n" for i in range(100)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # a fresh lakehouse: the runs create its tables

    def ingest(date):
        return subprocess.Popen([sys.executable, "-m", "privtext.cli", "--conf", str(conf), "run", "ingest",
                                 "--input", str(sample), "--date", date], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    runs = [ingest("2026-03-01"), ingest("2026-03-01"), ingest("2026-03-02")]
    outcomes = [(p.wait(), p.stderr.read()) for p in runs]
    same_date = sorted(code for code, _ in outcomes[:2])
    assert same_date == [0, 3], outcomes
    refusal = next(err for code, err in outcomes[:2] if code == 3)
    assert "privtext: refused: ingest-2026-03-01 is already running: pid " in refusal
    assert outcomes[2][0] == 0, outcomes[2][1][-2000:]
    rows = DeltaTable(str(lake / "restricted" / "documents")).to_pyarrow_table().to_pylist()
    by_date = {}
    for row in rows:
        by_date.setdefault(str(row["ingest_date"]), []).append(row["doc_id"])
    assert {d: (len(ids), len(set(ids))) for d, ids in by_date.items()} == {"2026-03-01": (100, 100),
                                                                             "2026-03-02": (100, 100)}
