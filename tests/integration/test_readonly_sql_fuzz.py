"""Generated statements against ``privtext sql`` (role analyst): whatever the function names, IDENTIFIER
spellings, nesting (subqueries, CTEs, lambdas, hints, EXPLAIN) and sources, no statement returns an
environment value or system property of the JVM, a file's content, or a row of a zone other than
published, and none changes the JVM's state: it is refused or it returns published data only."""
import datetime as dt
import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from privtext.commands.sql import SqlRefused, query
from privtext.platform.tables import DOCUMENTS, PUBLISHED_SANITIZED_DOCUMENTS
from tests_support import document, write_rows

DAY = dt.date(2026, 1, 15)
PROPERTY = "privtext.fuzz.secret"
RESTRICTED_TEXT = "Hi Alice Smith, 555-0100"

JAVA = ["reflect", "java_method", "try_reflect"]
OUTSIDE = ["current_user", "input_file_name", "version", "hmac", "aes_encrypt", "xpath_string", "from_xml",
           "from_protobuf", "from_avro", "uuid", "spark_partition_id", "leak_udf", "default.f", "read_files"]
PURE = ["upper", "concat", "length", "coalesce", "substring", "sha2", "regexp_replace"]
JAVA_CALLS = ["'java.lang.System', 'getenv', '{env}'", "'java.lang.System', 'getProperty', '" + PROPERTY + "'",
              "'java.lang.System', 'setProperty', '" + PROPERTY + "', 'changed'", "'java.lang.System', 'getenv'"]


def spelled(name: str) -> st.SearchStrategy[str]:
    """A function name as a statement may spell it."""
    half = len(name) // 2
    return st.sampled_from([name, name.upper(), f"`{name}`", f"IDENTIFIER('{name}')",
                            f"IDENTIFIER('{name[:half]}' || '{name[half:]}')", f"system.builtin.{name}",
                            f"IDENTIFIER(concat('{name[:half]}', '{name[half:]}'))"])


@st.composite
def calls(draw, env_names) -> str:
    name = draw(st.sampled_from(JAVA + OUTSIDE + PURE * 3))  # a third of the calls could run
    args = (draw(st.sampled_from(JAVA_CALLS)).format(env=draw(st.sampled_from(env_names))) if name in JAVA
            else draw(st.sampled_from(["sanitized_text", "'x'", "'/etc/hostname'", "doc_id, 'a'"])))
    return f"{draw(spelled(name))}({args})"


def nested(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    wrappers = ["upper({})", "transform(array(1), x -> {})", "(SELECT {})", "coalesce(NULL, {})",
                "CASE WHEN true THEN {} END", "CAST({} AS STRING)", "filter(array('a'), y -> {} IS NOT NULL)",
                "(SELECT max({}) FROM published.sanitized_documents)"]
    return st.recursive(inner, lambda e: st.tuples(st.sampled_from(wrappers), e).map(lambda t: t[0].format(t[1])),
                        max_leaves=3)


SOURCES = ["published.sanitized_documents", "restricted.documents", "IDENTIFIER('restricted.documents')",
           "IDENTIFIER('restricted' || '.documents')", "protected.privacy_ledger", "text.`{file}`", "json.`{file}`",
           "read_files('{file}')", "range(2)", "published.sanitized_documents TABLESAMPLE (50 PERCENT)",
           "(SELECT * FROM restricted.documents)", "spark_catalog.restricted.documents"]
STATEMENTS = ["SELECT {e} AS v FROM {s}", "SELECT {e} AS v", "WITH c AS (SELECT {e} AS v FROM {s}) SELECT * FROM c",
              "SELECT /*+ REPARTITION(2) */ {e} AS v FROM {s}", "EXPLAIN EXTENDED SELECT {e} AS v FROM {s}",
              "SELECT count(*) AS n FROM {s} GROUP BY 1 HAVING max({e}) IS NOT NULL",
              "SELECT * FROM {s} WHERE {e} IS NOT NULL", "SELECT * FROM {s}", "DESCRIBE QUERY SELECT {e} FROM {s}",
              "SELECT * FROM {s} UNION ALL SELECT * FROM {s}"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory, spark):
    """A lakehouse with one published and one restricted row, a file with a secret line, a JVM system
    property holding a secret; returns (settings, the secrets no output may contain, file path)."""
    from conftest import make_settings
    from privtext.platform.context import RunContext

    root = tmp_path_factory.mktemp("fuzz")
    ctx = RunContext.create(make_settings(root / "lake"), date=DAY.isoformat())
    write_rows(ctx, PUBLISHED_SANITIZED_DOCUMENTS, [{"doc_id": "d1", "sanitized_text": "Hi [PERSON]", "n_spans": 1,
               "n_replaced": 1, "method": "clusant", "params": "{}", "run_id": "r", "date": DAY}])
    write_rows(ctx, DOCUMENTS, [document("d1", RESTRICTED_TEXT, DAY)])
    file_secret = f"FILE-{uuid.uuid4().hex}"
    path = root / "secret.txt"
    path.write_text(f'{{"v": "{file_secret}"}}\n')
    property_secret = f"PROP-{uuid.uuid4().hex}"
    spark._jvm.java.lang.System.setProperty(PROPERTY, property_secret)
    environment = dict(spark._jvm.java.lang.System.getenv())
    lake_root = str(root)
    env_values = {v for v in environment.values() if len(v) >= 12 and v not in lake_root}
    secrets = {file_secret, property_secret, "Alice", "555-0100", *env_values}
    return ctx.settings, secrets, str(path), sorted(environment)


def test_planted_secrets_are_reachable_by_an_unchecked_spark_sql(planted, spark):
    """Negative control: the same JVM answers an unchecked statement with the planted secrets, so the
    fuzz test below would see them if a checked statement got through."""
    settings, secrets, path, _ = planted
    leaked = spark.sql(f"SELECT reflect('java.lang.System', 'getProperty', '{PROPERTY}') AS p").first()["p"]
    assert leaked in secrets
    assert any(s in spark.read.text(path).first()[0] for s in secrets)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_statements_return_no_secret_file_or_restricted_row(planted, spark, data):
    settings_, secrets, path, env_names = planted
    expression = data.draw(nested(calls(env_names[:20] or ["HOME"])))
    source = data.draw(st.sampled_from(SOURCES + SOURCES[:1] * 8)).format(file=path)  # half read published
    statement = data.draw(st.sampled_from(STATEMENTS)).format(e=expression, s=source)
    property_before = spark._jvm.java.lang.System.getProperty(PROPERTY)
    try:
        columns, rows = query(settings_, statement, 50)
    except SqlRefused:
        rows = []
    cells = " ".join(str(v) for row in rows for v in row)
    assert not [s for s in secrets if s in cells], statement
    assert spark._jvm.java.lang.System.getProperty(PROPERTY) == property_before, statement
