"""Canary recall per form: the shipped detector (conf/base.yaml's ``pii`` settings, ``detect_many``, no Spark)
on canaries planted in ASCII, full width, other digit systems and other scripts (``privtext.pii.canaries``).

Two draws: ``all`` plants every configured type with a generator (as a night does); ``person`` plants only
names, so each of the eight scripts gets enough values to read. Prints ``name: value`` lines: values and span
recall per form, the overall, and each (form, type) below recall 1. Only counts and rates are printed.

    .venv/bin/python benchmarks/export/canary_forms.py [n_all] [n_person] [seed]
"""
from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from privtext.pii.canaries import make_canaries, score  # noqa: E402
from privtext.pii.detect import detect_many, get_analyzer  # noqa: E402
from privtext.settings import load_settings  # noqa: E402


def main(n_all: int = 300, n_person: int = 200, seed: int = 1) -> None:
    settings = load_settings().pii
    analyzer = get_analyzer(settings)
    for name, types, n in (("all", settings.detected_entities(), n_all), ("person", ["PERSON"], n_person)):
        canaries = make_canaries(types, n, seed=seed)
        start = time.perf_counter()
        spans = detect_many(analyzer, [c.text for c in canaries], settings)
        result = score(canaries, {c.doc_id: [(s.start, s.end) for s in ss] for c, ss in zip(canaries, spans)})
        print(f"{name}.canaries: {n}\n{name}.detect_s: {time.perf_counter() - start:.1f}")
        print(f"{name}.overall.values: {result['overall']['values']}\n"
              f"{name}.overall.recall: {result['overall']['recall']:.3f}")
        for form, v in result["by_form"].items():
            print(f"{name}.{form}.values: {v['values']}\n{name}.{form}.recall: {v['recall']:.3f}")
            for etype, t in v["by_type"].items():
                if t["recall"] < 1:
                    print(f"{name}.{form}.{etype}.recall: {t['recall']:.3f} (of {t['values']})")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
