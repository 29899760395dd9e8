"""Run one stage: build the run context, open its MLflow run, call the stage, log counts.

A stage is the module ``privtext.stages.<name>`` with ``run(ctx, **options) -> dataclass`` and, when
it takes options, ``add_arguments(parser)`` declaring them (``dest`` = the keyword of ``run``), so
``privtext run <stage> ...`` and ``spark-submit jobs/<stage>.py ...`` accept exactly those options.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import logging

from privtext.settings import Settings
from privtext.platform.context import RunContext
from privtext.platform.tracking import stage_run

log = logging.getLogger("privtext")

STAGES = ("ingest", "detect_pii", "embed", "sanitize", "audit", "publish", "synthesize", "evaluate",
          "train_dped")


def stage_module(stage: str):
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; allowed: {', '.join(STAGES)}")
    return importlib.import_module(f"privtext.stages.{stage}")


def stage_parser(stage: str) -> argparse.ArgumentParser:
    """The options of ``privtext run <stage>``: --date, --pipeline, --run-id and the stage's own."""
    module = stage_module(stage)
    parser = argparse.ArgumentParser(prog=f"privtext run {stage}", description=(module.__doc__ or "").split("\n")[0])
    parser.add_argument("--date", help="YYYY-MM-DD (default: today, UTC)")
    parser.add_argument("--pipeline", default="adhoc", help="pipeline name recorded on the run")
    parser.add_argument("--run-id", dest="run_id", help="run id (default: a new uuid)")
    if hasattr(module, "add_arguments"):
        module.add_arguments(parser)
    return parser


def run_stage(stage: str, settings: Settings, date: str | None = None, pipeline: str = "adhoc",
              run_id: str | None = None, **kwargs):
    module = stage_module(stage)
    ctx = RunContext.create(settings, date=date, pipeline=pipeline, run_id=run_id)
    with stage_run(settings, pipeline, stage, ctx.date.isoformat(), ctx.run_id) as tracked:
        ctx.tracked = tracked
        tracked.log_params({"stage": stage, "date": ctx.date.isoformat(), "dataset": settings.run.dataset,
                            "deterministic": settings.run.deterministic})
        result = module.run(ctx, **kwargs)
        numbers = {k: v for k, v in dataclasses.asdict(result).items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        tracked.log_metrics(numbers)
        log.info("stage %s date %s run %s: %s", stage, ctx.date, ctx.run_id, numbers)
    return result
