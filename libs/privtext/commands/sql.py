"""``privtext sql``: read-only SQL over the zones a role may read.

Each statement is parsed by Spark's own parser and its logical plan checked before anything runs
(never string-matched): only queries (SELECT, WITH, VALUES, set operations, ``range``), EXPLAIN of a
query, SHOW and DESCRIBE are allowed. Every table a statement names, also inside subqueries and CTEs,
must be a registered view ``<zone>.<table>`` of a zone the role reads (``sql.role``: ``analyst`` ->
published, ``operator`` -> all three); a bare name may only be one of the statement's CTEs. DDL, DML,
SET, file sources (``parquet.`path```, ``read_files``), ``INSERT ... DIRECTORY``, ``LOAD DATA`` and Java
reflection are refused (``SqlRefused``) naming what was found. Only the readable zones' existing tables
are registered, in the session's private warehouse (``platform.spark``): nothing is created in the
lakehouse or the working directory.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from privtext.settings import ZONES
from privtext.errors import Refused

if TYPE_CHECKING:  # the root settings live above the platform
    from privtext.settings import Settings

ROLE_ZONES = {"analyst": ("published",), "operator": ZONES}

QUERY_NODES = frozenset({
    "Project", "Filter", "Aggregate", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Tail", "Join",
    "LateralJoin", "Union", "Intersect", "Except", "Distinct", "SubqueryAlias", "UnresolvedRelation",
    "UnresolvedWith", "OneRowRelation", "UnresolvedInlineTable", "LocalRelation", "Generate", "Pivot",
    "Unpivot", "Sample", "RepartitionByExpression", "UnresolvedHint", "WithWindowDefinition",
    "UnresolvedSubqueryColumnAliases", "UnresolvedTableValuedFunction", "UnresolvedTVFAliases",
})
STATEMENTS = frozenset({  # allowed only as the whole statement
    "ExplainCommand", "DescribeQueryCommand", "ShowTables", "ShowNamespacesCommand", "ShowViews",
    "ShowColumns", "ShowFunctions", "DescribeRelation", "DescribeColumn", "DescribeFunction",
    "DescribeNamespace",
})
NAMES = frozenset({"UnresolvedTableOrView", "UnresolvedNamespace", "CurrentNamespace$", "UnresolvedFunctionName"})
TABLE_FUNCTIONS = frozenset({"range"})  # generated rows only; read_files & co. read files
DENIED_FUNCTIONS = frozenset({"reflect", "java_method", "try_reflect"})  # any Java static method


class SqlRefused(Refused):
    """A statement that is not a read of the readable zones."""


def _seq(scala_seq) -> list:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def _name(parts) -> list[str]:
    return [str(p) for p in _seq(parts)]


class _Checker:
    """Walks a parsed (unresolved) plan: its children, inner children (CTEs, subqueries) and expressions."""

    def __init__(self, readable: dict[str, set[str]], role: str):
        self.readable, self.role = readable, role
        self.ctes: set[str] = set()

    def refuse(self, what: str):
        zones = " and ".join(sorted(self.readable))
        raise SqlRefused(f"{what}. privtext sql only reads the {zones} zone(s) with SELECT / WITH / EXPLAIN / "
                         f"SHOW / DESCRIBE (sql.role is {self.role!r}; allowed: analyst = published, "
                         "operator = every zone)")

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
        if node.getClass().getSimpleName() == "UnresolvedFunction":
            function = _name(node.nameParts())[-1].lower()
            if function in DENIED_FUNCTIONS:
                self.refuse(f"function {function}() calls Java methods")
        for child in _seq(node.children()):
            self.expression(child)


def check(spark, statement: str, readable: dict[str, set[str]], role: str) -> None:
    """Parse ``statement`` with Spark's parser and refuse anything but a read of ``readable`` tables."""
    from pyspark.errors import ParseException

    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(statement)
    except ParseException as error:
        first_line = next(line for line in str(error).splitlines() + [""] if line.strip())
        raise SqlRefused(f"not a single valid SQL statement: {first_line}") from None
    _Checker(readable, role).plan(plan)


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


def query(settings: Settings, statement: str, limit: int):
    """Check and run one read-only statement; returns (columns, rows)."""
    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.spark import get_spark

    spark = get_spark(settings)
    readable = readable_tables(settings, Lakehouse(spark, settings.lakehouse))
    check(spark, statement, readable, settings.sql.role)
    df = spark.sql(statement)
    return df.columns, [tuple(r) for r in df.limit(limit).collect()]
