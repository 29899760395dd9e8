"""privtext sql's checks before Spark (no JVM): nesting and length, path redaction, one-line JVM errors."""
import pytest

from privtext.commands.sql import MAX_NESTING, SqlFailed, SqlRefused, _fatal, nesting_depth, precheck, redact


def test_nesting_counts_brackets_outside_literals_identifiers_and_comments():
    assert nesting_depth("SELECT ((1)), array(map(1, (2)))") == 3
    assert nesting_depth("SELECT '(((', \"[[[\", `{{{` -- ((((\n, 1 /* (((( */") == 0
    assert nesting_depth("SELECT 'it\\'s ((', (1)") == 1  # an escaped quote does not end the literal
    assert nesting_depth("SELECT " + "array(" * 3000 + "1" + ")" * 3000) == 3000
    precheck("SELECT " + "(" * MAX_NESTING + "1" + ")" * MAX_NESTING)  # at the limit: accepted
    with pytest.raises(SqlRefused, match=f"nests brackets {MAX_NESTING + 1} deep"):
        precheck("SELECT " + "(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1))


def test_redact_replaces_paths_and_uris_but_not_divisions():
    text = ("Location: InMemoryFileIndex [file:/srv/lake/published/t], parquet.`/srv/lake/published/t` "
            "s3://privtext-published/lake/t (a / b) 'x'")
    assert redact(text) == "Location: InMemoryFileIndex [<path>], parquet.`<path>` <path> (a / b) 'x'"


def test_jvm_stack_and_memory_errors_are_one_line():
    from py4j.protocol import Py4JNetworkError

    stack = _fatal(RuntimeError("An error occurred: java.lang.StackOverflowError\n\tat org.antlr..."))
    memory = _fatal(RuntimeError("java.lang.OutOfMemoryError: Java heap space\n\tat scala..."))
    gone = _fatal(Py4JNetworkError("Answer from Java side is empty"))
    assert isinstance(stack, SqlRefused) and "StackOverflowError" in str(stack) and "\n" not in str(stack)
    assert isinstance(memory, SqlRefused) and "OutOfMemoryError" in str(memory)
    assert isinstance(gone, SqlFailed) and "Py4JNetworkError" in str(gone)
    assert _fatal(ValueError("a Python error")) is None  # control: anything else is not swallowed
