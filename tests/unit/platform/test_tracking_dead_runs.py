"""A stage's MLflow run left RUNNING by a killed process (kill -9) is marked FAILED by the next run;
a run whose process is alive is left alone."""
import os
import signal
import subprocess
import sys

from privtext.platform.tracking import stage_run, use_mlflow
from privtext.settings import load_settings

STAGE = """
import sys, time
from privtext.settings import load_settings
from privtext.platform.tracking import stage_run
settings = load_settings(None, overrides={"lakehouse": {"root": sys.argv[1]}}, environ={})
with stage_run(settings, "adhoc", "ingest", "2026-01-15", sys.argv[2]) as tracked:
    print(tracked.run_id, flush=True)
    time.sleep(300)
"""


def _stage_process(root, run_id):
    return subprocess.Popen([sys.executable, "-c", STAGE, str(root), run_id], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_killed_runs_are_marked_failed_by_the_next_run(tmp_path):
    settings = load_settings(None, overrides={"lakehouse": {"root": str(tmp_path)}}, environ={})
    mlflow = use_mlflow(settings)  # the store and experiment exist before the processes race on them
    killed, alive = _stage_process(tmp_path, "killed"), _stage_process(tmp_path, "alive")
    try:
        killed_run, alive_run = killed.stdout.readline().strip(), alive.stdout.readline().strip()
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        use_mlflow(settings)  # what every next run does first
        assert mlflow.get_run(killed_run).info.status == "FAILED"
        assert mlflow.get_run(killed_run).data.tags["privtext.failure"] == f"process {killed.pid} gone while running"
        assert mlflow.get_run(alive_run).info.status == "RUNNING"
        with stage_run(settings, "adhoc", "ingest", "2026-01-15", "next") as tracked:
            assert mlflow.get_run(tracked.run_id).data.tags["privtext.pid"] == str(os.getpid())
    finally:
        alive.kill()
        alive.wait()
