"""PII detection: cost per 1,000 characters and peak memory, the shipped detector beside Presidio's defaults.

Side by side in one run, one process (one core; spaCy runs single-threaded), on the same documents:
``presidio`` is Presidio's own default ``AnalyzerEngine`` (its predefined recognizer registry, ``analyze`` per
document, as Presidio's docs use it) over the same spaCy model (Presidio's default configuration names
en_core_web_lg, which privtext does not ship; the e-mail recognizer is the offline one, so tldextract reads its
bundled suffix list); ``defaults`` is ``detect_many`` with every ``pii.recognizers`` switch off, no
name/address widening and no census-name pattern; ``rules`` is conf/base.yaml without the trained NER
(``pii.recognizers.trained_ner`` off); ``shipped`` is conf/base.yaml as is (the trained NER's weights must be
cached: ``privtext train detector``; without them ``shipped`` equals ``rules``). Corpora: ``sample`` (support
messages, ``privtext.sample_data``), ``presidio`` (presidio-evaluator's generator), ``mail`` and ``chat`` (the
real-text fixtures, ``tests/fixtures/realtext``: generated e-mails with headers, quotes and signatures; real
chats). Quality is ``privtext.pii.coverage``'s recall, character coverage and precision on the presidio suite.
Peak RSS is each configuration's alone, in a fresh Python process (one Spark Python worker holds one
analyzer): ``ru_maxrss`` after building it and detecting every corpus. Only counts and rates are printed.

    .venv/bin/python benchmarks/export/pii_throughput.py [n_docs]
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.fixtures.realtext
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from privtext.pii.coverage import measure, suite  # noqa: E402
from privtext.pii.detect import LANGUAGE, detect_many, get_analyzer  # noqa: E402
from privtext.settings import load_settings  # noqa: E402

_PRESIDIO_DEFAULT_TYPES = {"PERSON", "NRP", "LOCATION", "ORGANIZATION", "DATE_TIME", "EMAIL_ADDRESS", "PHONE_NUMBER",
                           "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "URL"}
CONFIGS = ("presidio", "defaults", "rules", "shipped")


def configs() -> dict:
    shipped = load_settings(None, environ={}).pii
    switches = shipped.recognizers.model_copy(update={k: False for k in type(shipped.recognizers).model_fields})
    defaults = shipped.model_copy(update={"recognizers": switches, "census_first_names": 0, "widen_names": False,
                                          "widen_addresses": False, "entities": [
                                              e for e in shipped.entities if e in _PRESIDIO_DEFAULT_TYPES]})
    rules = shipped.model_copy(update={"recognizers": shipped.recognizers.model_copy(update={"trained_ner": False})})
    return {"presidio": shipped, "defaults": defaults, "rules": rules, "shipped": shipped}


def presidio_default_engine(settings):
    """Presidio's ``AnalyzerEngine`` with its own predefined recognizers, over the project's spaCy model."""
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import SpacyNlpEngine

    from privtext.pii.detect import _load_spacy, _offline_email_recognizer

    nlp_engine = SpacyNlpEngine(models=[{"lang_code": LANGUAGE, "model_name": settings.spacy_model}])
    nlp_engine.nlp = {LANGUAGE: _load_spacy(settings.spacy_model)}
    registry = RecognizerRegistry(supported_languages=[LANGUAGE])
    registry.load_predefined_recognizers(languages=[LANGUAGE], nlp_engine=nlp_engine)
    registry.remove_recognizer("EmailRecognizer")
    registry.add_recognizer(_offline_email_recognizer())
    return AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=[LANGUAGE])


def detector(name: str, settings):
    """A function texts -> spans of configuration ``name``."""
    if name == "presidio":
        engine = presidio_default_engine(settings)
        return lambda texts: [engine.analyze(text=t, language=LANGUAGE) for t in texts]
    analyzer = get_analyzer(settings)
    return lambda texts: detect_many(analyzer, texts, settings)


def corpora(n: int) -> dict[str, list[str]]:
    from tests.fixtures.realtext import generate

    docs, _ = generate(mail=n, chat=n // 2, seed=1)
    return {"sample": [d.text for d in suite("sample", n, 7)], "presidio": [d.text for d in suite("presidio", n, 42)],
            "mail": [d["text"] for d in docs if d["kind"] == "mail"],
            "chat": [d["text"] for d in docs if d["kind"] == "chat"]}


def ms_per_1000_chars(detect, texts: list[str]) -> float:
    detect(texts[:20])  # warm-up: spaCy, regex and gazetteer caches
    start = time.perf_counter()
    detect(texts)
    return 1000 * (time.perf_counter() - start) / (sum(map(len, texts)) / 1000)


def peak_rss(name: str, n: int) -> None:
    """In a fresh process: build configuration ``name``, detect every corpus, print ru_maxrss."""
    texts = corpora(n)
    detect = detector(name, configs()[name])
    for docs in texts.values():
        detect(docs)
    print(f"{name}_peak_rss_mib: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")


def main() -> None:
    if sys.argv[1:2] == ["--rss"]:
        peak_rss(sys.argv[2], int(sys.argv[3]))
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    texts = corpora(n)
    print(f"docs: {n}")
    for corpus, docs in texts.items():
        print(f"{corpus}_docs: {len(docs)}")
        print(f"{corpus}_mean_chars: {sum(map(len, docs)) / len(docs):.0f}")
    cost = {}
    for name, settings in configs().items():
        detect = detector(name, settings)
        for corpus, docs in texts.items():
            cost[name, corpus] = ms_per_1000_chars(detect, docs)
            print(f"{name}_{corpus}_ms_per_1000_chars: {cost[name, corpus]:.2f}")
        if name != "presidio":
            quality = measure(suite("presidio", n, 42), settings)["overall"]
            for key in ("recall", "coverage", "precision"):
                print(f"{name}_presidio_{key}: {quality[key]:.3f}")
    for corpus in texts:
        for base in ("presidio", "defaults", "rules"):
            print(f"cost_ratio_shipped_vs_{base}_{corpus}: {cost['shipped', corpus] / cost[base, corpus]:.2f}")
    for name in ("presidio", "shipped"):
        out = subprocess.run([sys.executable, __file__, "--rss", name, str(n)], capture_output=True, text=True,
                             check=True)
        print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
