"""The demo's verdicts: each refusal a product's pipeline raises maps to its own summary line, and anything that
is not a refusal fails the demo instead of being printed as one. The pipelines are replaced by fakes that
raise; the code under test is the demo's mapping around them."""
from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from privtext import demo, pipelines
from privtext.dped.aggregation import NoiseDominated
from privtext.platform.leases import StageLocked
from privtext.privacy.budget import BudgetExceeded
from privtext.settings import load_settings
from privtext.stages.publish import PublishRefused
from privtext.stages.train_dped import EmptyVocabulary

DATE = "2026-01-15"
REFUSALS = [NoiseDominated("best-case signal/noise below dped.min_snr"), BudgetExceeded("over eps_max"),
            EmptyVocabulary("no public word passed"), PublishRefused("no ledger charge", ["no ledger charge"])]


def lines(name):
    return contextlib.nullcontext()


@pytest.fixture
def settings(tmp_path):
    return load_settings(None, environ={}, overrides={"lakehouse": {"root": str(tmp_path / "lake")}})


def pipeline(monkeypatch, outcome, calls=None):
    """``run_pipeline`` raises ``outcome`` (an exception) or returns it."""
    def fake(name, settings, date, **kwargs):
        if calls is not None:
            calls.append(name)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
    monkeypatch.setattr(pipelines, "run_pipeline", fake)


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda r: type(r).__name__)
def test_each_dped_refusal_is_its_nothing_published_line(monkeypatch, settings, refusal):
    pipeline(monkeypatch, refusal)
    assert demo.dp_embeddings(settings, DATE, lines) == f"nothing published: {refusal}; not useful at this size"


@pytest.mark.parametrize("error", [RuntimeError("CUDA error: device-side assert"), StageLocked("lease held")],
                         ids=lambda e: type(e).__name__)
def test_a_failure_or_another_refusal_is_not_read_as_not_useful(monkeypatch, settings, error):
    pipeline(monkeypatch, error)
    with pytest.raises(type(error)):
        demo.dp_embeddings(settings, DATE, lines)


@pytest.mark.parametrize("words,quality", [(demo.USEFUL_VOCABULARY - 1, "not useful at this size"),
                                           (demo.USEFUL_VOCABULARY, "not useful at this budget")])
def test_published_word_vectors_say_how_useful_they_are(monkeypatch, settings, words, quality):
    trained = SimpleNamespace(released_words=words, epsilon=4.0, delta=1e-5, adjacency="record", queries=words,
                              teachers=10)
    pipeline(monkeypatch, {"train_dped": trained})
    line = demo.dp_embeddings(settings, DATE, lines)
    assert line.startswith(f"published {words:,} word vector(s) under (4, 1e-05)-DP per record")
    assert f"; {quality}" in line


def test_a_gate_refusal_is_refused_with_its_reasons_and_the_override_only_when_asked(monkeypatch, settings):
    reasons = ["lstm found leakage: violation ratio 0.3 >= delta target 0.05 at eps 2 (a lower bound)"]
    pipeline(monkeypatch, PublishRefused("publish refused", reasons))
    overrides = []
    def override(stage, settings, **options):
        overrides.append((stage, options))
        return SimpleNamespace(rows=7)

    monkeypatch.setattr("privtext.stages.runner.run_stage", override)
    verdict = demo.nightly_export(settings, DATE, demo.PROJECT_ROOT, lines, show_refusal=False)
    assert verdict == {"published": False, "publish": None, "reasons": reasons} and overrides == []
    assert demo.verdict_lines(verdict, None, show_refusal=False) == [
        "export       REFUSED by its gate, nothing published. Why:", f"               - {reasons[0]}",
        "             (privtext demo --show-refusal shows the recorded override an operator could make)"]
    verdict = demo.nightly_export(settings, DATE, demo.PROJECT_ROOT, lines, show_refusal=True)
    assert [stage for stage, _ in overrides] == ["publish"] and overrides[0][1]["override_gate"] is True
    assert overrides[0][1]["reason"] == demo.OVERRIDE_REASON
    assert demo.verdict_lines(verdict, "3 of 3 spans replaced by look-alikes", show_refusal=True) == [
        "export       REFUSED by its gate, nothing published. Why:", f"               - {reasons[0]}",
        "override     --show-refusal published 7 rows anyway, recorded in the ledger",
        "spans        3 of 3 spans replaced by look-alikes"]


def test_an_export_over_budget_is_refused_without_an_override(monkeypatch, settings):
    pipeline(monkeypatch, BudgetExceeded("PERSON over mldp_eps_max"))
    monkeypatch.setattr("privtext.stages.runner.run_stage", lambda *a, **k: pytest.fail("no override over budget"))
    verdict = demo.nightly_export(settings, DATE, demo.PROJECT_ROOT, lines, show_refusal=True)
    assert verdict["published"] is False and verdict["publish"] is None
    assert verdict["reasons"] == ["PERSON over mldp_eps_max (each demo run is a new release of the same values; "
                                  "`make clean` starts over)"]


def test_a_published_export_says_published_then_its_spans(monkeypatch, settings):
    published = SimpleNamespace(rows=1000, export_dir=demo.PROJECT_ROOT / "exports" / "sanitized_documents")
    pipeline(monkeypatch, {"publish": published, "retune": [{"alpha": 1.0}]})
    verdict = demo.nightly_export(settings, DATE, demo.PROJECT_ROOT, lines, show_refusal=False)
    assert verdict == {"published": True, "publish": published, "reasons": [], "retune": [{"alpha": 1.0}]}
    assert demo.verdict_lines(verdict, "5 of 5 spans replaced by look-alikes", show_refusal=False) == [
        "export       PUBLISHED 1,000 sanitized messages -> exports/sanitized_documents",
        "gate         passed: leakage audit (its controls behaved), canary recall and budget",
        "spans        5 of 5 spans replaced by look-alikes"]


@pytest.mark.parametrize("refusal", [BudgetExceeded("r/p over r_over_p_max"), PublishRefused("no DP charge")],
                         ids=lambda r: type(r).__name__)
def test_a_refused_refresh_publishes_nothing(monkeypatch, settings, refusal):
    calls = []
    pipeline(monkeypatch, refusal, calls)
    assert demo.synthetic_refresh(settings, DATE, demo.PROJECT_ROOT, lines) == [f"nothing published: {refusal}"]
    assert calls == ["synthetic_refresh"]
