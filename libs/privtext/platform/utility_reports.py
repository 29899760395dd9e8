"""Rows of ``protected.utility_reports``: one per metric of a release (its target) and data date."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from privtext.platform.tables import UTILITY_REPORTS

if TYPE_CHECKING:
    from privtext.platform.context import RunContext


def write_utility(ctx: RunContext, target: str, method: str, metrics: dict, details: dict) -> None:
    """Replace ``target``'s rows of the date with one row per metric (aggregates only); the date's rows of
    other targets are kept (the export and the synthetic refresh may run on the same date)."""
    rows = pd.DataFrame({"target": target, "method": method, "metric": list(metrics),
                         "value": [float(v) for v in metrics.values()], "details": json.dumps(details),
                         "run_id": ctx.run_id, "date": ctx.date})
    new = ctx.spark.createDataFrame(rows, from_arrow_schema(UTILITY_REPORTS.schema))
    kept = ctx.lakehouse.read(UTILITY_REPORTS, date=ctx.date).where(F.col("target") != target)
    ctx.lakehouse.replace_partitions(UTILITY_REPORTS, kept.unionByName(new), {"date": [ctx.date]})
