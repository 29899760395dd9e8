"""The verdict tells the truth about masking: the staged rows' masking summary (``clusant.masking``) reaches the
manifest, the report's card and guarantee, in figures and in words (share masked as [TYPE], which types, why)."""
import json

import pytest

from privtext.clusant import masking
from privtext.report import _card, _guarantee
from privtext.stages import publish


def _params(spans, replaced, masked, allowed):
    return json.dumps({"k": 4.0, "masking": masking.summary(spans, replaced, masked, allowed, 3)})


def test_the_summary_combines_runs_and_says_the_share_the_types_and_why():
    combined = masking.from_params([_params(100, 80, {"US_PASSPORT": 12}, 8),
                                    _params(50, 40, {"NRP": 6, "US_PASSPORT": 1}, 3),
                                    "{}", "not json"])
    assert combined["spans"] == 150 and combined["masked"] == 19 and combined["allowed"] == 11
    assert combined["masked_share"] == pytest.approx(19 / 150)
    assert combined["masked_types"] == {"NRP": 6, "US_PASSPORT": 13}
    words = masking.words(combined)
    assert "19 (12.7%) masked as [TYPE] (NRP 6, US_PASSPORT 13)" in words and masking.WHY_MASKED in words
    assert "clusant.allow_list" in words and "11 (7.3%) left as written" in words
    nothing = masking.summary(40, 40, {}, 0, 0)
    assert masking.words(nothing) == "40 of 40 spans replaced by look-alikes; 0 (0.0%) masked as [TYPE]"
    assert masking.from_params(["{}"]) is None and "not recorded" in masking.words(None)


def test_the_manifest_carries_the_masking_of_a_sanitized_export_only():
    summary = [{"method": "clusant", "params": _params(100, 70, {"PERSON": 30}, 0), "run_id": "s1"}]
    m = publish.build_manifest("sanitized_documents", "2026-01-15", "pub", "v1", [], "parquet", summary, [], "passed",
                               None, "published.sanitized_documents", 4)
    assert m["masking"]["masked_share"] == pytest.approx(0.3) and m["masking"]["masked_types"] == {"PERSON": 30}
    assert "30 (30.0%) masked as [TYPE] (PERSON 30)" in m["masking"]["in_words"]
    other = publish.build_manifest("synthetic_documents", "2026-01-15", "pub", "v1", [], "parquet",
                                   [{"method": "secpe", "params": "{}", "run_id": "s"}], [], "ledger_charged", None,
                                   "t", 1)
    assert other["masking"] is None


def test_the_card_and_the_guarantee_name_what_was_masked_and_left():
    charge = {"guarantee": "mldp", "spend": {"epsilon": 2.0, "pure_epsilon": 5.0}, "created_at": 1,
              "params": {"entity_type": "PERSON", "draw": "1:x", "surrogate_epoch_days": 30}, "mechanism": "clusant"}
    spans = masking.summary(200, 150, {"US_PASSPORT": 40}, 10, 2)
    text = _guarantee("sanitized export", [charge], spans)
    assert text.startswith("Detected values are replaced") and "one draw per value per epoch" in text
    assert "20.0% of the spans (US_PASSPORT) are not replaced but masked as [TYPE]" in text
    assert "5.0% are left as written" in text
    assert _guarantee("sanitized export", [charge],
                      masking.summary(10, 10, {}, 0, 0)).startswith("Every detected value")
    card = _card({"product": "sanitized export", "state": "published", "rows": 3, "reasons": [], "guarantee": text,
                  "not_covered": [], "masking": masking.words(spans)})
    assert "<b>Spans.</b>" in card and "masked as [TYPE] (US_PASSPORT 40)" in card


def test_types_the_detection_run_left_out_are_named_in_every_verdict():
    """Issue 46: a configuration without PHONE_NUMBER published phones verbatim with the gate passing. The
    summary names the types left out (from the detection run's ``pii.entities``), in figures and in words, in
    the manifest too; runs staged before the field existed combine as naming none."""
    off = json.dumps({"masking": masking.summary(100, 100, {}, 0, 0, ["URL", "PHONE_NUMBER", "URL"])})
    old = _params(50, 50, {}, 0)
    combined = masking.from_params([off, old])
    assert combined["not_detected"] == ["PHONE_NUMBER", "URL"]
    words = masking.words(combined)
    assert "pii.entities leaves out PHONE_NUMBER, URL" in words and "written as they are" in words
    assert "leaves out" not in masking.words(masking.from_params([old]))
    assert "leaves out PHONE_NUMBER" in masking.words(masking.summary(0, 0, {}, 0, 0, ["PHONE_NUMBER"]))
    summary = [{"method": "clusant", "params": off, "run_id": "s1"}]
    m = publish.build_manifest("sanitized_documents", "2026-01-15", "pub", "v1", [], "parquet", summary, [], "passed",
                               None, "published.sanitized_documents", 4)
    assert m["masking"]["not_detected"] == ["PHONE_NUMBER", "URL"] and "PHONE_NUMBER" in m["masking"]["in_words"]
