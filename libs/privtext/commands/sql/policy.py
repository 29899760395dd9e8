"""What ``privtext sql`` allows, as data and plain checks: the zones each role reads, the plan nodes and built-in
function groups of a read, the limits on a statement's size, nesting and what it may build, the checks that run
before Spark parses anything (``precheck``), and what is removed from what a role sees (``redact``). The rules
in words: docs/operations.md, "Querying"."""
from __future__ import annotations

import re

from privtext.errors import PrivtextError, Refused
from privtext.settings import ZONES

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



# a path or URI: file:/..., s3://bucket/..., /abs/olute (not the "/" of a division, which has spaces around it)
PATH = re.compile(r"(?<![\w.])(?:[A-Za-z][A-Za-z0-9+.-]*:/{1,3}|/)(?=[^\s/])[^\s,;'\"`()\[\]{}]*")


def redact(text: str) -> str:
    """``text`` with every file path and URI replaced by ``<path>``: EXPLAIN and DESCRIBE name the files
    behind a view (the lakehouse's location), which the analyst's role does not need to know."""
    return PATH.sub("<path>", text)

