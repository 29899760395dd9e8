"""Recognizers beyond Presidio's defaults, and the span post-processing a sanitizer needs.

Measured misses they close (the demo sample, ``privtext eval pii --suite sample``): street addresses
(0 of 84 fully covered), phone numbers with extensions (x2186), order numbers (#123456), 19-digit cards,
"card ending in 1234", multi-word company names ("Clements, Pena and Singh") and partly detected names.
Each is a Presidio ``PatternRecognizer`` (context words raise a score, as Presidio's own do) switched
by ``pii.recognizers``; US formats, as the rest of the analyzer.

Post-processing (``refine``): DATE_TIME spans that are durations or relative expressions ("a week",
"this month", "two weeks", "Sunday", "yesterday") are dropped unless ``pii.relative_time_is_pii``
(they identify no one and replacing them with dates makes nonsense); a PERSON span is widened over
adjacent capitalised name tokens, so "Russell" in "Russell Mcclain" never leaves "Mcclain" behind.
"""
from __future__ import annotations

import re
from dataclasses import replace

ADDRESS_SCORE = 0.9  # a whole address beats a shorter NER span inside it (spaCy scores 0.85)
_NUMBER_WORDS = ("a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
                 "few|several|couple of|a few|many|\\d+")
_UNITS = "seconds?|minutes?|hours?|days?|nights?|weeks?|weekends?|fortnights?|months?|years?|decades?"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
RELATIVE_TIME = re.compile(
    rf"(?i)^(?:the\s+)?(?:"
    rf"(?:(?:for|in|within|after|over|about|around|almost|nearly|another|the\s+(?:last|past|next))\s+)*"
    rf"(?:(?:{_NUMBER_WORDS})\s+)?(?:more\s+)?(?:{_UNITS})(?:\s+(?:ago|later|earlier|long|old))?"
    rf"|(?:this|last|next|past|coming|previous|every|each)\s+(?:{_UNITS}|{_DAYS}|morning|evening|night|time)"
    rf"|today|tonight|yesterday|tomorrow|now|recently|lately|soon|daily|weekly|monthly|yearly|annually"
    rf"|(?:on\s+)?(?:{_DAYS})s?(?:\s+(?:morning|afternoon|evening|night))?"
    rf"|(?:this\s+|the\s+)?(?:morning|afternoon|evening|night|weekend|overnight)"
    rf")$")
_NAME_TOKEN = re.compile(r"[A-Z][a-z]+(?:['-][A-Z]?[a-z]+)?")
_NOT_NAMES = frozenset({"The", "A", "An", "And", "Or", "But", "I", "We", "You", "He", "She", "They", "It", "My",
                        "Our", "Your", "His", "Her", "Their", "Hi", "Hello", "Dear", "Thanks", "Thank", "Please",
                        "Regards", "Best", "Cheers", "Mr", "Mrs", "Ms", "Dr", "At", "In", "On", "To", "From",
                        "For", "With", "Is", "Was", "Call", "Ask", "Name", "Phone", "Email", "Born"})


def street_address_regex() -> str:
    """US street addresses as Faker and people write them: number, street name, suffix from Faker's
    USPS list, optional Apt./Suite, optional ", City, ST 12345[-6789]"; and military APO/FPO/DPO."""
    from faker.providers.address.en_US import Provider

    suffixes = "|".join(sorted({re.escape(s) for s in Provider.street_suffixes}, key=len, reverse=True))
    street = rf"\b\d{{1,6}}\s+(?:[A-Z][a-z]+\s+){{1,3}}(?:{suffixes})\.?(?:\s+(?:Apt\.|Suite|Unit|#)\s*\d+[A-Z]?)?"
    tail = r"(?:,?\s+(?:[A-Z][a-z]+\s){0,2}[A-Z][a-z]+,\s+[A-Z]{2}\s+\d{5}(?:-\d{4})?)?"
    military = (r"\b(?:(?:USNS|USNV|USS|USCGC)\s+[A-Z][a-z]+|PSC\s+\d{4},\s+Box\s+\d{4}|Unit\s+\d{4}\s+Box\s+\d{4})"
                r",?\s+(?:APO|FPO|DPO)\s+A[AEP]\s+\d{5}")
    # street first, number last (Rua Arapiraca 1943, Via Roma 12, Hauptstrasse 5), and secondary units
    word = r"[A-Z\u00C0-\u00DE][\w\u00C0-\u00FF'.-]*"
    prefixes = ("Rua|Via|Viale|Corso|Piazza|Calle|Carrer|Camino|Paseo|Avenida|Avda\\.|Rue|Boulevard|Chemin|Place|"
                "Pra\u00e7a|Largo|Travessa|Estrada|Ulica|ul\\.|Utca|Strada|Straat|Laan|Plein")
    european = (rf"\b(?:(?:{prefixes})\s+(?:{word}\s+){{0,3}}\d{{1,5}}[A-Za-z]?"
                rf"|{word}(?:stra(?:ss|\u00df)e|str\\.|weg|gasse|platz|allee|ring|damm|straat|gade|vej|v\u00e4gen|gatan)"
                rf"\s+\d{{1,5}}[A-Za-z]?)")
    secondary = r"\b(?:Apt\.?|Apartment|Suite|Ste\.|Unit|Flat|Room|P\.O\.\s?Box|PO\s?Box)\s?#?\d{1,5}[A-Z]?\b"
    return rf"(?-i:{street}{tail}|{military}|{european}|{secondary})"  # case-sensitive: Presidio uses IGNORECASE


# entity type -> [(pattern name, regex, score)], context words; switched by pii.recognizers.<key>.
# A score above spaCy's 0.85 makes the whole multi-word name win over a shorter NER span inside it.
PATTERNS = {
    "phone_extensions": ("PHONE_NUMBER", [
        ("us_phone_with_extension",
         r"(?<![\w-])(?:(?:\+1|001)[-.\s]?)?(?:\(\d{3}\)\s?|\d{3}[-.\s])\d{3}[-.\s]\d{4}\s?(?:x|ext\.?\s?)\d{1,6}\b", 0.9),
        ("us_phone", r"(?<![\w-])(?:(?:\+1|001)[-.\s]?)?(?:\(\d{3}\)\s?|\d{3}[-.\s])\d{3}[-.\s]\d{4}\b", 0.86),
        ("ten_digits", r"\b\d{10}\b", 0.3),
        ("international", r"(?<![\w+])\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{1,4}(?:[\s.-]?\d{2,4}){1,4}\b", 0.9),
        ("area_code", r"(?<![\w(])\(\d{2,4}\)\s?\d{3,5}[-\s]\d{3,4}\b", 0.86),
        ("digit_groups", r"(?<![\w-])\d{2,5}(?:[ -]\d{2,4}){2,3}\b", 0.35)],
        ["phone", "call", "number", "mobile", "cell", "reach", "text", "sms", "tel"]),
    "order_numbers": ("ORDER_NUMBER", [
        ("hash_number", r"(?<![\w#])#\d{4,12}\b", 0.6),
        ("labelled_number",
         r"(?i)(?<=\b(?:order|ticket|account|invoice|case|reference|ref|booking|tracking)\s(?:no\.?\s|number\s|#)?)"
         r"(?=[A-Z0-9-]*\d)[A-Z0-9][A-Z0-9-]{4,19}\b", 0.5)],
        ["order", "ticket", "account", "invoice", "case", "reference", "booking", "tracking"]),
    "postal_codes": ("ZIP_CODE", [
        ("us_zip_after_state", r"(?-i:(?<=\b[A-Z]{2}\s)\d{5}(?:-\d{4})?\b)", 0.6),
        ("uk_postcode", r"(?-i:\b[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2}\b)", 0.6),
        ("five_digits", r"\b\d{5}(?:-\d{4})?\b", 0.3)],
        ["zip", "postal", "postcode", "post code", "zipcode", "address"]),
    "titles": ("TITLE", [
        ("honorific", r"(?-i:\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Dame|Rev|Hon|Sr|Sra|Herr|Frau|Mme|Mlle)\.?(?=\s+[A-Z]))", 0.8)],
        []),
    "card_last4": ("CARD_LAST4", [
        ("card_ending_in", r"(?i)(?<=\bending in\s)\d{4}\b|(?<=\bending with\s)\d{4}\b|(?<=\blast four digits\s)\d{4}\b",
         0.8)],
        ["card", "ending"]),
    "company_shapes": ("ORGANIZATION", [
        ("last_names_and", r"(?-i:\b[A-Z][a-z]+(?:,\s[A-Z][a-z]+)*,?\s(?:and|&)\s[A-Z][a-z]+\b)", 0.86),
        ("hyphenated_company", r"(?-i:\b[A-Z][a-z]+-[A-Z][a-z]+\b)", 0.45),
        ("suffixed_company",
         r"(?-i:\b(?:[A-Z][\w&+.'-]*[\s-]){0,4}[A-Z][\w&+.'-]*\s(?:Inc|LLC|Ltd|PLC|Plc|Group|Corp|Corporation|"
         r"Holdings|GmbH|AG|SA|NV|BV|LLP|LP|Co|and Sons)\b\.?)", 0.9)],
        ["company", "office", "firm", "employer", "colleague", "invoice", "from", "at"]),
}
LONG_CARD = r"\b(?:\d[ -]?){12,18}\d\b"  # 13-19 digits, Luhn-checked by Presidio's CreditCardRecognizer


def build(settings) -> list:
    """The recognizers switched on in ``settings.recognizers`` (Presidio objects)."""
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
    if switches.long_cards:
        out.append(CreditCardRecognizer(patterns=[Pattern("13-19 digits", LONG_CARD, 0.5)], name="long_cards"))
    return out


def refine(spans: list, text: str, settings) -> list:
    """Drop relative-time DATE_TIME spans (unless ``relative_time_is_pii``); widen PERSON spans over
    adjacent capitalised name tokens (``widen_names``)."""
    out = []
    for span in spans:
        if (span.entity_type == "DATE_TIME" and not settings.relative_time_is_pii
                and RELATIVE_TIME.match(text[span.start:span.end].strip(" .,;:!?"))):
            continue
        if span.entity_type == "PERSON" and settings.widen_names:
            span = _widen(span, text)
        out.append(span)
    return out


def _widen(span, text: str):
    start, end = span.start, span.end
    while True:  # to the right: " Mcclain"
        m = _NAME_TOKEN.match(text, end + 1) if text[end:end + 1] == " " else None
        if not m or m.group() in _NOT_NAMES:
            break
        end = m.end()
    while start >= 2 and text[start - 1] == " ":  # to the left: "Russell "
        m = re.search(r"[A-Z][a-z]+(?:['-][A-Z]?[a-z]+)?$", text[:start - 1])
        if not m or m.group() in _NOT_NAMES or (m.start() > 0 and text[m.start() - 1].isalnum()):
            break
        start = m.start()
    return span if (start, end) == (span.start, span.end) else replace(span, start=start, end=end)
