"""AmPL's loop in the nightly export (pipelines.retune), with the stages replaced by recorders: the code
around the stages decides when to re-sanitize, at which eps, against which audit eps bounds, and when to stop."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from privtext import pipelines
from privtext.settings import load_settings


def audit_result(ratio, valid=True):
    return SimpleNamespace(worst_violation_ratio=ratio, passed=ratio < 0.05, valid=valid)


FIRST = SimpleNamespace(semantic_similarity=0.95)  # the configured setting's sanitize result


@pytest.fixture
def stages(monkeypatch):
    calls, ratios, recorded = [], [], []

    def fake_run_stage(stage, settings, date=None, pipeline="adhoc", **options):
        calls.append((stage, dict(settings.clusant.eps)))
        if stage == "sanitize":
            return SimpleNamespace(semantic_similarity=0.9)
        return audit_result(*ratios.pop(0))

    monkeypatch.setattr(pipelines, "run_stage", fake_run_stage)
    monkeypatch.setattr(pipelines, "_record", lambda settings, date, name, rounds: recorded.append(rounds))
    return calls, ratios, recorded


def test_a_refused_audit_is_retried_at_stricter_eps_against_the_same_bounds_until_it_passes(stages):
    calls, ratios, recorded = stages
    settings = load_settings(None)
    eps = dict(settings.clusant.eps)
    ratios += [(0.07,), (0.01,)]  # alpha 0.9 still refused, alpha 0.8 passes
    settings = settings.model_copy(update={"ampl": settings.ampl.model_copy(update={"retune_rounds": 3})})
    first_audit = audit_result(0.09)
    retuned = pipelines.retune(settings, "2026-01-15", "nightly_sanitized_export", FIRST, first_audit)
    rounds = retuned.rounds
    assert [r["alpha"] for r in rounds] == [1.0, 0.9, 0.8] and [r["passed"] for r in rounds] == [False, False, True]
    assert [c[0] for c in calls] == ["sanitize", "audit", "sanitize", "audit"]  # stops at the first pass
    assert calls[0][1] == pytest.approx({t: 0.9 * e for t, e in eps.items()})  # the sanitizer gets stricter
    assert calls[1][1] == eps and calls[3][1] == eps  # the audit's eps bounds do not move
    assert rounds[2]["eps"] == pytest.approx({t: 0.8 * e for t, e in eps.items()})
    assert recorded == [rounds]  # every round goes to protected.eps_frontier, once
    assert retuned.audit.passed and retuned.sanitize.semantic_similarity == 0.9  # the last setting is staged
    assert first_audit.worst_violation_ratio == 0.09 and FIRST.semantic_similarity == 0.95  # inputs unchanged


def test_the_frontier_rows_mark_the_staged_setting_only_when_it_passed(monkeypatch):
    written = []
    monkeypatch.setattr("privtext.platform.context.RunContext.create", lambda *a, **k: None)
    monkeypatch.setattr("privtext.platform.utility_reports.write_frontier",
                        lambda ctx, target, source, points: written.append((target, source, points)))
    settings = load_settings(None)
    eps = settings.clusant.eps
    rounds = [{"alpha": 1.0, "violation_ratio": 0.09, "passed": False, "semantic_similarity": 0.9},
              {"alpha": 0.9, "violation_ratio": 0.01, "passed": True, "semantic_similarity": None}]
    pipelines._record(settings, "2026-01-15", "n", rounds)
    target, source, points = written[-1]
    assert (target, source) == ("sanitized_documents", "retune")
    assert [p["chosen"] for p in points] == [False, True]
    assert points[1]["eps_pii"] == pytest.approx(0.9 * eps["PII"])
    assert points[1]["eps_poii"] == pytest.approx(0.9 * eps["PoII"])
    assert points[0]["utility_loss"] == pytest.approx(0.1) and points[1]["utility_loss"] is None
    pipelines._record(settings, "2026-01-15", "n", rounds[:1])  # refused at its last round: nothing chosen
    assert [p["chosen"] for p in written[-1][2]] == [False]


def test_no_round_after_a_pass_or_invalid_controls_and_at_most_retune_rounds(stages):
    calls, ratios, _ = stages
    settings = load_settings(None)
    passed = audit_result(0.01)
    retuned = pipelines.retune(settings, "2026-01-15", "n", FIRST, passed)
    assert len(retuned.rounds) == 1 and retuned.audit is passed and retuned.sanitize is FIRST
    assert len(pipelines.retune(settings, "2026-01-15", "n", FIRST, audit_result(0.09, valid=False)).rounds) == 1
    assert calls == []
    ratios += [(0.2,), (0.2,)]
    rounds = pipelines.retune(settings, "2026-01-15", "n", FIRST, audit_result(0.3)).rounds
    assert len(rounds) == 1 + settings.ampl.retune_rounds == 3 and not rounds[-1]["passed"]


def test_pipeline_run_prints_every_result_with_the_retune_rounds(monkeypatch, capsys):
    """``privtext pipeline run`` prints stage results (dataclasses) and the retune rounds (a list) as JSON."""
    import json

    from privtext import cli

    rounds = [{"alpha": 1.0, "violation_ratio": 0.01, "passed": True}]
    monkeypatch.setattr(pipelines, "run_pipeline",
                        lambda *a, **k: {"audit": SimpleNamespace(passed=True), "retune": rounds})
    assert cli.main(["pipeline", "run", "nightly_sanitized_export", "--date", "2026-01-15", "--input", "x"]) == 0
    assert json.loads(capsys.readouterr().out) == {"audit": {"passed": True}, "retune": rounds}
