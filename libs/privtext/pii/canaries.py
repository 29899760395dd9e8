"""Canary documents: synthetic texts with known PII, mixed into every detect_pii batch to MEASURE recall.

Detection decides what the sanitizer replaces: a missed value is published verbatim, and no privacy
mechanism downstream can see it. Canaries turn that blind spot into a number every run: a fresh draw
(seeded from ``os.urandom``, or from the run seed when deterministic) of documents built from templates
and Faker generators unlike the sample corpus's, each value's exact offsets known. The stage detects
them with the same analyzer in the same Spark tasks as the real documents, scores them here, and drops
them: canary rows and spans are never written (they never reach published, SecPE, the audit or DPED).

Scores per gold type (type-agnostic matching, which is what a sanitizer needs -- any detected span
covering a value gets it replaced): span recall (a detected span overlaps the value) and character
coverage (share of the value's characters inside detected spans). Canaries carry only synthetic values.
"""
from __future__ import annotations

import datetime as dt
import os
import random
from dataclasses import dataclass

from faker import Faker

# (entity type, Faker generator); values are synthetic, formats as a US support desk sees them
GENERATORS = {
    "PERSON": lambda f: f.name(),
    "EMAIL_ADDRESS": lambda f: f.free_email(),
    "PHONE_NUMBER": lambda f: f.phone_number(),
    "CREDIT_CARD": lambda f: f.credit_card_number(),
    "IBAN_CODE": lambda f: f.iban(),
    "US_SSN": lambda f: f.ssn(),
    "IP_ADDRESS": lambda f: f.ipv4_public(),
    "URL": lambda f: f.url(),
    "LOCATION": lambda f: f.city(),
    "ORGANIZATION": lambda f: f.company(),
    "DATE_TIME": lambda f: f.date_between_dates(*_RANGE).strftime(f.random_element(_DATE_FORMATS)),
    "STREET_ADDRESS": lambda f: f.address().replace("\n", ", "),
    "ORDER_NUMBER": lambda f: f"#{f.random_int(10000, 99999999)}",
    "CARD_LAST4": lambda f: f"{f.random_int(0, 9999):04d}",
}
_DATE_FORMATS = ("%B %d, %Y", "%d %B %Y", "%m/%d/%Y", "%Y-%m-%d")
_RANGE = (dt.date(1940, 1, 1), dt.date(2030, 12, 31))

# Sentences unlike the sample corpus's support messages: each names the slot it fills.
TEMPLATES = {
    "PERSON": ("Forwarded on behalf of {} from the night shift.", "Note from the caller, who gave the name {}."),
    "EMAIL_ADDRESS": ("Replies should go to {} and not to the shared inbox.", "The portal still lists {} as contact."),
    "PHONE_NUMBER": ("The best number to reach them is {} after six.", "A voicemail was left on {} yesterday."),
    "CREDIT_CARD": ("The statement shows the card number {} twice.", "Payment attempted with {} failed."),
    "IBAN_CODE": ("Refunds are to be wired to IBAN {} only.", "The mandate references account {}."),
    "US_SSN": ("For the tax form the social security number is {}.", "SSN on file: {}."),
    "IP_ADDRESS": ("The suspicious login came from {} at night.", "Firewall logs show requests from {}."),
    "URL": ("The broken link is {} on the help page.", "They pasted {} into the chat."),
    "LOCATION": ("The warehouse in {} sent the wrong pallet.", "The customer is relocating to {} next month."),
    "ORGANIZATION": ("The contract with {} was renewed.", "An invoice issued by {} is disputed."),
    "DATE_TIME": ("The first complaint is dated {}.", "Service resumed on {} according to the log."),
    "STREET_ADDRESS": ("Returns go back to {} as printed on the label.", "The technician visited {} twice."),
    "ORDER_NUMBER": ("Escalated under ticket {} by the supervisor.", "Reship everything from order {} please."),
    "CARD_LAST4": ("The card ending in {} was blocked by the bank.", "Charge it to the card ending in {} instead."),
}


@dataclass(frozen=True)
class Canary:
    doc_id: str
    text: str
    gold: tuple[tuple[int, int, str], ...]  # (start, end, entity type)


def make_canaries(entity_types, count: int, seed: int | None = None) -> list[Canary]:
    """``count`` canary documents, each with three values of the configured types that have a generator;
    ``seed`` None draws from ``os.urandom`` (a fresh set every run)."""
    types = [t for t in entity_types if t in GENERATORS]
    if not types or count <= 0:
        return []
    seed = int.from_bytes(os.urandom(8), "little") if seed is None else seed
    rng = random.Random(seed)
    fake = Faker("en_US")
    fake.seed_instance(seed)
    out = []
    for i in range(count):
        text, gold = "", []
        for j in range(3):
            etype = types[(i * 3 + j) % len(types)]
            value = str(GENERATORS[etype](fake))
            before, after = rng.choice(TEMPLATES[etype]).split("{}")
            text += ("" if not text else " ") + before
            gold.append((len(text), len(text) + len(value), etype))
            text += value + after
        out.append(Canary(f"canary-{seed:016x}-{i:04d}", text, tuple(gold)))
    return out


def score(canaries: list[Canary], detected: dict[str, list[tuple[int, int]]]) -> dict:
    """Recall and character coverage per gold type (and overall) of ``detected`` spans per doc_id."""
    per_type: dict[str, list[float]] = {}
    for canary in canaries:
        spans = detected.get(canary.doc_id, [])
        for start, end, etype in canary.gold:
            covered = sum(1 for c in range(start, end) if any(s <= c < e for s, e in spans))
            hit = any(s < end and start < e for s, e in spans)
            stats = per_type.setdefault(etype, [0, 0, 0, 0])  # values, hits, chars, covered chars
            stats[0] += 1
            stats[1] += hit
            stats[2] += end - start
            stats[3] += covered
    totals = [sum(v[k] for v in per_type.values()) for k in range(4)]
    as_dict = lambda v: {"values": v[0], "recall": v[1] / v[0], "coverage": v[3] / v[2]}  # noqa: E731
    return {"overall": as_dict(totals) if totals[0] else {"values": 0, "recall": 0.0, "coverage": 0.0},
            "by_type": {t: as_dict(v) for t, v in sorted(per_type.items())}}
