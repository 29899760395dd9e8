"""PII detection: documents/second per core and what it buys, the shipped detector beside Presidio's defaults.

Side by side in one run, one process (one core; spaCy runs single-threaded):
``defaults`` is Presidio's predefined recognizers over spaCy with every ``pii.recognizers`` switch off,
no name/address widening and no census-name pattern; ``rules`` is conf/base.yaml without the trained NER
(``pii.recognizers.trained_ner`` off: the ensemble before it); ``shipped`` is conf/base.yaml as is (the
trained NER's weights must be cached: ``privtext train detector``). Texts: the
sample corpus (support messages, ``privtext.sample_data``) and presidio-evaluator's generator
(``privtext eval pii --suite presidio``); both synthetic. Quality is ``privtext.pii.coverage``'s recall,
character coverage and precision on the presidio suite. Only counts and rates are printed.

    .venv/bin/python benchmarks/pii_throughput.py [n_docs]
"""
from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from privtext.pii.coverage import measure, suite  # noqa: E402
from privtext.pii.detect import detect_many, get_analyzer  # noqa: E402
from privtext.settings import load_settings  # noqa: E402


_PRESIDIO_DEFAULT_TYPES = {"PERSON", "NRP", "LOCATION", "ORGANIZATION", "DATE_TIME", "EMAIL_ADDRESS", "PHONE_NUMBER",
                           "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "URL"}


def docs_per_second(texts: list[str], settings) -> float:
    analyzer = get_analyzer(settings)
    detect_many(analyzer, texts[:20], settings)  # warm-up: spaCy, regex and gazetteer caches
    start = time.perf_counter()
    detect_many(analyzer, texts, settings)
    return len(texts) / (time.perf_counter() - start)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    shipped = load_settings(None, environ={}).pii
    switches = shipped.recognizers.model_copy(update={k: False for k in type(shipped.recognizers).model_fields})
    defaults = shipped.model_copy(update={"recognizers": switches, "census_first_names": 0, "widen_names": False,
                                          "widen_addresses": False, "entities": [
                                              e for e in shipped.entities if e in _PRESIDIO_DEFAULT_TYPES]})
    rules = shipped.model_copy(update={"recognizers": shipped.recognizers.model_copy(update={"trained_ner": False})})
    corpora = {"sample": suite("sample", n, 7), "presidio": suite("presidio", n, 42)}
    print(f"docs: {n}")
    speed = {}
    for name, settings in (("defaults", defaults), ("rules", rules), ("shipped", shipped)):
        for corpus, docs in corpora.items():
            speed[name, corpus] = docs_per_second([d.text for d in docs], settings)
            print(f"{name}_{corpus}_docs_per_second_per_core: {speed[name, corpus]:.1f}")
        quality = measure(corpora["presidio"], settings)["overall"]
        for key in ("recall", "coverage", "precision"):
            print(f"{name}_presidio_{key}: {quality[key]:.3f}")
    for corpus in corpora:
        for base in ("defaults", "rules"):
            print(f"cost_ratio_shipped_vs_{base}_{corpus}: {speed[base, corpus] / speed['shipped', corpus]:.2f}")


if __name__ == "__main__":
    main()
