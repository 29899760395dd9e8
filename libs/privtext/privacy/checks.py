"""Limits on a composed spend: refuse what exceeds them (``check``), and say it in words and rows.

Every comparison with a limit goes through ``spend.exceeds`` (one tolerance; NaN fails closed). The
limits are a dataset's ``privacy.budgets`` entry (``r_over_p_max``, ``eps_max``, ``delta_max``,
``mldp_eps_max``); which budget applies under the one account: ``privtext.ledger``.
"""
from __future__ import annotations

from privtext.errors import Refused
from privtext.privacy.spend import NEAR_LIMIT, ComposedSpend, exceeds


class BudgetExceeded(Refused):
    """A charge would exceed the privacy budget; nothing was written. ``total``: the composed spend that
    was refused (``compose``'s ``ComposedSpend``)."""

    def __init__(self, message: str, total: ComposedSpend | None = None):
        super().__init__(message)
        self.total = total


def check(total: ComposedSpend, budget, dataset: str) -> None:
    """Refuse (BudgetExceeded) when any composed spend exceeds its limit."""
    problems = []
    sp = total.secret_protection
    if sp and exceeds(sp.r_over_p, budget.r_over_p_max):
        problems.append(f"secret protection r/p = {sp.r_over_p:.4g} > r_over_p_max = {budget.r_over_p_max:g}"
                        f" (worst of {sp.secrets:,} secrets; {sp.secrets_over_limit:,} over the limit; each "
                        f"composed over its {sp.releases} (p, r) release(s), sanitized occurrences and "
                        "record/user events)")
    adp = total.approx_dp
    if adp and exceeds(adp.epsilon, budget.eps_max):
        problems.append(f"epsilon({adp.delta:g}) = {adp.epsilon:.4g} > eps_max = {budget.eps_max:g}")
    mldp = total.mldp
    if mldp and exceeds(mldp.epsilon, budget.mldp_eps_max):
        problems.append(f"metric-LDP epsilon of one value = {mldp.epsilon:.4g} > mldp_eps_max = "
                        f"{budget.mldp_eps_max:g}")
    if problems:
        raise BudgetExceeded(f"privacy budget of dataset {dataset!r} would be exceeded: " + "; ".join(problems), total)


def describe(total: ComposedSpend, budget) -> list[str]:
    """The composed spend in plain words, one sentence per guarantee."""
    out = []
    sp = total.secret_protection
    if sp:
        out.append(f"Secrets: the most exposed of {sp.secrets:,} secrets can be guessed by an attacker who "
                   f"starts with at most a {sp.p:.2g} chance among the values of its entity type and surface "
                   f"format (both are published) with probability at most {sp.r:.3g} "
                   f"({sp.r_over_p:.3g} times the prior; limit {budget.r_over_p_max:g} times); "
                   f"{sp.secrets_near_limit} secret(s) are above {NEAR_LIMIT:.0%} of the limit.")
    adp = total.approx_dp
    if adp:
        out.append(f"Each {adp.unit}: ({adp.epsilon:.3g}, {adp.delta:.2g})-DP over {adp.releases} "
                   f"release(s) (limit eps {budget.eps_max:g}).")
    mldp = total.mldp
    if mldp:
        out.append(f"Replaced values: the most drawn of {mldp.values:,} values (one string, whatever type the "
                   f"detector gave it) has metric-LDP eps {mldp.epsilon:.3g} summed over its draws of every type "
                   f"(limit {budget.mldp_eps_max:g}); "
                   f"{mldp.values_near_limit} value(s) are above {NEAR_LIMIT:.0%} of the limit.")
    return out


def usage(total: ComposedSpend, budget) -> list[dict]:
    """The composed spend as one row per protected unit: its worst unit's spend against the limit."""
    rows = []
    sp = total.secret_protection
    if sp:
        rows.append({"guarantee": "secret_protection", "unit": "secret", "measure": "r / p (posterior / prior)",
                     "spent": sp.r_over_p, "limit": budget.r_over_p_max, "units": sp.secrets,
                     "near_limit": sp.secrets_near_limit, "releases": sp.releases})
    adp = total.approx_dp
    if adp:
        rows.append({"guarantee": "approx_dp", "unit": adp.unit, "measure": f"epsilon at delta {adp.delta:.0e}",
                     "spent": adp.epsilon, "limit": budget.eps_max, "units": None, "near_limit": None,
                     "releases": adp.releases})
    mldp = total.mldp
    if mldp:
        rows.append({"guarantee": "mldp", "unit": "value",
                     "measure": "metric-LDP epsilon summed over its draws, across the types detected",
                     "spent": mldp.epsilon, "limit": budget.mldp_eps_max, "units": mldp.values,
                     "near_limit": mldp.values_near_limit, "releases": mldp.releases})
    return rows
