"""``privtext sql``: read-only SQL over the zones a role may read, with no way into the JVM.

Each statement is checked twice before anything runs (never string-matched). First its parsed plan:
only queries (SELECT, WITH, VALUES, set operations, HAVING, ``range``), EXPLAIN of a query, SHOW and
DESCRIBE are allowed; every table a statement names, also inside subqueries and CTEs, must be a
registered view ``<zone>.<table>`` of a zone the role reads (``sql.role``: ``analyst`` -> published,
``officer`` -> protected and published, ``operator`` -> all three); a bare name may only be one of the
statement's CTEs; every function called must be a built-in on the allow-list of pure functions
(``allowed_functions``: Spark's built-ins of the pure groups - math, string, date, array, map, aggregate,
window ... - never the ``misc`` group that
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
pipeline's key), the command is refused (exit 3). Only the readable zones' existing tables are registered,
in the session's private warehouse (``platform.spark``): nothing is created in the lakehouse or the working directory.
"""
from __future__ import annotations

import os
import re
import threading
import uuid
from typing import TYPE_CHECKING

from privtext.errors import PrivtextError, Refused
from privtext.settings import ZONES

if TYPE_CHECKING:  # the root settings live above the platform
    from privtext.settings import Settings

ROLE_ZONES = {"analyst": ("published",), "officer": ("protected", "published"), "operator": ZONES}
# the store key each role runs with
ROLE_IDENTITY = {"analyst": "analyst", "officer": "officer", "operator": "pipeline"}

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
MAX_STATEMENT_CHARS = 100_000  # a statement's length, checked before Spark sees it
MAX_NESTING = 100  # brackets ( [ { open at once: deeper nesting overflows the parser's or analyzer's stack
MAX_BUILT_SIZE = 1_000_000  # characters or elements one expression may build from constants (repeat, sequence ...)
# expressions whose result is a constant argument times as large as their input: (count argument, input argument)
MULTIPLIERS = {"StringRepeat": (1, 0), "ArrayRepeat": (1, 0), "StringLPad": (1, None), "StringRPad": (1, None),
               "BinaryLPad": (1, None), "BinaryRPad": (1, None), "StringSpace": (0, None)}
# a lambda runs once per element: the result is as large as the array times the lambda's result
HIGHER_ORDER = frozenset({"ArrayTransform", "ZipWith", "ArrayAggregate", "TransformKeys", "TransformValues",
                          "MapZipWith", "ArrayFilter", "MapFilter", "ArraySort"})


class SqlRefused(Refused):
    """A statement that is not a read of the readable zones."""


class SqlFailed(PrivtextError):
    """A checked statement that failed while it ran (exit 1)."""


def nesting_depth(statement: str) -> int:
    """The deepest nesting of ( [ { in ``statement``, outside string literals, quoted identifiers and comments."""
    depth = deepest = i = 0
    n = len(statement)
    while i < n:
        c = statement[i]
        if c in "'\"`":  # up to the closing quote (a doubled quote closes and opens again)
            i += 1
            while i < n and statement[i] != c:
                i += 2 if statement[i] == "\\" and c != "`" else 1
        elif statement.startswith("--", i):
            end = statement.find("\n", i)
            i = n if end < 0 else end
        elif statement.startswith("/*", i):
            end = statement.find("*/", i + 2)
            i = n if end < 0 else end + 1
        elif c in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in ")]}":
            depth -= 1
        i += 1
    return deepest


def precheck(statement: str) -> None:
    """Refuse, before Spark parses anything, a statement too long or nested too deeply to parse in bounded
    time and stack."""
    if len(statement) > MAX_STATEMENT_CHARS:
        raise SqlRefused(f"the statement has {len(statement):,} characters; at most {MAX_STATEMENT_CHARS:,} are read")
    depth = nesting_depth(statement)
    if depth > MAX_NESTING:
        raise SqlRefused(f"the statement nests brackets {depth:,} deep; at most {MAX_NESTING} levels are parsed")


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
            self.refuse(f"namespace {'.'.join(parts) or '(current)'}: name a readable zone, e.g. SHOW TABLES IN "
                        "published")

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

    def analyzed_expression(self, node) -> int:
        """Refuse a non-pure class; returns how many characters or elements the expression builds from
        constants (an upper estimate), refused above ``MAX_BUILT_SIZE``. Children first, so a constant
        argument is evaluated only once its own size is known to be bounded."""
        java_class = node.getClass()
        kind = str(java_class.getSimpleName())
        if kind in UDF_CLASSES or str(java_class.getName()) in self.functions.denied_classes:
            self.refuse(f"{java_class.getSimpleName()} is not a pure built-in function")
        children = _seq(node.children())  # a subquery's plan is its node's inner child, walked there
        sizes = [self.analyzed_expression(child) for child in children]
        size = _built_size(node, kind, children, sizes)
        if size > MAX_BUILT_SIZE:
            raise SqlRefused(f"{kind} would build about {size:,} characters or elements from constants; at most "
                             f"{MAX_BUILT_SIZE:,} are built (nothing was run)")
        return size


def _constant_int(expression) -> int:
    """The value of a constant integer argument; 0 when it is not a constant (bounded at run time)."""
    if not expression.foldable():
        return 0
    value = expression.eval(None)
    try:
        return abs(int(str(value))) if value is not None else 0
    except ValueError:
        return 0


DAY_US = 86_400_000_000


def _sequence_length(children) -> int:
    """Elements of ``sequence(start, stop[, step])`` with constant arguments (numbers; dates in days and
    timestamps in microseconds, an interval step counting a month as 28 days: the most elements it gives)."""
    if not all(child.foldable() for child in children):
        return 0
    start, stop = (child.eval(None) for child in children[:2])
    if start is None or stop is None:
        return 0
    kind = str(children[0].dataType().typeName())
    unit = 1 if kind == "date" else DAY_US if kind.startswith("timestamp") else None  # one day's steps
    if len(children) < 3:
        step = unit or 1
    elif unit is None:
        step = abs(int(str(children[2].eval(None))))
    else:
        interval = children[2].eval(None)
        step = ((int(interval.months) * 28 + int(interval.days)) * unit
                + (int(interval.microseconds) if unit == DAY_US else 0))
    return abs(int(str(stop)) - int(str(start))) // max(abs(step), 1) + 1


def _built_size(node, kind: str, children, sizes: list[int]) -> int:
    """An upper estimate of the characters/elements ``node`` builds from constants, from its children's."""
    if kind == "Literal":
        value = node.value()
        if isinstance(value, (bytes, bytearray, str)):
            return len(value)
        if value is None or not hasattr(value, "getClass"):
            return 1
        name = str(value.getClass().getSimpleName())
        return int(value.numBytes()) if name == "UTF8String" else int(value.numElements()) if "Array" in name else 1
    if kind in MULTIPLIERS:
        count, source = MULTIPLIERS[kind]
        return _constant_int(children[count]) * (max(sizes[source], 1) if source is not None else 1)
    if kind == "Sequence":
        return _sequence_length(children)
    if kind in HIGHER_ORDER:
        product = 1
        for size in sizes:
            product *= max(size, 1)
        return product
    if kind == "FormatString" and children and children[0].foldable():  # printf('%999999999s', x): the width
        widths = [int(w) for w in re.findall(r"%[-#+ 0,(<]*(\d+)", str(children[0].eval(None) or ""))]
        return sum(sizes) + sum(widths)
    return sum(sizes)


def _analyze(spark, parsed):
    """``parsed`` analyzed, nothing executed (a command is not run)."""
    jvm = spark._jvm
    skip = getattr(getattr(jvm, "org.apache.spark.sql.execution.CommandExecutionMode$"), "MODULE$").SKIP()
    return spark._jsparkSession.sessionState().executePlan(parsed, skip).analyzed()


def check(spark, statement: str, readable: dict[str, set[str]], role: str) -> str:
    """Parse ``statement`` with Spark's parser and refuse anything but a read of ``readable`` tables with
    allowed functions: the parsed plan first, then the analyzed plan of its query. Returns the statement's
    kind (its plan's class)."""
    from pyspark.errors import AnalysisException, ParseException

    precheck(statement)
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
        return kind  # SHOW / DESCRIBE of names checked above
    try:
        analyzed = _analyze(spark, query())
    except AnalysisException as error:
        first_line = next(line for line in str(error).splitlines() + [""] if line.strip())
        raise SqlRefused(f"the statement does not resolve: {redact(first_line)[:300]}") from None
    checker.analyzed(analyzed)
    return kind


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


# a path or URI: file:/..., s3://bucket/..., /abs/olute (not the "/" of a division, which has spaces around it)
PATH = re.compile(r"(?<![\w.])(?:[A-Za-z][A-Za-z0-9+.-]*:/{1,3}|/)(?=[^\s/])[^\s,;'\"`()\[\]{}]*")


def redact(text: str) -> str:
    """``text`` with every file path and URI replaced by ``<path>``: EXPLAIN and DESCRIBE name the files
    behind a view (the lakehouse's location), which the analyst's role does not need to know."""
    return PATH.sub("<path>", text)


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
