"""Why DPED word vectors carry no WordSim signal at eps <= 16 on 20 Newsgroups: signal vs noise per query.

Bound (teachers whose answer for a word their shard does not contain is 0, as ``teacher_answers``
does for untrained words): ||H(x)|| <= C_h * min(N, n_x) / N with n_x the documents containing x, and
the released noise has norm sigma_h sqrt(d) = 2 C_h sqrt(M d) / (N mu_h) (``calibrate``: M queries,
mu_h the hidden mean's GDP share). So per word

    SNR_x <= min(N, n_x) * mu_h / (2 sqrt(M d))

whatever the teachers learn: more teachers stop helping at N = n_x, and the bound needs n_x >=
2 sqrt(M d) / mu_h documents per word for even a unanimous SNR of 1. Printed: n_x quantiles of the
WordSim-353 words, and per eps the share of WordSim pairs whose two words clear SNR 1 at N = n_x.

Measured beside it, with a teacher that keeps the signal at any N (unlike SGNS on small shards, see
dped_frontier.py's ``noiseless`` lines): a closed-form "context" teacher, h_i(x) = the sum of the
PUBLIC anchor vectors of x's window contexts in shard i (contexts among the first 200 public words
skipped), clipped to C_h = 1. Released with the stage's calibration (hidden-only, every query answered,
(eps, 1e-5)-DP per document; the noise drawn with numpy here, utility only), then post-processed (rows to
unit length, centred over the released words). Its noiseless mean reaches ~0.3, the release does not. Prints `name:
value` lines.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from privtext.dped.aggregation import calibrate, sigmas
from privtext.dped.dped import encode
from privtext.dped.evaluate import load_labeled_corpus, load_word_pairs, word_similarity
from privtext.dped.settings import DpedSettings
from privtext.dped.sharding import assign_shards
from privtext.dped.vocabulary import public_anchor, public_words
from privtext.privacy.secret_protection import gdp_mu_from_eps_delta

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))  # public_data
import public_data

EPS = (1.0, 2.0, 4.0, 8.0, 16.0)


def context_sums(tok: np.ndarray, doc_of: np.ndarray, where: np.ndarray, anchor: np.ndarray, window: int) -> np.ndarray:
    """[len(where), d]: the sum of anchor vectors of the +-window tokens around each position (same document)."""
    out = np.zeros((where.size, anchor.shape[1]))
    for off in [o for o in range(-window, window + 1) if o]:
        j = np.clip(where + off, 0, tok.size - 1)
        ok = (where + off >= 0) & (where + off < tok.size) & (doc_of[j] == doc_of[where])
        out[ok] += anchor[tok[j[ok]]]
    return out


def post(x: np.ndarray) -> np.ndarray:
    """Rows to unit length, centred over the released words (post-processing)."""
    u = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    return u - u.mean(0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(public_data.DATA_DIR), help="benchmarks/platform/public_data.py fills it")
    ap.add_argument("--dims", default="10,25,100")
    ap.add_argument("--teachers", default="300,3000,11293")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--stop", type=int, default=200)
    args = ap.parse_args()
    texts, _ = load_labeled_corpus(os.path.join(args.data, "corpus/20newsgroups-train.tab"), None, seed=0)
    ws = load_word_pairs(os.path.join(args.data, "wordsim/wordsim353.tsv"))
    words = public_words()
    index = {w: i for i, w in enumerate(words)}
    docs = encode(texts, words)
    queries = np.array(sorted({index[w] for a, b, _ in ws for w in (a, b) if w in index}))
    vocab = [words[i] for i in queries]
    m = queries.size
    pos = np.full(len(words), -1)
    pos[queries] = np.arange(m)
    n_x = np.zeros(m, dtype=np.int64)
    for d in docs:
        q = pos[np.unique(d)]
        n_x[q[q >= 0]] += 1
    pairs = [(pos[index[a]], pos[index[b]]) for a, b, _ in ws if a in index and b in index]
    print(f"docs: {len(texts)}")
    print(f"queries: {m}")
    for p in (10, 25, 50, 75, 90):
        print(f"docs_per_query_word_p{p}: {np.percentile(n_x, p):.0f}")
    for dim in (int(x) for x in args.dims.split(",")):
        for eps in EPS:
            mu = gdp_mu_from_eps_delta(eps, 1e-5)  # hidden-only, check at ~0 share: mu_h = mu
            need = 2 * np.sqrt(m * dim) / mu
            ok = n_x >= need
            both = np.mean([ok[a] and ok[b] for a, b in pairs])
            print(f"bound_d{dim}_eps{eps:g}.docs_needed_per_word: {need:.0f}")
            print(f"bound_d{dim}_eps{eps:g}.wordsim_pairs_with_snr_ge1: {both:.4f}")

    tok = np.concatenate(docs)
    doc_of = np.repeat(np.arange(len(docs)), [d.size for d in docs])
    where = np.flatnonzero(pos[tok] >= 0)
    for dim in (int(x) for x in args.dims.split(",")):
        anchor = public_anchor(words, dim).astype(np.float64)
        anchor[:args.stop] = 0.0  # a public stop list: the most frequent public words carry no context
        ctx = context_sums(tok, doc_of, where, anchor, window=5)
        full = np.zeros((m, dim))
        np.add.at(full, pos[tok[where]], ctx)
        print(f"context_d{dim}.nonprivate_wordsim_spearman: {word_similarity(post(full), vocab, ws)[0]:.4f}")
        for n in (int(x) for x in args.teachers.split(",")):
            shard = assign_shards([str(i) for i in range(len(texts))], n, "dped").shard
            keys, key_of = np.unique(shard[doc_of[where]] * m + pos[tok[where]], return_inverse=True)
            sums = np.zeros((keys.size, dim))  # one row per (teacher, word in its shard): absent words answer 0
            np.add.at(sums, key_of, ctx)
            sums *= np.minimum(1.0, 1.0 / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12))  # C_h = 1
            mean = np.zeros((m, dim))
            np.add.at(mean, keys % m, sums)
            mean /= n
            tag = f"context_d{dim}_N{n}"
            print(f"{tag}.signal_norm: {np.linalg.norm(mean, axis=1).mean():.4f}")
            print(f"{tag}.noiseless_wordsim_spearman: {word_similarity(post(mean), vocab, ws)[0]:.4f}")
            base = DpedSettings(n_teachers=n, dim=dim, vocabulary_mode="public", variant="hidden_only", threshold=0.0)
            for eps in EPS:
                cfg = base.model_copy(update={"epsilon": eps, "noise_split": base.noise_split.model_copy(
                    update={"threshold": 1e-6})})
                sigma = sigmas(cfg, calibrate(cfg, m))["hidden"]
                rho = [word_similarity(post(mean
                                            + np.random.default_rng(1000 * s + int(eps)).normal(0, sigma, mean.shape)),
                                       vocab, ws)[0] for s in range(args.seeds)]
                print(f"{tag}_eps{eps:g}.noise_norm: {sigma * np.sqrt(dim):.4f}")
                print(f"{tag}_eps{eps:g}.wordsim_mean: {np.mean(rho):.4f}")
                print(f"{tag}_eps{eps:g}.wordsim_min: {np.min(rho):.4f}")
                print(f"{tag}_eps{eps:g}.wordsim_max: {np.max(rho):.4f}")


if __name__ == "__main__":
    main()
