"""Run one stage: take the (stage, date) lease, build the run context, open its MLflow run, call the
stage, log counts. A second run of the same stage and date (and ``target``) refuses while the first
holds the lease (``privtext.platform.leases``); other dates run concurrently.

A stage is registered in ``privtext.stages.STAGES`` (what it reads, writes, keys on and gates on) and is the
module ``privtext.stages.<name>`` with ``run(ctx, **options) -> dataclass`` and, when it takes options,
``add_arguments(parser)`` declaring them (``dest`` = the keyword of ``run``), so ``privtext run <stage> ...``
and ``spark-submit jobs/<stage>.py ...`` accept exactly those options.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import uuid

from privtext.errors import PrivtextError, UsageError, report_error
from privtext.pii.hashing import load_hmac_key
from privtext.platform.context import RunContext, parse_date
from privtext.platform.leases import stage_lease
from privtext.platform.tracking import stage_run
from privtext.settings import LOG_FORMAT, Settings, load_settings, use_offline_models
from privtext.stages import DEFAULT_TARGET, STAGES

log = logging.getLogger("privtext")


def stage_module(stage: str):
    if stage not in STAGES:
        raise UsageError(f"unknown stage {stage!r}; allowed: {', '.join(STAGES)}")
    return importlib.import_module(f"privtext.stages.{stage}")


def stage_parser(stage: str) -> argparse.ArgumentParser:
    """The options of ``privtext run <stage>``: --date, --pipeline and the stage's own. A run's id is always
    generated (a reused id would make a new run look like an audited one)."""
    module = stage_module(stage)
    parser = argparse.ArgumentParser(prog=f"privtext run {stage}", description=(module.__doc__ or "").split("\n")[0])
    parser.add_argument("--date", help="YYYY-MM-DD (default: today, UTC)")
    parser.add_argument("--pipeline", default="adhoc", help="pipeline name recorded on the run")
    if hasattr(module, "add_arguments"):
        module.add_arguments(parser)
    return parser


def run_stage(stage: str, settings: Settings, date: str | None = None, pipeline: str = "adhoc", **kwargs):
    module = stage_module(stage)
    day, run_id = parse_date(date).isoformat(), uuid.uuid4().hex
    lease_name = "-".join(str(part) for part in (stage, kwargs.get("target"), day) if part)
    with stage_lease(settings.lakehouse, lease_name, run_id):
        if STAGES[stage].needs_key(kwargs.get("target", DEFAULT_TARGET)):  # a missing key stops before Spark
            load_hmac_key(settings.run.hmac_key_env, settings.run.hmac_key_file, settings.run.deterministic)
        ctx = RunContext.create(settings, date=day, pipeline=pipeline, run_id=run_id)
        with stage_run(settings, pipeline, stage, day, run_id) as tracked:
            ctx.tracked = tracked
            tracked.log_params({"stage": stage, "date": day, "dataset": settings.run.dataset,
                                "deterministic": settings.run.deterministic})
            result = module.run(ctx, **kwargs)
            numbers = {k: v for k, v in dataclasses.asdict(result).items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)}
            tracked.log_metrics(numbers)
            log.info("stage %s date %s run %s: %s", stage, day, run_id, numbers)
    return result


def run_options(stage: str, settings: Settings, argv: list[str]):
    """Run ``stage`` with the options of ``privtext run <stage>`` given as arguments (``stage_parser``)."""
    options = vars(stage_parser(stage).parse_args(argv))
    return run_stage(stage, settings, date=options.pop("date"), pipeline=options.pop("pipeline"), **options)


def job_main(stage: str, argv: list[str]) -> int:
    """``jobs/<stage>.py`` under spark-submit: ``[--conf FILE] [stage options]``, settings loaded once; prints
    the result as one JSON line, or a ``PrivtextError`` as one line with its exit code."""
    return job_entry(stage, lambda settings, rest: run_options(stage, settings, rest).__dict__, argv)


def job_entry(name: str, job, argv: list[str]) -> int:
    """A spark-submit entry point: ``job(settings, the other arguments) -> dict`` with the settings of
    ``--conf`` (default conf/local.yaml), printed as one JSON line, or a ``PrivtextError`` as one line
    with its exit code."""
    use_offline_models()
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    conf = argparse.ArgumentParser(add_help=False)
    conf.add_argument("--conf", default="conf/local.yaml")
    known, rest = conf.parse_known_args(argv)
    try:
        result = job(load_settings(known.conf), rest)
    except PrivtextError as error:
        return report_error(error)
    print(json.dumps({"stage": name, **result}, default=str))
    return 0
