"""Keyed secret ids: HMAC-SHA256 of a secret's normalized value, so no table ever holds raw values.

The id is a pseudonym, not an anonymization: anyone with the key can test a guessed value. The key
therefore never comes from config files under version control, only from an environment variable or a
secret file, and a run refuses to start without one unless ``run.deterministic`` (tests) is set.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import unicodedata
from pathlib import Path

from privtext.errors import PrivtextError

MIN_KEY_BYTES = 16
DETERMINISTIC_TEST_KEY = b"privtext-deterministic-test-key-not-secret"

# Types whose value is a code: separators ("4111-1111 ...", "+1 (555) ...") do not change the secret.
_CODE_TYPES = frozenset({"CREDIT_CARD", "IBAN_CODE", "PHONE_NUMBER", "US_SSN"})
_SPACES = re.compile(r"\s+")
_EDGE_PUNCT = " \t\n\"'`.,;:!?()[]{}<>"


class MissingKeyError(PrivtextError, RuntimeError):
    """No HMAC key was configured and the run is not deterministic."""


def load_hmac_key(hmac_key_env: str = "PRIVTEXT_HMAC_KEY", hmac_key_file: str | None = None,
                  deterministic: bool = False) -> bytes:
    """The key from ``hmac_key_file`` (if named) else the environment variable ``hmac_key_env``.

    With neither set, a fixed, public test key is returned only when ``deterministic``; otherwise the
    run stops. Keys shorter than 16 bytes are refused. Errors never include key material.
    """
    key: bytes | None = None
    if hmac_key_file:
        path = Path(hmac_key_file)
        if not path.is_file():
            raise MissingKeyError(f"HMAC key file {path} (run.hmac_key_file) does not exist")
        key = path.read_bytes().strip()
    elif os.environ.get(hmac_key_env):
        key = os.environ[hmac_key_env].strip().encode()
    if not key:
        if deterministic:
            return DETERMINISTIC_TEST_KEY
        raise MissingKeyError(
            f"no HMAC key: set the environment variable {hmac_key_env} (run.hmac_key_env) or "
            f"run.hmac_key_file to a secret of at least {MIN_KEY_BYTES} bytes (e.g. openssl rand -hex 32); "
            "only run.deterministic test runs may go without one")
    if len(key) < MIN_KEY_BYTES:
        raise MissingKeyError(f"HMAC key is shorter than {MIN_KEY_BYTES} bytes (e.g. openssl rand -hex 32 gives 64)")
    return key


def normalize_value(entity_type: str, raw: str) -> str:
    """Canonical form of a secret value: NFKC, case-folded, whitespace collapsed, edge punctuation
    stripped; for code-like types (card, IBAN, phone, SSN) only letters and digits are kept."""
    text = unicodedata.normalize("NFKC", raw).casefold()
    if entity_type in _CODE_TYPES:
        return "".join(ch for ch in text if ch.isalnum())
    return _SPACES.sub(" ", text).strip(_EDGE_PUNCT)


def doc_pseudonym(key: bytes, doc_id: str) -> str:
    """The published doc_id: HMAC-SHA256 (32 hex) of the restricted doc_id, whatever the input supplied
    (an e-mail address stays in restricted). Only a holder of the key and ``restricted.documents`` can map
    it back; the domain prefix keeps it apart from secret ids."""
    message = b"privtext.published.doc_id\x00" + doc_id.encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:32]


def subject_key(key: bytes, kind: str, subject_id: str) -> str:
    """The id an erasure records for a ``user`` or ``doc`` subject: HMAC-SHA256 (32 hex) of the id, under a
    domain of its own (never equal to a published pseudonym or a secret id). Ingest recomputes it for each
    record to find tombstoned subjects; without the key it names no one."""
    message = f"privtext.erasure.{kind}\x00".encode() + subject_id.encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:32]


def secret_id(key: bytes, normalized_value: str) -> str:
    """Hex HMAC-SHA256 of the normalized value (the entity type is not hashed: the same string
    detected as two types is one secret)."""
    return hmac.new(key, normalized_value.encode("utf-8"), hashlib.sha256).hexdigest()
