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
that passes on the first audit costs nothing more. The Airflow DAG runs the audit and the loop as one task
(``audit_and_retune``), so a night that passes pays no extra spark-submit.
"""
from __future__ import annotations

import contextlib
import logging
import time
import uuid

from privtext.errors import Refused, UsageError
from privtext.settings import Settings
from privtext.platform.tracking import pipeline_run, stage_run
from privtext.stages.runner import job_entry, run_stage

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
                try:
                    results[stage] = run_stage(stage, settings, date=date, pipeline=name, **options)
                except Refused as refusal:  # the refused run's summary (``refusal_summary``) needs what ran
                    refusal.pipeline_results, refusal.pipeline_stage = dict(results), stage
                    raise
            log.info("%s: %s done in %.1f s", name, stage, time.perf_counter() - started)
            if stage == "audit" and "sanitize" in results:
                results["retune"] = retune(settings, date, name, results, progress)
                tracked.log_dict({"rounds": results["retune"]}, "ampl/retune.json")
    return results


def refusal_summary(refusal: Refused, date: str, target: str = "sanitized_documents") -> dict[str, object]:
    """What a refused ``privtext pipeline run`` prints, as a passing one does: each stage's result up to the
    refusal, then the refused stage with the gate's failed checks and what to do about each (aggregates only)."""
    stage = getattr(refusal, "pipeline_stage", None) or "pipeline"
    reasons = list(getattr(refusal, "reasons", None) or [str(refusal)])
    steps = []
    for reason in reasons:
        if "is invalid" in reason:
            steps.append(f"the audit could not decide: rerun it (privtext run audit --target {target} --date {date}); "
                         "if its controls misbehave again, the audit itself is at fault, report it with the audit's "
                         "MLflow run")
        elif "found leakage" in reason or "not confidently" in reason:
            steps.append(f"sanitize at a lower eps: privtext tune sanitize --date {date}, then privtext --conf "
                         f"conf/tuned/clusant.yaml run sanitize --date {date}, the audit and publish again")
        elif "stale" in reason or "no leakage audit" in reason:
            steps.append(f"audit what is staged: privtext run audit --target {target} --date {date}")
    if stage == "publish":
        steps.append(f"or publish anyway, recorded in the ledger: privtext run publish --target {target} --date "
                     f"{date} --override-gate --reason \"...\"")
    return {**getattr(refusal, "pipeline_results", {}),
            stage: {"refused": True, "gate_checks_failed": reasons, "what_to_do": steps or [str(refusal)]}}


def stricter(settings: Settings, alpha: float) -> Settings:
    """``settings`` with every CluSanT tier and per-type eps scaled by ``alpha`` (the sanitizer's eps only)."""
    clusant = settings.clusant
    scaled = clusant.model_copy(update={"eps": {t: alpha * e for t, e in clusant.eps.items()},
                                        "eps_by_type": {t: alpha * e for t, e in clusant.eps_by_type.items()}})
    return settings.model_copy(update={"clusant": scaled})


def retune(settings: Settings, date: str, name: str, results: dict, progress=None) -> list[dict]:
    """AmPL's loop after a refused audit (module doc): re-sanitize at the next lower alphas, re-audit at the
    configured target; stops at the first pass, when the controls misbehave, or after the rounds. Returns
    one row per setting tried (the first: the configured one), aggregates only, also written to
    ``protected.eps_frontier`` (source ``retune``; ``chosen``: the setting staged, if its audit passed)."""
    def row(alpha, similarity, audited):
        return {"alpha": alpha, "eps": {t: alpha * e for t, e in settings.clusant.eps.items()},
                "violation_ratio": audited.worst_violation_ratio, "passed": audited.passed, "valid": audited.valid,
                "semantic_similarity": similarity}

    rounds = [row(1.0, results["sanitize"].semantic_similarity, results["audit"])]
    lower = [a for a in sorted(settings.ampl.alpha_grid, reverse=True) if a < 1.0][:settings.ampl.retune_rounds]
    for alpha in lower:
        if results["audit"].passed or not results["audit"].valid:
            break
        with progress(f"retune {alpha:g}") if progress else contextlib.nullcontext():
            results["sanitize"] = run_stage("sanitize", stricter(settings, alpha), date=date, pipeline=name)
            results["audit"] = run_stage("audit", settings, date=date, pipeline=name, target="sanitized_documents")
        rounds.append(row(alpha, results["sanitize"].semantic_similarity, results["audit"]))
        log.info("%s: retune at alpha %g: violation ratio %.4f", name, alpha, results["audit"].worst_violation_ratio)
    _record(settings, date, name, rounds)
    return rounds


def _record(settings: Settings, date: str, name: str, rounds: list[dict]) -> None:
    from privtext.platform.context import RunContext
    from privtext.platform.utility_reports import write_frontier

    eps = settings.clusant.eps
    write_frontier(RunContext.create(settings, date=date, pipeline=name), "sanitized_documents", "retune", [
        {"eps_pii": r["alpha"] * eps["PII"], "eps_poii": r["alpha"] * eps["PoII"],
         "violation_ratio": r["violation_ratio"], "chosen": r is rounds[-1] and r["passed"],
         "utility_loss": None if r["semantic_similarity"] is None else 1.0 - r["semantic_similarity"]}
        for r in rounds])


def audit_and_retune(settings: Settings, date: str, name: str = "nightly_sanitized_export") -> list[dict]:
    """The DAG's ``audit`` task of the nightly export (``jobs/audit_and_retune.py``): the audit stage, then
    the loop on its result, with the staged release's semantic similarity read back from
    ``protected.utility_reports`` (sanitize ran in another task)."""
    from types import SimpleNamespace

    from pyspark.sql import functions as F

    from privtext.platform.context import RunContext
    from privtext.platform.tables import UTILITY_REPORTS

    audited = run_stage("audit", settings, date=date, pipeline=name, target="sanitized_documents")
    ctx = RunContext.create(settings, date=date, pipeline=name)
    similarity = next((r["value"] for r in ctx.lakehouse.read(UTILITY_REPORTS, date=ctx.date)
                       .where((F.col("target") == "sanitized_documents") & (F.col("metric") == "semantic_similarity"))
                       .select("value").collect()), None)
    return retune(settings, date, name, {"audit": audited, "sanitize": SimpleNamespace(semantic_similarity=similarity)})


def audit_and_retune_main(argv: list[str]) -> int:
    """``spark-submit jobs/audit_and_retune.py [--conf FILE] --date YYYY-MM-DD [--pipeline NAME]``: prints the
    rounds as one JSON line; exit 0 whether or not a round passed (publish's gate decides), a PrivtextError's
    code otherwise."""
    import argparse

    def job(settings: Settings, rest: list[str]) -> dict:
        parser = argparse.ArgumentParser(prog="jobs/audit_and_retune.py",
                                         description=audit_and_retune.__doc__.split("\n")[0])
        parser.add_argument("--date", required=True)
        parser.add_argument("--pipeline", default="nightly_sanitized_export")
        args = parser.parse_args(rest)
        rounds = audit_and_retune(settings, args.date, args.pipeline)
        with stage_run(settings, args.pipeline, "retune", args.date, uuid.uuid4().hex) as tracked:
            tracked.log_dict({"rounds": rounds}, "ampl/retune.json")  # beside the audit's run, as in the pipeline
        return {"rounds": rounds}

    return job_entry("retune", job, argv)
