"""Recognizers beyond Presidio's defaults (``pii.recognizers`` switches each on or off).

Measured misses they close (``privtext eval pii --suite sample|presidio``): street addresses (US,
street-first European, military, secondary units), phone numbers with extensions and in international
or grouped layouts, order numbers (#123456), 19-digit cards, "card ending in 1234", company names
("Clements, Pena and Singh", "INTELLIGENT WAVE INC."), ZIP/postcodes, honorifics, ISO timestamps and
ages ("a 63 year old", "just turned 29"). Each is a Presidio ``PatternRecognizer`` (context words
raise a score, as Presidio's own do); the gazetteers (countries, first names, job titles) are in
``gazetteers.py`` and the span post-processing (relative time, name and address widening) in ``refine.py``.
"""
from __future__ import annotations

import logging
import re

from presidio_analyzer import EntityRecognizer, RecognizerResult

from privtext.pii import gazetteers
from privtext.pii.refine import CONNECTOR, PARTICLE

ADDRESS_SCORE = 0.9  # a whole address beats a shorter NER span inside it (spaCy scores 0.85)
def street_address_regex() -> str:
    """US street addresses as Faker and people write them: number, street name, suffix from Faker's
    USPS list, optional Apt./Suite, optional ", City, ST 12345[-6789]"; and military APO/FPO/DPO."""
    from faker.providers.address.en_US import Provider

    abbreviations = {"St", "Str", "Rd", "Ave", "Av", "Blvd", "Dr", "Ln", "Ct", "Pl", "Sq", "Hwy", "Pkwy", "Ter",
                     "Cres", "Cl"}
    suffixes = "|".join(sorted({re.escape(s) for s in {*Provider.street_suffixes, *abbreviations}}, key=len,
                               reverse=True))
    street = rf"\b\d{{1,6}}\s+(?:[A-Z][a-z]+\s+){{1,3}}(?:{suffixes})\.?(?:\s+(?:Apt\.|Suite|Unit|#)\s*\d+[A-Z]?)?"
    tail = r"(?:,?\s+(?:[A-Z][a-z]+\s){0,2}[A-Z][a-z]+,\s+[A-Z]{2}\s+\d{5}(?:-\d{4})?)?"
    military = (r"\b(?:(?:USNS|USNV|USS|USCGC)\s+[^\W\d_][\w'-]*|PSC\s+\d{4},\s+Box\s+\d{4}|Unit\s+\d{4}\s+Box\s+\d{4})"
                r",?\s+(?:APO|FPO|DPO)\s+A[AEP]\s+\d{5}")
    # street first, number last (Rua Arapiraca 1943, Via Roma 12, Hauptstrasse 5), and secondary units
    word = r"[A-Z\u00C0-\u00DE][\w\u00C0-\u00FF'.-]*"
    prefixes = ("Rua|Via|Viale|Corso|Piazza|Calle|Carrer|Camino|Paseo|Avenida|Avda\\.|Rue|Boulevard|Chemin|Place|"
                "Pra\u00e7a|Largo|Travessa|Estrada|Ulica|ul\\.|Utca|Strada|Straat|Laan|Plein")
    street_words = ("vei|veien|veg|vegen|gate|gata|gaten|tee|utca|\u00fat|\u00fatja|u\\.|kapu|ulica|cesta|tie|katu|"
                    "gade|vej|v\u00e4g|v\u00e4gen|gr\u00e4nd|str\u00e6de|all\u00e9|sokak|sokağı")
    european = (rf"\b(?:(?i:{prefixes})\s+(?:(?:{word}|{CONNECTOR})\s+){{0,4}}\d{{1,5}}[A-Za-z]?"
                rf"|{word}(?:stra(?:ss|\u00df)e|str\\.|weg|gasse|platz|allee|ring|damm|straat|gade|vej|v\u00e4gen|"
                rf"gatan)"
                rf"\s+\d{{1,5}}[A-Za-z]?"
                # a lower-case street word after the name: "Pernilles vei 115", "Csabai kapu 60.", "Luite tee 87"
                rf"|{word}(?:\s{word}){{0,2}}\s(?:{street_words})\s+\d{{1,5}}[A-Za-z]?\b\.?)")
    # house number, street words, building number: "637 Strojírenská 1006", "788 Fitjabraut 87"
    # particles only, not CONNECTOR's "on"/"an": "logged in from 203.0.113.45 on March 3" is no street;
    # on one line: a chat's "we're like 3\nSpeaker 2: ..." is a number, then the next turn's label
    numbered = (rf"(?<![\d.,:/-])\b\d{{1,6}}[ \t]+(?:(?:{word}|{PARTICLE})[ \t]+){{0,3}}{word}[ \t]+"
                rf"\d{{1,5}}[A-Za-z]?\b")
    secondary = r"\b(?:Apt\.?|Apartment|Suite|Ste\.|Unit|Flat|Room|P\.O\.\s?Box|PO\s?Box)\s?#?\d{1,5}[A-Z]?\b"
    # a crossing named by "the corner of": "the corner of 491 St. Clair Ave and Maslow Well"
    crossing = (rf"\b(?i:the[ \t]+)?(?i:corner)[ \t]+of[ \t]+(?:[\w'./-]+[ \t]+){{1,5}}?and[ \t]+"
                rf"[\p{{Lu}}\d][\w'./-]*(?:[ \t]+(?:[\p{{Lu}}\d][\w'./-]*|{PARTICLE})){{0,4}}")
    # case-sensitive: Presidio uses IGNORECASE
    return rf"(?-i:{street}{tail}|{military}|{european}|{numbered}|{secondary}|{crossing})"


# company names: capitalised words ("iShares", "&", "and", "of" may join them), then a legal or fund suffix
_COMPANY_WORD = r"(?:[A-Z]|[a-z]+[A-Z])[\w&+.'/-]*"
_COMPANY_WORDS = rf"\b{_COMPANY_WORD}(?:[\s-](?:(?:&|and|of)\s)?{_COMPANY_WORD}){{0,6}}"
_COMPANY_SUFFIXES = ("Inc|INC|LLC|Ltd|LTD|Limited|LIMITED|PLC|Plc|plc|Group|GROUP|Corp|CORP|Corporation|CORPORATION|"
                     "Holdings|HOLDINGS|GmbH|AG|SA|SpA|SPA|ASA|AB|Oyj|NV|BV|LLP|LP|Co|CO|and Sons|Trust|Fund|ETF|REIT|"
                     "Bank|Bancorp|Bancorporation|Company|Partners|Capital|Technologies")
# a word in Greek or Cyrillic script (the "∆" some exports write for Δ): spaCy's English pipeline labels none
_SCRIPT_WORD = r"[\p{Greek}\p{Cyrillic}\u2206][\p{Greek}\p{Cyrillic}\u2206'.-]*"
# one to three capitalised name words (Latin letters with diacritics), an initial may come between; not a unit word
_NAME_WORD = r"(?!(?:Suite|Apt|Apartment|Unit|Room|Floor|Box|And|Of|The)\b)[A-Z\u00C0-\u00DE\u0100-\u017F][\w'\u2019-]+"
_NAME_WORDS = rf"{_NAME_WORD}(?:\s(?:[A-Z]\.?\s)?{_NAME_WORD}){{0,2}}"
# entity type -> [(pattern name, regex, score)], context words; switched by pii.recognizers.<key>.
# A score above spaCy's 0.85 makes the whole multi-word name win over a shorter NER span inside it.
PATTERNS = {
    "phone_extensions": ("PHONE_NUMBER", [
        # a letter may touch a US layout ("Fax555-123-4567", "555-123-4567W"): its separators say phone
        ("us_phone_with_extension",
         r"(?<![\d-])(?:(?:\+?1|001)[-.\s]?)?(?:\(\d{3}\)\s?|\d{3}[-.\s])\d{3}[-.\s]\d{4}\s?(?:x|ext\.?\s?)\d{1,6}\b",
         0.9),
        ("us_phone", r"(?<![\d-])(?:(?:\+?1|001)[-.\s]?)?(?:\(\d{3}\)\s?|\d{3}[-.\s])\d{3}[-.\s]\d{4}(?![\d-])", 0.86),
        ("ten_digits", r"\b\d{10}\b", 0.3),
        ("country_code_us_layout", r"(?<![\w+.-])\d{1,3}[ .]\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b", 0.9),
        ("international", r"(?<![\w+])\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{1,4}(?:[\s.-]?\d{2,4}){1,4}\b", 0.9),
        ("area_code", r"(?<![\w(])\(\d{1,4}\)\s?\d{3,5}[-\s]\d{3,4}\b", 0.86),
        ("dotted_pairs", r"(?<![\w.])\d{2}(?:\.\d{2}){4}(?![\w.])", 0.9),  # French: 05.06.52.16.25
        ("digit_groups", r"(?<![\w-])\d{2,5}(?:[ -]\d{2,4}){2,3}\b", 0.35),
        ("short_groups", r"(?<![\w.,/:-])\(?\d{2,5}\)?[ -]?\d{3,8}(?:[ -]\d{2,4})?\b(?![.,/:-]\d)", 0.2)],
        ["phone", "call", "number", "mobile", "cell", "reach", "text", "sms", "tel", "fax", "desk", "office",
         "message", "answer", "register", "dial", "contact"]),  # lemmas: the context is matched on lemmas
    "order_numbers": ("ORDER_NUMBER", [
        ("hash_number", r"(?<![\w#])#\d{4,12}\b", 0.6),
        ("labelled_number",
         r"(?i)(?<=\b(?:order|ticket|account|invoice|case|reference|ref|booking|tracking)\s(?:no\.?\s|number\s|#)?)"
         r"(?=[A-Z0-9-]*\d)[A-Z0-9][A-Z0-9-]{4,19}\b", 0.5)],
        ["order", "ticket", "account", "invoice", "case", "reference", "booking", "tracking"]),
    "postal_codes": ("ZIP_CODE", [
        ("us_zip_after_state", r"(?-i:(?<=\b[A-Z]{2}\s)\d{5}(?:-\d{4})?\b)", 0.6),
        ("uk_postcode", r"(?-i:\b[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2}\b)", 0.6),
        ("five_digits", r"\b\d{5}(?:-\d{4})?\b", 0.3),
        ("labelled_postcode", r"(?i)(?<=\b(?:plz|postleitzahl|zip|zip code|zipcode|postcode|post code|postal code|"
                              r"code postal|cap|cp)(?::\s?|\s))\d{4,5}\b", 0.9),
        # needs context
        ("postcode_digits", r"(?<![\w.,:/-])(?:\d{2}-\d{3}|\d{3,6}(?:[- ]\d{2,3})?)(?![\w.,:/-]?\d)", 0.1)],
        ["zip", "postal", "postcode", "post code", "zipcode", "address", "plz", "postleitzahl", "cap", "cp"]),
    "timestamps": ("DATE_TIME", [
        ("iso_datetime", r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?(?!\d)",
         0.96)],
        []),
    "ages": ("AGE", [
        ("years_old", r"(?i)\b\d{1,3}(?=[\s-]?(?:years?|yrs?)[\s-]old\b|\s?y/?o\b)", 0.8),
        ("aged", r"(?i)(?<=\b(?:aged|age of|age:|age|turned|turn|turning|I'm|I am|he's|she's"
                 r"|(?:he|she|I|they|we) (?:was|is|am|will be))\s)\d{1,3}\b(?![.,]?\d)(?!\s?(?:%|percent|[a-z]))",
         0.6)],
        ["age", "old", "born", "turned"]),
    "titles": ("TITLE", [
        ("honorific",
         r"(?-i:\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Dame|Rev|Hon|Sr|Sra|Herr|Frau|Mme|Mlle)\.?(?=\s+[A-Z]))", 0.8)],
        []),
    "other_scripts": ("STREET_ADDRESS", [  # "668 Λεωφόρος Συγγρού 119", "Τιμολέοντος Βάσσου 154"
        ("script_street", rf"(?:\b\d{{1,6}}\s)?(?:{_SCRIPT_WORD}\s){{1,4}}\d{{1,5}}\b", 0.9)],
        ["address", "street", "live", "lives", "located"]),
    "other_script_names": ("LOCATION", [  # in English text a Greek or Cyrillic phrase is a place or a name
        ("script_phrase", rf"{_SCRIPT_WORD}(?:\s{_SCRIPT_WORD}){{0,3}}", 0.5)],
        []),
    "name_cues": ("PERSON", [
        # the honorific is part of the name ("Mr. Felix Sørensen" is one value, replaced once)
        ("after_honorific", rf"(?-i:\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof)\.?\s{_NAME_WORDS})", 0.87),
        ("after_name_cue", rf"(?<=\b(?i:name is|name's|name:|surname:?|calls me|call me|last name\?|first name\?)\s)"
                           rf"(?-i:{_NAME_WORDS})", 0.87)],
        []),
    "card_last4": ("CARD_LAST4", [
        ("card_ending_in",
         r"(?i)(?<=\bending in\s)\d{4}\b|(?<=\bending with\s)\d{4}\b|(?<=\blast four digits\s)\d{4}\b",
         0.8)],
        ["card", "ending"]),
    "company_shapes": ("ORGANIZATION", [
        # not people: "Merle Mercado and Eric Durr" (a capitalised word before or after)
        # on its line: "Schaefer, Lambert and Cruz\nTel: ..." is a company line above a phone line
        ("last_names_and",
         r"(?-i:(?<![A-Z][a-z]+[ \t])\b[A-Z][a-z]+(?:,[ \t][A-Z][a-z]+)*,?[ \t](?:and|&)[ \t][A-Z][a-z]+\b"
         r"(?![ \t][A-Z]))", 0.86),
        ("hyphenated_company", r"(?-i:\b[A-Z][a-z]+-[A-Z][a-z]+\b)", 0.55),  # 0.9 with a context word: beats spaCy
        ("suffixed_company", rf"(?-i:{_COMPANY_WORDS},?\s(?:{_COMPANY_SUFFIXES})\b"
                             r"(?:\.?(?:,?\s?(?:Inc|Ltd|LTD|INC)\b)?\.?)?(?:\s(?:II|III|IV|V|VI)\b)?)", 0.9),
        ("glued_inc", rf"(?-i:{_COMPANY_WORDS}(?<=[a-zA-Z])(?:Inc|INC)\.)", 0.9)],  # "HOLDINGSInc.", "GroupInc."
        ["company", "office", "firm", "employer", "colleague", "invoice", "from", "at"]),
}
LONG_CARD = r"\b(?:\d[ -]?){12,18}\d\b"  # 13-19 digits, Luhn-checked by Presidio's CreditCardRecognizer
CARD_IN_CONTEXT = r"(?<![\d-])\d{12,19}(?![\d-])"  # any 12-19 digits, only with a card word near (no Luhn)


def build(settings, english: frozenset[str] = frozenset()) -> list:
    """The recognizers switched on in ``settings.recognizers`` (Presidio objects); ``english``: the English words
    some gazetteers need (``gazetteers.english_words``)."""
    from presidio_analyzer import Pattern, PatternRecognizer
    from presidio_analyzer.predefined_recognizers import CreditCardRecognizer

    switches = settings.recognizers
    out = []
    if switches.street_address:
        out.append(PatternRecognizer(supported_entity="STREET_ADDRESS", name="street_address",
                                     patterns=[Pattern("us_street_address", street_address_regex(), ADDRESS_SCORE)],
                                     context=["address", "street", "live", "deliver", "ship", "send"]))
    for key, (entity, patterns, context) in PATTERNS.items():
        if getattr(switches, key):
            out.append(PatternRecognizer(supported_entity=entity, name=key,
                                         patterns=[Pattern(n, r, s) for n, r, s in patterns], context=context))
    out += gazetteers.build(switches, english)
    if switches.trained_ner:
        out += trained_ner(settings.detector)
    if switches.long_cards:
        out.append(CreditCardRecognizer(patterns=[Pattern("13-19 digits", LONG_CARD, 0.5)], name="long_cards"))
        out.append(PatternRecognizer(supported_entity="CREDIT_CARD", name="card_in_context",
                                     patterns=[Pattern("12-19 digits", CARD_IN_CONTEXT, 0.1)],
                                     context=["card", "cc", "credit", "debit", "visa", "mastercard", "amex"]))
    return out



def trained_ner(settings) -> list:
    """The trained NER as a recognizer, or nothing (with a warning) when its weights are not in the cache."""
    from privtext.pii import tagger

    model = tagger.load(settings)
    if model is None:
        logging.getLogger(__name__).warning(
            "pii.recognizers.trained_ner is on but no trained detector is cached under %s for these settings; "
            "detecting without it (run: privtext train detector)", settings.cache_dir)
        return []
    return [TrainedNerRecognizer(model, settings.score, settings.min_confidence)]


class TrainedNerRecognizer(EntityRecognizer):
    """Presidio recognizer around a ``tagger.Tagger``: PERSON, ORGANIZATION, LOCATION spans (OTHER is
    learnt, not reported) whose confidence reaches ``min_confidence``, all at ``score``. ``prepare``
    labels a whole batch of texts in one model pass; ``analyze`` then answers from it."""

    ENTITIES = ("PERSON", "ORGANIZATION", "LOCATION")

    def __init__(self, model, score: float, min_confidence: float):
        super().__init__(supported_entities=list(self.ENTITIES), name="trained_ner", supported_language="en")
        self.model, self.score, self.min_confidence = model, score, min_confidence
        self._prepared: dict[str, list] = {}

    def load(self) -> None:  # the model is loaded by the caller
        pass

    def prepare(self, texts) -> None:
        """Label ``texts`` together (batched); replaces what an earlier batch prepared."""
        unique = list(dict.fromkeys(texts))
        self._prepared = dict(zip(unique, self.model.predict(unique)))

    def _spans(self, text: str) -> list:
        return self._prepared[text] if text in self._prepared else self.model.predict([text])[0]

    def confirms(self, text: str, start: int, end: int) -> bool:
        """Whether the model labels some word of ``text[start:end]`` as an entity (any type, OTHER included,
        any confidence): the check ``ConfirmedRecognizer`` asks of another recognizer's caseless spans."""
        return any(s < end and start < e for s, e, _, _ in self._spans(text))

    def analyze(self, text, entities, nlp_artifacts=None):
        spans = self._spans(text)
        return [RecognizerResult(kind, start, end, self.score) for start, end, kind, confidence in spans
                if kind in entities and confidence >= self.min_confidence]


def confirmed_by_trained_ner(recognizers: list, names) -> list:
    """``recognizers`` with those named in ``names`` (``pii.detector.confirm_caseless``) wrapped in a
    ``ConfirmedRecognizer``; unchanged without the trained NER."""
    model = next((r for r in recognizers if isinstance(r, TrainedNerRecognizer)), None)
    if model is None:
        return recognizers
    return [ConfirmedRecognizer(r, model) if r.name in set(names) else r for r in recognizers]


class ConfirmedRecognizer(EntityRecognizer):
    """``inner``'s PERSON / ORGANIZATION / LOCATION results whose letter case says nothing (all lower-case,
    or one upper-case word: "lol", "FREE") kept only when the trained NER labels a word of them as an entity.
    spaCy's small NER leans on case and misfires on informal text; filtering inside the recognizer keeps
    another recognizer's equal span (a city the gazetteer knows) from being dropped with it."""

    TYPES = frozenset(TrainedNerRecognizer.ENTITIES)

    def __init__(self, inner, model: TrainedNerRecognizer):
        super().__init__(supported_entities=inner.supported_entities, name=inner.name,
                         supported_language=inner.supported_language, context=inner.context)
        self.inner, self.model = inner, model

    def load(self) -> None:
        pass

    def enhance_using_context(self, *args, **kwargs):
        return self.inner.enhance_using_context(*args, **kwargs)

    def analyze(self, text, entities, nlp_artifacts=None):
        kept = [r for r in self.inner.analyze(text, entities, nlp_artifacts)
                if r.entity_type not in self.TYPES or not caseless(text[r.start:r.end])
                or self.model.confirms(text, r.start, r.end)]
        for r in kept:  # Presidio keeps only results whose recognizer id is a registered recognizer's
            if r.recognition_metadata is not None:
                r.recognition_metadata[RecognizerResult.RECOGNIZER_IDENTIFIER_KEY] = self.id
        return kept


def caseless(value: str) -> bool:
    """Letter case says nothing: all letters lower-case, or one word all upper-case (a several-word
    upper-case name such as "ETFS FORE/SHORT AUD" is cased enough)."""
    letters = [c for c in value if c.isalpha()]
    return all(c.islower() for c in letters) or (len(value.split()) == 1 and all(c.isupper() for c in letters))
