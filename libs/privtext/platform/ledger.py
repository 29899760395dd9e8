"""The privacy ledger (``protected.privacy_ledger``): append-only, budget-enforcing.

Every release computed from private rows is charged here BEFORE it is written. ``charge`` composes
the new spend with everything the ledger holds for the dataset and refuses (``BudgetExceeded``,
nothing written) when a limit in ``privacy.budgets.<dataset>`` would be exceeded:

* ``secret_protection`` (spend ``{"p", "r"}``): composed with App. C of the SecPE paper as
  (p = min p_i, r = sum r_i) (see ``compose_pr`` for why min, not the paper's max); the limit is
  r <= r_over_p_max * p.
* ``gdp`` and ``approx_dp`` (a dp-accounting ``DpEvent``): all events of the dataset are composed
  with the PLD accountant; the limit is eps(delta_max) <= eps_max.
* ``mldp`` (spend ``{"epsilon", "scope"}``): metric-LDP releases of the same ``scope`` (e.g. the same
  export date: the same documents) compose by summing eps; disjoint scopes compose in parallel
  (max). The limit is that max <= mldp_eps_max.
* ``empirical_mpl``: measured leakage (audits); recorded, not budgeted.
* ``none``: an action without a formal guarantee (a CusText sanitization, a publish without a passed
  audit: gate override or ``publish.require_audit: false``); recorded with who and why, not budgeted.

Concurrency: a charge reads the ledger snapshot, checks the budget and appends with a Delta
application transaction named after the dataset; two charges from the same snapshot conflict, the
loser re-reads the new state and re-checks, so concurrent charges never exceed the budget together.

Failure rule (charge-before-release, never refunded): a stage that fails after its charge keeps the
charge. The ledger then over-states what was released, never under-states it.
"""
from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass

import numpy as np
from deltalake.exceptions import CommitFailedError

from privtext.platform.config import DatasetBudget, Settings
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.tables import PRIVACY_LEDGER

GUARANTEES = ("secret_protection", "gdp", "approx_dp", "mldp", "empirical_mpl", "none")


class BudgetExceeded(RuntimeError):
    """A charge would exceed the dataset's privacy budget; nothing was written."""


@dataclass(frozen=True)
class Charge:
    dataset: str
    stage: str
    run_id: str
    mechanism: str
    guarantee: str
    params: dict
    spend: dict
    dp_event: str | None = None  # dp-accounting event as JSON (privacy.accounting.event_to_json)

    def __post_init__(self):
        if self.guarantee not in GUARANTEES:
            raise ValueError(f"unknown guarantee {self.guarantee!r}; allowed: {', '.join(GUARANTEES)}")
        if self.guarantee in ("gdp", "approx_dp") and not self.dp_event:
            raise ValueError(f"a {self.guarantee} charge needs its dp_event")


def composed_spend(charges: list[dict], delta: float | None) -> dict:
    """The dataset's total spend per guarantee type, composed as the module docstring says."""
    from privtext.privacy.accounting import epsilon_of, event_from_json
    from privtext.privacy.secret_protection import compose_pr

    total: dict = {}
    pr = [(c["spend"]["p"], c["spend"]["r"]) for c in charges if c["guarantee"] == "secret_protection"]
    if pr:
        p, r = compose_pr([x[0] for x in pr], [x[1] for x in pr])
        total["secret_protection"] = {"p": float(p), "r": float(r), "r_over_p": float(r / p)}
    events = [event_from_json(c["dp_event"]) for c in charges if c["guarantee"] in ("gdp", "approx_dp")]
    if events and delta is not None:
        import dp_accounting

        event = events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)
        total["approx_dp"] = {"epsilon": epsilon_of(event, delta), "delta": delta, "releases": len(events)}
    scopes: dict[str, float] = {}
    for c in charges:
        if c["guarantee"] == "mldp":
            scope = str(c["spend"].get("scope", ""))
            scopes[scope] = scopes.get(scope, 0.0) + float(c["spend"]["epsilon"])
    if scopes:
        total["mldp"] = {"epsilon": max(scopes.values()), "scopes": len(scopes)}
    return total


def check_budget(total: dict, budget: DatasetBudget, dataset: str) -> None:
    problems = []
    sp = total.get("secret_protection")
    if sp and budget.r_over_p_max is not None and sp["r"] > budget.r_over_p_max * sp["p"] * (1 + 1e-12):
        problems.append(f"secret protection r/p = {sp['r_over_p']:.4g} > r_over_p_max = {budget.r_over_p_max:g}")
    adp = total.get("approx_dp")
    if adp and budget.eps_max is not None and not adp["epsilon"] <= budget.eps_max:
        problems.append(f"epsilon({adp['delta']:g}) = {adp['epsilon']:.4g} > eps_max = {budget.eps_max:g}")
    mldp = total.get("mldp")
    if mldp and budget.mldp_eps_max is not None and mldp["epsilon"] > budget.mldp_eps_max:
        problems.append(f"metric-LDP epsilon = {mldp['epsilon']:.4g} > mldp_eps_max = {budget.mldp_eps_max:g}")
    if problems:
        raise BudgetExceeded(f"privacy budget of dataset {dataset!r} would be exceeded: " + "; ".join(problems))


class Ledger:
    def __init__(self, lakehouse: Lakehouse, settings: Settings):
        self.lakehouse = lakehouse
        self.settings = settings

    def entries(self, dataset: str | None = None, snapshot=None) -> list[dict]:
        rows = self.lakehouse.read_rows(PRIVACY_LEDGER, snapshot).to_pylist()
        out = []
        for row in rows:
            if dataset is None or row["dataset"] == dataset:
                out.append({**row, "params": json.loads(row["params"]), "spend": json.loads(row["spend"])})
        return sorted(out, key=lambda r: r["created_at"])

    def spent(self, dataset: str) -> dict:
        return composed_spend(self.entries(dataset), self.settings.budget(dataset).delta_max)

    def charge(self, charge: Charge, tracked=None) -> dict:
        """Check the budget and append the charge atomically; returns the composed spend after it."""
        budget = self.settings.budget(charge.dataset)
        retries = self.settings.lakehouse.commit_retries
        for attempt in range(retries + 1):
            snapshot = self.lakehouse.delta_table(PRIVACY_LEDGER)
            new = {
                "entry_id": uuid.uuid4().hex,
                "dataset": charge.dataset,
                "stage": charge.stage,
                "run_id": charge.run_id,
                "mechanism": charge.mechanism,
                "guarantee": charge.guarantee,
                "params": json.dumps(charge.params, sort_keys=True, default=_json_default),
                "spend": json.dumps(charge.spend, sort_keys=True, default=_json_default),
                "dp_event": charge.dp_event,
                "created_at": dt.datetime.now(dt.timezone.utc),
            }
            existing = self.entries(charge.dataset, snapshot)
            candidate = {**new, "params": charge.params, "spend": json.loads(new["spend"])}
            total = composed_spend(existing + [candidate], budget.delta_max)
            check_budget(total, budget, charge.dataset)
            try:
                self.lakehouse.append_rows(PRIVACY_LEDGER, [new], guard=f"privtext.ledger.{charge.dataset}",
                                           snapshot=snapshot)
            except CommitFailedError:
                if attempt == retries:
                    raise
                continue
            if tracked is not None:
                _mirror(tracked, charge, total)
            return total
        raise AssertionError("unreachable")


def _json_default(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _mirror(tracked, charge: Charge, total: dict) -> None:
    metrics = {}
    for key, value in charge.spend.items():
        if isinstance(value, (int, float)):
            metrics[f"privacy.{charge.guarantee}.{key}"] = value
    for kind, values in total.items():
        for key, value in values.items():
            if isinstance(value, (int, float)):
                metrics[f"privacy.total.{kind}.{key}"] = value
    tracked.log_metrics(metrics)
    tracked.log_dict({"charge": charge.__dict__, "composed_total": total},
                     f"privacy/{charge.stage}-{charge.mechanism}.json")
