"""The platform's pipelines as ordered stage runs: what ``privtext pipeline run`` and ``privtext demo`` do
locally, and what the Airflow DAGs in ``dags/`` schedule as one spark-submit task per stage.

A pipeline run is one MLflow parent run with a nested run per stage; a stage that fails stops the
pipeline, and since every stage replaces only its own date partitions and ``publish`` comes last,
``published`` is untouched by a failed run and a rerun of the date is safe.
"""
from __future__ import annotations

import contextlib
import logging
import time

from privtext.errors import UsageError
from privtext.settings import Settings
from privtext.platform.tracking import pipeline_run
from privtext.stages.runner import run_stage

log = logging.getLogger("privtext")

PIPELINES: dict[str, tuple[tuple[str, dict], ...]] = {
    "nightly_sanitized_export": (
        ("ingest", {}), ("detect_pii", {}), ("embed", {}), ("sanitize", {}),
        ("audit", {"target": "sanitized_documents"}), ("publish", {"target": "sanitized_documents"}),
    ),
    "synthetic_refresh": (
        ("ingest", {}), ("detect_pii", {}), ("embed", {}), ("synthesize", {}), ("evaluate", {}),
        ("publish", {"target": "synthetic_documents"}),
    ),
    "dped_training": (("train_dped", {}), ("publish", {"target": "word_vectors"})),
}


def run_pipeline(name: str, settings: Settings, date: str, input_path: str | None = None,
                 skip: tuple[str, ...] = (), progress=None) -> dict[str, object]:
    """Run the stages of pipeline ``name`` for ``date`` in order; returns each stage's result.
    ``progress(stage)``: a context manager around each stage (the demo's stage lines)."""
    if name not in PIPELINES:
        raise UsageError(f"unknown pipeline {name!r}; allowed: {', '.join(PIPELINES)}")
    results: dict[str, object] = {}
    with pipeline_run(settings, name, date):
        for stage, options in PIPELINES[name]:
            if stage in skip:
                continue
            if stage == "ingest":
                if input_path is None:
                    raise UsageError(f"pipeline {name!r} starts with ingest: an input path is required (--input)")
                options = {"input_path": input_path}
            started = time.perf_counter()
            with progress(stage) if progress else contextlib.nullcontext():
                results[stage] = run_stage(stage, settings, date=date, pipeline=name, **options)
            log.info("%s: %s done in %.1f s", name, stage, time.perf_counter() - started)
    return results
