"""Keyed secret ids and the key loader's refusal rules."""
import pytest

from privtext.pii.hashing import DETERMINISTIC_TEST_KEY, MissingKeyError, load_hmac_key, normalize_value, secret_id

KEY = b"0123456789abcdef-test-key"


def test_secret_id_stable_keyed_and_hex():
    a = secret_id(KEY, "alice@example.com")
    assert a == secret_id(KEY, "alice@example.com")
    assert a != secret_id(KEY + b"!", "alice@example.com")
    assert a != secret_id(KEY, "bob@example.com")
    assert len(a) == 64 and int(a, 16) >= 0


def test_normalization_merges_spellings_of_one_value():
    assert normalize_value("CREDIT_CARD", "4539 1488-0343 6467") == normalize_value("CREDIT_CARD", "4539148803436467")
    assert normalize_value("PHONE_NUMBER", "(617) 555-0143") == "6175550143"
    assert normalize_value("PERSON", "  Jonathan\n Whitaker, ") == "jonathan whitaker"
    assert normalize_value("PERSON", "Jonathan Whitaker") != normalize_value("PERSON", "Jonathan Whitake")


def test_refuses_without_key_unless_deterministic(monkeypatch):
    monkeypatch.delenv("PRIVTEXT_TEST_HMAC", raising=False)
    with pytest.raises(MissingKeyError, match="PRIVTEXT_TEST_HMAC"):
        load_hmac_key("PRIVTEXT_TEST_HMAC", None, deterministic=False)
    assert load_hmac_key("PRIVTEXT_TEST_HMAC", None, deterministic=True) == DETERMINISTIC_TEST_KEY


def test_key_from_env_or_file_file_first(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVTEXT_TEST_HMAC", "env-key-with-enough-bytes")
    assert load_hmac_key("PRIVTEXT_TEST_HMAC", None, deterministic=False) == b"env-key-with-enough-bytes"
    # an explicit key wins over the deterministic test key
    assert load_hmac_key("PRIVTEXT_TEST_HMAC", None, deterministic=True) == b"env-key-with-enough-bytes"
    key_file = tmp_path / "hmac.key"
    key_file.write_bytes(b"file-key-with-enough-bytes\n")
    assert load_hmac_key("PRIVTEXT_TEST_HMAC", str(key_file), deterministic=False) == b"file-key-with-enough-bytes"
    with pytest.raises(MissingKeyError, match="does not exist"):
        load_hmac_key("PRIVTEXT_TEST_HMAC", str(tmp_path / "missing.key"), deterministic=True)


def test_short_key_refused_without_echoing_it(monkeypatch):
    monkeypatch.setenv("PRIVTEXT_TEST_HMAC", "tiny-key")
    with pytest.raises(MissingKeyError) as error:
        load_hmac_key("PRIVTEXT_TEST_HMAC", None, deterministic=False)
    assert "tiny-key" not in str(error.value)
