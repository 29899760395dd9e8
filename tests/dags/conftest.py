"""Airflow runs in its own venv (.venv-airflow, made by `make airflow`); these tests drive it by subprocess."""
import os
import subprocess
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

    def run(self, args: list[str], timeout: int, **env) -> subprocess.CompletedProcess:
        return subprocess.run(args, env={**self.env, **env}, cwd=PROJECT, capture_output=True, text=True,
                              timeout=timeout)


@pytest.fixture
def airflow(tmp_path):
    if not (AIRFLOW_BIN / "airflow").exists():
        pytest.skip("Airflow's venv .venv-airflow is missing: run `make airflow` (`make test` does)")
    return Airflow(tmp_path / "airflow_home")
