"""The audit's D_k over its triplets: ``metric`` on each pair's rows against ``pair_metric`` by index (issue 45).

An audit draws 10^5 triplets (x_i, x_j, y) with x_j in x_i's (type, format) group, and Eq. 5 divides by D_k(x_i,
x_j), CluSanT's metric between the sanitizer's embeddings of the two values. ``metric`` on the pairs' rows finds
each row's cluster after sorting the 2 x 10^5 rows (384 floats each) to find the distinct ones; ``pair_metric``
finds the clusters of the ~10^3 distinct values once and indexes them. Both run here on the same pairs, side by
side, on the values of ``tests.fixtures.realtext`` mail as the audit benchmark builds them (pairs uniform within a
type), and must agree exactly.

    PYTHONPATH=. .venv/bin/python benchmarks/export/ampl_dk_pairs.py [--docs 300] [--pairs 100000]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--conf", default="conf/local.yaml")
    args = parser.parse_args()
    from benchmarks.export.ampl_controls import fixture_docs
    from privtext.sanitizer_setup import build_sanitizer
    from privtext.settings import load_settings

    settings = load_settings(args.conf)
    sanitizer, encode = build_sanitizer(settings)
    print(f"load_before: {os.getloadavg()[0]:.2f}")
    values = sorted({(t, text[s:e]) for text, spans in fixture_docs("mail", args.docs, 0) for s, e, t in spans
                     if t in sanitizer.per_type})
    rng = np.random.default_rng(0)
    rows = {t: [v for u, v in values if u == t] for t in sorted({t for t, _ in values})}
    share = np.array([len(v) for v in rows.values()], dtype=np.float64)
    counts = rng.multinomial(args.pairs, share / share.sum())
    seconds = {"metric": 0.0, "pair_metric": 0.0}
    for (entity_type, phrases), count in zip(rows.items(), counts):
        if len(phrases) < 2 or count == 0:
            continue
        x = np.asarray(encode(phrases), dtype=np.float64)
        i, j = rng.integers(0, len(phrases), size=count), rng.integers(0, len(phrases), size=count)
        mechanism = sanitizer.per_type[entity_type].mechanism
        started = time.perf_counter()
        old = mechanism.metric(x[i], x[j])
        seconds["metric"] += time.perf_counter() - started
        started = time.perf_counter()
        new = mechanism.pair_metric(x)(i, j)
        seconds["pair_metric"] += time.perf_counter() - started
        assert np.array_equal(old, new), entity_type
    print(f"values: {len(values)}")
    print(f"pairs: {int(counts.sum())}")
    for name, value in seconds.items():
        print(f"{name}_seconds: {value:.2f}")
    print(f"speedup: {seconds['metric'] / max(seconds['pair_metric'], 1e-9):.1f}")
    print(f"load_after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
