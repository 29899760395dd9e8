"""The publish gate's checks, as plain functions of what the stage read: the leakage audits of the staged
partition (``gate_decision``), verbatim draws the mechanism does not explain (``verbatim_problem``), fixed-seed
runs (``deterministic_runs``), and the outcome (``gate_outcome``). docs/products/export.md, "What the gate
checks, and why the demo's verdict is stable"."""
from __future__ import annotations

import math

from privtext.errors import Refused

DP_GUARANTEES = ("secret_protection", "gdp", "approx_dp")
NO_GUARANTEE_METHODS = ("custext",)
VERBATIM_SUMS = ("verbatim", "verbatim_expected", "n_replaced")  # summed per staging run with the summary


class PublishRefused(Refused):
    """The gate (or the staged data's missing guarantee) refuses the publish; nothing was written.
    ``reasons``: each check that refused, in words."""

    def __init__(self, message: str, reasons: list[str] | None = None):
        super().__init__(message)
        self.reasons = list(reasons or [message])


def gate_decision(audits: list[dict], wanted: list[str], staged_runs: list[str]) -> list[str]:
    """Why the audit gate refuses (empty: it passes). ``audits``: the (target, date) rows of
    ``protected.leakage_audits``; ``wanted``: adversaries that must have passed; ``staged_runs``: the
    run ids now in the staged partition."""
    current = ",".join(sorted(staged_runs))
    candidates = [r for r in audits if r.get("release") == "candidate"]
    problems = []
    for adversary in wanted or sorted({r["adversary"] for r in candidates}) or ["any adversary"]:
        mine = [r for r in candidates if r["adversary"] == adversary]
        if not mine:
            problems.append(f"no leakage audit by {adversary}")
        for r in mine:
            if r.get("staged_runs") != current:
                problems.append(f"the {adversary} audit is stale: it read staged run(s) {r.get('staged_runs')}, "
                                f"the partition now holds {current} (rerun the audit)")
            elif not r.get("valid"):
                controls = {c["release"]: c["passed"] for c in audits
                            if c.get("release", "").startswith("control_") and c["run_id"] == r["run_id"]}
                bad = [c for c, ok in controls.items() if ok != (c == "control_uniform")] or ["missing"]
                problems.append(f"the {adversary} audit is invalid: its negative control(s) misbehaved "
                                f"({', '.join(sorted(bad))}); the audit cannot tell leaking from safe releases")
            elif not r["passed"] and r["violation_ratio"] >= r["delta_target"]:
                problems.append(f"{adversary} found leakage: violation ratio {r['violation_ratio']:.4g} "
                                f">= delta target {r['delta_target']:.4g} at eps {r['eps']:g} (a lower bound)")
            elif not r["passed"]:
                problems.append(f"{adversary}: violation ratio {r['violation_ratio']:.4g} is below the delta target "
                                f"{r['delta_target']:.4g} but not confidently (Prop. 4: log10 p_fail "
                                f"{r.get('log10_p_fail', 0.0):.2f} > ampl.max_log10_p_fail); audit more triplets "
                                "or documents")
    return problems


def verbatim_tail(observed: int, expected: float) -> float:
    """Chernoff bound on Pr[X >= observed] for X a sum of independent Bernoulli draws with mean ``expected``:
    exp(-mu) (e mu / x)^x for x > mu, else 1 (valid for any Poisson-binomial sum)."""
    if observed <= expected:
        return 1.0
    if expected <= 0:
        return 0.0
    return math.exp(observed - expected + observed * math.log(expected / observed))


def verbatim_problem(verbatim: int, expected: float, replaced: int, maximum: float, significance: float) -> list[str]:
    """The gate's verbatim check: draws equal to their input beyond ``publish.max_verbatim_share`` that the
    mechanism's own probability of drawing the input (``expected``) does not explain at ``significance``."""
    excess = verbatim - maximum * replaced
    if excess <= 0 or verbatim_tail(verbatim, expected) >= significance:
        return []
    return [f"{verbatim} of {replaced} replaced values are published as they came in (same normalized value), where "
            f"the mechanism's own draws explain {expected:.2g} (Pr >= {verbatim}: "
            f"{verbatim_tail(verbatim, expected):.1e} < publish.verbatim_significance {significance:g}): the "
            "sanitizer left them unchanged"]


def verbatim_counts(summary: list) -> tuple[int, float, int]:
    """(verbatim draws, their expected count, replaced values) of the staged partition, from its summary rows."""
    v, e, r = (sum(row[c] or 0 for row in summary) for c in VERBATIM_SUMS)
    return int(v), float(e), int(r)


def deterministic_runs(entries: list[dict], run_ids: set[str]) -> list[str]:
    """The staged runs whose ledger charges say fixed-seed noise (never publishable)."""
    return sorted({e["run_id"] for e in entries if e["run_id"] in run_ids and e["params"].get("deterministic")})


def gate_outcome(audit_gated: bool, require_audit: bool, problems: list[str], override: bool) -> str:
    """The gate's outcome: ``refused`` (problems, no override), ``override``, ``not_required`` (audit
    skipped, demos), ``passed``, or ``ledger_charged`` for targets gated by their own DP charge."""
    if not audit_gated:
        return "ledger_charged"
    if problems:
        return "override" if override else "refused"
    return "passed" if require_audit else "not_required"
