"""DPED teachers: skip-gram with negative sampling on one shard (Alg. 1 lines 3-5, 10-12).

``train_teacher`` is a pure function of one shard's token ids (the Spark stage runs it inside
``applyInPandas`` over the shard key); ``teacher_answers`` returns only the teacher's answers to the
public queries: its hidden vector h_i(x) and its top-k context-word vote set y_i(x).

Hidden vectors of independently trained teachers live in arbitrary rotations of R^d, so averaging
them (Eq. 1) would be meaningless; each teacher is rotated onto a PUBLIC anchor (orthogonal
Procrustes fitted on its own frequent words). The rotation depends on this teacher's data and
public data only, so the one-record-changes-one-teacher argument is untouched. Hidden vectors are
unit directions scaled to C_h (||h_i(x)|| <= C_h holds by construction and is enforced by clipping).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.linalg import orthogonal_procrustes

from privtext.dped.settings import DpedSettings


@dataclass(frozen=True)
class Teacher:
    in_vectors: np.ndarray  # [V, d] word (hidden) vectors
    out_vectors: np.ndarray  # [V, d] context vectors
    counts: np.ndarray  # [V] token counts in the teacher's shard
    min_count: int

    @property
    def trained(self) -> np.ndarray:
        return self.counts >= self.min_count


def _skipgram_pairs(tokens: np.ndarray, doc_of: np.ndarray, window: int, rng: np.random.Generator):
    """(center, context) pairs within a dynamic window b ~ U{1..window} per center (word2vec)."""
    reach = rng.integers(1, window + 1, size=tokens.size)
    centers, contexts = [], []
    for off in range(1, window + 1):
        same = doc_of[off:] == doc_of[:-off]
        fwd = same & (reach[:-off] >= off)  # center i, context i + off
        bwd = same & (reach[off:] >= off)  # center i + off, context i
        centers += [tokens[:-off][fwd], tokens[off:][bwd]]
        contexts += [tokens[off:][fwd], tokens[:-off][bwd]]
    return np.concatenate(centers), np.concatenate(contexts)


def train_teacher(token_id_docs: Sequence[np.ndarray], vocab_size: int, settings: DpedSettings, seed: int) -> Teacher:
    """SGNS (Mikolov et al. 2013): dynamic window, frequent-word subsampling, unigram^0.75 negatives,
    mini-batched SGD with hand-written gradients (vectorised; no autograd) on CPU."""
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    docs = [np.asarray(d, dtype=np.int64) for d in token_id_docs]
    tokens = np.concatenate(docs) if docs else np.zeros(0, dtype=np.int64)
    doc_of = np.repeat(np.arange(len(docs)), [d.size for d in docs])
    counts = np.bincount(tokens, minlength=vocab_size)
    d = settings.dim
    w_in = (torch.rand(vocab_size, d, generator=gen) - 0.5) / d
    w_out = torch.zeros(vocab_size, d)
    keep_word = counts >= settings.min_count
    mask = keep_word[tokens]
    tokens, doc_of = tokens[mask], doc_of[mask]
    if tokens.size:
        freq = counts / counts[keep_word].sum()
        t = settings.subsample
        keep_p = np.minimum(1.0, (np.sqrt(freq / t) + 1.0) * t / np.maximum(freq, 1e-12))
        neg_cdf = np.cumsum(np.where(keep_word, counts, 0) ** 0.75)
        neg_cdf /= neg_cdf[-1]
        k, bs = settings.negatives, settings.batch_size
        for epoch in range(settings.epochs):
            kept = rng.random(tokens.size) < keep_p[tokens]
            centers, contexts = _skipgram_pairs(tokens[kept], doc_of[kept], settings.window, rng)
            perm = rng.permutation(centers.size)
            for start in range(0, perm.size, bs):
                # word2vec's linearly decaying step size, floored at 1e-4 of the start
                lr = settings.lr * max(1e-4, 1.0 - (epoch + start / max(perm.size, 1)) / settings.epochs)
                idx = perm[start:start + bs]
                neg = np.minimum(np.searchsorted(neg_cdf, rng.random(idx.size * k)), vocab_size - 1)
                c, o, n = (torch.from_numpy(a) for a in (centers[idx], contexts[idx], neg))
                v, u, un = w_in[c], w_out[o], w_out[n].view(idx.size, k, d)
                g_pos = torch.sigmoid((v * u).sum(-1, keepdim=True)) - 1.0  # d(-log sig(u.v))/d(u.v)
                g_neg = torch.sigmoid(torch.bmm(un, v.unsqueeze(-1)))  # d(-log sig(-un.v))/d(un.v)
                grad_v = g_pos * u + (g_neg * un).sum(1)
                w_out.index_add_(0, o, g_pos * v, alpha=-lr)
                w_out.index_add_(0, n, (g_neg * v.unsqueeze(1)).reshape(-1, d), alpha=-lr)
                w_in.index_add_(0, c, grad_v, alpha=-lr)
    return Teacher(
        in_vectors=w_in.numpy(),
        out_vectors=w_out.numpy(),
        counts=counts,
        min_count=settings.min_count,
    )


def _unit_rows(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x), where=n > 0)


def clip_rows(x: np.ndarray, bound: float) -> np.ndarray:
    """Scale every row to L2 norm <= ``bound`` (the C_h clipping of App. B.2.1)."""
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x * np.minimum(1.0, bound / np.maximum(n, 1e-12))


def teacher_answers(
    teacher: Teacher, query_ids: np.ndarray, k: int, *, clip: float = 1.0,
    anchor: np.ndarray | None = None, n_align: int = 2000, chunk: int = 1024,
) -> tuple[np.ndarray, np.ndarray]:
    """The teacher's answers to the queries: hidden [q, d] and vote sets [q, k].

    hidden: unit word vector rotated onto ``anchor`` ([V, d], public; skipped if None), times C_h,
    clipped to C_h; zero for words the shard did not train. votes: positions (into ``query_ids``)
    of the k query words with the highest context score u_w . v_x (w != x, w trained), i.e. the
    teacher's top-k predicted context words; -1 where the teacher has fewer candidates or did
    not train x (it abstains from voting).
    """
    query_ids = np.asarray(query_ids, dtype=np.int64)
    trained = teacher.trained
    w_in = _unit_rows(teacher.in_vectors.astype(np.float64))
    if anchor is not None:
        has_anchor = np.linalg.norm(anchor, axis=1) > 0
        fit = np.flatnonzero(trained & has_anchor)
        fit = fit[np.argsort(-teacher.counts[fit], kind="stable")[:n_align]]
        if fit.size >= 2:
            rot, _ = orthogonal_procrustes(w_in[fit], _unit_rows(anchor[fit].astype(np.float64)))
            w_in = w_in @ rot
    hidden = clip_rows(clip * w_in[query_ids] * trained[query_ids, None], clip).astype(np.float32)

    votes = np.full((query_ids.size, k), -1, dtype=np.int64)
    cand_ok = trained[query_ids]
    out_q = teacher.out_vectors[query_ids]
    for s in range(0, query_ids.size, chunk):
        rows = np.arange(s, min(s + chunk, query_ids.size))
        scores = teacher.in_vectors[query_ids[rows]] @ out_q.T
        scores[:, ~cand_ok] = -np.inf
        scores[np.arange(rows.size), rows] = -np.inf
        kk = min(k, query_ids.size)
        top = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        top = np.where(np.isfinite(np.take_along_axis(scores, top, axis=1)), top, -1)
        top[~cand_ok[rows]] = -1
        votes[rows, :kk] = top
    return hidden, votes
