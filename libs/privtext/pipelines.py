"""The platform's pipelines as declared steps (``PIPELINES``): what ``privtext pipeline run`` and ``privtext
demo`` do locally, and what the Airflow DAGs in ``dags/`` schedule as one spark-submit task per stage.

A pipeline run is one MLflow parent run with a nested run per stage; a stage that fails stops the
pipeline, and since every stage replaces only its own date partitions and ``publish`` comes last,
``published`` is untouched by a failed run and a rerun of the date is safe.

The nightly export's ``retune`` step is AmPL's loop (mpl-ampl-paper.txt, Sec. 3 / Sec. 5) after its
``audit``: while the audit refuses a release its controls validated, re-sanitize the date at stricter
tier eps (each round charged like any sanitize) and re-audit it at the same configured eps bounds, so the
first setting whose release passes is the one staged and published (docs/products/export.md, "AmPL's
loop"). The Airflow DAG runs the audit and the loop as one task (``audit_and_retune``).
"""
from __future__ import annotations

import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field

from privtext.errors import Refused, UsageError
from privtext.platform.tracking import pipeline_run, stage_run
from privtext.settings import Settings
from privtext.stages.runner import job_entry, run_stage

log = logging.getLogger("privtext")

RETUNE = "retune"  # the step after ``audit`` that runs AmPL's loop (``retune``); not a stage of its own


@dataclass(frozen=True)
class Step:
    """One step of a pipeline.

    :param name: a stage of ``privtext.stages.STAGES`` (run by ``run_stage``), or ``RETUNE``: AmPL's loop on
        the ``sanitize`` and ``audit`` results of this run (skipped when either was skipped)
    :param options: the stage's options (``--target`` ...); ``ingest`` gets the run's input path
    """

    name: str
    options: dict[str, str] = field(default_factory=dict)


EXPORT = {"target": "sanitized_documents"}
PIPELINES: dict[str, tuple[Step, ...]] = {
    "nightly_sanitized_export": (Step("ingest"), Step("detect_pii"), Step("embed"), Step("sanitize"),
                                 Step("audit", EXPORT), Step(RETUNE), Step("publish", EXPORT)),
    "synthetic_refresh": (Step("ingest"), Step("detect_pii"), Step("embed"), Step("synthesize"), Step("evaluate"),
                          Step("publish", {"target": "synthetic_documents"})),
    "dped_training": (Step("train_dped"), Step("publish", {"target": "word_vectors"})),
}


def run_pipeline(name: str, settings: Settings, date: str, input_path: str | None = None,
                 skip: tuple[str, ...] = (), progress=None) -> dict[str, object]:
    """Run the steps of pipeline ``name`` for ``date`` in order, but those named in ``skip``; returns each
    stage's result (the ``RETUNE`` step: its rounds, and the staged setting's ``sanitize`` and ``audit``).
    ``progress(stage)``: a context manager around each stage (the demo's stage lines). A ``Refused`` stops
    the run; it carries the results so far (``pipeline_results``) and the refused step (``pipeline_stage``)."""
    if name not in PIPELINES:
        raise UsageError(f"unknown pipeline {name!r}; allowed: {', '.join(PIPELINES)}")
    results: dict[str, object] = {}
    with pipeline_run(settings, name, date) as tracked:
        for step in PIPELINES[name]:
            if step.name in skip or step.name == RETUNE and not {"sanitize", "audit"} <= results.keys():
                continue
            options = step.options
            if step.name == "ingest":
                if input_path is None:
                    raise UsageError(f"pipeline {name!r} starts with ingest: an input path is required (--input)")
                options = {"input_path": input_path}
            started = time.perf_counter()
            try:
                if step.name == RETUNE:
                    retuned = retune(settings, date, name, results["sanitize"], results["audit"], progress)
                    results.update(sanitize=retuned.sanitize, audit=retuned.audit, retune=retuned.rounds)
                    tracked.log_dict({"rounds": retuned.rounds}, "ampl/retune.json")
                else:
                    with progress(step.name) if progress else contextlib.nullcontext():
                        results[step.name] = run_stage(step.name, settings, date=date, pipeline=name, **options)
                    log.info("%s: %s done in %.1f s", name, step.name, time.perf_counter() - started)
            except Refused as refusal:  # the refused run's summary (``refusal_summary``) needs what ran
                refusal.pipeline_results, refusal.pipeline_stage = dict(results), step.name
                raise
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


@dataclass(frozen=True)
class Retuned:
    """What AmPL's loop leaves staged: one row per setting tried (the first: the configured one; aggregates
    only), and the ``sanitize`` and ``audit`` results of the last setting (the inputs when none was tried)."""

    rounds: list[dict]
    sanitize: object
    audit: object


def retune(settings: Settings, date: str, name: str, sanitize, audit, progress=None) -> Retuned:
    """AmPL's loop after the audit (module doc): while ``audit`` (the audit stage's result for the staged
    release, which ``sanitize``'s result staged) refused with valid controls, re-sanitize at the next lower
    ``ampl.alpha_grid`` alpha (at most ``ampl.retune_rounds``) and re-audit at the configured eps bounds; stops
    at the first pass or invalid controls. The rounds also go to ``protected.eps_frontier`` (source
    ``retune``; ``chosen``: the setting staged, if its audit passed). Changes none of its arguments."""
    def row(alpha, similarity, result):
        return {"alpha": alpha, "eps": {t: alpha * e for t, e in settings.clusant.eps.items()},
                "violation_ratio": result.worst_violation_ratio, "passed": result.passed, "valid": result.valid,
                "semantic_similarity": similarity}

    rounds = [row(1.0, sanitize.semantic_similarity, audit)]
    lower = [a for a in sorted(settings.ampl.alpha_grid, reverse=True) if a < 1.0][:settings.ampl.retune_rounds]
    for alpha in lower:
        if audit.passed or not audit.valid:
            break
        with progress(f"retune {alpha:g}") if progress else contextlib.nullcontext():
            sanitize = run_stage("sanitize", stricter(settings, alpha), date=date, pipeline=name)
            audit = run_stage("audit", settings, date=date, pipeline=name, **EXPORT)
        rounds.append(row(alpha, sanitize.semantic_similarity, audit))
        log.info("%s: retune at alpha %g: violation ratio %.4f", name, alpha, audit.worst_violation_ratio)
    _record(settings, date, name, rounds)
    return Retuned(rounds, sanitize, audit)


def _record(settings: Settings, date: str, name: str, rounds: list[dict]) -> None:
    from privtext.platform.context import RunContext
    from privtext.platform.utility_reports import write_frontier

    eps = settings.clusant.eps
    write_frontier(RunContext.create(settings, date=date, pipeline=name), EXPORT["target"], "retune", [
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

    audit = run_stage("audit", settings, date=date, pipeline=name, **EXPORT)
    ctx = RunContext.create(settings, date=date, pipeline=name)
    similarity = next((r["value"] for r in ctx.lakehouse.read(UTILITY_REPORTS, date=ctx.date)
                       .where((F.col("target") == EXPORT["target"]) & (F.col("metric") == "semantic_similarity"))
                       .select("value").collect()), None)
    return retune(settings, date, name, SimpleNamespace(semantic_similarity=similarity), audit).rounds


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
