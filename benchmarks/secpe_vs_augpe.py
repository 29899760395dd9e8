"""SecPE vs Aug-PE side by side on the labeled sample corpus, same generator, N_syn, L, T.

Corpus: ``privtext.sample_data.generate`` (labels billing/delivery/account/product), 20% held out
(test set for downstream accuracy and FID). Secrets: the random-word task of SecPE Sec. 4.2
(``pii.secrets``: words near the 20% document-frequency quantile); a document with a chosen word is
private, the rest public. For each r/p in {2, 10, inf} both methods run Alg. 3 with the local LLM
(``privtext.generate``, calls cached so both methods and all budgets share identical generations for
identical inputs) and report: downstream accuracy (logistic regression on the synthetic embeddings,
tested on the held-out real texts), FID (synthetic vs held-out), the private histogram step's time
(SecPE: the rho-sampled assignment pass + Eq. 7 + centre votes; Aug-PE: every row votes) and sigma.

Usage: python benchmarks/secpe_vs_augpe.py [--docs 400] [--n-syn 8] [--variations 2] [--rounds 2]
       [--clusters 20] (runtime is dominated by the local LLM on CPU)
"""
from __future__ import annotations

import argparse
import math
import time
from functools import lru_cache

import numpy as np
from sklearn.cluster import KMeans

from privtext.embed.encoder import encode_texts
from privtext.embed.settings import EmbedSettings
from privtext.generate import GenerateSettings, get_generator
from privtext.metrics.fid import fid
from privtext.metrics.utility import fit_classifier
from privtext.pii.secrets import doc_frequencies, select_random_words, word_set
from privtext.privacy.mechanisms import make_rng
from privtext.sample_data import generate
from privtext.secpe.aug_pe import augpe_secret_sigma, augpe_vote, private_votes
from privtext.secpe.evolution import evolve, secpe_vote
from privtext.secpe.secret_clustering import PublicClusters, group_secret_noise, private_cluster_stats

P = 1e-4


class CachedGenerator:
    """Memoises generator calls so every method/budget sees the same text for the same request."""

    def __init__(self, gen):
        self.random = lru_cache(maxsize=None)(lambda n, label, seed=None: tuple(gen.random(n, label, seed=seed)))
        self._variation = lru_cache(maxsize=None)(
            lambda texts, L, label, seed: tuple(tuple(v) for v in gen.variation(list(texts), L, label=label, seed=seed)))

    def variation(self, texts, L, label=None, seed=None):
        return [list(v) for v in self._variation(tuple(texts), L, label, seed)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--n-syn", type=int, default=8)
    ap.add_argument("--variations", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--clusters", type=int, default=20)
    ap.add_argument("--r-over-p", type=float, nargs="+", default=[2.0, 10.0, math.inf])
    args = ap.parse_args()

    rows = generate(args.docs, seed=11)
    rng_split = np.random.default_rng(0)
    test_mask = rng_split.random(len(rows)) < 0.2
    train = [r for r, t in zip(rows, test_mask) if not t]
    test = [r for r, t in zip(rows, test_mask) if t]
    label_names = sorted({r["label"] for r in train})
    code = {name: i for i, name in enumerate(label_names)}
    embed_settings = EmbedSettings()
    emb = encode_texts([r["text"] for r in train], embed_settings)
    test_emb = encode_texts([r["text"] for r in test], embed_settings)
    labels = np.array([code[r["label"]] for r in train])

    chosen = set(select_random_words(doc_frequencies(r["text"] for r in train)))
    secret_sets = [sorted(word_set(r["text"]) & chosen) for r in train]
    private = np.array([bool(s) for s in secret_sets])
    print(f"documents_train: {len(train)}")
    print(f"documents_private: {int(private.sum())}")
    print(f"documents_test: {len(test)}")

    # public KMeans per label (K split by public label sizes), as the stage does with MLlib
    centers, sizes, codes = [], [], []
    pub = ~private
    for c in range(len(label_names)):
        x = emb[pub & (labels == c)]
        k = max(1, min(len(x), round(args.clusters * len(x) / pub.sum())))
        km = KMeans(n_clusters=k, n_init=3, random_state=0).fit(x)
        centers.append(km.cluster_centers_)
        sizes += np.bincount(km.labels_, minlength=k).tolist()
        codes += [c] * k
    clusters = PublicClusters.create(np.vstack(centers), sizes, codes)

    # secret groups of the private records (distinct secret sets)
    groups: dict[tuple, list[int]] = {}
    for i in np.flatnonzero(private):
        groups.setdefault(tuple(secret_sets[i]), []).append(i)
    keys = list(groups)
    word_index = {w: j for j, w in enumerate(sorted(chosen))}
    group_secrets = [[word_index[w] for w in key] for key in keys]
    group_sizes = [len(groups[k]) for k in keys]
    rows_per_secret = max(sum(1 for s in secret_sets if w in s) for w in chosen)
    priv_idx = np.concatenate([groups[k] for k in keys])
    priv_group = np.concatenate([[g] * len(groups[k]) for g, k in enumerate(keys)])

    gen = CachedGenerator(get_generator(GenerateSettings(), "default"))
    embed = lambda texts: encode_texts(list(texts), embed_settings)  # noqa: E731
    results = {}
    for ratio in args.r_over_p:
        r = 1.0 if math.isinf(ratio) else ratio * P
        t0 = time.perf_counter()
        noise = group_secret_noise(group_secrets, group_sizes, len(chosen), P, r, args.rounds)
        calib_s = time.perf_counter() - t0
        sigmas = {"secpe": noise.sigma, "aug_pe": augpe_secret_sigma(P, r, args.rounds, rows_per_secret)}
        for method in ("secpe", "aug_pe"):
            rng = make_rng(True, 1)
            hist_s = []

            if method == "secpe":
                def stats(t, rng=rng):
                    keep = rng.random(priv_idx.size) < noise.rho[priv_group]
                    return private_cluster_stats(emb[priv_idx], clusters, 1.0, keep, labels[priv_idx])
                vote = secpe_vote(stats, clusters, sigmas[method], rng, 1.0)
            else:
                vote = augpe_vote(lambda t, ce, cl: private_votes(emb, ce, 1.0, labels, cl), sigmas[method], rng)

            def timed_vote(t, ce, cl, vote=vote, hist_s=hist_s):
                t1 = time.perf_counter()
                out = vote(t, ce, cl)
                hist_s.append(time.perf_counter() - t1)
                return out

            t1 = time.perf_counter()
            out = evolve(gen, embed, timed_vote, label_names, args.n_syn, args.variations, args.rounds, seed=0)
            total_s = time.perf_counter() - t1
            syn_emb = embed(out.texts)
            clf = fit_classifier(syn_emb, out.labels)
            correct, n = clf.correct(test_emb, [r["label"] for r in test])
            tag = f"{method} r/p={ratio:g}"
            results[(method, ratio)] = (correct / n, fid(test_emb, syn_emb), sum(hist_s))
            print(f"sigma[{tag}]: {sigmas[method]:.4g}")
            print(f"downstream_accuracy[{tag}]: {correct / n:.3f}")
            print(f"fid[{tag}]: {results[(method, ratio)][1]:.4f}")
            print(f"histogram_seconds[{tag}]: {sum(hist_s):.4f}")
            print(f"run_seconds[{tag}]: {total_s:.1f}")
        print(f"secret_noise_calibration_seconds[r/p={ratio:g}]: {calib_s:.2f}")
        a, s = results[("aug_pe", ratio)], results[("secpe", ratio)]
        print(f"ratio_histogram_seconds_augpe_over_secpe[r/p={ratio:g}]: {a[2] / s[2]:.2f}")
        print(f"accuracy_secpe_minus_augpe[r/p={ratio:g}]: {s[0] - a[0]:+.3f}")
        print(f"fid_augpe_minus_secpe[r/p={ratio:g}]: {a[1] - s[1]:+.4f}")


if __name__ == "__main__":
    main()
