"""Run context: settings, Spark, the lakehouse and the run's identity, built once per job."""
from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

from privtext.errors import UsageError
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.spark import get_spark
from privtext.platform.tables import ALL_TABLES
from privtext.platform.tracking import StageRun

if TYPE_CHECKING:  # the root settings live above the platform
    from privtext.settings import Settings


def parse_date(value: str | None) -> dt.date:
    if value is None:
        return dt.datetime.now(dt.timezone.utc).date()
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--date must be a date YYYY-MM-DD, got {value!r}") from None


@dataclass
class RunContext:
    settings: Settings
    spark: SparkSession
    lakehouse: Lakehouse
    run_id: str
    date: dt.date
    pipeline: str = "adhoc"
    tracked: Any = field(default_factory=lambda: StageRun(None))  # the stage's MLflow run; set by the runner

    @classmethod
    def create(cls, settings: Settings, date: str | None = None, pipeline: str = "adhoc",
               run_id: str | None = None) -> "RunContext":
        spark = get_spark(settings)
        lakehouse = Lakehouse(spark, settings.lakehouse)
        lakehouse.create_tables(ALL_TABLES)
        return cls(settings, spark, lakehouse, run_id or uuid.uuid4().hex, parse_date(date), pipeline)
