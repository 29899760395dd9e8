"""An unexpected failure (a crashed Spark job) ends the CLI in one line that names its cause, never the
exception's text, which may quote private rows; -v re-raises it whole."""
import argparse

import pytest

from privtext import cli

SPARK_MESSAGE = ("An error occurred while calling o412.collectToPython.\n: org.apache.spark.SparkException: Job "
                 "aborted due to stage failure: Python worker exited unexpectedly (crashed)\n row: Jane Roe 555-0100")


def _parser_raising(error):
    parser = argparse.ArgumentParser()
    parser.add_argument("-v", "--verbose", action="store_true")

    def fail(args):
        raise error

    parser.set_defaults(func=fail)
    return lambda *command: parser


@pytest.mark.parametrize("error, cause", [(RuntimeError(SPARK_MESSAGE), "Python worker crashed"),
                                          (ValueError("bad row: Jane Roe 555-0100"), None)])
def test_a_crash_is_one_line_without_its_message(monkeypatch, capsys, error, cause):
    monkeypatch.setattr(cli, "build_parser", _parser_raising(error))
    assert cli.main([]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"privtext: failed: {type(error).__name__}")
    assert "Jane Roe" not in err and "555-0100" not in err
    assert (cause in err) if cause else "(" not in err.split(";")[0]


def test_verbose_reraises_the_crash_whole(monkeypatch):
    monkeypatch.setattr(cli, "build_parser", _parser_raising(RuntimeError(SPARK_MESSAGE)))
    with pytest.raises(RuntimeError, match="Python worker exited"):
        cli.main(["-v"])
