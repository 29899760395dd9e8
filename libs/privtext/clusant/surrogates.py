"""Which spans a sanitize night leaves as written (allow-list) and how it draws the rest (consistent surrogates).

**Allow-list** (``clusant.allow_list``): values the data team declares public (its own domains, list
addresses, product names). A merged span is left as written, and charged nothing, when its text after
Unicode NFC equals an entry exactly. NFC is canonical equivalence only (the same characters in another
encoding, e.g. "e" + combining acute and the precomposed letter); nothing else is normalised: no case
folding ("Acme-Users" is not "acme-users"; a reader cannot tell a case variant is public), no NFKC
(full-width or ligature forms), no confusables (a Cyrillic "а" in "pаypal.com"), no whitespace or
punctuation trimming, no substring or superstring match (a span that merely holds an entry is private).
Whatever is not exactly listed is treated as private, so a look-alike of a public value is replaced.

**Consistent surrogates** (``clusant.surrogate_epoch_days`` = E): time is cut into public epochs of E
days (epoch = the date's proleptic ordinal // E, the same for every dataset). Within an epoch each
distinct value (per entity type: the ``pii.hashing.normalize_value`` key the ledger's secret_id hashes)
gets ONE draw of its type's mechanism, reused for every occurrence in every document of every night of
the epoch (each occurrence written in its own surface format: post-processing). The draw's randomness is
ChaCha20 keyed by HMAC-SHA256(draw key, type, value key), the draw key by HMAC of the lakehouse's secret
key with the epoch and the mechanism's fingerprint (``draw_key``): any worker, batch, night or rerun of
the epoch reproduces it, and only a holder of the secret key can. A rerun therefore releases nothing new.
Guarantee: per (type, value) and epoch, one eps_T-metric-LDP draw (CluSanT Thm. 5) for the adjacency
"the value x replaced by x' in ALL its occurrences of the epoch". Disclosed exactly, like the type and
format: which spans hold the same value within the epoch (equal surrogates -- up to collisions -- mean
equal originals), hence each value's occurrence count and co-occurrences. Not protected: one occurrence
against the others (x -> x' at a single position changes whether that span's surrogate equals the
rest's; the ratio is unbounded). ``docs/privacy-model.md`` states the argument and its test.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import unicodedata
from collections.abc import Iterable

import numpy as np
from randomgen import ChaCha

NORMALIZATION = "NFC"


def allow_form(text: str) -> str:
    """The only normalisation before an allow-list comparison: canonical equivalence (NFC)."""
    return unicodedata.normalize(NORMALIZATION, text)


class AllowList:
    """The configured public values; ``text in allow`` is an exact match after ``allow_form``."""

    def __init__(self, values: Iterable[str] = ()):
        self.entries = tuple(sorted({allow_form(v) for v in values}))
        self._set = frozenset(self.entries)

    def __contains__(self, text: str) -> bool:
        return bool(self._set) and allow_form(text) in self._set

    def __len__(self) -> int:
        return len(self.entries)


def epoch_of(day: dt.date, days: int) -> int:
    """The public draw epoch of a data date: ordinal // E (E >= 1 days)."""
    return day.toordinal() // int(days)


def epoch_dates(epoch: int, days: int) -> tuple[dt.date, dt.date]:
    """First and last date of an epoch."""
    return dt.date.fromordinal(max(1, epoch * days)), dt.date.fromordinal(epoch * days + days - 1)


def draw_key(secret: bytes, epoch: int, fingerprint: str) -> bytes:
    """The epoch's draw key: HMAC-SHA256(secret key, epoch, mechanism fingerprint)."""
    return hmac.new(secret, f"privtext.surrogate\x00{int(epoch)}\x00{fingerprint}".encode(), hashlib.sha256).digest()


def draw_id(epoch: int, fingerprint: str) -> str:
    """A public name of one epoch's draws under one mechanism (the ledger records it; no key material)."""
    return f"{int(epoch)}:{hashlib.sha256(fingerprint.encode()).hexdigest()[:16]}"


def value_rng(key: bytes, entity_type: str, value_key: str) -> np.random.Generator:
    """The value's own generator: ChaCha20 keyed by HMAC-SHA256(draw key, type, value key)."""
    seed = hmac.new(key, f"{entity_type}\x00{value_key}".encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    return np.random.Generator(ChaCha(key=int.from_bytes(seed, "little"), rounds=20))
