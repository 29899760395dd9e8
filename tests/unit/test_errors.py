"""One PrivtextError base: every error privtext raises on purpose derives from it; the CLI reports it as one line."""
import pytest

from privtext.clusant.vocabulary import NoVocabulary
from privtext.errors import PrivtextError, Refused, UsageError, report_error
from privtext.generate.endpoint import EndpointAuthError
from privtext.pii.hashing import MissingKeyError
from privtext.platform.config import ConfigError
from privtext.platform.lakehouse import LakehouseError
from privtext.platform.leases import StageLocked
from privtext.platform.zones import ZoneViolation
from privtext.privacy.budget import BudgetExceeded
from privtext.stages.audit import AuditError, Unauditable
from privtext.stages.ingest import IngestError
from privtext.stages.publish import PublishRefused


@pytest.mark.parametrize("cls,code,prefix", [
    (ConfigError, 2, ""), (UsageError, 2, ""), (LakehouseError, 1, ""), (ZoneViolation, 1, ""), (AuditError, 1, ""),
    (MissingKeyError, 1, ""), (NoVocabulary, 1, ""), (EndpointAuthError, 1, ""),
    (BudgetExceeded, 3, "refused: "), (StageLocked, 3, "refused: "), (IngestError, 3, "refused: "),
    (PublishRefused, 3, "refused: "), (Unauditable, 3, "refused: "),
])
def test_each_error_is_reported_as_one_line_with_its_exit_code(cls, code, prefix, capsys):
    error = cls("what went wrong; how to proceed")
    assert isinstance(error, PrivtextError) and isinstance(error, Refused) == (code == 3)
    assert report_error(error) == code
    assert capsys.readouterr().err == f"privtext: {prefix}what went wrong; how to proceed\n"


def test_the_former_bases_still_hold():  # callers catching ValueError / RuntimeError keep working
    assert issubclass(ConfigError, ValueError) and issubclass(NoVocabulary, ValueError)
    assert issubclass(IngestError, ValueError) and issubclass(BudgetExceeded, RuntimeError)
    assert issubclass(LakehouseError, RuntimeError) and issubclass(MissingKeyError, RuntimeError)


def test_a_job_reports_a_bad_config_without_traceback_before_any_spark(tmp_path, capsys):
    from privtext.stages.runner import job_main

    conf = tmp_path / "bad.yaml"
    conf.write_text("run:\n  seed: not-a-number\n")
    assert job_main("ingest", ["--conf", str(conf), "--date", "2026-01-15"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privtext: invalid configuration") and "run.seed" in err and "Traceback" not in err


CLI_MISTAKES = [  # (config text or None for a good one, arguments, exit code, start of the one line)
    ("run: [\n bad", ["init"], 2, "privtext: config file {conf} is not valid YAML: expected ',' or ']'"),
    (None, ["run", "ingest", "--date", "2026-13-45", "--input", "x"], 2,
     "privtext: --date must be a date YYYY-MM-DD, got '2026-13-45'"),
    (None, ["run", "nosuch", "--date", "2026-01-01"], 2, "privtext: unknown stage 'nosuch'; allowed: ingest,"),
    (None, ["pipeline", "run", "nosuch", "--date", "2026-01-01"], 2, "privtext: unknown pipeline 'nosuch'"),
    (None, ["run", "ingest", "--date", "2026-01-01", "--input", "x"], 1, "privtext: no HMAC key: set the environment"),
]


@pytest.mark.parametrize("text, args, code, line", CLI_MISTAKES, ids=[" ".join(a[:2]) for _, a, _, _ in CLI_MISTAKES])
def test_cli_mistakes_are_one_line_with_their_exit_code_before_spark_starts(tmp_path, monkeypatch, capsys,
                                                                              text, args, code, line):
    import yaml

    from privtext.cli import main

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr("privtext.platform.context.get_spark", no_spark)  # where every stage gets its session
    monkeypatch.delenv("PRIVTEXT_HMAC_KEY", raising=False)
    conf = tmp_path / "conf.yaml"
    conf.write_text(text if text is not None else yaml.safe_dump({"lakehouse": {"root": str(tmp_path / "lake")},
                                                                  "tracking": {"enabled": False}}))
    assert main(["--conf", str(conf), *args]) == code
    err = capsys.readouterr().err
    assert err.startswith(line.format(conf=conf)) and err.count("\n") == 1, err
