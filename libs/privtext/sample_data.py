"""Reproducible sample corpora: customer-support messages with labels, users and planted PII.

Every value is synthetic (Faker, seeded); the corpus stands in for private text in the demo and the
tests. About a third of the messages carry no PII at all (SecPE's public part); the rest carry
names, emails, phones, addresses, card numbers, IBANs, dates and companies.

Two corpora (``generate(corpus=...)``): ``email`` (the export's: US values, ``TEMPLATES``) and ``chat``
(the demo's synthetic refresh: live-chat messages, ``CHAT_TEMPLATES``, same labels). Their secret values
(the PII tier: names, e-mails, phones, cards, IBANs, addresses, order numbers, IPs) come from disjoint
pools: Italian Faker values, e-mails on their own domain, +39 phones, 7-digit order numbers (the email
corpus: 6 digits), so no value of one is a value of the other (checked for the demo's samples in
tests/unit/test_sample_data.py; the ledger refuses a refresh whose secret was already spent).
"""
from __future__ import annotations

import json
import random
import string
from pathlib import Path

from faker import Faker

LABELS = ("billing", "delivery", "account", "product")

TEMPLATES = {
    "billing": [
        "Hi, I was charged twice for order {order}. My card {card} shows two payments on {date}. "
        "Please refund one. {name}",
        "Please update my billing details: IBAN {iban}, account holder {name}. Thanks!",
        "The invoice from {company} is wrong, the total should be lower. Contact me at {email}.",
        "Why did my subscription price go up this month? I never agreed to that.",
        "I want a refund for the last payment, the service was down for a week.",
        "My card ending in {card_tail} was declined although it has funds. Call me on {phone}.",
    ],
    "delivery": [
        "My parcel was supposed to arrive on {date} but it never came. Address: {address}. {name}",
        "The courier left the package at the wrong door, please send it to {address}.",
        "Tracking has said 'in transit' for ten days. Is the package lost?",
        "Delivery was fast and the box was intact, great job.",
        "Can you deliver to my office at {company} instead? Ask for {name} at reception, phone {phone}.",
        "The package arrived damaged and two items were missing.",
    ],
    "account": [
        "I can't log in since the update. My username is {email}, please reset my password.",
        "Please delete my account and all my data. Name: {name}, born {dob}.",
        "Someone from {ip} logged into my account, I did not do that! Call {phone} urgently.",
        "How do I change the email on my account? The old one is {email}.",
        "The two-factor code never arrives by SMS.",
        "I would like to merge my two accounts into one.",
    ],
    "product": [
        "The blender stopped working after two weeks, really disappointed.",
        "I love the new headphones, the sound is excellent and the battery lasts for days.",
        "The size chart is misleading, the shoes are a full size too small.",
        "My colleague {name} at {company} recommended this laptop and she was right, it is fast.",
        "Is the coffee machine compatible with the pods sold in {city}?",
        "Great quality for the price, I will buy again.",
    ],
}


CHAT_TEMPLATES = {
    "billing": [
        "hello, there are two charges for {order} on my card {card}, can one be reversed? {name}",
        "pls send the refund to IBAN {iban}, holder {name}",
        "your invoice lists an item I returned, write to me at {email}",
        "why is there a fee on the last statement, nobody told me about it",
        "can I pay the rest in two parts instead of one?",
        "the discount code was not applied at checkout, I paid full price",
    ],
    "delivery": [
        "hi, courier says delivered but nothing here at {address}, can you check? {name}",
        "please reroute my parcel {order} to {address}",
        "how long does shipping take to the islands?",
        "package came a day early, thanks a lot",
        "I'm {name}, my number is {phone}, the driver can call before coming",
        "the box was open when it arrived and the charger is missing",
    ],
    "account": [
        "locked out after three wrong passwords, my login is {email}",
        "please close my profile, I'm {name} and I don't use it anymore",
        "there was a login from {ip} that wasn't me, call me at {phone}",
        "I want my newsletter emails to go to {email} from now on",
        "the app keeps logging me out every few minutes",
        "how do I turn on notifications for my orders?",
    ],
    "product": [
        "the kettle leaks from the bottom after a month",
        "really happy with the jacket, warm and light",
        "the manual is missing from the box, is there a pdf?",
        "{name} told me your printer works with any paper, is that true?",
        "does the lamp come with a bulb or do I buy it separately?",
        "the colour looks different from the photos on the site",
    ],
}
CORPORA = {"email": (TEMPLATES, "en_US"), "chat": (CHAT_TEMPLATES, "it_IT")}


def make_faker(seed: int, locale: str = "en_US") -> Faker:
    fake = Faker(locale)
    fake.seed_instance(seed)
    return fake


# the Presidio entity type a data team would redact for each planted slot
SLOT_TYPES = {"name": "PERSON", "email": "EMAIL_ADDRESS", "phone": "PHONE_NUMBER", "address": "LOCATION",
              "card": "CREDIT_CARD", "card_tail": "CREDIT_CARD", "iban": "IBAN_CODE", "date": "DATE_TIME",
              "dob": "DATE_TIME", "company": "ORGANIZATION", "city": "LOCATION", "ip": "IP_ADDRESS",
              "order": "ORDER_NUMBER"}


def _chat_values(fake: Faker, rng: random.Random) -> dict[str, str]:
    """The chat corpus's own pools for the values that are secrets (module doc): disjoint by format from
    the email corpus's (own e-mail domain, +39 phones, 7-digit order numbers, Italian names and IBANs)."""
    first, last = fake.first_name(), fake.last_name()
    handle = "".join(c for c in f"{first}.{last}".lower() if c.isascii() and (c.isalnum() or c == "."))
    return {"name": f"{first} {last}", "email": f"{handle}{rng.randint(10, 99)}@chat.shop-support.example",
            "phone": f"+39 3{rng.randint(10, 99)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}",
            "address": fake.address().replace("\n", ", "), "card": fake.credit_card_number(), "iban": fake.iban(),
            "ip": f"{rng.randint(151, 159)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
            "order": f"#{rng.randint(1000000, 9999999)}"}


def _fill(template: str, fake: Faker, rng: random.Random, given: dict[str, str] | None = None,
          corpus: str = "email") -> tuple[str, list[tuple[int, int, str, str]]]:
    """The message and its planted values as (start, end, slot, entity type); ``given`` fills slots that are
    not PII (a review's own text), never listed as planted."""
    values = {
        "name": fake.name(),
        "email": fake.email(),
        "phone": fake.phone_number(),
        "address": fake.address().replace("\n", ", "),
        "card": fake.credit_card_number(),
        "card_tail": str(rng.randint(1000, 9999)),
        "iban": fake.iban(),
        "date": fake.date_this_year().strftime("%B %d, %Y"),
        "dob": fake.date_of_birth(minimum_age=18, maximum_age=90).isoformat(),
        "company": fake.company(),
        "city": fake.city(),
        "ip": fake.ipv4_public(),
        "order": f"#{rng.randint(100000, 999999)}",
        **(_chat_values(fake, rng) if corpus == "chat" else {}),
        **(given or {}),
    }
    text, planted = "", []
    for literal, slot, _, _ in string.Formatter().parse(template):
        text += literal
        if slot is not None:
            if slot in SLOT_TYPES:
                planted.append((len(text), len(text) + len(values[slot]), slot, SLOT_TYPES[slot]))
            text += values[slot]
    return text, planted


def generate(n: int, seed: int = 7, users: int | None = None, with_planted: bool = False,
             corpus: str = "email") -> list[dict]:
    """``n`` messages of ``corpus`` (``email`` | ``chat``) from ``users`` users (default n // 4, so several
    messages per user); with ``with_planted`` each row also lists its planted values' offsets (``planted``:
    start, end, slot, type). The chat corpus's doc and user ids start with ``c``."""
    if corpus not in CORPORA:
        raise ValueError(f"unknown sample corpus {corpus!r}; allowed: {', '.join(CORPORA)}")
    templates, locale = CORPORA[corpus]
    prefix = "c" if corpus == "chat" else ""
    rng = random.Random(seed)
    fake = make_faker(seed, locale)
    n_users = users or max(1, n // 4)
    user_ids = [f"{prefix}u{idx:05d}" for idx in range(n_users)]
    rows = []
    for idx in range(n):
        label = rng.choice(LABELS)
        text, planted = _fill(rng.choice(templates[label]), fake, rng, corpus=corpus)
        row = {"doc_id": f"{prefix}d{idx:06d}", "user_id": rng.choice(user_ids), "text": text, "label": label,
               "channel": rng.choice(("email", "chat", "web"))}
        rows.append({**row, "planted": planted} if with_planted else row)
    return rows


# real text with PII planted around it (``plant_pii``): the review itself is kept as written
REVIEW_FRAMES = (
    "{review} Watched it with {name} on {date}.",
    "{name} from {city} writes: {review}",
    "{review} Tell me what you think at {email}.",
    "Saw it at the {company} staff screening. {review}",
    "{review} Call me on {phone} if you want to borrow the DVD.",
    "{review}",
)


def plant_pii(texts: list[str], seed: int = 7) -> list[dict]:
    """Each text inside one of ``REVIEW_FRAMES`` filled with this generator's values (names, emails, phones,
    dates, cities, companies): ``text`` and ``planted`` as in ``generate(with_planted=True)``."""
    rng = random.Random(seed)
    fake = make_faker(seed)
    rows = []
    for review in texts:
        text, planted = _fill(rng.choice(REVIEW_FRAMES), fake, rng, {"review": review})
        rows.append({"text": text, "planted": planted})
    return rows


def write_jsonl(rows: list[dict], out: str | Path) -> Path:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
