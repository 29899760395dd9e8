"""Paper App. B.1 simulation: noise ratio sigma_GDP / sigma_secret (Fig. 3).

N = 8000 records, m secrets, each record contains each secret independently with probability 0.01;
p = 1e-4, one round with one Gaussian release (T = 1, m = 1: the toy's single query), sigma_secret
from SecretNoise (Alg. 1, exact mixture PLD). Left series: m = 400, r/p in [2, 400]; right
series: r/p = 10, m in [100, 1000].

GDP side, with mu = Phi^-1(1-p) - Phi^-1(1-r) (the paper's coupling):
* ``ratio_record``: record-level adjacency, sensitivity 1, sigma_GDP = 1/mu. This is the Aug-PE
  baseline the paper compares against (each record is one unit of DP), hence the primary series;
  note it does not protect a secret that occurs in k > 1 records (that needs group privacy).
* ``ratio_secret``: secret-level adjacency (Def. 3.1 applied to all records of a secret, no
  sampling), sensitivity max_j |D_j|, sigma_GDP = max_j |D_j| / mu: the GDP mechanism that gives the
  same reconstruction protection as SecretNoise, so the like-for-like comparison.
Plots go to benchmarks/out/secret_noise_ratio_{rp,m}.png.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from privtext.privacy import secret_protection as sp  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "out"
P, N_RECORDS = 1e-4, 8000


def ratios(n_secrets: int, r_over_p: float, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    dense = rng.random((N_RECORDS, n_secrets)) < 0.01
    rec, sec = np.nonzero(dense)
    inc = sp.incidence_matrix(rec, sec, N_RECORDS, n_secrets)
    r = P * r_over_p
    res = sp.secret_noise(inc, P, r, rounds=1, releases_per_round=1)
    mu = sp.mu_from_pr(P, r)
    return (1.0 / mu) / res.sigma, (dense.sum(axis=0).max() / mu) / res.sigma


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rps = [2, 5, 10, 20, 50, 100, 200, 400]
    ms = [100, 200, 400, 700, 1000]
    by_rp = [ratios(400, rp) for rp in rps]
    by_m = [ratios(m, 10) for m in ms]
    for rp, (rec, sec) in zip(rps, by_rp):
        print(f"ratio_record_rp{rp}: {rec:.3f}")
        print(f"ratio_secret_rp{rp}: {sec:.3f}")
    for m, (rec, sec) in zip(ms, by_m):
        print(f"ratio_record_m{m}: {rec:.3f}")
        print(f"ratio_secret_m{m}: {sec:.3f}")
    for name, xs, ys, label in [("rp", rps, by_rp, "r/p"), ("m", ms, by_m, "number of secrets m")]:
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        ax.plot(xs, [y[0] for y in ys], "o-", label="vs record-level GDP (Aug-PE)")
        ax.plot(xs, [y[1] for y in ys], "s-", label="vs secret-level GDP")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_yscale("log")
        if name == "rp":
            ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel(r"$\sigma_{GDP} / \sigma_{secret}$")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(OUT / f"secret_noise_ratio_{name}.png", dpi=120)
        plt.close(fig)


if __name__ == "__main__":
    main()
