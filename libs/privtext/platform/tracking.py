"""MLflow tracking: one run per stage run, tagged with pipeline, stage, date and run_id.

Params are configuration values and counts, never text. Local default: a SQLite backend and an
artifact folder under the lakehouse root. That store is opened first (created, its schema migrated) and
the experiment created under the lakehouse's ``mlflow-store`` lease, so two runs starting together on a
fresh lakehouse never migrate the same SQLite file at once. Runs are tagged with the process holding them
(``privtext.host``, ``privtext.pid``); a run still ``RUNNING`` whose process on this host is gone (kill -9)
is marked ``FAILED`` by the next run.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import uuid
from typing import TYPE_CHECKING

from privtext.platform.config import resolve_uri
from privtext.platform.leases import pid_alive, stage_lease

if TYPE_CHECKING:  # the root settings live above the platform
    from privtext.settings import Settings


def tracking_uri(settings: Settings) -> str:
    if settings.tracking.tracking_uri:
        return settings.tracking.tracking_uri
    root = resolve_uri(settings.lakehouse.root)
    os.makedirs(root, exist_ok=True)
    return f"sqlite:///{root}/mlflow.db"


def artifact_root(settings: Settings) -> str:
    return settings.tracking.artifact_root or f"{resolve_uri(settings.lakehouse.root)}/mlruns"


class StageRun:
    """A handle on the active MLflow run (or a no-op when tracking is disabled)."""

    def __init__(self, mlflow_module=None):
        self._mlflow = mlflow_module

    @property
    def enabled(self) -> bool:
        return self._mlflow is not None

    @property
    def run_id(self) -> str | None:
        if self._mlflow is None:
            return None
        active = self._mlflow.active_run()
        return active.info.run_id if active else None

    def log_params(self, params: dict) -> None:
        if self._mlflow is not None:
            self._mlflow.log_params({k: str(v)[:500] for k, v in params.items()})

    def log_metrics(self, metrics: dict) -> None:
        if self._mlflow is not None:
            self._mlflow.log_metrics({k: float(v) for k, v in metrics.items() if v is not None})

    def log_dict(self, data: dict, artifact_file: str) -> None:
        if self._mlflow is not None:
            self._mlflow.log_text(json.dumps(data, indent=2, sort_keys=True, default=str), artifact_file)

    def log_artifact(self, path: str, artifact_path: str | None = None) -> None:
        if self._mlflow is not None:
            self._mlflow.log_artifact(path, artifact_path)


PIPELINE_RUN_ENV = "PRIVTEXT_PIPELINE_RUN"  # names the pipeline's parent run for stage runs in other processes


STORE_WAIT_S = 300  # how long a run waits for another one opening the MLflow store


def use_mlflow(settings: Settings):
    """mlflow, pointed at the configured tracking server and experiment (created on first use; the
    lakehouse's own store under its lease)."""
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    import mlflow

    mlflow.set_tracking_uri(tracking_uri(settings))
    in_lakehouse = not settings.tracking.tracking_uri  # the SQLite store under the lakehouse root
    lock = stage_lease(settings.lakehouse, "mlflow-store", f"mlflow-{uuid.uuid4().hex}", wait_s=STORE_WAIT_S) \
        if in_lakehouse else contextlib.nullcontext()
    with lock:
        experiment = mlflow.get_experiment_by_name(settings.tracking.experiment)  # creates and migrates the store
        if experiment is None:
            location = artifact_root(settings)
            if "://" not in location:
                os.makedirs(location, exist_ok=True)
                location = f"file://{location}"
            mlflow.create_experiment(settings.tracking.experiment, artifact_location=location)
    mlflow.set_experiment(settings.tracking.experiment)
    fail_dead_runs(mlflow, settings.tracking.experiment)
    return mlflow


def _holder() -> dict[str, str]:
    return {"privtext.host": socket.gethostname(), "privtext.pid": str(os.getpid())}


def fail_dead_runs(mlflow, experiment: str) -> list[str]:
    """Mark FAILED the RUNNING runs of this host whose process is gone; returns their run ids."""
    host = socket.gethostname().replace("'", "\\'")
    found = mlflow.search_runs([mlflow.get_experiment_by_name(experiment).experiment_id],
                               f"attributes.status = 'RUNNING' and tags.`privtext.host` = '{host}'",
                               output_format="list")
    client = mlflow.MlflowClient()
    failed = []
    for run in found:
        pid = int(run.data.tags.get("privtext.pid", "0"))
        if pid != os.getpid() and not pid_alive(pid):
            client.set_tag(run.info.run_id, "privtext.failure", f"process {pid} gone while running")
            client.set_terminated(run.info.run_id, "FAILED")
            failed.append(run.info.run_id)
    return failed


@contextlib.contextmanager
def stage_run(settings: Settings, pipeline: str, stage: str, date: str | None, run_id: str):
    """Open an MLflow run for one stage run (nested under an active pipeline run if there is one).

    In a process of its own (an Airflow task) the pipeline run is the one named by the environment
    variable ``PRIVTEXT_PIPELINE_RUN`` (see ``pipeline_run``), if set.
    """
    if not settings.tracking.enabled:
        yield StageRun(None)
        return
    mlflow = use_mlflow(settings)
    if mlflow.active_run() is None and os.environ.get(PIPELINE_RUN_ENV):
        with pipeline_run(settings, pipeline, date, key=os.environ[PIPELINE_RUN_ENV]):
            with stage_run(settings, pipeline, stage, date, run_id) as tracked:
                yield tracked
        return
    tags = {"pipeline": pipeline, "stage": stage, "date": date or "", "privtext.run_id": run_id, **_holder()}
    nested = mlflow.active_run() is not None
    with mlflow.start_run(run_name=f"{stage}-{date or 'adhoc'}", nested=nested, tags=tags):
        yield StageRun(mlflow)


@contextlib.contextmanager
def pipeline_run(settings: Settings, pipeline: str, date: str | None, key: str | None = None):
    """The parent MLflow run of one pipeline run; stage runs opened inside it are nested under it.

    ``key`` names the pipeline run across processes (Airflow: ``<dag_id>/<run_id>``): the first
    process creates the run tagged ``privtext.pipeline_key``, later ones reopen the same run.
    """
    if not settings.tracking.enabled:
        yield StageRun(None)
        return
    mlflow = use_mlflow(settings)
    tags = {"pipeline": pipeline, "stage": "pipeline", "date": date or "", "privtext.pipeline_key": key or "",
            **_holder()}
    existing = []
    if key:
        experiment = mlflow.get_experiment_by_name(settings.tracking.experiment)
        escaped = key.replace("'", "\\'")
        existing = mlflow.search_runs([experiment.experiment_id], f"tags.`privtext.pipeline_key` = '{escaped}'",
                                      max_results=1, output_format="list")
    if existing:
        with mlflow.start_run(run_id=existing[0].info.run_id):
            mlflow.set_tags(_holder())  # this process holds the reopened run now
            yield StageRun(mlflow)
    else:
        with mlflow.start_run(run_name=f"{pipeline}-{date or 'adhoc'}", nested=mlflow.active_run() is not None,
                              tags=tags):
            yield StageRun(mlflow)
