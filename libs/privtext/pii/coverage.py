"""What a sanitizer needs from detection, measured on generated suites: span recall, character coverage
and precision, per gold type (``privtext eval pii --suite presidio|sample``).

* span recall: a gold value overlapped by any detected span (of any type: the sanitizer replaces it);
* character coverage: the share of gold characters inside detected spans -- the rest is published verbatim;
* precision: detected spans overlapping some gold value (unannotated text makes the rest false positives).

Suites (both synthetic, generated here; no private data): ``presidio`` is Presidio's own benchmark
generator (``presidio-evaluator``'s ``PresidioSentenceFaker`` and its templates, as shipped), ``sample``
the project's sample corpus with its planted values (``privtext.sample_data``).
"""
from __future__ import annotations

from dataclasses import dataclass

from privtext.pii.detect import detect_many, get_analyzer
from privtext.pii.settings import PiiSettings

SUITES = ("presidio", "sample")


@dataclass(frozen=True)
class Annotated:
    text: str
    gold: tuple[tuple[int, int, str], ...]  # (start, end, gold type)


def suite(name: str, n: int, seed: int) -> list[Annotated]:
    """``n`` annotated texts of suite ``name`` drawn with ``seed``."""
    if name == "presidio":
        from presidio_evaluator.data_generator import PresidioSentenceFaker

        faker = PresidioSentenceFaker("en_US", lower_case_ratio=0.05, random_seed=seed)
        return [Annotated(s.full_text, tuple((sp.start_position, sp.end_position, sp.entity_type) for sp in s.spans))
                for s in faker.generate_new_fake_sentences(n)]
    if name == "sample":
        from privtext.sample_data import generate

        return [Annotated(r["text"], tuple((s, e, t) for s, e, _, t in r["planted"]))
                for r in generate(n, seed, with_planted=True)]
    raise ValueError(f"unknown suite {name!r}; allowed: {', '.join(SUITES)}")


def measure(docs: list[Annotated], settings: PiiSettings) -> dict:
    """Per gold type and overall: values, span recall, character coverage; overall precision."""
    detected = detect_many(get_analyzer(settings), [d.text for d in docs], settings)
    per_type: dict[str, list[int]] = {}
    predicted = correct = 0
    for doc, spans in zip(docs, detected):
        ranges = [(s.start, s.end) for s in spans]
        for start, end, etype in doc.gold:
            stats = per_type.setdefault(etype, [0, 0, 0, 0])  # values, hits, chars, covered chars
            stats[0] += 1
            stats[1] += any(s < end and start < e for s, e in ranges)
            stats[2] += end - start
            stats[3] += sum(1 for c in range(start, end) if any(s <= c < e for s, e in ranges))
        predicted += len(ranges)
        correct += sum(1 for s, e in ranges if any(s < ge and gs < e for gs, ge, _ in doc.gold))
    totals = [sum(v[k] for v in per_type.values()) for k in range(4)]
    rates = lambda v: {"values": v[0], "recall": v[1] / v[0] if v[0] else 0.0,  # noqa: E731
                       "coverage": v[3] / v[2] if v[2] else 0.0}
    return {"overall": {**rates(totals), "precision": correct / predicted if predicted else 0.0,
                        "predicted": predicted},
            "by_type": {t: rates(v) for t, v in sorted(per_type.items())}}


def format_measure(result: dict) -> list[str]:
    """``name: value`` lines (counts and rates only)."""
    overall = result["overall"]
    lines = [f"overall_{k}: {v:.3f}" if isinstance(v, float) else f"overall_{k}: {v}" for k, v in overall.items()]
    for etype, v in result["by_type"].items():
        lines += [f"{etype}_values: {v['values']}", f"{etype}_recall: {v['recall']:.3f}",
                  f"{etype}_coverage: {v['coverage']:.3f}"]
    return lines
