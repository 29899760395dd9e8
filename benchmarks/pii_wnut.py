"""PII detection quality and speed on WNUT-2016 tweets (real, human-labelled NER; treated as private).

Gold labels are mapped to Presidio types: person -> PERSON, geo-loc -> LOCATION,
company -> ORGANIZATION; the other WNUT types (facility, product, musicartist, movie, sportsteam,
tvshow, other) are not evaluated, so a prediction landing on them counts as a false positive.
Text is rebuilt by joining the tokens with single spaces (the data README's convention).

Per type it prints precision / recall / F1 under two matching rules: ``exact`` (same type and same
character offsets) and ``overlap`` (same type, at least one shared character; each gold and each
prediction matched at most once). Speed is docs/second of ``detect_many`` (spaCy pipe + Presidio),
once with the three evaluated types and once with the default entity list. Only counts are printed.

    .venv/bin/python benchmarks/pii_wnut.py [path/to/wnut16_tweets.conll]
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from privtext.pii.detect import detect_many, get_analyzer  # noqa: E402
from privtext.pii.settings import PiiSettings  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ner" / "wnut16_tweets.conll"
GOLD_MAP = {"person": "PERSON", "geo-loc": "LOCATION", "company": "ORGANIZATION"}
TYPES = list(GOLD_MAP.values())


def read_conll(path: Path) -> list[tuple[str, list[tuple[str, int, int]]]]:
    """(text, gold spans (type, start, end)) per tweet; spans only of the mapped types."""
    docs, tokens, tags = [], [], []
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if line.strip():
            token, tag = line.rsplit("\t", 1)
            tokens.append(token)
            tags.append(tag.strip())
            continue
        if tokens:
            docs.append(_to_spans(tokens, tags))
            tokens, tags = [], []
    return docs


def _to_spans(tokens: list[str], tags: list[str]) -> tuple[str, list[tuple[str, int, int]]]:
    spans, offset, current = [], 0, None
    for token, tag in zip(tokens, tags):
        start, end = offset, offset + len(token)
        offset = end + 1
        kind = tag[2:] if tag[:2] in ("B-", "I-") else None
        if tag.startswith("I-") and current and current[0] == kind:
            current[2] = end
            continue
        if current:
            spans.append(tuple(current))
        current = [kind, start, end] if kind else None
    if current:
        spans.append(tuple(current))
    text = " ".join(tokens)
    return text, [(GOLD_MAP[k], s, e) for k, s, e in spans if k in GOLD_MAP]


def score(gold: list[set], pred: list[set], etype: str, overlap: bool) -> tuple[int, int, int]:
    """(true positives, number predicted, number gold) of one type over all documents."""
    tp = n_pred = n_gold = 0
    for g_doc, p_doc in zip(gold, pred):
        g = sorted((s, e) for t, s, e in g_doc if t == etype)
        p = sorted((s, e) for t, s, e in p_doc if t == etype)
        n_gold, n_pred = n_gold + len(g), n_pred + len(p)
        if not overlap:
            tp += len(set(g) & set(p))
            continue
        used = set()
        for ps, pe in p:
            hit = next((i for i, (gs, ge) in enumerate(g) if i not in used and gs < pe and ps < ge), None)
            if hit is not None:
                used.add(hit)
                tp += 1
    return tp, n_pred, n_gold


def prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def timed_detect(texts: list[str], settings: PiiSettings):
    analyzer = get_analyzer(settings)
    detect_many(analyzer, texts[:20], settings)  # warm-up
    start = time.perf_counter()
    spans = detect_many(analyzer, texts, settings)
    return spans, len(texts) / (time.perf_counter() - start)


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    docs = read_conll(path)
    texts = [t for t, _ in docs]
    gold = [set(g) for _, g in docs]
    settings = PiiSettings(entities=TYPES)
    spans, docs_per_s = timed_detect(texts, settings)
    pred = [{(s.entity_type, s.start, s.end) for s in doc} for doc in spans]
    print(f"docs: {len(docs)}")
    print(f"gold_entities: {sum(len(g) for g in gold)}")
    for rule in ("exact", "overlap"):
        totals = [0, 0, 0]
        for etype in TYPES:
            counts = score(gold, pred, etype, overlap=rule == "overlap")
            totals = [a + b for a, b in zip(totals, counts)]
            p, r, f = prf(*counts)
            print(f"{rule}_{etype}_gold: {counts[2]}")
            print(f"{rule}_{etype}_precision: {p:.3f}")
            print(f"{rule}_{etype}_recall: {r:.3f}")
            print(f"{rule}_{etype}_f1: {f:.3f}")
        p, r, f = prf(*totals)
        print(f"{rule}_micro_precision: {p:.3f}")
        print(f"{rule}_micro_recall: {r:.3f}")
        print(f"{rule}_micro_f1: {f:.3f}")
    print(f"docs_per_second_3_types: {docs_per_s:.1f}")
    _, docs_per_s_all = timed_detect(texts, PiiSettings())
    print(f"docs_per_second_default_entities: {docs_per_s_all:.1f}")


if __name__ == "__main__":
    main()
