"""Static phrase encoder: a phrase is the normalised mean of its wordpieces' rows of the table."""
import numpy as np
import pytest

from privtext.embed.settings import EmbedSettings
from privtext.embed.static_phrases import encode_static, get_tokenizer, table_path


@pytest.fixture(scope="module")
def tokenizer():
    return get_tokenizer(EmbedSettings())


@pytest.fixture(scope="module")
def reference():
    """transformers' tokenizer of the same model: the pieces the piece table was built with."""
    from transformers import AutoTokenizer

    from privtext.embed.encoder import resolve_model

    return AutoTokenizer.from_pretrained(resolve_model(EmbedSettings().model), local_files_only=True)


def test_pieces_are_those_of_the_models_own_tokenizer(tokenizer, reference):
    # long inputs too: tokenizer.json carries truncation to 128 and padding, which must be off
    phrases = ["Maria Lopez", "", "   ", "jane.doe@example.com", "Ærøskøbing 中文 🙂", "2024-01-05",
               "A" * 600, "word " * 300, "4111 1111 1111 1111"]
    ours = [e.ids for e in tokenizer.encode_batch(phrases, add_special_tokens=False)]
    assert ours == reference(phrases, add_special_tokens=False)["input_ids"]
    assert tokenizer.token_to_id(tokenizer.model.unk_token) == reference.unk_token_id


def test_phrase_is_the_normalised_mean_of_its_pieces(tokenizer, reference):
    table = np.random.default_rng(0).normal(size=(tokenizer.get_vocab_size(), 8)).astype(np.float32)
    phrases = ["Maria Lopez", "4111 1111 1111 1111", "", "Zürich"]
    out = encode_static(phrases, table, tokenizer)
    assert out.shape == (4, 8) and out.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-12)
    for phrase, row in zip(phrases, out):
        ids = reference(phrase, add_special_tokens=False)["input_ids"] or [reference.unk_token_id]
        mean = table[ids].mean(axis=0)
        np.testing.assert_allclose(row, mean / np.linalg.norm(mean), atol=1e-6)
    assert not np.allclose(out[0], out[1])
    assert encode_static([], table, tokenizer).shape == (0, 8)


def test_table_cache_key_follows_the_model(tmp_path):
    assert table_path(EmbedSettings(), tmp_path) == table_path(EmbedSettings(batch_size=8), tmp_path)
    assert table_path(EmbedSettings(), tmp_path) != table_path(EmbedSettings(model=str(tmp_path)), tmp_path)
