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
