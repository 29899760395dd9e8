"""``privtext privacy ...``: the (p, r) noise calculator (Alg. 1) and the App. C conversions.

The top-level CLI calls ``register(subparsers)``; each subcommand sets ``func`` to a handler that
takes the parsed arguments. Only counts and parameters are printed, never record content.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from privtext.privacy import secret_protection as sp
from privtext.privacy.accounting import augpe_sigma


def _read_incidence(path: str):
    """(record_id, secret_id) pairs from Parquet or CSV -> sparse incidence and the secret ids."""
    suffix = Path(path).suffix.lower()
    frame = pd.read_parquet(path) if suffix in (".parquet", ".pq") else pd.read_csv(path)
    missing = {"record_id", "secret_id"} - set(frame.columns)
    if missing:
        raise SystemExit(f"{path}: missing column(s) {sorted(missing)}")
    records, _ = pd.factorize(frame["record_id"])
    secrets, secret_ids = pd.factorize(frame["secret_id"])
    inc = sp.incidence_matrix(records, secrets, int(records.max()) + 1, len(secret_ids))
    return inc, secret_ids


def _emit(out: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(out, default=str))
    else:
        for key, value in out.items():
            print(f"{key}: {value}")


def calibrate(args: argparse.Namespace) -> int:
    inc, secret_ids = _read_incidence(args.incidence)
    r = args.p * args.r_over_p
    res = sp.secret_noise(inc, args.p, r, args.rounds, args.releases_per_round, args.method)
    out = {
        "records": inc.shape[0],
        "secrets": inc.shape[1],
        "p": args.p,
        "r": r,
        "mu": float(sp.mu_from_pr(args.p, r)),
        "rounds": args.rounds,
        "method": args.method,
        "sigma": res.sigma,
        "binding_secret": None if res.binding_secret < 0 else secret_ids[res.binding_secret],
        "expected_sampled_records": res.expected_sampled,
        "augpe_sigma": augpe_sigma(args.p, r, args.rounds),
        "secret_groups": res.n_groups,
    }
    _emit(out, args.json)
    return 0


def convert(args: argparse.Namespace) -> int:
    if args.kind == "gdp-eps-delta":
        out = {"mu": args.mu, "epsilon": args.epsilon, "delta": float(sp.gdp_delta(args.mu, args.epsilon))}
    elif args.kind == "eps-delta-pr":
        out = {"epsilon": args.epsilon, "delta": args.delta, "p": args.p,
               "r": float(sp.r_from_eps_delta(args.epsilon, args.delta, args.p))}
    else:  # pr-mu
        mu = float(sp.mu_from_pr(args.p, args.r))
        out = {"p": args.p, "r": args.r, "mu": mu,
               "epsilon_at_delta_1e-6": _eps_for_delta(mu, 1e-6)}
    _emit(out, args.json)
    return 0


def _eps_for_delta(mu: float, delta: float) -> float:
    """Smallest eps with gdp_delta(mu, eps) <= delta (bisection; gdp_delta decreases in eps)."""
    lo, hi = 0.0, 1.0
    while sp.gdp_delta(mu, hi) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if sp.gdp_delta(mu, mid) > delta else (lo, mid)
    return hi


def register(subparsers) -> None:
    """Add ``privacy calibrate`` and ``privacy convert`` to the top-level CLI."""
    privacy = subparsers.add_parser("privacy", help="(p, r) secret protection and DP calculators")
    sub = privacy.add_subparsers(dest="privacy_command", required=True)

    cal = sub.add_parser("calibrate", help="SecretNoise (Alg. 1): sigma and sampling for a (p, r) budget")
    cal.add_argument("--p", type=float, default=1e-4, help="prior success probability p")
    cal.add_argument("--r-over-p", type=float, default=10.0, help="budget r/p")
    cal.add_argument("--rounds", type=int, default=5, help="rounds T of SecPE")
    cal.add_argument("--releases-per-round", type=int, default=2, help="Gaussian releases per round (counts + centers)")
    cal.add_argument("--incidence", required=True, help="Parquet/CSV with columns record_id, secret_id")
    cal.add_argument("--method", choices=("exact", "gaussian"), default="exact")
    cal.add_argument("--json", action="store_true")
    cal.set_defaults(func=calibrate)

    conv = sub.add_parser("convert", help="conversions of App. C")
    conv.add_argument("kind", choices=("gdp-eps-delta", "eps-delta-pr", "pr-mu"))
    conv.add_argument("--mu", type=float)
    conv.add_argument("--epsilon", type=float)
    conv.add_argument("--delta", type=float, default=0.0)
    conv.add_argument("--p", type=float, default=1e-4)
    conv.add_argument("--r", type=float)
    conv.add_argument("--json", action="store_true")
    conv.set_defaults(func=convert)

