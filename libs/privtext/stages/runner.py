"""Run one stage: build the run context, open its MLflow run, call the stage, log counts."""
from __future__ import annotations

import dataclasses
import importlib
import logging

from privtext.platform.config import Settings
from privtext.platform.context import RunContext
from privtext.platform.tracking import stage_run

log = logging.getLogger("privtext")

STAGES = ("ingest",)


def run_stage(stage: str, settings: Settings, date: str | None = None, pipeline: str = "adhoc",
              run_id: str | None = None, **kwargs):
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; allowed: {', '.join(STAGES)}")
    module = importlib.import_module(f"privtext.stages.{stage}")
    ctx = RunContext.create(settings, date=date, pipeline=pipeline, run_id=run_id)
    with stage_run(settings, pipeline, stage, ctx.date.isoformat(), ctx.run_id) as tracked:
        tracked.log_params({"stage": stage, "date": ctx.date.isoformat(), "dataset": settings.run.dataset,
                            "deterministic": settings.run.deterministic})
        result = module.run(ctx, **kwargs)
        numbers = {k: v for k, v in dataclasses.asdict(result).items() if isinstance(v, (int, float))}
        tracked.log_metrics(numbers)
        log.info("stage %s date %s run %s: %s", stage, ctx.date, ctx.run_id, numbers)
    return result
