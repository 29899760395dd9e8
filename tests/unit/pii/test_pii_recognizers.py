"""Recognizers beyond Presidio's defaults and span refinement, on the real analyzer (spaCy + Presidio)."""
import pytest

from privtext.pii.detect import detect_spans, get_analyzer
from privtext.pii.refine import RELATIVE_TIME
from tests_support import rules_only


@pytest.fixture(scope="module")
def analyzer():
    return get_analyzer(rules_only())


def covered(analyzer, text, value, settings=None):
    """(entity types of the spans overlapping ``value``, share of its characters covered)."""
    start = text.index(value)
    end = start + len(value)
    spans = detect_spans(analyzer, text, settings or rules_only())
    inside = sum(1 for c in range(start, end) if any(s.start <= c < s.end for s in spans))
    return {s.entity_type for s in spans if s.start < end and start < s.end}, inside / len(value)


DEFAULTS_MISSED = [
    ("My parcel never came. Address: 97923 Butler Shores Apt. 926, West Jennifer, ND 12345. Thanks",
     "97923 Butler Shores Apt. 926, West Jennifer, ND 12345", "STREET_ADDRESS"),
    ("Ship it to PSC 4115, Box 7815, APO AA 41557 please.", "PSC 4115, Box 7815, APO AA 41557", "STREET_ADDRESS"),
    ("Call me on 001-414-555-0182x2186 urgently.", "001-414-555-0182x2186", "PHONE_NUMBER"),
    ("I was charged twice for order #482913, please refund.", "#482913", "ORDER_NUMBER"),
    ("My card ending in 4821 was declined.", "4821", "CARD_LAST4"),
    ("The invoice from Clements, Pena and Singh is wrong.", "Clements, Pena and Singh", "ORGANIZATION"),
    ("Pay with 6011000990139424124 today.", "6011000990139424124", "CREDIT_CARD"),  # 19 digits, Luhn-valid
    # shapes of presidio-evaluator's generator
    ("Maile Jaimes lives at 788 Fitjabraut 87, Keflavík", "788 Fitjabraut 87, Keflavík", "STREET_ADDRESS"),
    ("Send it to 4317 Invalidenstrasse 19\n Apt. 390\n Walshausen\n Germany 07130",
     "4317 Invalidenstrasse 19\n Apt. 390\n Walshausen\n Germany 07130", "STREET_ADDRESS"),
    ("Name: Søren Kleist\\nAddress: 3240 Meadow Drive\\nMobile: 730 064 218", "Søren Kleist", "PERSON"),
    ("We moved here from Cyprus last spring.", "Cyprus", "LOCATION"),
    ("I used to work there as Applications engineer, but quit.", "Applications engineer", "TITLE"),
    ("This 70 year old female complained of pain.", "70", "AGE"),
    ("My brother just turned 29", "29", "AGE"),
    ("Date: 2018-04-29 14:33:14.970560", "2018-04-29 14:33:14.970560", "DATE_TIME"),
    ("What's your credit card? 587662702899", "587662702899", "CREDIT_CARD"),
]


def test_the_switches_turn_recognizers_off(analyzer):
    base = rules_only()
    off = rules_only(recognizers={"street_address": False, "order_numbers": False},
                      entities=[e for e in base.entities if e not in ("STREET_ADDRESS", "ORDER_NUMBER")])
    text = "Send it to 97923 Butler Shores Apt. 926, West Jennifer, ND 12345 for order #482913."
    types, share = covered(get_analyzer(off), text, "97923 Butler Shores Apt. 926", off)
    assert "STREET_ADDRESS" not in types and share < 1.0


@pytest.mark.parametrize("phrase", ["a week", "two weeks", "this month", "ten days", "Sunday", "yesterday",
                                    "the last two weeks", "for days", "last year", "tonight", "a couple hours out",
                                    "a couple of hours", "half an hour", "an hour and a half", "two days from now",
                                    "3 hours away"])
def test_relative_time_is_not_pii(analyzer, phrase):
    assert RELATIVE_TIME.match(phrase)
    text = f"The service was down for {phrase} and nobody answered."
    types, _ = covered(analyzer, text, phrase)
    assert "DATE_TIME" not in types
    kept, _ = covered(analyzer, text, phrase, rules_only(relative_time_is_pii=True))
    assert kept <= {"DATE_TIME"}  # with the switch on, spaCy's DATE spans come back (where it finds one)


@pytest.mark.parametrize("phrase", ["March 3, 2024", "2024-03-03", "03/03/2024", "born 1960-12-19", "March 2024"])
def test_absolute_dates_stay_pii(analyzer, phrase):
    assert not RELATIVE_TIME.match(phrase)
    value = phrase.replace("born ", "")
    types, share = covered(analyzer, f"It happened on {phrase}.", value)
    assert "DATE_TIME" in types and share == 1.0


def test_a_partly_detected_name_is_widened(analyzer):
    text = "Ask for Russell Mcclain at reception."
    types, share = covered(analyzer, text, "Russell Mcclain")
    assert "PERSON" in types and share == 1.0


def test_the_sample_suite_measures_recall_coverage_and_precision(analyzer):
    from privtext.pii.coverage import measure, suite

    docs = suite("sample", 60, 7)
    result = measure(docs, rules_only())
    assert result["overall"]["values"] == sum(len(d.gold) for d in docs) > 40
    assert 0.9 <= result["overall"]["recall"] <= 1.0 and 0.0 < result["overall"]["precision"] <= 1.0
    nothing = measure(docs, rules_only(entities=["US_SSN"]))  # a detector that misses almost everything
    assert nothing["overall"]["coverage"] < 0.2 < result["overall"]["coverage"]


INTERNATIONAL = [
    ("Our office is at Rua Arapiraca 1943 in the centre.", "Rua Arapiraca 1943", "STREET_ADDRESS"),
    ("Please forward it to Hauptstrasse 5 next week.", "Hauptstrasse 5", "STREET_ADDRESS"),
    ("You can call me on +41 53 147 37 99 tomorrow.", "+41 53 147 37 99", "PHONE_NUMBER"),
    ("Dial (73) 4746-3459 for support.", "(73) 4746-3459", "PHONE_NUMBER"),
    ("Write to London SW1A 1AA for the forms.", "SW1A 1AA", "ZIP_CODE"),
    ("The letter was addressed to Mrs. Felicity Jones.", "Mrs. Felicity Jones", "PERSON"),  # one value
    ("Her maiden name is Trpinc", "Trpinc", "PERSON"),
    ("everyone calls me Longin", "Longin", "PERSON"),
    ("Dr. Tiina Käyhkö Suite 595 9472 90 Petworth Rd", "Dr. Tiina Käyhkö", "PERSON"),
    ("Please return to 74485 Pernilles vei 115 Suite 086 OSLO Norway in case of an issue.",
     "74485 Pernilles vei 115 Suite 086 OSLO Norway", "STREET_ADDRESS"),
    ("2836 96 Belfast Crescent Suite 408\nEgg, nan 78051", "2836 96 Belfast Crescent Suite 408\nEgg, nan 78051",
     "STREET_ADDRESS"),  # an export's empty state field inside the block
    ("My friend lives in TAMPERE", "TAMPERE", "LOCATION"),
    ("The restaurant is at the corner of Aqqusinersuaq 23 and Maslow Well. It serves great food",
     "the corner of Aqqusinersuaq 23 and Maslow Well", "STREET_ADDRESS"),
    ("He lives on the north side of Λεωφόρος Πανεπιστημίου 219.", "Λεωφόρος Πανεπιστημίου 219", "STREET_ADDRESS"),
    ("I am in ΛΕΥΚΩΣΙΑ for a business trip", "ΛΕΥΚΩΣΙΑ", "LOCATION"),
    ("Shares of Petco Animal Supplies Inc. fell.", "Petco Animal Supplies Inc.", "ORGANIZATION"),
]


def test_an_address_block_stops_at_prose_and_labels(analyzer):
    text = "Ship to 12 Main Street Thanks a lot\nMobile: 555 0101"
    spans = detect_spans(analyzer, text, rules_only())
    address = [text[s.start:s.end] for s in spans if s.entity_type == "STREET_ADDRESS"]
    assert address == ["12 Main Street"]
    narrow = detect_spans(analyzer, "Send it to 4317 Invalidenstrasse 19\n Apt. 390\n Walshausen",
                          rules_only(widen_addresses=False))
    assert all(s.end - s.start < len("4317 Invalidenstrasse 19\n Apt. 390") for s in narrow)


def test_bare_digit_groups_are_not_dates(analyzer):
    """spaCy reads "4746-3459" or "7015" as DATE; without a date shape they are left to the other recognizers."""
    from privtext.pii.refine import plain_text

    text = "Call the office on 4746-3459 about unit 7015."
    assert all(s.entity_type != "DATE_TIME" for s in detect_spans(analyzer, text, rules_only()))
    assert plain_text("a\\nb") == "a \nb" and len(plain_text("x\\ty\\n")) == len("x\\ty\\n")


SPACY_LEAVES = [  # context words, address lines, names and places spaCy leaves
    # context words that are spaCy stop words ("call"), and labels after the number
    ("Can someone call me on 76 177 296? I have some questions.", "76 177 296", "PHONE_NUMBER"),
    ("Cyprus 33157\n26 841054 office\n806.578.7598 fax", "26 841054", "PHONE_NUMBER"),
    ("How can we reach you? You can call 05.06.52.16.25", "05.06.52.16.25", "PHONE_NUMBER"),
    ("ZIP: 00-423", "00-423", "ZIP_CODE"),
    # the rest of an address line, crossings, particles in place names
    ("Address:     7015 184 Arnott Heights East Suite 303 Kaiata Greymouth",
     "7015 184 Arnott Heights East Suite 303 Kaiata Greymouth", "STREET_ADDRESS"),
    ("Change my address to the corner of 262 Thisseos Avenue and Semmens Greens for post mail?",
     "the corner of 262 Thisseos Avenue and Semmens Greens", "STREET_ADDRESS"),
    ("Send it to 35116 Rua Arapiraca 1943\n Apt. 559\n Teixeira de Freitas\n Brazil 35172\n(73) 4746-3459",
     "35116 Rua Arapiraca 1943\n Apt. 559\n Teixeira de Freitas\n Brazil 35172", "STREET_ADDRESS"),
    ("Pertti Palander\n\n083 Favoritenstrasse 36\n Apt. 367\n KOPPELSTÄTT\n\n Austria 73269",
     "083 Favoritenstrasse 36\n Apt. 367\n KOPPELSTÄTT\n\n Austria 73269", "STREET_ADDRESS"),
    ("Santo lives at 844 99 Eastbourne Rd, COLD BLOW", "844 99 Eastbourne Rd, COLD BLOW", "STREET_ADDRESS"),
    ("Please update the billing address with 457 Treinta y Tres 2070 Suite 590 Valentines Uruguay",
     "457 Treinta y Tres 2070 Suite 590 Valentines Uruguay", "STREET_ADDRESS"),
    ("Paul Waechter\n\nJestetten\nGermany", "Jestetten", "LOCATION"),
    # company names: glued "Inc.", lower-case first letter, "&", Nordic suffixes
    ("The RACCOON HOLDINGSInc. Orchestra was founded in 1978.", "RACCOON HOLDINGSInc.", "ORGANIZATION"),
    ("iShares MSCI Japan Value ETF is an investment bank", "iShares MSCI Japan Value ETF", "ORGANIZATION"),
    ("Kira is from Fred. Olsen Energy ASA", "Fred. Olsen Energy ASA", "ORGANIZATION"),
    # names alone, cities, groups in lower case, names spaCy tags but does not label
    ("Sophia shouted at John: \"What are you doing here?\"", "John", "PERSON"),
    ("Ms. Philippen flew to Fortaleza on Sunday morning.", "Fortaleza", "LOCATION"),
    ("We are proud latvians", "latvians", "NRP"),
    ("Mimount Bijster from Cornerstone Building Brands Inc. is the keynote speaker", "Mimount Bijster", "PERSON"),
    ("Thea D Kokshoorn\n\n324 Helmstok 174\n Apt. 861\n Almere", "Thea D Kokshoorn", "PERSON"),
]


@pytest.mark.parametrize("text,value,etype", DEFAULTS_MISSED + INTERNATIONAL + SPACY_LEAVES)
def test_values_the_defaults_missed_are_fully_covered(analyzer, text, value, etype):
    types, share = covered(analyzer, text, value)
    assert etype in types and share == 1.0


def test_spans_do_not_swallow_the_next_line_or_a_neighbour(analyzer):
    cases = [  # (text, a value that must keep its own type)
        ("Vittore Fiorentini\nFood preparation worker\nEnduro Royalty Trust", "Food preparation worker", "TITLE"),
        ("Belgium 34866\n0494 41 18 24 office", "0494 41 18 24", "PHONE_NUMBER"),
        ("including Yvonne Kwiatkowski, Merle Mercado and Eric Durr.", "Eric Durr", "PERSON"),
    ]
    for text, value, etype in cases:
        spans = detect_spans(analyzer, text, rules_only())
        start = text.index(value)
        assert [s.entity_type for s in spans if s.start <= start < s.end] == [etype], value
    mobile = detect_spans(analyzer, "Mobile: 730 064 218", rules_only())
    assert all(s.entity_type != "LOCATION" for s in mobile)  # the label, not the city in Alabama


def test_the_gazetteer_switches_turn_off(analyzer):
    off = rules_only(recognizers={"first_names": False, "proper_noun_runs": False, "nationalities": False,
                                   "places": False, "trained_ner": False})  # the trained NER finds "John" too
    for text, value in [("Sophia shouted at John: \"What are you doing here?\"", "John"),
                        ("We are proud latvians", "latvians"),
                        ("Mimount Bijster from Cornerstone Building Brands Inc. is here", "Mimount Bijster")]:
        types, share = covered(get_analyzer(off), text, value, off)
        assert share == 0.0, value


def test_adjacent_spans_join_into_one_value():
    """Same type across blanks; an address with the place, postcode or street-name parts next to it."""
    from privtext.pii.detect import Span
    from privtext.pii.refine import join_adjacent

    def spans(text, *parts):
        out, pos = [], 0
        for value, kind in parts:
            start = text.index(value, pos)
            out.append(Span(kind, start, start + len(value), 0.8, "PII", value))
            pos = start + len(value)
        return out

    def joined(text, *parts):
        return [(s.entity_type, text[s.start:s.end]) for s in join_adjacent(spans(text, *parts), text)]

    text = "Capital Gearing Trust plc"
    assert joined(text, ("Capital Gearing", "ORGANIZATION"), ("Trust plc", "ORGANIZATION")) == [("ORGANIZATION", text)]
    two = "Anna Berg\nOle Hansen"
    assert joined(two, ("Anna Berg", "PERSON"), ("Ole Hansen", "PERSON")) == [("PERSON", "Anna Berg"),
                                                                              ("PERSON", "Ole Hansen")]
    block = "12 Rue du Niger, Spodnja Idrija,\nSlovenia 4000"
    assert joined(block, ("12 Rue du Niger", "STREET_ADDRESS"), ("Spodnja Idrija", "LOCATION"),
                  ("Slovenia", "LOCATION"), ("4000", "ZIP_CODE")) == [("STREET_ADDRESS", block)]
    for letter in ("Anna Berg\n12 Main Street", "Dr. Anna Berg Suite 5"):  # a name next to an address stays a name
        name, address = letter.split("\n") if "\n" in letter else ("Dr. Anna Berg", "Suite 5")
        assert joined(letter, (name, "PERSON"), (address, "STREET_ADDRESS")) == [
            ("PERSON", name), ("STREET_ADDRESS", address)]
    apart = "Anna Berg and Acme Ltd"
    assert len(joined(apart, ("Anna Berg", "PERSON"), ("Acme Ltd", "ORGANIZATION"))) == 2
