"""mPL audit benchmark: per-adversary training time per epoch and violation ratio on a synthetic leak task.

Synthetic documents (``privtext.ampl.synthetic``) mention one PII secret and its coupled PoII partner
four times among context tokens; the sensitive tokens are released with the (untiered) exponential
mechanism at eps; each adversary (posterior + placeholder-prior model) is trained and audited at the
same eps, on the same split and triplets. Prints ``name: value`` lines. Runs in ~1-2 minutes on one CPU
cores; on a GPU machine the adversaries use CUDA.

    .venv/bin/python benchmarks/export/ampl_adversary.py [--docs 1000] [--epochs 10] [--device auto|cpu|cuda]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from privtext.ampl.adversary import resolve_device
from privtext.ampl.audit import audit_with_diagnostics
from privtext.ampl.perturb import perturb
from privtext.ampl.sequences import split_rows
from privtext.ampl.settings import AmplSettings
from privtext.ampl.synthetic import synthetic_secrets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--length", type=int, default=16)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--triplets", type=int, default=20_000)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    settings = AmplSettings(epochs=args.epochs, hidden_size=args.hidden, num_layers=2, heads=4, batch_size=64,
                            triplets=args.triplets, device=args.device)
    rng = np.random.default_rng(0)
    secrets, candidates = synthetic_secrets(rng, n_docs=args.docs, length=args.length, dim=args.dim, n_pii=20,
                                            n_poii=20, mentions=4, coupling=0.9)
    train_rows, test_rows = split_rows(rng, args.docs, 0.2)
    print(f"device: {resolve_device(settings.device)}")
    print(f"docs: {args.docs}")
    print(f"sensitive_positions: {int(secrets.mask.sum())}")
    print(f"candidates: {candidates.shape[0]}")
    for eps in args.eps:
        ids = perturb(np.random.default_rng(1), secrets, candidates, eps, (1.0, 1.0))
        release = secrets.release(ids, candidates)
        train, test = release.take(train_rows), release.take(test_rows)
        for kind in settings.adversaries:
            start = time.perf_counter()
            result, diag = audit_with_diagnostics(train, test, candidates, secrets.take(test_rows).truth(),
                                                  adversary=kind, eps=eps,
                                                  settings=settings, rng=np.random.default_rng(2))
            wall = time.perf_counter() - start
            tag = f"{kind}_eps{eps:g}"
            print(f"{tag}_epoch_seconds: {np.median(diag.posterior.epoch_seconds):.3f}")
            print(f"{tag}_audit_seconds: {wall:.2f}")
            print(f"{tag}_val_mse_over_mean_baseline: {diag.posterior.val_mse / diag.baseline_mse:.3f}")
            print(f"{tag}_prior_val_mse_over_mean_baseline: {diag.prior.val_mse / diag.baseline_mse:.3f}")
            print(f"{tag}_violation_ratio: {result.violation_ratio:.4f}")
            print(f"{tag}_log10_p_fail: {result.log10_p_fail:.2f}")
            print(f"{tag}_utility_loss: {result.utility_loss:.4f}")


if __name__ == "__main__":
    main()
