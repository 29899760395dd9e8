"""Cost of floating-point-safe, CSPRNG noise (``privacy.mechanisms.gaussian_release``) against numpy's
float Gaussian from PCG64, side by side, for one SecPE release (K x d centres) and 10^5 coordinates.
Prints ``name: value`` lines."""
from __future__ import annotations

import argparse
import time

import numpy as np

from privtext.privacy.mechanisms import gaussian_release, make_rng


def _rate(fn, n: int, reps: int = 3) -> float:
    best = min(_timed(fn) for _ in range(reps))
    return n / best


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--coordinates", type=int, default=100_000)
    parser.add_argument("--sigma", type=float, default=60.0)
    args = parser.parse_args()
    value = np.random.default_rng(0).normal(size=args.coordinates)
    pcg, chacha = np.random.default_rng(1), make_rng()
    float_rate = _rate(lambda: value + pcg.normal(0.0, args.sigma, value.shape), args.coordinates)
    safe_rate = _rate(lambda: gaussian_release(chacha, value, args.sigma, 1.0), args.coordinates)
    release = 100 * 384 * 2
    print(f"float_pcg64_coordinates_per_s: {float_rate:.0f}")
    print(f"safe_chacha_coordinates_per_s: {safe_rate:.0f}")
    print(f"slowdown_ratio: {float_rate / safe_rate:.2f}")
    print(f"secpe_round_release_ms: {1000 * release / safe_rate:.1f}")


if __name__ == "__main__":
    main()
