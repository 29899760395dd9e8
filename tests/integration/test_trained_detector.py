"""The trained NER end to end: trained (one layer, a few CPU seconds, into a temp cache) on a small
CoNLL file and the project's synthetic sentences, then loaded by detect_pii's Spark workers, it finds
a lower-case name in a tweet-like message that the rule/gazetteer/spaCy ensemble misses."""
from __future__ import annotations

import pytest

from privtext.pii.detect import detect_spans, get_analyzer
from privtext.pii.tagger import ensure_trained
from privtext.platform.context import RunContext
from privtext.platform.tables import DOCUMENTS, PII_SPANS
from privtext.stages.runner import run_stage
from tests_support import document, write_rows

NIGHT = "2026-05-01"
TEXT = "omg can someone tell maddison to call me back"  # shaped like a template, with a name not in it
NAME = "maddison"
SMALL = {"layers": 1, "synthetic_sentences": 800, "epochs": 4, "learning_rate": 3e-4, "threads": 1}
TWEETS = "\n\n".join(f"met\tO\n{name}\tB-person\ntoday\tO" for name in ("jake", "olivia", "noah", "mia"))


@pytest.fixture(scope="module")
def trained_settings(tmp_path_factory):
    from conftest import make_settings

    root = tmp_path_factory.mktemp("trained")
    (root / "tweets.conll").write_text(TWEETS, encoding="utf-8")
    settings = make_settings(root / "lake", pii={"detector": {**SMALL, "cache_dir": str(root / "cache"),
                                                              "train_data": str(root / "tweets.conll")},
                                                  "canaries": {"count": 0}})
    ensure_trained(settings.pii.detector)
    return settings


def test_rules_alone_miss_the_lower_case_name(trained_settings):
    pii = trained_settings.pii
    rules = pii.model_copy(update={"recognizers": pii.recognizers.model_copy(update={"trained_ner": False})})
    spans = detect_spans(get_analyzer(rules), TEXT, rules)
    assert not any(s.start <= TEXT.index(NAME) < s.end for s in spans)


def test_detect_pii_workers_find_it_with_the_trained_detector(trained_settings):
    ctx = RunContext.create(trained_settings, date=NIGHT)
    write_rows(ctx, DOCUMENTS, [document("t1", TEXT, NIGHT, user_id="u")], {"ingest_date": [NIGHT]})
    run_stage("detect_pii", trained_settings, date=NIGHT)
    spans = [(r["entity_type"], r["start"], r["end"]) for r in ctx.lakehouse.read(PII_SPANS).collect()]
    start = TEXT.index(NAME)
    assert ("PERSON", start, start + len(NAME)) in spans
