"""Per-unit ledger composition at scale: 10^4 secrets x 100 charges (``privacy.budget.compose``).

Scenarios (each a year of nightly charges on one dataset):
* ``mldp``: 100 sanitize charges, each exposing a random 30% of the values 1-3 times (per-value sums).
* ``secpe_shared``: 100 SecPE charges that all expose every secret (one composition for all).
* ``secpe_random``: 100 SecPE charges, each exposing a random 30% of the secrets with one of 4 count
  pmfs (every secret a different history: the Renyi screen certifies most, the worst few exactly).
Prints ``name: value`` lines: seconds and peak traced memory (MB) per scenario.
"""
from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import numpy as np

from privtext.privacy.budget import charge_to_json, compose, exposure_arrays, mldp_charge, secret_charge
from privtext.privacy.secret_protection import poisson_binomial_pmf
from privtext.settings import DatasetBudget


def _entries(kind: str, secrets: int, charges: int, rng) -> list[dict]:
    ids = np.array([f"s{i:06d}" for i in range(secrets)])
    pmfs = [poisson_binomial_pmf(r) for r in ([1.0], [0.5, 0.5], [0.3] * 4, [0.1] * 10)]
    out = []
    for c in range(charges):
        if kind == "mldp":
            charge = mldp_charge("d", "sanitize", f"n{c}", "clusant", epsilon=0.05, pure_epsilon=0.5, metric="D_k",
                                 k=16)
            chosen = ids[rng.random(secrets) < 0.3]
            exposures = dict(zip(chosen.tolist(), rng.integers(1, 4, chosen.size).tolist()))
        else:
            charge = secret_charge("d", "synthesize", f"n{c}", "secpe", p=1e-4, r=2e-4, sigma=60.0, rounds=3,
                                   releases_per_round=2, count_pmfs=pmfs)
            chosen = ids if kind == "secpe_shared" else ids[rng.random(secrets) < 0.3]
            from privtext.privacy.budget import Exposure

            exposures = {u: Exposure(1, int(v), 4) for u, v in zip(chosen.tolist(), rng.integers(0, 4, chosen.size))}
        out.append(json.loads(charge_to_json(charge, exposures)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--secrets", type=int, default=10_000)
    parser.add_argument("--charges", type=int, default=100)
    args = parser.parse_args()
    budget = DatasetBudget(r_over_p_max=1e6, eps_max=10.0, delta_max=1e-5, mldp_eps_max=1e6)
    for kind in ("mldp", "secpe_shared", "secpe_random"):
        entries = _entries(kind, args.secrets, args.charges, np.random.default_rng(0))
        tracemalloc.start()
        started = time.perf_counter()
        total = compose(entries, [exposure_arrays(e["exposures"]) for e in entries], budget)
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        worst = total.mldp.epsilon if kind == "mldp" else total.secret_protection.r_over_p
        print(f"{kind}_units: {args.secrets}")
        print(f"{kind}_charges: {args.charges}")
        print(f"{kind}_seconds: {seconds:.3f}")
        print(f"{kind}_peak_mb: {peak:.1f}")
        print(f"{kind}_worst_unit: {worst:.4g}")


if __name__ == "__main__":
    main()
