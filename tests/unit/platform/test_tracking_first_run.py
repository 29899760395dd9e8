"""Issue 47: two runs starting together on a fresh lakehouse both open MLflow's store (its SQLite schema is
migrated once, under the lakehouse's lease); without the lease the same start fails one of them."""
from __future__ import annotations

import subprocess
import sys

OPEN = """
import os, sys, time, logging
logging.disable(logging.WARNING)
root, go, locked = sys.argv[1], sys.argv[2], sys.argv[3] == "locked"
import mlflow
from privtext.platform.tracking import use_mlflow
from privtext.settings import load_settings
settings = load_settings(None, overrides={"lakehouse": {"root": root}, "tracking": {"enabled": True}}, environ={})
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.002)
try:
    if locked:
        use_mlflow(settings)
    else:  # the store opened as before the lease: no lock around the migration and the experiment's creation
        mlflow.set_tracking_uri(f"sqlite:///{root}/mlflow.db")
        if mlflow.get_experiment_by_name("privtext") is None:
            mlflow.create_experiment("privtext")
except Exception as error:
    print(type(error).__name__)
    sys.exit(1)
"""


def _start_together(tmp_path, modes: dict[str, int]) -> dict[str, list[int]]:
    """Exit codes of interpreters opening a fresh store (``tmp_path/<mode>``) at the same instant, once all
    have imported everything: per mode, that many processes."""
    go = tmp_path / "go"
    runs = {mode: [subprocess.Popen([sys.executable, "-c", OPEN, str(tmp_path / mode), str(go), mode],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(n)]
            for mode, n in modes.items()}
    for run in [r for group in runs.values() for r in group]:
        assert run.stdout.readline().strip() == "ready"
    go.touch()
    return {mode: [run.wait(timeout=300) for run in group] for mode, group in runs.items()}


def test_two_runs_open_a_fresh_store_together(tmp_path):
    codes = _start_together(tmp_path, {"locked": 2, "unlocked": 2})
    assert codes["locked"] == [0, 0]
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/locked/mlflow.db")
    assert len([e for e in mlflow.search_experiments() if e.name == "privtext"]) == 1
    assert not list((tmp_path / "locked" / "_locks").glob("*.lock"))  # the lease is released
    # negative control: the same start without the lease fails one of them (3 of 3 tries on 2026-11-27)
    assert any(code != 0 for code in codes["unlocked"])
