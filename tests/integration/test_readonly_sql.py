"""``privtext sql`` is read-only: DDL, DML, SET, file reads, Java reflection and other zones' tables are
refused (parsed by Spark, never run); a SELECT on a published table works; nothing is created."""
import datetime as dt
import json
import os
import stat

import pytest
import yaml

from privtext.cli import main
from privtext.commands.sql import SqlRefused, query
from privtext.platform.tables import DOCUMENTS, PUBLISHED_SANITIZED_DOCUMENTS
from tests_support import document, write_rows

DAY = dt.date(2026, 1, 15)


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    """A lakehouse with one published sanitized document and one restricted raw document, written once for
    the module: its tests only read it (the refusals check that nothing ran)."""
    from conftest import make_settings
    from privtext.platform.context import RunContext

    ctx = RunContext.create(make_settings(tmp_path_factory.mktemp("readonly") / "lake"), date=DAY.isoformat())
    write_rows(ctx, PUBLISHED_SANITIZED_DOCUMENTS, [{"doc_id": "d1", "sanitized_text": "Hi [PERSON]", "n_spans": 1,
               "n_replaced": 1, "method": "clusant", "params": "{}", "run_id": "r", "date": DAY}])
    write_rows(ctx, DOCUMENTS, [document("d1", "Hi Alice Smith", DAY)])
    return ctx


REFUSED = [
    ("CREATE TABLE copy AS SELECT * FROM published.sanitized_documents",
     "CreateTableAsSelect is not a read-only statement"),
    ("DROP TABLE published.sanitized_documents", "DropTable is not a read-only statement"),
    ("INSERT INTO published.sanitized_documents SELECT * FROM published.sanitized_documents", "InsertIntoStatement"),
    ("INSERT OVERWRITE DIRECTORY '{published}' USING parquet SELECT 1", "InsertIntoDir is not a read-only statement"),
    ("LOAD DATA LOCAL INPATH '/etc/hosts' INTO TABLE published.sanitized_documents",
     "LoadData is not a read-only statement"),
    ("DELETE FROM published.sanitized_documents", "DeleteFromTable"),
    ("SET spark.sql.runSQLOnFiles=true", "SetCommand is not a read-only statement"),
    ("CACHE TABLE published.sanitized_documents", "CacheTable is not a read-only statement"),
    ("SELECT TRANSFORM(doc_id) USING 'cat' FROM published.sanitized_documents", "ScriptTransformation"),
    ("SELECT * FROM parquet.`{published}/sanitized_documents`", "direct file reads such as parquet.`path` are refused"),
    ("SELECT * FROM json.`/etc/hosts`", "not a table of the zones"),
    ("SELECT * FROM read_files('/etc/hosts')", "table function read_files()"),
    ("SELECT reflect('java.lang.System', 'getenv', 'HOME')", "function reflect() calls Java methods"),
    ("SELECT * FROM restricted.documents",
     "`restricted`.`documents`: the restricted zone is not readable by role 'analyst'"),
    ("SELECT * FROM IDENTIFIER('restricted.documents')", "the restricted zone is not readable"),
    ("SELECT * FROM published.sanitized_documents WHERE doc_id IN (SELECT doc_id FROM restricted.documents)",
     "the restricted zone is not readable"),
    ("SELECT (SELECT max(text) FROM restricted.documents)", "the restricted zone is not readable"),
    ("WITH raw AS (SELECT * FROM restricted.documents) SELECT * FROM raw", "the restricted zone is not readable"),
    ("EXPLAIN SELECT * FROM protected.privacy_ledger", "the protected zone is not readable"),
    ("SHOW TABLES IN restricted", "namespace restricted: name a readable zone"),
    ("SELECT 1; DROP TABLE published.sanitized_documents", "not a single valid SQL statement"),
]


@pytest.mark.parametrize("statement, message", REFUSED, ids=[s[:40] for s, _ in REFUSED])
def test_statements_that_are_not_reads_of_published_are_refused(lake, statement, message):
    published = lake.settings.lakehouse.zone_root("published")
    version = lake.lakehouse.version(PUBLISHED_SANITIZED_DOCUMENTS)
    with pytest.raises(SqlRefused) as refused:
        query(lake.settings, statement.format(published=published), 10)
    assert message in str(refused.value)
    assert "sql.role is 'analyst'" in str(refused.value) or "SQL statement" in message
    assert lake.lakehouse.version(PUBLISHED_SANITIZED_DOCUMENTS) == version  # nothing ran
    assert sorted(os.listdir(published)) == ["sanitized_documents", "synthetic_documents", "word_vectors"]


def test_reads_of_published_work_and_operator_reads_every_zone(lake):
    columns, rows = query(lake.settings, "WITH d AS (SELECT * FROM published.sanitized_documents) "
                                         "SELECT date, count(*) AS n FROM d GROUP BY date", 10)
    assert columns == ["date", "n"] and rows == [(DAY, 1)]
    assert query(lake.settings, "SHOW TABLES IN published", 10)[1]
    assert query(lake.settings, "DESCRIBE published.sanitized_documents", 10)[1][0][0] == "doc_id"
    assert query(lake.settings, "SELECT count(*) FROM range(3)", 10)[1] == [(3,)]
    operator = lake.settings.model_copy(update={"sql": lake.settings.sql.model_copy(update={"role": "operator"})})
    assert query(operator, "SELECT text FROM restricted.documents", 10)[1] == [("Hi Alice Smith",)]
    assert query(operator, "SELECT count(*) FROM restricted.document_split", 10)[1] == [(1,)]
    assert query(operator, "SELECT count(*) FROM restricted.secrets", 10)[1] == [(0,)]  # the registry view: no spans
    with pytest.raises(SqlRefused, match="DropTable is not a read-only statement"):
        query(operator, "DROP TABLE restricted.documents", 10)
    officer = lake.settings.model_copy(update={"sql": lake.settings.sql.model_copy(update={"role": "officer"})})
    assert query(officer, "SELECT count(*) FROM published.sanitized_documents", 10)[1] == [(1,)]
    assert query(officer, "SHOW TABLES IN protected", 10)[1]
    with pytest.raises(SqlRefused, match="the restricted zone is not readable by role 'officer'"):
        query(officer, "SELECT text FROM restricted.documents", 10)


def test_a_plain_select_creates_nothing(settings, spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = settings.lakehouse.root
    assert query(settings, "SELECT 1 AS one", 10) == (["one"], [(1,)])
    assert not os.path.exists(root)  # no zone, no table, no namespace folder
    assert not os.path.exists(tmp_path / "spark-warehouse")
    warehouse = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    private = os.path.dirname(warehouse)
    assert os.path.basename(private).startswith("privtext-spark-")
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o700


def test_cli_refuses_with_exit_3_and_a_one_line_message(lake, tmp_path, capsys):
    conf = tmp_path / "analyst.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": lake.settings.lakehouse.root},
                                    "tracking": {"enabled": False}}))
    assert main(["--conf", str(conf), "sql", "SELECT count(*) AS n FROM published.sanitized_documents",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"n": 1}
    assert main(["--conf", str(conf), "sql", "SELECT text FROM restricted.documents"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("privtext: refused: `restricted`.`documents`") and "Alice" not in err


JVM_ESCAPES = [  # issue 32: each reached the driver JVM through a path the parsed-plan check did not see
    ("SELECT IDENTIFIER('reflect')('java.lang.System', 'getenv', 'PRIVTEXT_HMAC_KEY')",
     "IDENTIFIER(...) in an expression"),
    ("SELECT IDENTIFIER('java_method')('java.lang.System', 'getenv')", "IDENTIFIER(...) in an expression"),
    ("SELECT IDENTIFIER('java' || '_method')('java.lang.System', 'setProperty', 'privtext.x', 'y')",
     "IDENTIFIER(...) in an expression"),
    ("SELECT java_method('java.lang.System', 'setProperty', 'privtext.x', 'y')", "function java_method() calls Java"),
    ("SELECT try_reflect('java.lang.System', 'getenv', 'HOME')", "function try_reflect() calls Java"),
    ("SELECT transform(array(1), x -> reflect('java.lang.System', 'getenv', 'HOME'))", "function reflect() calls Java"),
    ("SELECT * FROM range((SELECT length(java_method('java.lang.System', 'getenv', 'HOME'))))", "java_method"),
    ("SELECT /*+ REPARTITION(reflect('java.lang.System', 'getenv', 'HOME')) */ 1", "function reflect() calls Java"),
    ("SELECT `reflect`('java.lang.System', 'getenv', 'HOME')", "function reflect() calls Java"),
    ("SELECT system.builtin.reflect('java.lang.System', 'getenv', 'HOME')",
     "function system.builtin.reflect() calls Java"),
    ("SELECT current_user()", "function current_user() is not on the allow-list of pure built-in functions"),
    ("SELECT input_file_name() FROM published.sanitized_documents",
     "function input_file_name() calls Java methods or reads"),
    ("SELECT xpath_string('<a>x</a>', 'a')", "function xpath_string() is not on the allow-list"),
    ("SELECT aes_decrypt(unhex('00'), 'k')", "function aes_decrypt() is not on the allow-list"),
    ("SELECT assert_true(false)", "function assert_true() is not on the allow-list"),
]


@pytest.mark.parametrize("statement, message", JVM_ESCAPES, ids=[s[:48] for s, _ in JVM_ESCAPES])
def test_no_statement_reaches_the_jvm(lake, spark, statement, message):
    before = spark._jvm.java.lang.System.getProperty("privtext.x")
    with pytest.raises(SqlRefused) as refused:
        query(lake.settings, statement, 10)
    assert message in str(refused.value)
    assert spark._jvm.java.lang.System.getProperty("privtext.x") == before  # setProperty never ran


def test_a_session_udf_and_an_unresolved_name_are_refused(lake, spark):
    spark.udf.register("leak", lambda v: v)  # e.g. a function a stage registered in this process
    with pytest.raises(SqlRefused, match="function leak\\(\\) is not on the allow-list"):
        query(lake.settings, "SELECT leak(doc_id) FROM published.sanitized_documents", 10)
    with pytest.raises(SqlRefused, match="does not resolve"):
        query(lake.settings, "SELECT no_such_column FROM published.sanitized_documents", 10)


def test_having_works_and_rows_and_time_are_limited(lake):
    rows = query(lake.settings, "SELECT date, count(*) AS n FROM published.sanitized_documents GROUP BY date "
                                "HAVING count(*) > 0", 10)[1]
    assert rows == [(DAY, 1)]
    assert query(lake.settings, "SELECT upper(sanitized_text) FROM published.sanitized_documents",
                 10)[1] == [("HI [PERSON]",)]
    small = lake.settings.model_copy(update={"sql": lake.settings.sql.model_copy(update={"max_rows": 3})})
    assert len(query(small, "SELECT id FROM range(10)")[1]) == 3  # default limit: sql.max_rows
    with pytest.raises(SqlRefused, match="--limit 5 is outside 1..sql.max_rows=3"):
        query(small, "SELECT id FROM range(10)", 5)
    quick = lake.settings.model_copy(update={"sql": lake.settings.sql.model_copy(update={"timeout_s": 1})})
    with pytest.raises(SqlRefused, match="longer than sql.timeout_s=1 s .* and was cancelled"):
        query(quick, "SELECT sum(a.id * b.id) FROM range(100000000) a CROSS JOIN range(100000000) b")
    assert query(small, "SELECT 1 AS one")[1] == [(1,)]  # the session is usable after a cancel


def test_sql_limits_are_validated_naming_the_key(tmp_path):
    from privtext.settings import ConfigError, load_settings

    for key, value in (("max_rows", 0), ("timeout_s", -1), ("max_rows", "many")):
        with pytest.raises(ConfigError, match=f"sql.{key}"):
            load_settings(None, overrides={"sql": {key: value}}, environ={})


def test_the_analysts_jvm_starts_without_the_hmac_key(tmp_path):
    """A fresh process: the JVM ``privtext sql`` starts has no HMAC key (nor store keys) in its environment
    (Spark's classes mapped from the tests' archive, tests/jvm_archive.py: a cold JVM's class loading is most of
    its start)."""
    import subprocess
    import sys

    from jvm_archive import java_options, spark_archive

    from conftest import TEST_SPARK_CONF

    conf = {**TEST_SPARK_CONF, "spark.driver.extraJavaOptions": java_options(spark_archive())}
    script = ("import os; from privtext.commands.sql import _spark; from conftest import make_settings; "
              f"spark = _spark(make_settings({str(tmp_path / 'lake')!r}, spark={{'conf': {conf!r}}})); "
              "getenv = spark._jvm.java.lang.System.getenv; "
              "print(getenv('PRIVTEXT_HMAC_KEY'), getenv('AWS_SECRET_ACCESS_KEY'), getenv('PRIVTEXT_FUZZ_VISIBLE'), "
              "os.environ['PRIVTEXT_HMAC_KEY'])")
    env = {**os.environ, "PRIVTEXT_HMAC_KEY": "k" * 64, "AWS_SECRET_ACCESS_KEY": "s" * 40,
           "PRIVTEXT_FUZZ_VISIBLE": "yes",
           "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__) + "/..", os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240)
    assert out.stdout.split()[-4:] == ["None", "None", "yes", "k" * 64], out.stderr[-2000:]


def test_a_statement_failing_at_run_time_is_one_line_exit_1(lake, tmp_path, capsys):
    conf = tmp_path / "analyst.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": lake.settings.lakehouse.root},
                                    "tracking": {"enabled": False}}))
    assert main(["--conf", str(conf), "sql", "SELECT 1/0 AS x"]) == 1
    assert main(["--conf", str(conf), "sql", "SELEC 1"]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("privtext: the statement failed: [DIVIDE_BY_ZERO]")
    assert (err[1].startswith("privtext: refused: not a single valid SQL statement: [PARSE_SYNTAX_ERROR]")
            and len(err) == 2)


TOO_BIG = [  # issue 47: each exhausted the driver before any Spark job (or printed a JVM traceback)
    ("SELECT repeat('x', 100000000)", "StringRepeat would build about 100,000,000 characters or elements"),
    ("SELECT explode(sequence(1, 100000000))", "Sequence would build about 100,000,000"),
    ("SELECT array_repeat(1, 500000000)", "ArrayRepeat would build about 500,000,000"),
    ("SELECT length(repeat(repeat('ab', 1000), 1000))", "StringRepeat would build about 2,000,000"),
    ("SELECT transform(sequence(1, 10000), x -> repeat('x', 10000))", "ArrayTransform would build about 100,000,000"),
    ("SELECT sequence(DATE'2000-01-01', DATE'9000-01-01')", "Sequence would build about 2,556,699"),
    ("SELECT lpad('a', 100000000, 'b')", "StringLPad would build about 100,000,000"),
    ("SELECT printf('%0999999999d', 1)", "FormatString would build about 1,000,000,0"),
    ("SELECT " + "(" * 20_000 + "1" + ")" * 20_000, "the statement nests brackets 20,000 deep; at most 100"),
    ("SELECT " + "(" * 2_000 + "1" + ")" * 2_000, "nests brackets 2,000 deep"),
    ("SELECT " + "array(" * 3_000 + "1" + ")" * 3_000, "nests brackets 3,000 deep"),
    ("SELECT '" + "x" * 100_001 + "'", "the statement has 100,010 characters; at most 100,000"),
]


@pytest.mark.parametrize("statement, message", TOO_BIG, ids=[s[:40] for s, _ in TOO_BIG])
def test_statements_too_big_to_build_are_refused_before_they_run(lake, statement, message):
    import time

    started = time.monotonic()
    with pytest.raises(SqlRefused) as refused:
        query(lake.settings, statement, 10)
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert time.monotonic() - started < lake.settings.sql.timeout_s


def test_the_same_functions_within_bounds_return_their_values(lake):
    """Controls: the refusals above are about size, not the functions."""
    deep = "SELECT " + "(" * 99 + "1" + ")" * 99 + " AS one"
    assert query(lake.settings, deep)[1] == [(1,)]
    assert query(lake.settings, "SELECT length(repeat('x', 1000000)) AS n, size(sequence(1, 1000)) AS s, "
                                "size(array_repeat(1, 10)) AS a, lpad('7', 3, '0') AS p, printf('%5d', 1) AS f, "
                                "size(transform(sequence(1, 100), x -> repeat('x', 100))) AS t, "
                                "size(sequence(DATE'2026-01-01', DATE'2026-12-31')) AS d")[1] == [
        (1_000_000, 1000, 10, "007", "    1", 100, 365)]
    assert query(lake.settings, "SELECT ')(((' AS s -- ((((\n")[1] == [(")(((",)]  # brackets in literals and comments


def test_a_statement_too_complex_within_the_nesting_limit_is_one_line(lake, tmp_path, capsys):
    conf = tmp_path / "analyst.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": lake.settings.lakehouse.root},
                                    "tracking": {"enabled": False}}))
    statement = "SELECT " + " + ".join(["1"] * 20_000)  # no brackets: a 20,000-deep expression tree
    assert main(["--conf", str(conf), "sql", statement]) == 3
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("privtext: refused: not a single valid SQL statement: "
                                               "[FAILED_TO_PARSE_TOO_COMPLEX]")
    assert query(lake.settings, "SELECT 1 AS one")[1] == [(1,)]  # the session is usable afterwards


def test_parsing_and_analysis_run_under_the_timeout(lake, monkeypatch):
    """The timer starts before the parse: a parse that does not return (a slow statement before any Spark job)
    is answered at sql.timeout_s."""
    import threading
    import time

    from privtext.commands import sql

    release = threading.Event()
    monkeypatch.setattr(sql, "check", lambda *args: release.wait(60))  # a parse that never returns by itself
    small = lake.settings.model_copy(update={"sql": lake.settings.sql.model_copy(update={"timeout_s": 1})})
    started = time.monotonic()
    with pytest.raises(SqlRefused, match="longer than sql.timeout_s=1 s \\(parsing and analysis included\\)"):
        query(small, "SELECT 1")
    assert time.monotonic() - started < 30
    release.set()


def test_explain_and_describe_show_no_path(lake, spark):
    root = lake.settings.lakehouse.root
    for statement in ("EXPLAIN FORMATTED SELECT * FROM published.sanitized_documents",
                      "EXPLAIN EXTENDED SELECT doc_id FROM published.sanitized_documents",
                      "DESCRIBE TABLE EXTENDED published.sanitized_documents"):
        text = "\n".join(str(v) for row in query(lake.settings, statement)[1] for v in row)
        assert root not in text and "<path>" in text, statement
        assert root in "\n".join(str(v) for row in spark.sql(statement).collect() for v in row)  # control: Spark's own
    assert query(lake.settings, "SELECT 6 / 3 AS x, 'a/b' AS s")[1] == [(2.0, "a/b")]  # data is never rewritten
