"""``privtext sql``: read-only SQL over the zones a role may read, with no way into the JVM.

Each statement is checked twice before anything runs (never string-matched). First its parsed plan:
only queries (SELECT, WITH, VALUES, set operations, HAVING, ``range``), EXPLAIN of a query, SHOW and
DESCRIBE are allowed; every table a statement names, also inside subqueries and CTEs, must be a
registered view ``<zone>.<table>`` of a zone the role reads (``sql.role``: ``analyst`` -> published,
``officer`` -> protected and published, ``operator`` -> all three); a bare name may only be one of the statement's CTEs; every function called
must be a built-in on the allow-list of pure functions (``allowed_functions``: Spark's built-ins of the
pure groups - math, string, date, array, map, aggregate, window ... - never the ``misc`` group that
holds ``reflect``/``java_method``, nor XML (external entities), nor a user or temporary function), and
``IDENTIFIER(...)`` is refused in an expression (it would name a function only after the check).
Then the *analyzed* plan (nothing evaluated but the allowed functions' constant arguments): it must be
fully resolved, every leaf that reads data must lie under a readable view, and no expression may be a
Java-reflection, UDF or other non-allowed built-in's class. DDL, DML, SET, file sources
(``parquet.`path```, ``read_files``), ``INSERT ... DIRECTORY`` and ``LOAD DATA`` are refused
(``SqlRefused``, exit 3) naming what was found. A statement returns at most ``sql.max_rows`` rows and
is cancelled after ``sql.timeout_s`` seconds. When this command starts the JVM itself, it starts it
without the HMAC key (``run.hmac_key_env``) in its environment (and without store credentials when
every zone is local). On object storage the credentials must match the role before anything starts
(``store_access.require_confined``): if they can read a zone the role must not read (an analyst with the
pipeline's key), the command is refused (exit 3). Only the readable zones' existing tables are registered, in the session's
private warehouse (``platform.spark``): nothing is created in the lakehouse or the working directory.
"""
from __future__ import annotations

import os
import threading
import uuid
from typing import TYPE_CHECKING

from privtext.settings import ZONES
from privtext.errors import PrivtextError, Refused

if TYPE_CHECKING:  # the root settings live above the platform
    from privtext.settings import Settings

ROLE_ZONES = {"analyst": ("published",), "officer": ("protected", "published"), "operator": ZONES}
ROLE_IDENTITY = {"analyst": "analyst", "officer": "officer", "operator": "pipeline"}  # the store key each role runs with

QUERY_NODES = frozenset({
    "Project", "Filter", "Aggregate", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Tail", "Join",
    "LateralJoin", "Union", "Intersect", "Except", "Distinct", "SubqueryAlias", "UnresolvedRelation",
    "UnresolvedWith", "OneRowRelation", "UnresolvedInlineTable", "LocalRelation", "Generate", "Pivot",
    "Unpivot", "Sample", "RepartitionByExpression", "UnresolvedHint", "WithWindowDefinition",
    "UnresolvedSubqueryColumnAliases", "UnresolvedTableValuedFunction", "UnresolvedTVFAliases", "UnresolvedHaving",
})
STATEMENTS = frozenset({  # allowed only as the whole statement
    "ExplainCommand", "DescribeQueryCommand", "ShowTables", "ShowNamespacesCommand", "ShowViews",
    "ShowColumns", "ShowFunctions", "DescribeRelation", "DescribeColumn", "DescribeFunction",
    "DescribeNamespace",
})
NAMES = frozenset({"UnresolvedTableOrView", "UnresolvedNamespace", "CurrentNamespace$", "UnresolvedFunctionName"})
TABLE_FUNCTIONS = frozenset({"range"})  # generated rows only; read_files & co. read files
# Spark's built-in function groups whose members compute a value from their arguments only. Not "misc_funcs"
# (reflect, java_method, current_user, input_file_name, aes_*, raise_error ...), not "xml_funcs" (an XML
# parser), not "table_funcs" (TABLE_FUNCTIONS decides) and nothing without a group.
PURE_GROUPS = frozenset({
    "agg_funcs", "array_funcs", "bitwise_funcs", "collection_funcs", "conditional_funcs", "conversion_funcs",
    "csv_funcs", "datetime_funcs", "generator_funcs", "hash_funcs", "json_funcs", "lambda_funcs", "map_funcs",
    "math_funcs", "predicate_funcs", "string_funcs", "struct_funcs", "url_funcs", "window_funcs",
})
DENIED_FUNCTIONS = frozenset({  # in a pure group but not pure: Java methods, files, the JVM's state
    "reflect", "java_method", "try_reflect", "input_file_name", "input_file_block_start", "input_file_block_length",
    "from_protobuf", "to_protobuf", "from_avro", "to_avro", "schema_of_avro",
})
UDF_CLASSES = frozenset({  # user code: never part of a checked statement
    "ScalaUDF", "PythonUDF", "ScalaUDAF", "ScalaAggregator", "PythonUDAF", "PythonUDTF", "UserDefinedExpression",
    "HiveSimpleUDF", "HiveGenericUDF", "HiveUDAFFunction", "HiveGenericUDTF", "CallMethodViaReflection",
    "TryReflect",
})
DATA_FREE_LEAVES = frozenset({"OneRowRelation", "LocalRelation", "Range", "CTERelationRef", "EmptyRelation"})


class SqlRefused(Refused):
    """A statement that is not a read of the readable zones."""


class SqlFailed(PrivtextError):
    """A checked statement that failed while it ran (exit 1)."""


def _seq(scala_seq) -> list:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def _name(parts) -> list[str]:
    return [str(p) for p in _seq(parts)]


class Functions:
    """The built-in functions allowed (``names``) and the classes of every other built-in (``denied_classes``),
    read from Spark's built-in registry: temporary and persistent functions are never in it."""

    _cache: dict[str, "Functions"] = {}

    def __init__(self, names: frozenset[str], denied_classes: frozenset[str]):
        self.names, self.denied_classes = names, denied_classes

    @classmethod
    def of(cls, spark) -> "Functions":
        version = spark.version
        if version not in cls._cache:
            registry = spark._jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.builtin()
            allowed, classes = set(), {}
            for identifier in _seq(registry.listFunction()):
                info = registry.lookupFunction(identifier)
                if info.isEmpty():
                    continue
                info, name = info.get(), str(identifier.funcName()).lower()
                classes.setdefault(str(info.getClassName()), set()).add(name)
                if str(info.getGroup() or "") in PURE_GROUPS and name not in DENIED_FUNCTIONS:
                    allowed.add(name)
            denied = frozenset(c for c, names in classes.items() if not names & allowed)
            cls._cache[version] = cls(frozenset(allowed), denied)
        return cls._cache[version]


class _Checker:
    """Walks a parsed (unresolved) plan: its children, inner children (CTEs, subqueries) and expressions;
    then the analyzed plan (``analyzed``)."""

    def __init__(self, readable: dict[str, set[str]], role: str, functions: Functions):
        self.readable, self.role, self.functions = readable, role, functions
        self.ctes: set[str] = set()

    def refuse(self, what: str):
        zones = " and ".join(sorted(self.readable))
        raise SqlRefused(f"{what}. privtext sql only reads the {zones} zone(s) with SELECT / WITH / EXPLAIN / "
                         f"SHOW / DESCRIBE (sql.role is {self.role!r}; allowed: analyst = published, "
                         "officer = protected and published, operator = every zone)")

    def table(self, parts: list[str]) -> None:
        if len(parts) == 1 and parts[0].lower() in self.ctes:
            return
        zone_table = parts[1:] if len(parts) == 3 and parts[0].lower() == "spark_catalog" else parts
        shown = ".".join(f"`{p}`" for p in parts)
        if len(zone_table) != 2 or zone_table[0].lower() not in ZONES:
            self.refuse(f"{shown} is not a table of the zones (direct file reads such as parquet.`path` are refused)")
        zone, table = (p.lower() for p in zone_table)
        if zone not in self.readable:
            self.refuse(f"{shown}: the {zone} zone is not readable by role {self.role!r}")
        if table not in self.readable[zone]:
            self.refuse(f"{shown}: no such table in the {zone} zone")

    def namespace(self, parts: list[str]) -> None:
        if len(parts) != 1 or parts[0].lower() not in self.readable:
            self.refuse(f"namespace {'.'.join(parts) or '(current)'}: name a readable zone, e.g. SHOW TABLES IN published")

    def plan(self, node, top: bool = True) -> None:
        kind = node.getClass().getSimpleName()
        if kind not in QUERY_NODES | NAMES and not (top and kind in STATEMENTS):
            self.refuse(f"{kind.rstrip('$')} is not a read-only statement")
        if kind == "ShowNamespacesCommand":
            return  # lists the namespaces (zone names) only
        if kind == "UnresolvedWith":
            self.ctes |= {str(pair._1()).lower() for pair in _seq(node.cteRelations())}
        elif kind in ("UnresolvedRelation", "UnresolvedTableOrView"):
            self.table(_name(node.multipartIdentifier()))
        elif kind == "UnresolvedNamespace":
            self.namespace(_name(node.multipartIdentifier()))
        elif kind == "CurrentNamespace$":
            self.namespace([])
        elif kind == "UnresolvedTableValuedFunction" and ".".join(_name(node.name())).lower() not in TABLE_FUNCTIONS:
            self.refuse(f"table function {'.'.join(_name(node.name()))}() (only {', '.join(sorted(TABLE_FUNCTIONS))})")
        elif kind == "ExplainCommand":
            self.plan(node.logicalPlan(), top=False)
        elif kind == "DescribeQueryCommand":
            self.plan(node.plan(), top=False)
        for child in _seq(node.children()) + _seq(node.innerChildren()):
            self.plan(child, top=False)
        for expression in _seq(node.expressions()):
            self.expression(expression)

    def expression(self, node) -> None:
        kind = node.getClass().getSimpleName()
        if kind == "UnresolvedFunction":
            parts = [p.lower() for p in _name(node.nameParts())]
            shown = ".".join(parts)
            if parts[-1] in DENIED_FUNCTIONS:
                self.refuse(f"function {shown}() calls Java methods or reads files")
            if parts[:-1] not in ([], ["builtin"], ["system", "builtin"]) or parts[-1] not in self.functions.names:
                self.refuse(f"function {shown}() is not on the allow-list of pure built-in functions")
        elif kind == "ExpressionWithUnresolvedIdentifier":
            self.refuse("IDENTIFIER(...) in an expression (it could name a function after the check): name columns "
                        "and functions directly")
        for child in _seq(node.children()):
            self.expression(child)

    def analyzed(self, node) -> None:
        """The analyzed plan: resolved; data read only under a readable view or table; no denied class."""
        kind = node.getClass().getSimpleName().rstrip("$")
        if not node.resolved():
            self.refuse(f"{kind} is not resolved at check time")
        if kind == "View":
            return self.table(str(node.desc().identifier().unquotedString()).split("."))
        if kind == "SubqueryAlias" and not node.identifier().qualifier().isEmpty():
            return self.table(_name(node.identifier().qualifier()) + [str(node.identifier().name())])
        children = _seq(node.children())
        if not children and kind not in DATA_FREE_LEAVES:
            self.refuse(f"{kind} reads data that is not a readable view")
        for expression in _seq(node.expressions()):
            self.analyzed_expression(expression)
        for child in children + _seq(node.innerChildren()):
            self.analyzed(child)

    def analyzed_expression(self, node) -> None:
        java_class = node.getClass()
        if str(java_class.getSimpleName()) in UDF_CLASSES or str(java_class.getName()) in self.functions.denied_classes:
            self.refuse(f"{java_class.getSimpleName()} is not a pure built-in function")
        for child in _seq(node.children()):  # a subquery's plan is its node's inner child, walked there
            self.analyzed_expression(child)


def _analyze(spark, parsed):
    """``parsed`` analyzed, nothing executed (a command is not run)."""
    jvm = spark._jvm
    skip = getattr(getattr(jvm, "org.apache.spark.sql.execution.CommandExecutionMode$"), "MODULE$").SKIP()
    return spark._jsparkSession.sessionState().executePlan(parsed, skip).analyzed()


def check(spark, statement: str, readable: dict[str, set[str]], role: str) -> None:
    """Parse ``statement`` with Spark's parser and refuse anything but a read of ``readable`` tables with
    allowed functions: the parsed plan first, then the analyzed plan of its query."""
    from pyspark.errors import AnalysisException, ParseException

    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(statement)
    except ParseException as error:
        first_line = next(line for line in str(error).splitlines() + [""] if line.strip())
        raise SqlRefused(f"not a single valid SQL statement: {first_line}") from None
    checker = _Checker(readable, role, Functions.of(spark))
    checker.plan(plan)
    kind = plan.getClass().getSimpleName()
    query = {"ExplainCommand": plan.logicalPlan, "DescribeQueryCommand": plan.plan}.get(kind) if kind in STATEMENTS \
        else (lambda: plan)
    if query is None:
        return  # SHOW / DESCRIBE of names checked above
    try:
        analyzed = _analyze(spark, query())
    except AnalysisException as error:
        first_line = next(line for line in str(error).splitlines() + [""] if line.strip())
        raise SqlRefused(f"the statement does not resolve: {first_line[:300]}") from None
    checker.analyzed(analyzed)


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


def _collect(spark, df, limit: int, timeout_s: float) -> list[tuple]:
    """At most ``limit`` rows of ``df``; its jobs are cancelled after ``timeout_s`` seconds (``SqlRefused``)."""
    group = f"privtext-sql-{uuid.uuid4().hex}"
    context = spark.sparkContext
    context.setJobGroup(group, "privtext sql", interruptOnCancel=True)
    expired = threading.Event()

    def cancel():
        expired.set()
        context.cancelJobGroup(group)

    timer = threading.Timer(timeout_s, cancel)
    timer.start()
    try:
        return [tuple(r) for r in df.limit(limit).collect()]
    except Exception:
        if expired.is_set():
            raise SqlRefused(f"the statement ran longer than sql.timeout_s={timeout_s:g} s and was cancelled") from None
        raise
    finally:
        timer.cancel()
        context.setLocalProperty("spark.jobGroup.id", None)


def query(settings: Settings, statement: str, limit: int | None = None):
    """Check and run one read-only statement; returns (columns, at most ``limit`` rows), ``limit`` at most
    ``sql.max_rows`` (default: that)."""
    from pyspark.errors.exceptions.captured import CapturedException

    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.store_access import require_confined

    limits = settings.sql
    limit = limits.max_rows if limit is None else limit
    if not 1 <= limit <= limits.max_rows:
        raise SqlRefused(f"--limit {limit} is outside 1..sql.max_rows={limits.max_rows} (raise sql.max_rows in the "
                         "config to return more rows)")
    role = settings.sql.role
    require_confined(settings.lakehouse, ROLE_ZONES[role], f"privtext sql with sql.role {role!r}", ROLE_IDENTITY[role])
    spark = _spark(settings)
    readable = readable_tables(settings, Lakehouse(spark, settings.lakehouse))
    check(spark, statement, readable, settings.sql.role)
    try:
        df = spark.sql(statement)
        return df.columns, _collect(spark, df, limit, limits.timeout_s)
    except CapturedException as error:  # e.g. a division by zero or a bad cast at run time: one line, exit 1
        first_line = next(line for line in str(error).splitlines() + [""] if line.strip())
        raise SqlFailed(f"the statement failed: {first_line[:300]}") from None
