"""Airflow runs in its own venv (.venv-airflow, made by `make airflow`); these tests drive it by subprocess.

A test that asks for the ``background`` fixture runs last, and its module's ``background(airflow, folder)``
starts in a thread as soon as the tests are collected: the minutes of spark-submits of a DAG run overlap
the rest of the suite instead of adding to it; the test then asserts on what that function returned."""
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
AIRFLOW_BIN = PROJECT / ".venv-airflow" / "bin"


class Airflow:
    """``run([...])`` in a private AIRFLOW_HOME (SQLite) with the project's dags/ folder and no examples."""

    project = PROJECT
    python = str(AIRFLOW_BIN / "python")
    airflow = str(AIRFLOW_BIN / "airflow")

    def __init__(self, home: Path):
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        self.env.update({"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT / "dags"),
                         "AIRFLOW__CORE__LOAD_EXAMPLES": "False"})
        self.current: subprocess.Popen | None = None

    def run(self, args: list[str], timeout: int, **env) -> subprocess.CompletedProcess:
        """``args`` in a process group of its own (``stop`` ends it and its spark-submits)."""
        self.current = subprocess.Popen(args, env={**self.env, **env}, cwd=PROJECT, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = self.current.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            self.current.communicate()
            raise
        return subprocess.CompletedProcess(args, self.current.returncode, stdout, stderr)

    def stop(self) -> None:
        """SIGKILL the running command's process group (by its leader's pid), if one is running."""
        if self.current is not None and self.current.poll() is None:
            os.killpg(self.current.pid, signal.SIGKILL)


@pytest.fixture
def airflow(tmp_path):
    if not (AIRFLOW_BIN / "airflow").exists():
        pytest.skip("Airflow's venv .venv-airflow is missing: run `make airflow` (`make test` does)")
    return Airflow(tmp_path / "airflow_home")


class Background(threading.Thread):
    """``work(airflow, folder)`` in a thread, with a private AIRFLOW_HOME under a fresh folder."""

    def __init__(self, work):
        super().__init__(daemon=True)
        self.folder = Path(tempfile.mkdtemp(prefix="privtext-dag-run-"))
        self.airflow = Airflow(self.folder / "airflow_home")
        self.work, self.value, self.error = work, None, None

    def run(self) -> None:
        try:
            self.value = self.work(self.airflow, self.folder)
        except BaseException as error:  # raised again in the test
            self.error = error

    def result(self):
        self.join()
        if self.error is not None:
            raise self.error
        return self.value


RUNS: dict[str, Background] = {}  # test module name -> its background work


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(config, items):
    late = [item for item in items if "background" in getattr(item, "fixturenames", ())]
    items[:] = [item for item in items if item not in late] + late
    if config.option.collectonly or not (AIRFLOW_BIN / "airflow").exists():
        return
    for item in late:
        if item.module.__name__ not in RUNS:
            RUNS[item.module.__name__] = Background(item.module.background)
            RUNS[item.module.__name__].start()


def pytest_unconfigure(config):
    """A session that ends before the test read its run (-x, Ctrl-C) ends the run's processes."""
    for run in RUNS.values():
        run.airflow.stop()
        shutil.rmtree(run.folder, ignore_errors=True)


@pytest.fixture
def background(request):
    """What the module's ``background(airflow, folder)`` returned, once it has finished."""
    if not (AIRFLOW_BIN / "airflow").exists():
        pytest.skip("Airflow's venv .venv-airflow is missing: run `make airflow` (`make test` does)")
    return RUNS[request.module.__name__].result()
