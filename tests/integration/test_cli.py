"""The privtext CLI in-process: sample data -> run ingest -> sql over the zones."""
import json

import pytest
import yaml

from privtext.cli import main
from tests_support import hold_lease


def test_sample_data_ingest_and_sql(spark, tmp_path, capsys):
    conf = tmp_path / "test.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": str(tmp_path / "lake")}, "tracking": {"enabled": False},
                                    "run": {"deterministic": True}, "sql": {"role": "operator"}}))
    sample = tmp_path / "sample.jsonl"
    assert main(["sample-data", "--n", "120", "--seed", "3", "--out", str(sample)]) == 0
    rows = [json.loads(line) for line in sample.read_text().splitlines()]
    assert len(rows) == 120 and len({r["user_id"] for r in rows}) < 120  # several messages per user
    assert main(["--conf", str(conf), "run", "ingest", "--input", str(sample), "--date", "2026-02-01"]) == 0
    capsys.readouterr()
    assert main(["--conf", str(conf), "sql",
                 "SELECT label, count(*) AS n FROM restricted.documents GROUP BY label ORDER BY label",
                 "--format", "json"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert sum(r["n"] for r in out) == 120
    assert {r["label"] for r in out} <= {"billing", "delivery", "account", "product"}


def test_bad_config_exits_2_naming_the_key(tmp_path, capsys):
    conf = tmp_path / "bad.yaml"
    conf.write_text("spark:\n  masterr: local\n")
    assert main(["--conf", str(conf), "init"]) == 2
    assert "spark.masterr" in capsys.readouterr().err


def test_a_second_run_of_a_stage_and_date_refuses_while_the_first_holds_its_lease(spark, tmp_path, capsys):
    """The lease is held by another real process; the CLI refuses that date (exit 3), another date runs."""
    conf = tmp_path / "test.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": str(tmp_path / "lake")}, "tracking": {"enabled": False},
                                    "run": {"deterministic": True}}))
    sample = tmp_path / "in.jsonl"
    sample.write_text("".join(json.dumps({"text": f"message {i}"}) + "\n" for i in range(5)))
    owner = hold_lease(tmp_path / "lake", "ingest-2026-02-01")
    try:
        assert owner.stdout.readline().strip() == "held"
        assert main(["--conf", str(conf), "run", "ingest", "--input", str(sample), "--date", "2026-02-01"]) == 3
        err = capsys.readouterr().err
        assert f"refused: ingest-2026-02-01 is already running: pid {owner.pid}" in err
        assert main(["--conf", str(conf), "run", "ingest", "--input", str(sample), "--date", "2026-02-02"]) == 0
    finally:
        owner.kill()
        owner.wait()
    assert main(["--conf", str(conf), "run", "ingest", "--input", str(sample), "--date", "2026-02-01"]) == 0


@pytest.mark.parametrize("stage, lease", [(["sanitize"], "sanitize-2026-02-01"),
                                          (["publish", "--target", "sanitized_documents"],
                                           "publish-sanitized_documents-2026-02-01")])
def test_sanitize_and_publish_refuse_a_date_another_process_is_running(tmp_path, capsys, stage, lease):
    conf = tmp_path / "test.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": str(tmp_path / "lake")}, "tracking": {"enabled": False}}))
    owner = hold_lease(tmp_path / "lake", lease)
    try:
        assert owner.stdout.readline().strip() == "held"
        assert main(["--conf", str(conf), "run", *stage, "--date", "2026-02-01"]) == 3
        assert f"refused: {lease} is already running: pid {owner.pid}" in capsys.readouterr().err
    finally:
        owner.kill()
        owner.wait()
