"""The export's downstream-accuracy metric against expectations that do not depend on the classifier's internals."""
import random

import pytest
from hypothesis import given, settings, strategies as st

from privtext.metrics.export_utility import classifier_accuracy, downstream_accuracy, is_test

POSITIVE = ("wonderful", "moving", "brilliant", "delightful")
NEGATIVE = ("dreadful", "boring", "clumsy", "tedious")
NAMES = ("Ann Lee", "Bob Ray", "Cho Kim", "Dan Orr", "Eva Moe", "Fay Tam")


def _corpus(n: int, seed: int, share_positive: float = 0.65):
    """Sentiment carried by one word; a name planted in each text, unrelated to the label."""
    rng = random.Random(seed)
    texts, labels = [], []
    for _ in range(n):
        positive = rng.random() < share_positive
        texts.append(f"A {rng.choice(POSITIVE if positive else NEGATIVE)} film, said {rng.choice(NAMES)}.")
        labels.append("pos" if positive else "neg")
    return texts, labels


def _split(n: int) -> list[bool]:
    return [is_test(f"d{i:05d}", 0.3) for i in range(n)]


def test_identity_sanitization_loses_nothing_and_the_words_carry_the_label():
    texts, labels = _corpus(400, seed=1)
    result = downstream_accuracy(texts, list(texts), labels, _split(400))
    assert result["accuracy_gap"] == 0.0
    assert result["original_train_accuracy"] == 1.0  # one word decides the label: separable
    assert result["train_documents"] + result["test_documents"] == 400


def test_blanking_every_word_drops_to_the_majority_label():
    texts, labels = _corpus(400, seed=2)
    test = _split(400)
    held = [y for y, t in zip(labels, test) if t]
    train = [y for y, t in zip(labels, test) if not t]
    majority = max(set(train), key=train.count)
    expected = sum(y == majority for y in held) / len(held)
    for blank in ("", "[PERSON]"):  # nothing left, or one token every text shares
        result = downstream_accuracy(texts, [" ".join(blank for _ in t.split()) for t in texts], labels, test)
        assert result["sanitized_train_accuracy"] == pytest.approx(expected)
        assert result["majority_label_accuracy"] == pytest.approx(expected)
        assert result["accuracy_gap"] == pytest.approx(1.0 - expected)


def test_replacing_a_label_carrying_name_costs_what_the_name_carried():
    """Label decided by the name only: replacing each name with a random one (what CluSanT does at a small
    eps) leaves the classifier at the majority label; replacing it with a name of the same label keeps it."""
    rng = random.Random(3)
    names = {"pos": NAMES[:3], "neg": NAMES[3:]}
    labels = ["pos" if rng.random() < 0.65 else "neg" for _ in range(600)]
    texts = [f"Seen by {rng.choice(names[y])} yesterday." for y in labels]
    randomized = [f"Seen by {rng.choice(NAMES)} yesterday." for _ in labels]
    test = _split(600)
    base = downstream_accuracy(texts, randomized, labels, test)
    assert base["original_train_accuracy"] == 1.0
    # a random name carries no label: within 3 standard errors of the majority label's accuracy
    n_test = base["test_documents"]
    assert abs(base["sanitized_train_accuracy"] - base["majority_label_accuracy"]) < 3 * (0.25 / n_test) ** 0.5 + 0.02
    assert base["accuracy_gap"] > 0.25


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="parallel lists"):
        downstream_accuracy(["a"], [], ["x"], [True])
    assert classifier_accuracy(["a b"], ["x"], ["a b", "c"], ["x", "y"]) == 0.5  # one label: the constant guess


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=0, max_size=40), st.sampled_from(["a", "b", "c"])), min_size=4, max_size=30))
def test_any_unicode_text_identity_has_no_gap_and_accuracies_are_shares(rows):
    texts, labels = [t for t, _ in rows], [y for _, y in rows]
    test = [i % 3 == 0 for i in range(len(rows))]
    result = downstream_accuracy(texts, list(texts), labels, test)
    assert result["accuracy_gap"] == 0.0
    n_test = sum(test)
    for key in ("original_train_accuracy", "sanitized_train_accuracy", "majority_label_accuracy"):
        assert 0.0 <= result[key] <= 1.0 and (result[key] * n_test) == pytest.approx(round(result[key] * n_test))
