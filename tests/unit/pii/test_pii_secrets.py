"""The three secret definitions: random words near the 20% quantile, user lists, detected PII."""
import pandas as pd
import pytest

from privtext.pii.detect import SPAN_COLUMNS
from privtext.pii.hashing import DETERMINISTIC_TEST_KEY, normalize_value, secret_id
from privtext.pii.secrets import TermMatcher, WordMatcher, doc_frequencies, secrets_frame, select_random_words, word_set
from privtext.pii.settings import PiiSettings, UserTermSettings


def test_doc_frequencies_count_documents_not_tokens():
    df = doc_frequencies(["the cat and the hat", "The dog", "don't stop"])
    assert df["the"] == 2 and df["cat"] == 1 and df["don't"] == 1
    assert word_set("Über 42 x_y") == {"über", "x", "y"}


def test_random_words_sit_at_the_20_percent_quantile():
    # word k has doc frequency 1000 - k: rank k in the most-frequent-first order
    doc_freq = {f"word{k:04d}": 1000 - k for k in range(1000)}
    chosen = select_random_words(doc_freq, quantile=0.2, n_words=11)
    ranks = sorted(int(w[4:]) for w in chosen)
    assert len(chosen) == 11 and ranks == list(range(ranks[0], ranks[0] + 11))
    centre = 0.2 * 999
    assert all(abs(r - centre) <= 5.5 for r in ranks)  # 11 consecutive ranks centred on 199.8
    assert select_random_words(doc_freq, 0.0, 3) == ["word0000", "word0001", "word0002"]
    assert select_random_words(doc_freq, 1.0, 2) == ["word0998", "word0999"]


def test_random_words_ties_broken_deterministically_and_short_words_dropped():
    doc_freq = {"zeta": 5, "alpha": 5, "beta": 5, "ox": 50, "gamma": 1}
    assert select_random_words(doc_freq, 0.0, 2, min_chars=3) == ["alpha", "beta"]
    assert select_random_words({}, 0.2, 5) == []


def test_word_matcher_uses_the_counting_tokenizer():
    text = "Don't forget: the Falcon lands; falconry is different."
    spans = WordMatcher(["falcon", "don't"], "RANDOM_WORD", "PII").find(text)
    assert [(text[s.start:s.end], s.value) for s in spans] == [("Don't", "don't"), ("Falcon", "falcon")]


def test_term_matcher_terms_whole_words_and_patterns():
    matcher = TermMatcher([
        UserTermSettings(term="Project Kestrel", entity_type="CODENAME", tier="PoII"),
        UserTermSettings(term="Kes", entity_type="CODENAME", tier="PoII"),
        UserTermSettings(pattern=r"\bCASE-\d{4}\b", entity_type="CASE_ID", tier="PII"),
    ])
    text = "PROJECT KESTREL and case CASE-0042; Kestrels are birds, Kes is a film."
    found = [(s.entity_type, text[s.start:s.end], s.tier) for s in matcher.find(text)]
    assert found == [("CODENAME", "PROJECT KESTREL", "PoII"), ("CASE_ID", "CASE-0042", "PII"),
                     ("CODENAME", "Kes", "PoII")]


def test_secrets_frame_random_words_mode():
    settings = PiiSettings(secrets={"mode": "random_words", "random_words": {"n_words": 1}})
    frame = pd.DataFrame({"doc_id": [1, 2, 3], "text": ["red apple", "Green apple", "blue sky"]})
    out = secrets_frame(frame, settings, DETERMINISTIC_TEST_KEY, random_words=["apple"])
    assert list(out.columns) == SPAN_COLUMNS
    assert list(out["doc_id"]) == [1, 2] and set(out["entity_type"]) == {"RANDOM_WORD"}
    assert set(out["secret_id"]) == {secret_id(DETERMINISTIC_TEST_KEY, "apple")}
    with pytest.raises(ValueError, match="chosen words"):
        secrets_frame(frame, settings, DETERMINISTIC_TEST_KEY)


def test_secrets_frame_user_list_mode_hides_values():
    settings = PiiSettings(secrets={"mode": "user_list", "user_list": [
        {"term": "Bluefin", "entity_type": "CODENAME", "tier": "PoII"},
        {"pattern": r"\b\d{3}-\d{2}-\d{4}\b", "entity_type": "US_SSN"}]})
    frame = pd.DataFrame({"doc_id": ["a", "b"], "text": ["bluefin ships 536-22-8756", "nothing here"]})
    out = secrets_frame(frame, settings, DETERMINISTIC_TEST_KEY)
    assert list(out["entity_type"]) == ["CODENAME", "US_SSN"] and list(out["tier"]) == ["PoII", "PII"]
    assert out["secret_id"].iloc[1] == secret_id(DETERMINISTIC_TEST_KEY, normalize_value("US_SSN", "536228756"))
    dump = out.to_csv().lower()
    assert "bluefin" not in dump and "536-22-8756" not in dump and "536228756" not in dump


def test_settings_validation():
    with pytest.raises(ValueError, match="user_list"):
        PiiSettings(secrets={"mode": "user_list"})
    with pytest.raises(ValueError, match="without a tier"):
        PiiSettings(entities=["PERSON", "PASSPORT"])
    with pytest.raises(ValueError, match="deny_list or patterns"):
        PiiSettings(custom_recognizers=[{"name": "X_ID", "tier": "PII"}])
    with pytest.raises(ValueError, match="contradicts"):
        PiiSettings(custom_recognizers=[{"name": "PERSON", "tier": "PoII", "deny_list": ["x"]}])
    with pytest.raises(ValueError):
        PiiSettings(unknown_key=1)
