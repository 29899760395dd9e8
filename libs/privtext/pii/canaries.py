"""Canary documents: synthetic texts with known PII, mixed into every detect_pii batch to MEASURE recall.

Detection decides what the sanitizer replaces: a missed value is published verbatim, and no privacy
mechanism downstream can see it. Canaries turn that blind spot into a number every run: a fresh draw
(seeded from ``os.urandom``, or from the run seed when deterministic) of documents built from templates
and Faker generators unlike the sample corpus's, each value's exact offsets known. The stage detects
them with the same analyzer in the same Spark tasks as the real documents, scores them here, and drops
them: canary rows and spans are never written (they never reach published, SecPE, the audit or DPED).

Values are planted as people write them, not only in ASCII (``FORMS``): half of them as generated, the
other half in full width (NFKC folds it back), in another decimal digit system (Arabic-Indic, Devanagari,
...: every digit of the value, ``unicodedata.digit`` maps it back) or, for names, in another script (Faker's
own locales). A detector blind to a form loses that form's share of the overall recall, which the
publish gate (``publish.min_canary_recall``) reads.

Scores per gold type and per form (type-agnostic matching, which is what a sanitizer needs -- any detected
span covering a value gets it replaced): span recall (a detected span overlaps the value) and character
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

# Other forms of a value: the zero of each decimal digit system (its digits are zero..zero+9) ...
DIGIT_SYSTEMS = {"arabic-indic": 0x0660, "extended-arabic-indic": 0x06F0, "devanagari": 0x0966,
                 "bengali": 0x09E6, "thai": 0x0E50}
# ... and the Faker locale writing names in each script (given name and surname: no titles or patronymics)
NAME_SCRIPTS = {"cyrillic": "ru_RU", "greek": "el_GR", "arabic": "ar_AA", "hebrew": "he_IL",
                "devanagari": "hi_IN", "han": "zh_CN", "hangul": "ko_KR", "thai": "th_TH"}
DIGIT_TYPES = frozenset({"PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "DATE_TIME",
                         "STREET_ADDRESS", "ORDER_NUMBER", "CARD_LAST4"})  # values always holding digits
SCRIPT_TYPES = frozenset({"PERSON"})
FORMS = ("ascii", "fullwidth", *(f"digits:{d}" for d in DIGIT_SYSTEMS), *(f"script:{s}" for s in NAME_SCRIPTS))
ASCII_SHARE = 0.5  # of the values planted as generated; the rest split evenly over the type's other families

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
    forms: tuple[str, ...] = ()  # the form of each gold value (``FORMS``; empty: all "ascii")


def families(etype: str) -> list[list[str]]:
    """The forms a value of ``etype`` can be planted in besides ASCII, grouped by family."""
    out = [["fullwidth"]]
    if etype in DIGIT_TYPES:
        out.append([f"digits:{d}" for d in DIGIT_SYSTEMS])
    if etype in SCRIPT_TYPES:
        out.append([f"script:{s}" for s in NAME_SCRIPTS])
    return out


def fullwidth(text: str) -> str:
    """Printable ASCII in full width (U+FF01..FF5E, the space as U+3000); NFKC undoes it; others kept."""
    return "".join("\u3000" if c == " " else chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def in_digits(text: str, system: str) -> str:
    """Every ASCII digit of ``text`` as the same digit of ``system`` (``DIGIT_SYSTEMS``)."""
    zero = DIGIT_SYSTEMS[system]
    return "".join(chr(zero + ord(c) - 48) if "0" <= c <= "9" else c for c in text)


def _value(etype: str, form: str, fake: Faker, natives: dict[str, Faker]) -> str:
    if form.startswith("script:"):
        native = natives[form.split(":", 1)[1]]
        return f"{native.first_name()} {native.last_name().split(' (')[0]}"  # ar_AA: "name (clan)"
    value = str(GENERATORS[etype](fake))
    if form == "fullwidth":
        return fullwidth(value)
    if form.startswith("digits:"):
        return in_digits(value, form.split(":", 1)[1])
    return value


def make_canaries(entity_types, count: int, seed: int | None = None) -> list[Canary]:
    """``count`` canary documents, each with three values of the configured types that have a generator,
    each value in a form drawn as ``ASCII_SHARE`` says; ``seed`` None draws from ``os.urandom`` (a fresh set
    every run)."""
    types = [t for t in entity_types if t in GENERATORS]
    if not types or count <= 0:
        return []
    seed = int.from_bytes(os.urandom(8), "little") if seed is None else seed
    rng = random.Random(seed)
    fake = Faker("en_US")
    fake.seed_instance(seed)
    natives = {}
    for script, locale in NAME_SCRIPTS.items():
        natives[script] = Faker(locale)
        natives[script].seed_instance(seed)
    out = []
    for i in range(count):
        text, gold, forms = "", [], []
        for j in range(3):
            etype = types[(i * 3 + j) % len(types)]
            form = "ascii" if rng.random() < ASCII_SHARE else rng.choice(rng.choice(families(etype)))
            value = _value(etype, form, fake, natives)
            before, after = rng.choice(TEMPLATES[etype]).split("{}")
            text += ("" if not text else " ") + before
            gold.append((len(text), len(text) + len(value), etype))
            forms.append(form)
            text += value + after
        out.append(Canary(f"canary-{seed:016x}-{i:04d}", text, tuple(gold), tuple(forms)))
    return out


def score(canaries: list[Canary], detected: dict[str, list[tuple[int, int]]]) -> dict:
    """Recall and character coverage of ``detected`` spans per doc_id: overall, per gold type (every form
    of it), and per form (``by_form``: each form's figures and its ``by_type``)."""
    per_type: dict[str, list[int]] = {}
    per_form: dict[str, dict[str, list[int]]] = {}
    for canary in canaries:
        spans = detected.get(canary.doc_id, [])
        for (start, end, etype), form in zip(canary.gold, canary.forms or ("ascii",) * len(canary.gold)):
            covered = sum(1 for c in range(start, end) if any(s <= c < e for s, e in spans))
            hit = any(s < end and start < e for s, e in spans)
            for stats in (per_type.setdefault(etype, [0, 0, 0, 0]),
                          per_form.setdefault(form, {}).setdefault(etype, [0, 0, 0, 0])):
                stats[0] += 1  # values, hits, chars, covered chars
                stats[1] += hit
                stats[2] += end - start
                stats[3] += covered
    return {**_figures(per_type),
            "by_form": {f: {**_figures(t)["overall"], "by_type": _figures(t)["by_type"]}
                        for f, t in sorted(per_form.items())}}


def _figures(per_type: dict[str, list[int]]) -> dict:
    totals = [sum(v[k] for v in per_type.values()) for k in range(4)]
    as_dict = lambda v: {"values": v[0], "recall": v[1] / v[0], "coverage": v[3] / v[2]}  # noqa: E731
    return {"overall": as_dict(totals) if totals[0] else {"values": 0, "recall": 0.0, "coverage": 0.0},
            "by_type": {t: as_dict(v) for t, v in sorted(per_type.items())}}
