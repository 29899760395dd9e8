"""``privtext status`` (last pipeline runs, gate verdict, budget left, row counts) and ``privtext ui``."""
import datetime as dt
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import yaml

from privtext.cli import main
from privtext.ledger import Ledger
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.tables import LEAKAGE_AUDITS, PRIVACY_LEDGER, WORD_VECTORS
from privtext.platform.tracking import pipeline_run, stage_run
from privtext.privacy.budget import mldp_charge
from privtext.settings import load_settings

DATE = "2026-01-15"


def _conf(tmp_path):
    conf = tmp_path / "conf.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": str(tmp_path / "lake")}, "tracking": {"enabled": True},
                                    "publish": {"export_path": str(tmp_path / "exports")}}))
    return conf


def test_status_shows_last_runs_gate_budget_and_rows(tmp_path, capsys):
    conf = _conf(tmp_path)
    settings = load_settings(conf, environ={})
    lake = Lakehouse(None, settings.lakehouse)
    for spec in (PRIVACY_LEDGER, LEAKAGE_AUDITS, WORD_VECTORS):  # word vectors: by model version, not date
        lake.create(spec)
    Ledger(lake, settings).charge(mldp_charge("default", "sanitize", "s1", "clusant", epsilon=4.0, pure_epsilon=12.0,
                                              metric="D_k", k=4, params={"date": DATE}), {"v1": 5, "v2": 1})
    lake.append_rows(LEAKAGE_AUDITS, [{"target": "sanitized_documents", "date": dt.date(2026, 1, 15),
                                       "adversary": "rnn", "release": "candidate", "run_id": "a1"}])
    with pipeline_run(settings, "nightly_sanitized_export", "2026-01-14"):
        with stage_run(settings, "nightly_sanitized_export", "publish", "2026-01-14", "p0") as tracked:
            tracked.log_params({"publish.gate": "passed"})
    with pipeline_run(settings, "nightly_sanitized_export", DATE):
        try:
            with stage_run(settings, "nightly_sanitized_export", "publish", DATE, "p1") as tracked:
                tracked.log_params({"publish.gate": "refused", "publish.refused": "rnn found leakage"})
                raise RuntimeError("refused")
        except RuntimeError:
            pass

    assert main(["--conf", str(conf), "status"]) == 0
    out = capsys.readouterr().out
    nightly = next(line for line in out.splitlines() if "nightly_sanitized_export" in line)
    assert (f"date {DATE}" in nightly and "failed at publish" in nightly
            and "gate: refused: rnn found leakage" in nightly)
    assert re.search(r"synthetic_refresh\s+no run", out)
    # 5 occurrences x eps 4 = 20 of the default mldp_eps_max 200
    assert ("default:\n    per value: 20 of 200 used (10%; metric-LDP epsilon summed over its draws, across the "
            "types detected, worst of 2 values)") in out
    assert re.search(r"protected\.leakage_audits\s+1\n", out) and re.search(r"restricted\.documents\s+not created", out)

    assert main(["--conf", str(conf), "status", "--date", "2026-01-14"]) == 0
    out = capsys.readouterr().out
    assert "gate: passed" in out and re.search(r"protected\.leakage_audits\s+0\n", out)
    assert re.search(r"published\.word_vectors\s+0\n", out)


def test_ui_serves_mlflow_on_the_printed_port(tmp_path):
    conf = _conf(tmp_path)
    ui = subprocess.Popen([sys.executable, "-m", "privtext.cli", "--conf", str(conf), "ui"], stdout=subprocess.PIPE,
                          text=True, start_new_session=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+", ui.stdout.readline()).group(0)
        deadline, page = time.time() + 120, ""
        while time.time() < deadline and not page:
            try:
                page = urllib.request.urlopen(url, timeout=5).read().decode()
            except OSError:
                time.sleep(1)
        assert "MLflow" in page
    finally:
        os.killpg(ui.pid, signal.SIGTERM)  # privtext ui and the MLflow server it started
        ui.wait(timeout=30)
