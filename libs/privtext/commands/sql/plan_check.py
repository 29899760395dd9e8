"""The check of one statement against the policy (``privtext.commands.sql.policy``), on Spark's own plans: the
parsed plan (statement kinds, tables, namespaces, functions), then the analyzed plan (resolved, data read only
under a readable view, no denied class, bounded sizes built from constants). ``check`` is the entry."""
from __future__ import annotations

import re

from privtext.commands.sql.policy import (
    DATA_FREE_LEAVES,
    DENIED_FUNCTIONS,
    MAX_BUILT_SIZE,
    NAMES,
    PURE_GROUPS,
    QUERY_NODES,
    STATEMENTS,
    TABLE_FUNCTIONS,
    UDF_CLASSES,
    SqlRefused,
    precheck,
    redact,
)
from privtext.settings import ZONES

# expressions whose result is a constant argument times as large as their input: (count argument, input argument)
MULTIPLIERS = {"StringRepeat": (1, 0), "ArrayRepeat": (1, 0), "StringLPad": (1, None), "StringRPad": (1, None),
               "BinaryLPad": (1, None), "BinaryRPad": (1, None), "StringSpace": (0, None)}
# a lambda runs once per element: the result is as large as the array times the lambda's result
HIGHER_ORDER = frozenset({"ArrayTransform", "ZipWith", "ArrayAggregate", "TransformKeys", "TransformValues",
                          "MapZipWith", "ArrayFilter", "MapFilter", "ArraySort"})



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

