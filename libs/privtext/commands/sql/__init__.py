"""``privtext sql``: read-only SQL over the zones a role may read, with no way into the JVM.

A statement is checked before anything runs (never string-matched): ``policy`` says what a role may read and
run, and checks size and nesting before Spark parses; ``plan_check`` checks Spark's parsed, then analyzed,
plan against it (``SqlRefused``, exit 3). This module runs a checked statement: the role's store key must
match before anything starts, the JVM starts without the HMAC key, only the readable zones' tables are
registered (nothing is created), and the statement runs under ``sql.timeout_s`` with at most
``sql.max_rows`` rows and paths redacted. The rules in full: docs/operations.md, "Querying".
"""
from __future__ import annotations

import os
import threading
import uuid
from typing import TYPE_CHECKING

from privtext.commands.sql.plan_check import check
from privtext.commands.sql.policy import (
    MAX_NESTING,
    ROLE_IDENTITY,
    ROLE_ZONES,
    STATEMENTS,
    SqlFailed,
    SqlRefused,
    nesting_depth,
    precheck,
    redact,
)
from privtext.errors import PrivtextError
from privtext.settings import ZONES

if TYPE_CHECKING:  # the root settings live above the platform
    from privtext.settings import Settings

# the command's names (its parts: ``policy`` what is allowed, ``plan_check`` the check on Spark's plans; here: run it)
__all__ = ["MAX_NESTING", "ROLE_IDENTITY", "ROLE_ZONES", "SqlFailed", "SqlRefused", "check", "nesting_depth",
           "precheck", "query", "readable_tables", "redact"]


def readable_tables(settings: Settings, lakehouse) -> dict[str, set[str]]:
    """Register the role's zones' existing tables as views; returns {zone: {table, ...}}."""
    from privtext.platform.tables import ALL_TABLES, DOCUMENTS, PII_SPANS

    zones = ROLE_ZONES[settings.sql.role]
    specs = [spec for spec in ALL_TABLES if spec.zone in zones]
    registered = lakehouse.register_views(specs)
    if {DOCUMENTS.qualified_name, PII_SPANS.qualified_name} <= set(registered):
        from privtext.stages.detect_pii import register_registry_view, register_split_view

        registered += [register_split_view(lakehouse, settings.pii), register_registry_view(lakehouse)]
    tables: dict[str, set[str]] = {zone: set() for zone in zones}
    for name in registered:
        zone, table = name.split(".")
        tables[zone].add(table)
    return tables


def _secret_names(settings: Settings) -> set[str]:
    """Environment variables the analyst's JVM must not hold: the HMAC key; the store's credentials too when
    every zone is local (an object-store zone's reader needs them)."""
    from privtext.platform import storage
    from privtext.platform.store_access import STORE_KEYS

    names = {settings.run.hmac_key_env}
    if all(storage.is_local(settings.lakehouse.zone_root(zone)) for zone in ZONES):
        names |= set(STORE_KEYS)
    return names


def _spark(settings: Settings):
    """The session; a JVM started here starts without ``_secret_names`` in its environment (its Python
    workers inherit that environment). A JVM already running (a notebook, a test) keeps its own."""
    from pyspark import SparkContext

    from privtext.platform.spark import get_spark

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return get_spark(settings)
    hidden = {name: os.environ.pop(name) for name in _secret_names(settings) if name in os.environ}
    try:
        return get_spark(settings)
    finally:
        os.environ.update(hidden)



def _fatal(error: BaseException) -> PrivtextError | None:
    """A one-line error for a statement that broke the JVM's limits or the driver itself."""
    from py4j.protocol import Py4JError

    text = str(error)
    if "java.lang.StackOverflowError" in text:
        return SqlRefused("the statement nests too deeply for Spark (StackOverflowError); nothing was returned: "
                          "simplify it")
    if "java.lang.OutOfMemoryError" in text:
        return SqlRefused("the statement needed more memory than the driver has (OutOfMemoryError); nothing was "
                          "returned: ask for less")
    if isinstance(error, Py4JError):
        return SqlFailed(f"the Spark driver failed while running the statement ({type(error).__name__}); nothing "
                         "was returned")
    return None


def _run(spark, statement: str, readable: dict[str, set[str]], role: str, limit: int):
    """Check, then run: (columns, at most ``limit`` rows); paths redacted from EXPLAIN / DESCRIBE / SHOW."""
    kind = check(spark, statement, readable, role)
    df = spark.sql(statement)
    rows = [tuple(r) for r in df.limit(limit).collect()]
    if kind in STATEMENTS:
        rows = [tuple(redact(v) if isinstance(v, str) else v for v in row) for row in rows]
    return df.columns, rows


def _within(spark, timeout_s: float, work):
    """``work()`` in a thread of its own, under a job group cancelled after ``timeout_s`` seconds: parsing,
    analysis and execution alike (a parse runs no Spark job: it is abandoned, and the command returns)."""
    from pyspark.errors.exceptions.captured import CapturedException

    group = f"privtext-sql-{uuid.uuid4().hex}"
    context = spark.sparkContext
    outcome: dict = {}

    def target():
        context.setJobGroup(group, "privtext sql", interruptOnCancel=True)
        try:
            outcome["value"] = work()
        except BaseException as error:  # noqa: BLE001  handed to the caller's thread
            outcome["error"] = error
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)

    worker = threading.Thread(target=target, name="privtext-sql", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        context.cancelJobGroup(group)
        raise SqlRefused(f"the statement ran longer than sql.timeout_s={timeout_s:g} s (parsing and analysis "
                         "included) and was cancelled")
    error = outcome.get("error")
    if error is None:
        return outcome["value"]
    if isinstance(error, PrivtextError):
        raise error
    fatal = _fatal(error)
    if fatal is not None:
        raise fatal from None
    if isinstance(error, CapturedException):  # e.g. a division by zero or a bad cast at run time: one line, exit 1
        first_line = next(line for line in str(error).splitlines() + [""] if line.strip())
        raise SqlFailed(f"the statement failed: {redact(first_line)[:300]}") from None
    raise error


def query(settings: Settings, statement: str, limit: int | None = None):
    """Check and run one read-only statement; returns (columns, at most ``limit`` rows), ``limit`` at most
    ``sql.max_rows`` (default: that). The statement's size and nesting are checked before Spark starts;
    from its parse to its last row it runs under ``sql.timeout_s``."""
    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.store_access import require_confined

    limits = settings.sql
    limit = limits.max_rows if limit is None else limit
    if not 1 <= limit <= limits.max_rows:
        raise SqlRefused(f"--limit {limit} is outside 1..sql.max_rows={limits.max_rows} (raise sql.max_rows in the "
                         "config to return more rows)")
    precheck(statement)
    role = settings.sql.role
    require_confined(settings.lakehouse, ROLE_ZONES[role], f"privtext sql with sql.role {role!r}", ROLE_IDENTITY[role])
    spark = _spark(settings)
    readable = readable_tables(settings, Lakehouse(spark, settings.lakehouse))
    return _within(spark, limits.timeout_s, lambda: _run(spark, statement, readable, role, limit))
