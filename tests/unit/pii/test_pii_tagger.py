"""The trained NER: BIO encoding, the Presidio recognizer around the model (a fake model here), the
disjoint WNUT parts, the missing-weights fallback, and reproducible training on a tiny dataset."""
from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings, strategies as st

from privtext.pii import tagger
from privtext.pii.conll import part, read_conll
from privtext.pii.detect import _build_analyzer, detect_many
from privtext.pii.recognizers import TrainedNerRecognizer, build
from privtext.pii.settings import DetectorSettings, PiiSettings
from privtext.pii.tagger_data import synthetic_examples, training_examples, wnut_examples


def test_token_labels_and_decode_round_trip():
    text = "ask jo anne smith at acme corp"
    spans = ((4, 17, "PERSON"), (21, 30, "ORGANIZATION"))
    # word-piece-like offsets: "anne" split in two pieces, specials at both ends
    offsets = [(0, 0), (0, 3), (4, 6), (7, 9), (9, 11), (12, 17), (18, 20), (21, 25), (26, 30), (0, 0)]
    labels = tagger.token_labels(offsets, spans)
    assert [tagger.LABELS[i] if i >= 0 else None for i in labels] == [
        None, "O", "B-PERSON", "I-PERSON", "I-PERSON", "I-PERSON", "O", "B-ORGANIZATION", "I-ORGANIZATION", None]
    probs = [1.0, 0.9, 0.8, 0.6, 0.6, 0.6, 0.9, 0.7, 0.9, 1.0]
    decoded = tagger.decode(text, offsets, [max(i, 0) for i in labels], probs)
    assert [(s, e, t) for s, e, t, _ in decoded] == list(spans)
    assert decoded[0][3] == pytest.approx((0.8 + 0.6 * 3) / 4)


def test_decode_gives_a_word_one_span_typed_by_its_first_piece():
    labels = [tagger.LABELS.index(t) for t in ("B-PERSON", "B-ORGANIZATION", "I-LOCATION")]
    assert [s[:3] for s in tagger.decode("maddison", [(0, 3), (3, 5), (5, 8)], labels, [0.9, 0.5, 0.4])] == [
        (0, 8, "PERSON")]


def test_decode_widens_a_partly_labelled_word():
    text = "hi mcallister"
    # only the second word piece is labelled: the span grows to the whole word
    assert tagger.decode(text, [(3, 5), (5, 13)], [0, tagger.LABELS.index("B-PERSON")], [0.9, 0.8]) == [
        (3, 13, "PERSON", 0.8)]


class FakeModel:
    """Labels every occurrence of known words; records how it was called."""

    def __init__(self, words: dict[str, tuple[str, float]]):
        self.words, self.calls = words, []

    def predict(self, texts):
        self.calls.append(list(texts))
        out = []
        for text in texts:
            spans = [(text.index(w), text.index(w) + len(w), kind, conf) for w, (kind, conf) in self.words.items()
                     if w in text]
            out.append(sorted(spans))
        return out


def test_recognizer_filters_by_entity_and_confidence_and_hides_other():
    model = FakeModel({"zoe": ("PERSON", 0.9), "bloop": ("OTHER", 0.99), "maybe": ("LOCATION", 0.3)})
    recognizer = TrainedNerRecognizer(model, score=0.7, min_confidence=0.5)
    text = "zoe likes bloop maybe"
    results = recognizer.analyze(text, ["PERSON", "LOCATION", "ORGANIZATION"])
    assert [(r.entity_type, text[r.start:r.end], r.score) for r in results] == [("PERSON", "zoe", 0.7)]
    assert recognizer.analyze(text, ["LOCATION"]) == []


def test_detect_many_labels_all_windows_in_one_model_pass():
    settings = PiiSettings(recognizers={"trained_ner": False})
    analyzer = _build_analyzer(settings)  # a private analyzer: the process cache is left alone
    model = FakeModel({"zoe": ("PERSON", 0.9)})
    analyzer.registry.add_recognizer(TrainedNerRecognizer(model, score=0.7, min_confidence=0.5))
    texts = ["the parcel is late, ask zoe", "nothing here", "zoe again"]
    found = detect_many(analyzer, texts, settings)
    assert model.calls == [texts]
    assert [[(s.entity_type, t[s.start:s.end]) for s in spans if s.entity_type == "PERSON"]
            for t, spans in zip(texts, found)] == [[("PERSON", "zoe")], [], [("PERSON", "zoe")]]


def test_missing_weights_fall_back_with_a_warning(tmp_path, caplog):
    settings = PiiSettings(detector={"cache_dir": str(tmp_path / "empty"), "synthetic_sentences": 10,
                                     "train_data": str(tmp_path / "absent.conll")})
    with caplog.at_level(logging.WARNING):
        recognizers = build(settings)
    assert not any(isinstance(r, TrainedNerRecognizer) for r in recognizers)
    assert recognizers  # the rule recognizers are still there
    assert "privtext train detector" in caplog.text


def _tiny_conll(path, tweets: int) -> str:
    lines = []
    for i in range(tweets):
        lines += ["hey\tO", f"name{i}\tB-person", "in\tO", f"town{i}\tB-geo-loc", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return str(path)


def test_wnut_parts_are_disjoint_and_training_reads_only_train(tmp_path):
    data = _tiny_conll(tmp_path / "t.conll", 9)
    docs = read_conll(data)
    test, train = part(docs, "test"), part(docs, "train")
    assert len(test) == 3 and len(train) == 6 and not {d.text for d in test} & {d.text for d in train}
    assert [e.text for e in wnut_examples(data)] == [d.text for d in train]


def test_synthetic_examples_are_seeded_and_offsets_valid():
    a, b, c = synthetic_examples(60, 1), synthetic_examples(60, 1), synthetic_examples(60, 2)
    assert a == b and a != c
    assert all(0 <= s < e <= len(ex.text) and ex.text[s:e].strip() == ex.text[s:e] for ex in a for s, e, _ in ex.spans)
    assert any(ex.text == ex.text.lower() and ex.spans for ex in a)  # lower-cased names are in the mix


def test_training_is_reproducible(tmp_path):
    data = _tiny_conll(tmp_path / "t.conll", 12)
    settings = DetectorSettings(layers=1, synthetic_sentences=8, epochs=1, batch_size=8, max_length=32, threads=1,
                                train_data=data, cache_dir=str(tmp_path / "cache"))
    first, _, trained = tagger.ensure_trained(settings)
    assert trained
    manifest_a = (first / tagger.MANIFEST).read_text()
    weights_a = tagger.weights_hash(first)
    examples, sources = training_examples(settings.train_data, settings.synthetic_sentences, settings.seed)
    again = tagger.train(examples, settings, tmp_path / "again", sources)
    assert again["weights_sha256"] == weights_a and weights_a in manifest_a
    # only the word-embedding rows of tokens in the training data (and padding) change; every other row is the base's
    from safetensors.torch import load_file

    name = "bert.embeddings.word_embeddings.weight"
    trained = load_file(first / "model.safetensors")[name]
    base = load_file(str(tagger.Path(tagger.base_model_path(settings.base_model)) / "model.safetensors"))
    base = base.get(name, base.get("embeddings.word_embeddings.weight"))
    tokenizer = __import__("transformers").AutoTokenizer.from_pretrained(first)
    used = sorted({i for ex in examples for i in tokenizer(ex.text, truncation=True, max_length=32)["input_ids"]}
                  | {tokenizer.pad_token_id})  # the padding row: no gradient, but AdamW's weight decay
    unused = sorted(set(range(base.shape[0])) - set(used))
    assert (trained[unused] == base[unused]).all() and not (trained[used] == base[used]).all()
    other = settings.model_copy(update={"seed": 14})
    assert tagger.ensure_trained(other)[0] != first
    assert tagger.weights_hash(tagger.ensure_trained(other)[0]) != weights_a
    assert tagger.ensure_trained(settings)[2] is False  # cached: not trained again


def test_caseless_spacy_spans_need_the_trained_ner_to_confirm_them():
    """spaCy's "FREE" (one upper-case word) and "nice pizza" (lower-case) are dropped unless the model labels a
    word of them; cased spans and types the model does not label are kept; the gazetteer's equal span of a
    caseless city survives (the filter runs inside spaCy's recognizer, before Presidio's deduplication)."""
    from presidio_analyzer import RecognizerResult

    from privtext.pii.recognizers import ConfirmedRecognizer, confirmed_by_trained_ner

    text = "FREE nice pizza at Mario Rossi in TAMPERE"

    class Spacy:  # stands in for spaCy's recognizer: reports fixed spans
        name, supported_entities, supported_language, context = "SpacyRecognizer", ["PERSON"], "en", []

        def analyze(self, text, entities, nlp_artifacts=None):
            return [RecognizerResult(kind, text.index(v), text.index(v) + len(v), 0.85) for v, kind in (
                ("FREE", "ORGANIZATION"), ("nice pizza", "ORGANIZATION"), ("Mario Rossi", "PERSON"),
                ("TAMPERE", "LOCATION"), ("FREE", "DATE_TIME"))]

    model = TrainedNerRecognizer(FakeModel({"pizza": ("OTHER", 0.2)}), 0.7, 0.5)
    wrapped = confirmed_by_trained_ner([Spacy(), model], ["SpacyRecognizer"])
    assert isinstance(wrapped[0], ConfirmedRecognizer) and wrapped[1] is model
    kept = [(text[r.start:r.end], r.entity_type) for r in wrapped[0].analyze(text, ["PERSON"])]
    assert kept == [("nice pizza", "ORGANIZATION"), ("Mario Rossi", "PERSON"), ("FREE", "DATE_TIME")]
    assert confirmed_by_trained_ner([Spacy()], ["SpacyRecognizer"])[0].name == "SpacyRecognizer"  # no model: as is
    assert not isinstance(confirmed_by_trained_ner([Spacy(), model], [])[0], ConfirmedRecognizer)
    # on the real analyzer the gazetteer's city is kept although spaCy's equal caseless span is not confirmed
    settings = PiiSettings(recognizers={"trained_ner": False})
    analyzer = _build_analyzer(settings)
    analyzer.registry.recognizers = confirmed_by_trained_ner(analyzer.registry.recognizers + [model],
                                                             ["SpacyRecognizer"])
    found = detect_many(analyzer, ["My friend lives in TAMPERE"], settings)[0]
    assert [(s.entity_type, s.start, s.end) for s in found] == [("LOCATION", 19, 26)]


def test_micro_batches_backpropagate_the_whole_batch_mean_loss():
    """``_accumulate`` over micro-batches of similar length gives the gradient of the model's own mean token
    loss over the batch padded as one (dropout off, so the two passes see the same network)."""
    import torch
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, num_labels=len(tagger.LABELS))
    model = BertForTokenClassification(config).eval()
    gen = torch.Generator().manual_seed(1)
    rows = []
    for length in (3, 9, 4, 12, 5):
        labels = torch.randint(0, len(tagger.LABELS), (length,), generator=gen).tolist()
        labels[0] = labels[-1] = tagger.IGNORE
        rows.append({"input_ids": torch.randint(1, 50, (length,), generator=gen).tolist(),
                     "attention_mask": [1] * length, "labels": labels})
    model(**tagger._pad(rows, 0)).loss.backward()
    whole = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    loss = tagger._accumulate(model, rows, 0, 2)
    assert loss == pytest.approx(float(model(**tagger._pad(rows, 0)).loss), rel=1e-5)
    for expected, param in zip(whole, model.parameters()):
        assert torch.allclose(param.grad, expected, atol=1e-6, rtol=1e-4)
    assert any(g.abs().sum() > 0 for g in whole)


def test_compact_renumbers_into_the_used_token_ids():
    encoded = [{"input_ids": [101, 7, 102], "labels": [0, 0, 0]},
               {"input_ids": [101, 30000, 7, 102], "labels": [0] * 4}]
    seen, compact, pad = tagger._compact(encoded, 0)
    assert seen == [0, 7, 101, 102, 30000] and pad == 0
    assert [[seen[i] for i in e["input_ids"]] for e in compact] == [e["input_ids"] for e in encoded]


def test_decoded_spans_leave_out_edge_punctuation_and_letterless_words():
    """A word piece of punctuation glued to a name joins its run but not its span ("Briay," -> "Briay"); a run
    over digits and dots (the real model's LOCATION "203.0.113.45") is no name, place or organisation."""
    text = "hi Briay, from 203.0.113.45 ok"
    offsets = [(0, 2), (3, 8), (8, 9), (10, 14), (15, 18), (18, 19), (19, 20), (20, 21), (21, 27), (28, 30)]
    b, i, o = (tagger.LABELS.index(t) for t in ("B-PERSON", "I-PERSON", "O"))
    loc, loc_i = tagger.LABELS.index("B-LOCATION"), tagger.LABELS.index("I-LOCATION")
    labels = [o, b, i, o, loc, loc_i, loc_i, loc_i, loc_i, o]
    decoded = tagger.decode(text, offsets, labels, [0.9] * len(offsets))
    assert [(text[s:e], t) for s, e, t, _ in decoded] == [("Briay", "PERSON")]


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40), st.lists(st.integers(0, len(tagger.LABELS) - 1), min_size=40, max_size=40))
def test_decoded_spans_start_and_end_on_a_letter_or_digit_and_hold_a_letter(text, labels):
    """Any text, any labels, one piece per character: every span lies in the text, starts and ends on a letter or
    digit, and holds a letter."""
    offsets = [(k, k + 1) for k in range(len(text))]
    for s, e, _, _ in tagger.decode(text, offsets, labels[:len(text)], [0.5] * len(text)):
        assert 0 <= s < e <= len(text) and text[s].isalnum() and text[e - 1].isalnum()
        assert any(c.isalpha() for c in text[s:e])


def test_a_trained_ner_place_over_a_postcode_or_an_ip_leaves_the_value_whole():
    """The real trained NER labelled "London SW1A" a place over the postcode "SW1A 1AA", and an IP address a place:
    on score (0.85 after the merge with spaCy's "London", against the postcode's 0.6) the place won and "1AA" stayed
    in the clear. With the model's spans (a fake model here) the values keep their own types, whole."""
    text = "Write to London SW1A 1AA from 203.0.113.45 please."
    model = TrainedNerRecognizer(FakeModel({"London SW1A": ("LOCATION", 0.9), "203.0.113.45": ("LOCATION", 0.9)}),
                                 0.7, 0.4)
    settings = PiiSettings(recognizers={"trained_ner": False})
    analyzer = _build_analyzer(settings)
    plain = {(s.entity_type, text[s.start:s.end]) for s in detect_many(analyzer, [text], settings)[0]}
    analyzer.registry.recognizers = analyzer.registry.recognizers + [model]
    found = {(s.entity_type, text[s.start:s.end]) for s in detect_many(analyzer, [text], settings)[0]}
    assert {("ZIP_CODE", "SW1A 1AA"), ("IP_ADDRESS", "203.0.113.45"), ("LOCATION", "London")} <= plain
    assert found == plain
