"""Utility of DPED word vectors: word similarity (SimLex-999, WordSim-353), cosine similarity to
non-private vectors by frequency band (the paper's App. C / Fig. 3), and 20 Newsgroups accuracy
with averaged word vectors + logistic regression. Rows that are NaN (abstained words) count as
missing; every score reports how many items it covered."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.linalg import orthogonal_procrustes
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from privtext.dped.vocabulary import tokenize


def load_word_pairs(path: str | Path) -> list[tuple[str, str, float]]:
    """``w1<TAB>w2<TAB>score`` lines, '#' comments skipped, words lowercased."""
    pairs = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = line.strip().split("\t")
        if line.startswith("#") or len(parts) < 3:
            continue
        pairs.append((parts[0].lower(), parts[1].lower(), float(parts[2])))
    return pairs


def _present(vectors: np.ndarray) -> np.ndarray:
    return np.isfinite(vectors).all(axis=1) & (np.linalg.norm(np.nan_to_num(vectors), axis=1) > 0)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def word_similarity(vectors: np.ndarray, words: Sequence[str], pairs) -> tuple[float, int]:
    """Spearman rho between cosine similarity and human scores over the covered pairs."""
    index = {w: i for i, w in enumerate(words)}
    ok = _present(vectors)
    got = [(index[a], index[b], s) for a, b, s in pairs if a in index and b in index and ok[index[a]] and ok[index[b]]]
    if len(got) < 3:
        return float("nan"), len(got)
    a, b, s = map(np.array, zip(*got))
    cos = (_unit(vectors[a.astype(int)]) * _unit(vectors[b.astype(int)])).sum(1)
    return float(spearmanr(cos, s).statistic), len(got)


def cosine_by_frequency_band(
    vectors: np.ndarray, reference: np.ndarray, counts: np.ndarray, n_bands: int = 5, align: bool = True
) -> list[tuple[float, int]]:
    """Mean cosine to the reference vectors per frequency quintile (rarest first). With ``align``,
    after an orthogonal Procrustes rotation of ``vectors`` onto ``reference`` over the covered words
    (embeddings are only defined up to rotation); NaN when fewer than 3*d words are covered, where
    the fitted rotation would overfit (inflated cosines). ``align=False`` when both are already in one
    frame (see ``to_frame``). Returns (mean cosine, words) per band."""
    ok = _present(vectors) & _present(reference)
    idx = np.flatnonzero(ok)
    rot = np.eye(vectors.shape[1])
    if align:
        if idx.size < 3 * vectors.shape[1]:
            return [(float("nan"), int(b.size)) for b in np.array_split(idx, n_bands)]
        rot, _ = orthogonal_procrustes(_unit(vectors[idx]), _unit(reference[idx]))
    cos = (_unit(vectors[idx] @ rot) * _unit(reference[idx])).sum(1)
    order = np.argsort(counts[idx], kind="stable")
    return [(float(cos[b].mean()) if b.size else float("nan"), int(b.size)) for b in np.array_split(order, n_bands)]


def to_frame(vectors: np.ndarray, frame: np.ndarray, counts: np.ndarray, n_fit: int = 2000) -> np.ndarray:
    """``vectors`` rotated (orthogonal Procrustes) onto ``frame`` over their ``n_fit`` most frequent
    covered words: e.g. the non-private vectors into the public anchor frame the DPED teachers (and
    so the student's hidden targets) live in, fitted on thousands of words without using DPED output."""
    idx = np.flatnonzero(_present(vectors) & _present(frame))
    idx = idx[np.argsort(-counts[idx], kind="stable")[:n_fit]]
    rot, _ = orthogonal_procrustes(_unit(vectors[idx]), _unit(frame[idx]))
    return vectors @ rot


def load_labeled_corpus(path: str | Path, limit: int | None = None, seed: int = 0) -> tuple[list[str], list[str]]:
    """20NG ``.tab`` file: ``Category<TAB>Text`` after 3 header lines; a seeded subset if ``limit``."""
    rows = [ln.split("\t", 1) for ln in Path(path).read_text(encoding="utf-8").splitlines()[3:] if "\t" in ln]
    if limit is not None and limit < len(rows):
        keep = np.sort(np.random.default_rng(seed).choice(len(rows), limit, replace=False))
        rows = [rows[i] for i in keep]
    return [r[1] for r in rows], [r[0] for r in rows]


def classification_accuracy(
    vectors: np.ndarray, words: Sequence[str], texts: Sequence[str], labels: Sequence[str],
    seed: int = 0, test_size: float = 0.25,
) -> float:
    """Held-out accuracy of logistic regression on the mean unit word vector of each document."""
    index = {w: i for i, w in enumerate(words)}
    ok = _present(vectors)
    unit = np.zeros_like(vectors, dtype=np.float64)
    unit[ok] = _unit(vectors[ok])
    feats = np.zeros((len(texts), vectors.shape[1]))
    for j, text in enumerate(texts):
        ids = [index[t] for t in tokenize(text) if t in index and ok[index[t]]]
        if ids:
            feats[j] = unit[ids].mean(0)
    xtr, xte, ytr, yte = train_test_split(feats, np.asarray(labels), test_size=test_size, random_state=seed,
                                          stratify=labels)
    clf = LogisticRegression(max_iter=2000, C=10.0).fit(xtr, ytr)
    return float((clf.predict(xte) == yte).mean())
