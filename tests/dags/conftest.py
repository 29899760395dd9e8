"""Airflow runs in its own venv (.venv-airflow, made by `make airflow`); these tests drive it by subprocess.

A test that asks for the ``background`` fixture runs last, and its module's ``background(airflow, folder)``
starts in a thread as soon as the tests are collected: the minutes of spark-submits of a DAG run overlap
the rest of the suite instead of adding to it; the test then asserts on what that function returned.
Under pytest-xdist every worker collects every test: the first worker to claim a run (a file created
exclusively in a folder shared by the workers of this session) runs it and writes its value there
(pickled), stays up until it has, and the worker that runs the test waits for that file."""
import contextlib
import os
import pickle
import shutil
import signal
import subprocess
import tempfile
import threading
import time
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
    """``work(airflow, folder)`` in a thread, with a private AIRFLOW_HOME under a fresh folder; with ``shared``
    (xdist) its value or error is also pickled to that file for the worker that runs the test."""

    def __init__(self, work, shared: Path | None = None):
        super().__init__(daemon=True)
        self.folder = Path(tempfile.mkdtemp(prefix="privtext-dag-run-"))
        self.airflow = Airflow(self.folder / "airflow_home")
        self.work, self.value, self.error, self.shared = work, None, None, shared

    def run(self) -> None:
        try:
            self.value = self.work(self.airflow, self.folder)
        except BaseException as error:  # raised again in the test
            self.error = error
        if self.shared is not None:
            try:
                outcome = pickle.dumps((self.value, self.error))
            except Exception as error:  # an unpicklable error: its text
                outcome = pickle.dumps((None, RuntimeError(f"{self.error!r} ({error})")))
            temporary = self.shared.with_suffix(".tmp")
            temporary.write_bytes(outcome)
            temporary.replace(self.shared)

    def result(self):
        self.join()
        if self.error is not None:
            raise self.error
        return self.value


RUNS: dict[str, Background] = {}  # test module name -> its background work, in the process that runs it


def _shared(config, module: str) -> Path | None:
    """Under xdist, the file that carries ``module``'s run between workers (one folder per session)."""
    if not hasattr(config, "workerinput"):
        return None
    folder = Path(tempfile.gettempdir()) / f"privtext-dag-runs-{config.workerinput['testrunuid']}"
    folder.mkdir(exist_ok=True)
    return folder / f"{module}.pickle"


def _claim(shared: Path | None) -> bool:
    """True in the one process that runs the work (every process when not under xdist)."""
    if shared is None:
        return True
    try:
        os.close(os.open(shared.with_suffix(".claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(config, items):
    late = [item for item in items if "background" in getattr(item, "fixturenames", ())]
    items[:] = [item for item in items if item not in late] + late
    if config.option.collectonly or not (AIRFLOW_BIN / "airflow").exists():
        return
    for item in late:
        name = item.module.__name__
        shared = _shared(config, name)
        if name not in RUNS and _claim(shared):
            RUNS[name] = Background(item.module.background, shared)
            RUNS[name].start()


def pytest_sessionfinish(session, exitstatus):
    """An xdist worker that runs a DAG stays until the run's value is written (another worker may wait for it),
    unless the session was stopped (-x, Ctrl-C)."""
    if (exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
            and not (session.shouldstop or session.shouldfail)):
        for run in RUNS.values():
            if run.shared is not None:
                run.join()


def pytest_unconfigure(config):
    """A session that ends before the test read its run (-x, Ctrl-C) ends the run's processes."""
    for run in RUNS.values():
        run.airflow.stop()
        if run.shared is None or run.is_alive():  # else the test that read it removes the folder
            shutil.rmtree(run.folder, ignore_errors=True)


@pytest.fixture
def background(request):
    """What the module's ``background(airflow, folder)`` returned, once it has finished."""
    if not (AIRFLOW_BIN / "airflow").exists():
        pytest.skip("Airflow's venv .venv-airflow is missing: run `make airflow` (`make test` does)")
    name = request.module.__name__
    if name in RUNS:
        value = RUNS[name].result()
    else:  # another xdist worker runs it
        shared = _shared(request.config, name)
        deadline = time.monotonic() + 3600
        while not shared.exists():
            assert shared.with_suffix(".claim").exists(), f"no worker runs {name}'s background work"
            assert time.monotonic() < deadline, f"no DAG run result after an hour: {shared}"
            time.sleep(1)
        value, error = pickle.loads(shared.read_bytes())
        if error is not None:
            raise error
    yield value
    if isinstance(value, dict) and value.get("lake") is not None:
        shutil.rmtree(Path(value["lake"]).parent, ignore_errors=True)
    shared = _shared(request.config, name)
    if shared is not None:  # this module's files; the folder once no other module's are left
        for path in (shared, shared.with_suffix(".claim")):
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            shared.parent.rmdir()
