"""The trained NER's epochs (``tagger.epoch_rows``): every sentence with an entity in every epoch, each sentence
without one in one epoch in ``entity_free_every``; and training under such a schedule stays reproducible (the
same data, seed and settings give the same weights; another schedule gives others)."""
from __future__ import annotations

from privtext.pii import tagger
from privtext.pii.settings import DetectorSettings
from privtext.pii.tagger_data import Example


def _examples(n: int) -> list[Example]:
    return [Example(f"hey name{i}", ((4, 4 + len(f"name{i}"), "PERSON"),)) if i % 3 else Example(f"nothing {i}", ())
            for i in range(n)]


def test_each_sentence_without_an_entity_is_trained_on_once_in_every_n_epochs():
    examples = _examples(20)
    with_entity = {k for k, ex in enumerate(examples) if ex.spans}
    assert tagger.epoch_rows(examples, 0, 1) == list(range(20))
    for every in (2, 3):
        epochs = [tagger.epoch_rows(examples, e, every) for e in range(2 * every)]
        for rows in epochs:
            assert with_entity <= set(rows) and rows == sorted(rows)
        seen = [k for rows in epochs[:every] for k in rows if k not in with_entity]
        assert sorted(seen) == sorted(set(range(20)) - with_entity)  # each once in `every` epochs
        assert epochs[every:] == epochs[:every]  # the same rotation again


def _tiny_conll(path) -> str:
    lines = []
    for i in range(10):
        lines += ["hey\tO", f"name{i}\tB-person", "in\tO", f"town{i}\tB-geo-loc", ""] if i % 2 else \
            ["nothing\tO", "to\tO", f"see{i}\tO", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return str(path)


def test_training_with_sparse_entity_free_epochs_is_reproducible(tmp_path):
    settings = DetectorSettings(layers=1, synthetic_sentences=8, epochs=2, batch_size=4, max_length=32, threads=1,
                                entity_free_every=2, train_data=_tiny_conll(tmp_path / "t.conll"),
                                cache_dir=str(tmp_path / "cache"))
    first, manifest, trained = tagger.ensure_trained(settings)
    examples, sources = tagger.model_dir(settings)[1:]
    again = tagger.train(examples, settings, tmp_path / "again", sources)
    assert trained and again["weights_sha256"] == manifest["weights_sha256"] == tagger.weights_hash(first)
    every_epoch = settings.model_copy(update={"entity_free_every": 1})
    other, other_manifest, _ = tagger.ensure_trained(every_epoch)
    assert other != first and other_manifest["weights_sha256"] != manifest["weights_sha256"]
    assert other_manifest["steps"] > manifest["steps"]  # fewer rows per epoch: fewer steps
