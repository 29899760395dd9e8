"""``privtext privacy ...``: the (p, r) noise calculator (Alg. 1) and the App. C conversions.

The top-level CLI calls ``register(subparsers)``; each subcommand sets ``func`` to a handler that
takes the parsed arguments. Only counts and parameters are printed, never record content.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

from privtext.privacy import budget, secret_protection as sp
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
    """SecretNoise for an incidence file. ``--json``: the charge exactly as the ledger would record it
    (dominating pair per secret, exposures by secret id), which ``privacy compose`` reads back."""
    inc, secret_ids = _read_incidence(args.incidence)
    r = args.p * args.r_over_p
    res = sp.secret_noise(inc, args.p, r, args.rounds, args.releases_per_round, args.method)
    csc = inc.tocsc()
    pmfs, variant, records = sp.count_pmfs([res.rho[csc.indices[csc.indptr[j]:csc.indptr[j + 1]]]
                                            for j in range(inc.shape[1])])
    charge = budget.secret_charge(
        args.dataset, "calculator", "calibrate", "secpe_histogram", p=args.p, r=r, sigma=res.sigma,
        rounds=args.rounds, releases_per_round=args.releases_per_round, count_pmfs=pmfs,
        params={"calibration": args.method, "records": inc.shape[0], "secrets": inc.shape[1],
                "expected_sampled": res.expected_sampled})
    exposures = {str(sid): budget.Exposure(1, int(variant[j]), int(records[j])) for j, sid in enumerate(secret_ids)}
    if args.json:
        print(budget.charge_to_json(charge, exposures))
        return 0
    true = _compose_lines([budget.charge_to_json(charge, exposures)]).secret_protection
    out = {
        "records": inc.shape[0], "secrets": inc.shape[1], "p": args.p, "r": r,
        "mu": float(sp.mu_from_pr(args.p, r)), "rounds": args.rounds,
        "method": (args.method if args.method == "exact"
                   else "gaussian (NOT a guarantee: the paper's single-Gaussian reading)"),
        "sigma": res.sigma,
        "binding_secret": None if res.binding_secret < 0 else secret_ids[res.binding_secret],
        "expected_sampled_records": res.expected_sampled,
        "true_r_over_p_at_this_sigma": true.r_over_p,
        "augpe_sigma": augpe_sigma(args.p, r, args.rounds),
        "secret_groups": res.n_groups,
    }
    _emit(out, False)
    return 0


class _Limits:
    """Budget limits for the offline composer: none are checked, the composed spend is printed."""

    r_over_p_max = math.inf
    eps_max = math.inf
    mldp_eps_max = math.inf

    def __init__(self, delta: float):
        self.delta_max = delta


def _compose_lines(lines: list[str], delta: float = 1e-5) -> budget.ComposedSpend:
    accountant = budget.LedgerAccountant(_Limits(delta))
    for n, line in enumerate(lines, 1):
        try:
            charge, exp = budget.charge_from_json(line)
        except (ValueError, KeyError) as exc:
            raise SystemExit(f"line {n}: not a charge as `privtext privacy calibrate --json` prints it "
                             f"({exc})") from exc
        try:
            accountant.compose(charge, budget.exposure_arrays(exp))
        except budget.UnsupportedCharge as exc:
            raise SystemExit(f"line {n}: {exc}") from exc
    return accountant.spend()


def compose(args: argparse.Namespace) -> int:
    """Compose a file of charges (one JSON object a line) with the ledger's own code; print the spend."""
    lines = [line for line in Path(args.file).read_text().splitlines() if line.strip()]
    total = _compose_lines(lines, args.delta).to_dict()
    if args.json:
        print(json.dumps(total, default=str))
    else:
        print(f"{len(lines)} charge(s)")
        for kind, values in total.items():
            print(f"{kind}: " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                          for k, v in values.items()))
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
    """Add ``privacy calibrate``, ``privacy compose`` and ``privacy convert`` to the top-level CLI."""
    privacy = subparsers.add_parser("privacy", help="(p, r) secret protection and DP calculators")
    sub = privacy.add_subparsers(dest="privacy_command", required=True)

    cal = sub.add_parser("calibrate", help="SecretNoise (Alg. 1): sigma and sampling for a (p, r) budget")
    cal.add_argument("--p", type=float, default=1e-4, help="prior success probability p")
    cal.add_argument("--r-over-p", type=float, default=10.0, help="budget r/p")
    cal.add_argument("--rounds", type=int, default=5, help="rounds T of SecPE")
    cal.add_argument("--releases-per-round", type=int, default=2, help="Gaussian releases per round (counts + centers)")
    cal.add_argument("--incidence", required=True, help="Parquet/CSV with columns record_id, secret_id")
    cal.add_argument("--method", choices=("exact", "gaussian"), default="exact",
                     help="exact (the guarantee) or gaussian (the paper's reading: NOT a guarantee)")
    cal.add_argument("--dataset", default="default", help="dataset named in the --json charge")
    cal.add_argument("--json", action="store_true", help="print the charge as the ledger would record it")
    cal.set_defaults(func=calibrate)

    comp = sub.add_parser("compose", help="compose a file of charges (one JSON object a line, as calibrate --json)")
    comp.add_argument("file")
    comp.add_argument("--delta", type=float, default=1e-5, help="delta of the record-level (eps, delta) figure")
    comp.add_argument("--json", action="store_true")
    comp.set_defaults(func=compose)

    conv = sub.add_parser("convert", help="conversions of App. C")
    conv.add_argument("kind", choices=("gdp-eps-delta", "eps-delta-pr", "pr-mu"))
    conv.add_argument("--mu", type=float)
    conv.add_argument("--epsilon", type=float)
    conv.add_argument("--delta", type=float, default=0.0)
    conv.add_argument("--p", type=float, default=1e-4)
    conv.add_argument("--r", type=float)
    conv.add_argument("--json", action="store_true")
    conv.set_defaults(func=convert)

