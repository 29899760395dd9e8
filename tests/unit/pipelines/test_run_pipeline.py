"""``run_pipeline`` with fake stages: the declared order, the retune step after the audit (and only when this run
sanitized and audited), and a refusal that stops the run carrying what ran. The stages, the MLflow parent run
and the frontier writer are fakes; the code under test is the pipeline around them."""
from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from privtext import pipelines
from privtext.errors import Refused
from privtext.settings import load_settings
from privtext.stages import STAGES

DATE = "2026-01-15"
EXPORT = ["ingest", "detect_pii", "embed", "sanitize", "audit", "publish"]


@pytest.fixture
def run(monkeypatch):
    """Fake stages recording (stage, options, sanitizer eps); ``audits``: the violation ratios the audits return
    in turn (below 0.05 passes); ``refuse``: (stage, n) -> the Refused its n-th run raises; ``progress``: the
    stage lines."""
    state = SimpleNamespace(calls=[], audits=[], refuse={}, progress=[], logged=[], recorded=[])

    def fake_run_stage(stage, settings, date=None, pipeline="adhoc", **options):
        assert date == DATE and pipeline == "nightly_sanitized_export"
        state.calls.append((stage, options, dict(settings.clusant.eps)))
        refusal = state.refuse.get((stage, sum(c[0] == stage for c in state.calls)))
        if refusal is not None:
            raise refusal
        if stage == "audit":
            ratio = state.audits.pop(0)
            return SimpleNamespace(worst_violation_ratio=ratio, passed=ratio < 0.05, valid=True)
        return SimpleNamespace(stage=stage, run=len(state.calls), semantic_similarity=0.9)

    @contextlib.contextmanager
    def progress(name):
        state.progress.append(name)
        yield

    tracked = SimpleNamespace(log_dict=lambda data, path: state.logged.append((path, data)))
    monkeypatch.setattr(pipelines, "run_stage", fake_run_stage)
    monkeypatch.setattr(pipelines, "pipeline_run", lambda *a: contextlib.nullcontext(tracked))
    monkeypatch.setattr(pipelines, "_record", lambda settings, date, name, rounds: state.recorded.append(rounds))
    settings = load_settings(None, environ={})

    def call(skip=()):
        return pipelines.run_pipeline("nightly_sanitized_export", settings, DATE, input_path="in.jsonl", skip=skip,
                                      progress=progress)
    state.call, state.eps = call, dict(settings.clusant.eps)
    return state


def test_the_stages_run_in_the_declared_order_with_their_options(run):
    run.audits += [0.01]
    results = run.call()
    assert [c[0] for c in run.calls] == EXPORT
    assert run.calls[0][1] == {"input_path": "in.jsonl"}
    assert run.calls[4][1] == run.calls[5][1] == {"target": "sanitized_documents"}
    assert run.progress == EXPORT  # one stage line each; a passing audit needs no retune round
    assert list(results) == ["ingest", "detect_pii", "embed", "sanitize", "audit", "retune", "publish"]
    assert [r["alpha"] for r in results["retune"]] == [1.0] and run.recorded == [results["retune"]]
    assert run.logged == [("ampl/retune.json", {"rounds": results["retune"]})]


def test_a_refused_audit_triggers_retune_rounds_before_publish(run):
    run.audits += [0.09, 0.01]  # the configured setting refused, alpha 0.9 passes
    results = run.call()
    assert [c[0] for c in run.calls] == ["ingest", "detect_pii", "embed", "sanitize", "audit", "sanitize", "audit",
                                         "publish"]
    assert run.progress == [*EXPORT[:5], "retune 0.9", "publish"]
    assert run.calls[5][2] == pytest.approx({t: 0.9 * e for t, e in run.eps.items()})  # re-sanitized stricter
    assert run.calls[6][2] == run.eps and run.calls[6][1] == {"target": "sanitized_documents"}  # same bounds
    assert [r["passed"] for r in results["retune"]] == [False, True]
    assert results["audit"].passed and results["sanitize"].run == 6  # the staged setting's results
    assert list(results) == ["ingest", "detect_pii", "embed", "sanitize", "audit", "retune", "publish"]


@pytest.mark.parametrize("skipped", ["sanitize", "audit", "retune"])
def test_no_retune_without_this_runs_sanitize_and_audit(run, skipped):
    run.audits += [0.09, 0.01]  # a refused audit: the loop would re-sanitize
    results = run.call(skip=(skipped,))
    assert "retune" not in results and run.recorded == [] and run.logged == []
    assert [c[0] for c in run.calls] == [s for s in EXPORT if s != skipped]


def test_a_refusal_stops_the_run_and_carries_what_ran(run):
    run.refuse["embed", 1] = Refused("embed refused")
    with pytest.raises(Refused) as refused:
        run.call()
    assert [c[0] for c in run.calls] == ["ingest", "detect_pii", "embed"]  # nothing after the refusal
    assert refused.value.pipeline_stage == "embed"
    assert list(refused.value.pipeline_results) == ["ingest", "detect_pii"]


def test_a_refusal_inside_the_retune_step_names_it(run):
    run.audits += [0.09]
    run.refuse["sanitize", 2] = Refused("over budget")  # the first retune round's sanitize
    with pytest.raises(Refused) as refused:
        run.call()
    assert refused.value.pipeline_stage == pipelines.RETUNE
    assert list(refused.value.pipeline_results) == ["ingest", "detect_pii", "embed", "sanitize", "audit"]
    assert "publish" not in [c[0] for c in run.calls]


def test_every_step_is_a_registered_stage_or_retune_after_an_audit():
    for name, steps in pipelines.PIPELINES.items():
        names = [s.name for s in steps]
        assert set(names) - {pipelines.RETUNE} <= set(STAGES), name
        for i, step in enumerate(names):
            if step == pipelines.RETUNE:
                assert names[i - 1] == "audit" and "sanitize" in names[:i], name
        for step in steps:  # options are the stage's own: --target takes a target it declares
            assert set(step.options) <= {"target"}
            assert "target" not in step.options or step.options["target"] in STAGES[step.name].targets
