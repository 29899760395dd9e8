"""Which languages the name detection covers: recall of person names per Faker locale, in English mail text.

For each locale, ``n`` names (Faker's ``name()``, seeded) are written into English sentences of a mail (a
greeting, a sentence, a sign-off), and detected with conf/base.yaml's ``pii`` settings. A name counts as
found when spans (any type: the sanitizer replaces what is detected) cover every letter of it; ``partly`` when
some letter is covered. The detectors behind it: spaCy's English NER, the first-name gazetteer of 28
Latin-script locales (``gazetteers.NAME_LOCALES``), the trained NER (English tweets), and Greek or Cyrillic
phrases (``pii.recognizers.other_script_names``), and a run of words of a script without case (Han, Hangul,
Thai, Devanagari, Arabic, Hebrew, ...) in a text mostly in a cased script (``pii.structure``); nothing is
trained on other scripts. The names come from Faker; no detector uses a list of these scripts' names. The cost:
``word_detected_L``, the share of ordinary words of those scripts (Faker's lorem, no names) quoted in an
English sentence that are detected (and so replaced). Only rates.

    .venv/bin/python benchmarks/export/pii_name_languages.py [n per locale, default 60]
"""
from __future__ import annotations

import os
import random
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from privtext.pii.detect import detect_many, get_analyzer  # noqa: E402
from privtext.settings import load_settings  # noqa: E402

LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "pt_BR", "nl_NL", "pl_PL", "tr_TR", "cs_CZ",
           "ru_RU", "uk_UA", "el_GR", "ar_AA", "he_IL", "hi_IN", "zh_CN", "ja_JP", "ko_KR", "th_TH")
TEMPLATES = ("Hi {n},\n\nthe report is attached.\n", "I spoke with {n} about the invoice yesterday.",
             "Please forward this to {n} before Friday.", "Thanks,\n{n}\n", "Meeting notes from {n}: all good.")

WORD_LOCALES = ("ar_AA", "he_IL", "zh_CN", "ja_JP", "th_TH", "ru_RU", "el_GR")  # Faker has words in these scripts
WORD_TEMPLATES = ("The sign said {w} in big letters.", "Is {w} the right word here?", "We ordered {w} again.")


def main() -> None:
    from faker import Faker

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    settings = load_settings(None, environ={}).pii
    analyzer = get_analyzer(settings)
    rng = random.Random(7)
    for locale in LOCALES:
        fake = Faker(locale)
        fake.seed_instance(7)
        names = [fake.name() for _ in range(n)]
        texts = [rng.choice(TEMPLATES).format(n=name) for name in names]
        found = detect_many(analyzer, texts, settings)
        whole = partly = 0
        for text, name, spans in zip(texts, names, found):
            start = text.index(name)
            letters = [i for i in range(start, start + len(name)) if text[i].isalnum()]
            covered = sum(any(s.start <= i < s.end for s in spans) for i in letters)
            whole += covered == len(letters)
            partly += 0 < covered < len(letters)
        print(f"name_recall_{locale}: {whole / n:.3f}")
        print(f"name_partly_{locale}: {partly / n:.3f}")
    # the cost: ordinary words (Faker's lorem of the locale, not names) of these scripts quoted in English text
    for locale in WORD_LOCALES:
        fake = Faker(locale)
        fake.seed_instance(7)
        words = [" ".join(fake.words(rng.randint(1, 2))) for _ in range(n)]
        texts = [rng.choice(WORD_TEMPLATES).format(w=w) for w in words]
        found = detect_many(analyzer, texts, settings)
        hit = sum(any(s.start < text.index(w) + len(w) and text.index(w) < s.end for s in spans)
                  for text, w, spans in zip(texts, words, found))
        print(f"word_detected_{locale}: {hit / n:.3f}")


if __name__ == "__main__":
    main()
