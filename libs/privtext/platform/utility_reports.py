"""Rows of ``protected.utility_reports`` (one per metric of a release, i.e. its target, and data date) and
of ``protected.eps_frontier`` (AmPL's eps -> leakage / utility points of a date, per source)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from privtext.platform.tables import EPS_FRONTIER, UTILITY_REPORTS

if TYPE_CHECKING:
    from privtext.platform.context import RunContext


def write_utility(ctx: RunContext, target: str, method: str, metrics: dict, details: dict) -> None:
    """Replace ``target``'s rows of the date with one row per metric (aggregates only); the date's rows of
    other targets are kept (the export and the synthetic refresh may run on the same date)."""
    rows = pd.DataFrame({"target": target, "method": method, "metric": list(metrics),
                         "value": [float(v) for v in metrics.values()], "details": json.dumps(details),
                         "run_id": ctx.run_id, "date": ctx.date})
    _replace_rows(ctx, UTILITY_REPORTS, rows, F.col("target") != target)


def write_frontier(ctx: RunContext, target: str, source: str, points: list[dict]) -> None:
    """Replace the date's ``source`` points (tune | retune) of ``target``; each point: eps_pii, eps_poii,
    violation_ratio, utility_loss, chosen."""
    rows = pd.DataFrame([{**{c: p[c] for c in ("eps_pii", "eps_poii", "violation_ratio", "utility_loss", "chosen")},
                          "target": target, "source": source, "run_id": ctx.run_id, "date": ctx.date} for p in points],
                        columns=EPS_FRONTIER.schema.names)
    _replace_rows(ctx, EPS_FRONTIER, rows, (F.col("target") != target) | (F.col("source") != source))


def _replace_rows(ctx: RunContext, spec, rows: pd.DataFrame, keep) -> None:
    new = ctx.spark.createDataFrame(rows[list(spec.schema.names)], from_arrow_schema(spec.schema))
    kept = ctx.lakehouse.read(spec, date=ctx.date).where(keep)
    ctx.lakehouse.replace_partitions(spec, kept.unionByName(new), {"date": [ctx.date]})
