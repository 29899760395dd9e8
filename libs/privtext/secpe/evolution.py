"""Protected Evolution (SecPE Alg. 3): select the candidates nearest to the noisy representatives, vary them.

The loop is shared with the Aug-PE baseline (``aug_pe.py``); only the private vote differs:

* SecPE (``secpe_vote``): each round, SecretClustering releases K noisy centres and sizes (Eq. 7);
  each noisy centre adds its noisy size to the histogram bin of its nearest candidate (lines 8-11),
  O(K N) similarity work on the driver, no pass over private rows beyond Alg. 2's assignment. Its
  public clusters come from the public documents or, for a corpus without them, from round 0's pool.
* Aug-PE (``aug_pe.augpe_vote``): every private row votes for its nearest candidate, plus noise.

Selection (Alg. 3 line 12, top N_syn by histogram): K noisy centres vote for at most K candidates, so
with K < N_syn most picks are histogram ties, kept in candidate order: earlier survivors first, so each
round adds at most K voted candidates to the previous survivors. Ranking the ties by closeness to the
released centres instead was measured worse (movie reviews, K 40, N_syn 200, r/p 2, 3 seeds: accuracy
0.624 vs 0.667, FID 0.635 vs 0.522; ``benchmarks/synthetic/secpe_vs_augpe.py``): under that noise the candidates
nearest the noisy centres are a noise-driven, less diverse pick.

``evolve`` is post-processing of the votes: privacy is the vote's (see ``secret_clustering`` and
``aug_pe``). Labels: candidates are generated per label; a noisy centre votes only for candidates of
its label, and the synthetic label mix follows the noisy histogram (each label gets N_syn times its
share of the positive histogram mass). Alg. 3 line 4 draws N_syn * L random samples; with labels
they are split evenly (ceil(N_syn / #labels) * L per label), as the label mix is unknown before the
first release. The last round's survivors are the output (its VARIATION would be discarded, so it
is not generated).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

import numpy as np

from privtext.secpe.secret_clustering import NO_LABEL, NoisyCenters, PublicClusters, clip_rows, nearest, release


class Generator(Protocol):
    def random(self, n: int, label: str | None, seed: int | None = None) -> list[str]: ...

    def variation(self, texts: Sequence[str], L: int, label: str | None = None,
                  seed: int | None = None) -> list[list[str]]: ...


# (round, clipped candidate embeddings [N, d], candidate label codes [N]) -> histogram [N]
Vote = Callable[[int, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class RoundStats:
    """Per-round figures (no text): candidates, histogram summary, label quotas, timings."""

    round: int
    candidates: int
    hist_sum: float
    hist_max: float
    hist_nonzero: int
    top_share: float  # share of the positive histogram mass on the selected candidates
    quotas: dict
    vote_seconds: float
    embed_seconds: float
    generate_seconds: float


@dataclass
class EvolutionResult:
    texts: list[str]
    labels: list[str | None]
    born: list[int]  # round in which each text was generated (0: RANDOM)
    rounds: list[RoundStats] = field(default_factory=list)
    # the generator alone: the first ceil(N_syn / labels) of each label's round-0 samples, written from the
    # prompts before any vote (no private data): the baseline a release without the private data reaches
    generator_only: list[tuple[str, str | None]] = field(default_factory=list)


def label_quotas(hist: np.ndarray, cand_labels: np.ndarray, n_labels: int, n_syn: int) -> np.ndarray:
    """N_syn split over labels in proportion to each label's positive histogram mass (largest
    remainder); evenly if no label has positive mass."""
    mass = np.array([np.clip(hist[cand_labels == c], 0, None).sum() for c in range(n_labels)])
    share = mass / mass.sum() if mass.sum() > 0 else np.full(n_labels, 1.0 / n_labels)
    raw = share * n_syn
    quota = np.floor(raw).astype(np.int64)
    quota[np.argsort(-(raw - quota), kind="stable")[: n_syn - quota.sum()]] += 1
    return quota


def select_top(hist: np.ndarray, cand_labels: np.ndarray, quotas: np.ndarray) -> np.ndarray:
    """Indices of the top ``quotas[c]`` candidates of each label c by histogram (ties: lower index)."""
    chosen = []
    for c, q in enumerate(quotas):
        idx = np.flatnonzero(cand_labels == c)
        order = idx[np.argsort(-hist[idx], kind="stable")]
        chosen.append(order[:q])
    return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)


def center_votes(noisy: NoisyCenters, cand_emb: np.ndarray, cand_labels: np.ndarray) -> np.ndarray:
    """Alg. 3 lines 8-11: Histogram[nearest candidate of e~_k (same label)] += n~_k."""
    labelled = bool(np.any(noisy.labels != NO_LABEL))
    idx = nearest(noisy.centers, cand_emb, noisy.labels if labelled else None, cand_labels if labelled else None)
    ok = idx >= 0
    return np.bincount(idx[ok], weights=noisy.counts[ok], minlength=cand_emb.shape[0])


def secpe_vote(private_stats: Callable[[int, PublicClusters], tuple],
               public: PublicClusters | Callable[[np.ndarray, np.ndarray], PublicClusters], sigma: float,
               rng: np.random.Generator, radius: float,
               on_release: Callable[[int, NoisyCenters], None] | None = None) -> Vote:
    """The SecPE vote: ``private_stats(round, clusters) -> (counts[K], sums[K, d])`` (Alg. 2's assignment
    pass with a fresh rho-sample, e.g. summed over Spark partitions), Eq. 7's release, centre votes.

    ``public``: Alg. 2's public clusters, or a function of round 0's candidate pool (embeddings, label
    codes) that builds them (``secret_clustering.generated_public_clusters``), called once, at the first
    vote, on the pool RANDOM_API wrote before any release: later rounds' candidates were selected by
    private votes and are never D_pub."""
    fixed: list[PublicClusters] = [public] if isinstance(public, PublicClusters) else []

    def vote(t: int, cand_emb: np.ndarray, cand_labels: np.ndarray) -> np.ndarray:
        if not fixed:
            if t != 0:
                raise ValueError(f"the public clusters come from round 0's pool; this vote started at round {t}")
            fixed.append(public(cand_emb, cand_labels))
        clusters = fixed[0]
        counts, sums = private_stats(t, clusters)
        noisy = release(counts, sums, clusters, sigma, rng, radius)
        if on_release is not None:
            on_release(t, noisy)
        return center_votes(noisy, cand_emb, cand_labels)

    return vote


def evolve(generator: Generator, embed: Callable[[list[str]], np.ndarray], vote: Vote,
           label_names: Sequence[str | None], n_syn: int, variations: int, rounds: int,
           radius: float = 1.0, seed: int = 0) -> EvolutionResult:
    """Alg. 3 with ``vote`` as the private histogram; returns the N_syn survivors of round T."""
    n_labels = len(label_names)
    seeds = np.random.default_rng(seed)  # generation randomness only (not privacy noise)
    t0 = time.perf_counter()
    per_label = math.ceil(n_syn / n_labels) * variations
    texts, codes = [], []
    for c, name in enumerate(label_names):
        texts += generator.random(per_label, name, seed=int(seeds.integers(2**31)))
        codes += [c] * per_label
    born = [0] * len(texts)
    first = math.ceil(n_syn / n_labels)
    generator_only = [(texts[c * per_label + i], name) for c, name in enumerate(label_names) for i in range(first)]
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    emb = clip_rows(embed(texts), radius)
    emb_s = time.perf_counter() - t0
    codes_arr = np.asarray(codes, dtype=np.int64)
    stats = []
    for t in range(rounds):
        t0 = time.perf_counter()
        hist = np.asarray(vote(t, emb, codes_arr), dtype=np.float64)
        quotas = label_quotas(hist, codes_arr, n_labels, n_syn)
        keep = select_top(hist, codes_arr, quotas)
        vote_s = time.perf_counter() - t0
        positive = np.clip(hist, 0, None)
        summary = dict(round=t, candidates=len(texts), hist_sum=float(hist.sum()), hist_max=float(hist.max()),
                       hist_nonzero=int(np.count_nonzero(hist)),
                       top_share=float(positive[keep].sum() / positive.sum()) if positive.sum() > 0 else 0.0,
                       quotas={str(label_names[c]): int(q) for c, q in enumerate(quotas)}, vote_seconds=vote_s)
        texts = [texts[i] for i in keep]
        codes_arr, emb, born = codes_arr[keep], emb[keep], [born[i] for i in keep]
        if t == rounds - 1:
            stats.append(RoundStats(**summary, embed_seconds=emb_s, generate_seconds=gen_s))
            break
        t0 = time.perf_counter()
        new_texts, new_codes = [], []
        for c, name in enumerate(label_names):
            mine = [texts[i] for i in np.flatnonzero(codes_arr == c)]
            if mine:
                for variants in generator.variation(mine, variations, label=name, seed=int(seeds.integers(2**31))):
                    new_texts += variants
                    new_codes += [c] * len(variants)
        gen_next = time.perf_counter() - t0
        t0 = time.perf_counter()
        new_emb = clip_rows(embed(new_texts), radius) if new_texts else np.zeros((0, emb.shape[1]), np.float32)
        stats.append(RoundStats(**summary, embed_seconds=emb_s, generate_seconds=gen_s))
        emb_s, gen_s = time.perf_counter() - t0, gen_next
        texts += new_texts
        codes_arr = np.concatenate([codes_arr, np.asarray(new_codes, dtype=np.int64)])
        emb = np.concatenate([emb, new_emb])
        born += [t + 1] * len(new_texts)
    return EvolutionResult(texts, [label_names[c] for c in codes_arr], born, stats, generator_only)
