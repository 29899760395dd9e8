"""The platform's pipelines as ordered stage runs: what ``privtext pipeline run`` and ``privtext demo`` do
locally, and what the Airflow DAGs in ``dags/`` schedule as one spark-submit task per stage.

A pipeline run is one MLflow parent run with a nested run per stage; a stage that fails stops the
pipeline, and since every stage replaces only its own date partitions and ``publish`` comes last,
``published`` is untouched by a failed run and a rerun of the date is safe.

AmPL's loop (mpl-ampl-paper.txt, Sec. 3 / Sec. 5) closes the nightly export: when the audit refuses a
release its controls validated, ``retune`` re-sanitizes the date at stricter tier eps (alpha * eps for
the next lower ``ampl.alpha_grid`` value, at most ``ampl.retune_rounds`` rounds; every round's sanitize
is charged to the ledger like any other) and re-audits it against the SAME leakage target (each secret
at its configured type eps), so the first setting whose release passes is the one published. Each
round's eps, violation ratio and semantic similarity go to MLflow and the pipeline's results; a date
that passes on the first audit costs nothing more.
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
    with pipeline_run(settings, name, date) as tracked:
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
            if stage == "audit" and "sanitize" in results:
                results["retune"] = retune(settings, date, name, results, progress)
                tracked.log_dict({"rounds": results["retune"]}, "ampl/retune.json")
    return results


def stricter(settings: Settings, alpha: float) -> Settings:
    """``settings`` with every CluSanT tier and per-type eps scaled by ``alpha`` (the sanitizer's eps only)."""
    clusant = settings.clusant
    scaled = clusant.model_copy(update={"eps": {t: alpha * e for t, e in clusant.eps.items()},
                                        "eps_by_type": {t: alpha * e for t, e in clusant.eps_by_type.items()}})
    return settings.model_copy(update={"clusant": scaled})


def retune(settings: Settings, date: str, name: str, results: dict, progress=None) -> list[dict]:
    """AmPL's loop after a refused audit (module doc): re-sanitize at the next lower alphas, re-audit at the
    configured target; stops at the first pass, when the controls misbehave, or after the rounds. Returns
    one row per setting tried (the first: the configured one), aggregates only."""
    def row(alpha, sanitized, audited):
        return {"alpha": alpha, "eps": {t: alpha * e for t, e in settings.clusant.eps.items()},
                "violation_ratio": audited.worst_violation_ratio, "passed": audited.passed, "valid": audited.valid,
                "semantic_similarity": sanitized.semantic_similarity}

    rounds = [row(1.0, results["sanitize"], results["audit"])]
    lower = [a for a in sorted(settings.ampl.alpha_grid, reverse=True) if a < 1.0][:settings.ampl.retune_rounds]
    for alpha in lower:
        if results["audit"].passed or not results["audit"].valid:
            break
        with progress(f"retune {alpha:g}") if progress else contextlib.nullcontext():
            results["sanitize"] = run_stage("sanitize", stricter(settings, alpha), date=date, pipeline=name)
            results["audit"] = run_stage("audit", settings, date=date, pipeline=name, target="sanitized_documents")
        rounds.append(row(alpha, results["sanitize"], results["audit"]))
        log.info("%s: retune at alpha %g: violation ratio %.4f", name, alpha, results["audit"].worst_violation_ratio)
    return rounds
