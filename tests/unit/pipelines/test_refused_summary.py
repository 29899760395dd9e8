"""A refused ``privtext pipeline run`` prints the same summary as a passing one (issue 45): every stage that ran,
then the refused stage with the gate's failed checks and what to do; then its one stderr line and exit 3."""
from __future__ import annotations

import contextlib
import json
from types import SimpleNamespace

from privtext import cli, pipelines
from privtext.stages.publish import PublishRefused

INVALID = ("the transformer audit is invalid: its negative control(s) misbehaved (control_uniform); the audit "
           "cannot tell leaking from safe releases")


def test_a_refused_run_prints_the_stages_the_gate_checks_and_what_to_do(monkeypatch, capsys):
    def fake_run_stage(stage, settings, date=None, pipeline="adhoc", **options):
        if stage == "publish":
            raise PublishRefused("publish refused for target sanitized_documents date 2026-01-15: " + INVALID,
                                 [INVALID])
        if stage == "audit":
            return SimpleNamespace(stage=stage, passed=False, valid=False)
        return SimpleNamespace(stage=stage)

    monkeypatch.setattr(pipelines, "run_stage", fake_run_stage)
    monkeypatch.setattr(pipelines, "pipeline_run",
                        lambda *a: contextlib.nullcontext(SimpleNamespace(log_dict=lambda *a: None)))
    monkeypatch.setattr(pipelines, "retune", lambda settings, date, name, sanitize, audit, progress=None:
                        pipelines.Retuned([{"alpha": 1.0, "passed": False, "valid": False}], sanitize, audit))
    code = cli.main(["pipeline", "run", "nightly_sanitized_export", "--date", "2026-01-15", "--input", "x"])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert code == 3 and err.count("\n") == 1 and err.startswith("privtext: refused: ")
    assert list(summary) == ["ingest", "detect_pii", "embed", "sanitize", "audit", "retune", "publish"]
    assert summary["audit"] == {"stage": "audit", "passed": False, "valid": False}
    refused = summary["publish"]
    assert refused["refused"] is True and refused["gate_checks_failed"] == [INVALID]
    assert any("privtext run audit --target sanitized_documents --date 2026-01-15" in s for s in refused["what_to_do"])
    assert any("--override-gate" in s for s in refused["what_to_do"])
