"""SecretNoise at scale: LP (Eq. 6, HiGHS) + exact sigma calibration (Alg. 1) on 10^5 records x
10^4 secrets, ~Poisson(5) secrets per record (uniform), p = 1e-4, r/p = 10, T = 5, 2 releases a round.
Prints time and peak memory (tracemalloc for Python/numpy allocations, ru_maxrss for the process)."""
from __future__ import annotations

import resource
import time
import tracemalloc

import numpy as np

from privtext.privacy import secret_protection as sp


def main(n_records: int = 100_000, n_secrets: int = 10_000) -> None:
    rng = np.random.default_rng(0)
    per_record = rng.poisson(5, n_records)
    rec = np.repeat(np.arange(n_records), per_record)
    inc = sp.incidence_matrix(rec, rng.integers(0, n_secrets, rec.size), n_records, n_secrets)
    p, r, rounds = 1e-4, 1e-3, 5
    tracemalloc.start()
    t0 = time.perf_counter()
    w = sp.secret_noise_weights(inc, sp.mu_from_pr(p, r))
    t_lp = time.perf_counter() - t0
    rho = sp.sampling_probabilities(w)
    t1 = time.perf_counter()
    sigma, binding, n_groups, n_evals = sp.calibrate_sigma(inc, rho, p, r, rounds)
    t_cal = time.perf_counter() - t1
    t2 = time.perf_counter()
    sigma_g, *_ = sp.calibrate_sigma(inc, rho, p, r, rounds, method="gaussian")
    t_gauss = time.perf_counter() - t2
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"records: {n_records}")
    print(f"secrets: {n_secrets}")
    print(f"incidence_nonzeros: {inc.nnz}")
    print(f"lp_seconds: {t_lp:.2f}")
    print(f"calibration_exact_seconds: {t_cal:.2f}")
    print(f"calibration_gaussian_seconds: {t_gauss:.2f}")
    print(f"total_exact_seconds: {t_lp + t_cal:.2f}")
    print(f"secret_groups: {n_groups}")
    print(f"pld_evaluations: {n_evals}")
    print(f"sigma_exact: {sigma:.4f}")
    print(f"sigma_gaussian_approx: {sigma_g:.4f}")
    print(f"expected_sampled_records: {rho.sum():.1f}")
    print(f"tracemalloc_peak_mib: {peak / 2**20:.1f}")
    print(f"process_maxrss_mib: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")


if __name__ == "__main__":
    main()
