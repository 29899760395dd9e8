import numpy as np
import pytest


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.normal(size=(n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def unit_rows():
    """unit_rows(rng, n, dim): n random unit vectors (stand-ins for L2-normalized phrase embeddings)."""
    return _unit_rows


@pytest.fixture
def vocab() -> np.ndarray:
    """60 unit vectors in 3 loose groups of 20, like the phrase embeddings of one entity type."""
    rng = np.random.default_rng(7)
    x = np.repeat(_unit_rows(rng, 3, 8), 20, axis=0) + 0.5 * rng.normal(size=(60, 8)) / np.sqrt(8)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def date_mechanism():
    """(phrases, vocab, labels, inputs, mechanism): CluSanT (eps 2, k 8, 6 k-means clusters) over 120 public
    vocabulary dates with random unit embeddings, and 3 inputs outside it: the exact tests of date formats."""
    from privtext.clusant.clustering import cluster_vocabulary
    from privtext.clusant.mechanism import build_mechanism
    from privtext.clusant.settings import VocabularySettings
    from privtext.clusant.vocabulary import build_vocabulary

    phrases = build_vocabulary("DATE_TIME", VocabularySettings(size=120))
    emb = _unit_rows(np.random.default_rng(3), len(phrases) + 3, 12)
    vocab, inputs = emb[:len(phrases)], emb[len(phrases):]
    labels = cluster_vocabulary(vocab, "kmeans", 6, np.random.default_rng(0))
    return phrases, vocab, labels, inputs, build_mechanism("clusant", vocab, labels, 2.0, 8.0)
