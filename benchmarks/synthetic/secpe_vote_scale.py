"""SecPE vs Aug-PE voting step alone, on synthetic unit embeddings (numpy, chunked, one process).

For M private rows, K public centres and N = N_syn * L candidates (d = 384):
* SecPE: one assignment pass of the M rows to the K centres (Alg. 2, ``private_cluster_stats``), the
  Eq. 7 release, then K noisy centres vote for their nearest of N candidates (``center_votes``).
  Only the second part is per-candidate-set; the first is a pass over the private data, O(M K d).
* Aug-PE: every private row votes for its nearest of N candidates (``private_votes``), O(M N d).
Driver memory: the statistics each side keeps after the pass (SecPE O(K d), Aug-PE O(N)) and the
peak traced numpy allocation of the step (tracemalloc; the M x d input is allocated before tracing).

Usage: python benchmarks/synthetic/secpe_vote_scale.py [--m 10000 100000 1000000] [--k 100 1000] [--n 4000]
"""
from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from privtext.secpe.aug_pe import private_votes
from privtext.secpe.evolution import center_votes
from privtext.secpe.secret_clustering import PublicClusters, private_cluster_stats, release


def unit(rng, n, d):
    x = rng.normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def timed(fn, *args):
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn(*args)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, seconds, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--k", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--n", type=int, default=4000, help="N_syn * L candidates")
    ap.add_argument("--d", type=int, default=384)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    cand = unit(rng, args.n, args.d)
    for m in args.m:
        private = unit(rng, m, args.d)
        _, t_aug, mem_aug = timed(private_votes, private, cand, 1.0)
        print(f"augpe_vote_seconds[m={m} n={args.n}]: {t_aug:.3f}")
        print(f"augpe_state_bytes[m={m} n={args.n}]: {args.n * 8}")
        print(f"augpe_peak_traced_bytes[m={m} n={args.n}]: {mem_aug}")
        for k in args.k:
            clusters = PublicClusters.create(unit(rng, k, args.d), np.full(k, 50))
            (counts, sums), t_assign, mem_assign = timed(private_cluster_stats, private, clusters, 1.0)
            noisy = release(counts, sums, clusters, 1.0, rng, 1.0)
            _, t_vote, mem_vote = timed(
                lambda centres: center_votes(centres, cand, np.zeros(args.n, dtype=np.int64)), noisy)
            tag = f"m={m} k={k} n={args.n}"
            print(f"secpe_assign_seconds[{tag}]: {t_assign:.3f}")
            print(f"secpe_center_vote_seconds[{tag}]: {t_vote:.4f}")
            print(f"secpe_state_bytes[{tag}]: {counts.nbytes + sums.nbytes}")
            print(f"secpe_peak_traced_bytes[{tag}]: {max(mem_assign, mem_vote)}")
            print(f"ratio_augpe_vote_over_secpe_center_vote[{tag}]: {t_aug / t_vote:.1f}")
            print(f"ratio_augpe_vote_over_secpe_assign_plus_vote[{tag}]: {t_aug / (t_assign + t_vote):.2f}")
        del private

if __name__ == "__main__":
    main()
