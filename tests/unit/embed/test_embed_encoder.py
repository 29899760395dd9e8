"""Sentence encoder: unit norms, shape, determinism, semantic ordering, phrase de-duplication."""
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

torch = pytest.importorskip("torch")

from privtext.embed.encoder import encode_phrases, encode_texts, get_encoder, resolve_model  # noqa: E402
from privtext.embed.settings import EmbedSettings  # noqa: E402

SETTINGS = EmbedSettings(device="cpu", batch_size=4)
SENTENCES = [
    "The cat is sleeping on the sofa.",
    "A kitten naps on the couch.",
    "Interest rates rose sharply this quarter.",
    "The central bank increased borrowing costs.",
    "",
]


@pytest.fixture(scope="module", autouse=True)
def few_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def test_bundled_model_resolves_to_a_local_directory():
    assert os.path.isdir(resolve_model("all-MiniLM-L6-v2"))
    assert resolve_model("/some/other/model") == "/some/other/model"


def test_shape_dtype_unit_norm_and_cache():
    vectors = encode_texts(SENTENCES, SETTINGS)
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert get_encoder(SETTINGS) is get_encoder(EmbedSettings(device="cpu", batch_size=4))
    assert encode_texts([], SETTINGS).shape == (0, 384)


def test_deterministic_and_independent_of_batching():
    a = encode_texts(SENTENCES, SETTINGS)
    b = encode_texts(SENTENCES, SETTINGS)
    np.testing.assert_array_equal(a, b)
    one_by_one = np.vstack([encode_texts([s], SETTINGS) for s in SENTENCES[:2]])
    np.testing.assert_allclose(one_by_one, a[:2], atol=1e-5)  # padding must not change outputs


def test_paraphrases_closer_than_unrelated():
    v = encode_texts(SENTENCES[:4], SETTINGS)
    sim = v @ v.T
    assert sim[0, 1] > sim[0, 2] + 0.2 and sim[0, 1] > sim[0, 3] + 0.2
    assert sim[2, 3] > sim[2, 0] + 0.2 and sim[2, 3] > sim[2, 1] + 0.2


def test_phrases_deduplicated_and_whitespace_normalised():
    phrases = ["New  York", "Boston", "New York", None]
    out = encode_phrases(phrases, SETTINGS)
    assert out.shape == (4, 384)
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_allclose(out[1], encode_texts(["Boston"], SETTINGS)[0], atol=1e-6)
    assert float(out[0] @ out[1]) < 0.99


def test_unknown_model_fails_offline_instead_of_downloading(monkeypatch):
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    with pytest.raises(OSError):
        get_encoder(EmbedSettings(model="privtext-test/no-such-model", device="cpu"))
