"""Scoring rules of privtext.pii.evaluate on hand-made cases, and the tuned recognizers."""
from __future__ import annotations

import pytest

from privtext.pii.evaluate import IGNORED, Document, evaluate, read_conll, score


def test_read_conll_offsets_and_type_mapping(tmp_path):
    conll = tmp_path / "t.conll"
    conll.write_text("Hi\tO\nJohn\tB-person\nSmith\tI-person\nin\tO\nNew\tB-geo-loc\nYork\tI-geo-loc\n"
                     "at\tO\nStarbucks\tB-company\n#movie\tB-movie\n\nok\tO\n", encoding="utf-8")
    docs = read_conll(conll)
    assert len(docs) == 2
    text = docs[0].text
    by_type = {t: text[s:e] for t, s, e in docs[0].gold}
    assert by_type == {"PERSON": "John Smith", "LOCATION": "New York", "ORGANIZATION": "Starbucks", IGNORED: "#movie"}
    assert docs[1].gold == frozenset()


def test_exact_overlap_any_type_and_dont_care():
    doc = Document("x" * 40, frozenset({("PERSON", 0, 10), ("LOCATION", 20, 28), (IGNORED, 30, 36)}))
    pred = [{("PERSON", 0, 4),          # overlaps the person, not exact
             ("ORGANIZATION", 20, 28),  # right span, wrong type
             ("ORGANIZATION", 31, 33),  # inside a don't-care span: not counted
             ("PERSON", 12, 15)}]       # a false positive
    exact = score([doc], pred, "PERSON", "exact")
    overlap = score([doc], pred, "PERSON", "overlap")
    assert (exact.true_positives, exact.predicted, exact.gold) == (0, 2, 1)
    assert (overlap.true_positives, overlap.predicted, overlap.gold) == (1, 2, 1)
    org = score([doc], pred, "ORGANIZATION", "overlap")
    assert (org.true_positives, org.predicted, org.gold) == (0, 1, 0)
    untyped = score([doc], pred, "micro", "any_type")
    assert (untyped.true_positives, untyped.predicted, untyped.gold) == (2, 3, 2)
    assert untyped.recall == 1.0 and untyped.precision == pytest.approx(2 / 3)


def test_tuned_recognizers_find_handles_and_census_names():
    from privtext.pii.detect import detect_spans, get_analyzer
    from tests_support import rules_only

    tuned, plain = rules_only(), rules_only(custom_recognizers=[], census_first_names=0)
    text = "thx @bob_99 !! talked to Mary Watson about it"
    found = {(s.entity_type, text[s.start:s.end]) for s in detect_spans(get_analyzer(tuned), text, tuned)}
    assert ("USERNAME", "@bob_99") in found and ("PERSON", "Mary Watson") in found
    scores = {s.entity_type: s for s in evaluate([Document(text, frozenset({("PERSON", 25, 36)}))], tuned)
              if s.rule == "exact"}
    assert scores["PERSON"].recall == 1.0
    plain_found = {s.entity_type for s in detect_spans(get_analyzer(plain), text, plain)}
    assert "USERNAME" not in plain_found
