"""The privacy ledger (``protected.privacy_ledger``): append-only storage of charges, budget-enforcing.

Every release computed from private rows is charged here BEFORE it is written. The accounting (units,
dominating pairs, composition per unit, limits) is ``privtext.privacy.budget``'s; this module stores
and retrieves charges, and commits them only when the composed spend of the whole ledger (one account,
below), with them, stays within the budget (``BudgetExceeded`` otherwise, nothing written). A dataset
without a budget is refused (fail closed).

One account: secrets, values and records are keyed by the lakehouse's HMAC key and ids, so the composed
spend is over EVERY entry of the ledger, whatever its ``dataset``; a dataset name selects a budget, not a
separate world. The limits a charge is checked against are the strictest of its dataset's budget and the
budgets of every dataset already in the ledger (a promise made under one name is not broken under another;
``limits``).

Each row keeps the charge's params (with its dominating pair), spend, dp-accounting event, and the keyed
units it exposed (``exposures``: secret_id, occurrences, pair variant, records; null = every unit), in
the row format of ``privacy.charges`` (``dumps``, ``exposure_rows``); old rows keep composing
(docs/privacy-model.md, "Row compatibility"). A
release computed from records also keeps the set of records it read (``params["read"]``); every
composition joins those to the spans that exist then (``privacy.reads``), so the composed spend does not
depend on whether ``detect_pii`` ran before or after the release.

Concurrency: a commit reads the ledger snapshot, checks the budget and appends with one Delta application
transaction for the whole ledger; two commits from the same snapshot conflict, the loser re-reads the new
state and re-checks, so concurrent charges never exceed the budget together. A commit still conflicting
after ``lakehouse.commit_retries`` is refused (``LedgerBusy``, exit 3), nothing charged. ``charge_many``
commits several charges (e.g. one per entity type of a release) all-or-nothing in one commit.

Failure rule (charge-before-release, never refunded): a stage that fails after its charge keeps the
charge. The ledger then over-states what was released, never under-states it.
"""
from __future__ import annotations

import datetime as dt
import json
import uuid

from deltalake.exceptions import CommitFailedError

from privtext.errors import Refused
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.tables import PII_SPANS, PRIVACY_LEDGER
from privtext.privacy.budget import (
    BudgetExceeded,
    Charge,
    ComposedSpend,
    LedgerAccountant,
    check,
    dumps,
    exposure_rows,
    validate_exposures,
)
from privtext.privacy.reads import has_reads, holders, reach, run_key
from privtext.settings import Settings

__all__ = ["BudgetExceeded", "Charge", "Ledger", "LedgerBusy", "composed_spend", "latest_measurement"]
GUARD = "privtext.ledger"  # one application transaction for the whole ledger: one account


class LedgerBusy(Refused):
    """The ledger's commit still conflicted after ``lakehouse.commit_retries``; nothing was charged."""


def composed_spend(entries: list[dict], budget, spans=None) -> ComposedSpend:
    """The composed spend per guarantee (``privacy.budget.LedgerAccountant``) of ``entries`` (every entry of the
    one account, or a subset such as those up to a date); the read sets joined to ``spans`` (``Ledger.spans``;
    None: the stored exposures alone). A row the accountant does not support is refused (``UnsupportedCharge``)."""
    accountant = LedgerAccountant(budget)
    for entry, exposures in zip(entries, reach(entries, spans)):
        accountant.compose(entry, exposures)
    return accountant.spend()


def charged_date(entry: dict) -> dt.date | None:
    """The data date an entry's params name (the ledger stores it as ISO text), or None."""
    value = entry["params"].get("date")
    return dt.date.fromisoformat(value) if value else None


def latest_measurement(entries: list[dict], day: dt.date, guarantee: str = "detection_recall") -> dict | None:
    """The latest measurement entry (e.g. detect_pii's canary recall) recorded for data of ``day``, or None."""
    measured = [e for e in entries if e["guarantee"] == guarantee and charged_date(e) == day]
    return max(measured, key=lambda e: e["created_at"]) if measured else None


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

    def limits(self, dataset: str | None, entries: list[dict]):
        """The strictest of ``dataset``'s budget and those of every dataset in ``entries`` (each limit its
        minimum; a dataset without a budget is a ConfigError: fail closed)."""
        names = sorted({e["dataset"] for e in entries} | ({dataset} if dataset else set()))
        if not names:
            names = [self.settings.run.dataset]
        budgets = [self.settings.budget(d) for d in names]
        keys = ("r_over_p_max", "eps_max", "delta_max", "mldp_eps_max")
        return budgets[0].model_copy(update={k: min(getattr(b, k) for b in budgets) for k in keys})

    def spent(self, dataset: str | None = None) -> ComposedSpend:
        """The one account: every entry of the ledger composed, under ``limits(dataset)``."""
        entries = self.entries()
        return composed_spend(entries, self.limits(dataset, entries), self.spans(entries))

    def spans(self, entries: list[dict]):
        """The current spans as the read sets' join reads them (``privacy.reads.holders``), or None when no
        entry carries a read set (nothing to join)."""
        if not has_reads(entries):
            return None
        table = (self.lakehouse.delta_table(PII_SPANS).to_pyarrow_table(columns=["doc_id", "secret_id", "entity_type"])
                 if self.lakehouse.exists(PII_SPANS) else PII_SPANS.schema.empty_table())
        return holders(run_key(self.settings.run), table.column("doc_id").to_pylist(),
                       table.column("secret_id").to_pylist(), table.column("entity_type").to_pylist())

    def charge(self, charge: Charge, exposures: dict | None = None, tracked=None) -> ComposedSpend:
        """Check the budget and append one charge atomically; returns the composed spend after it."""
        return self.charge_many([(charge, exposures)], tracked=tracked)

    def charge_many(self, items: list, tracked=None) -> ComposedSpend:
        """Commit ``[(charge, exposures), ...]`` of one dataset all-or-nothing in one ledger commit,
        after checking the composed spend with all of them; returns that composed spend."""
        datasets = {c.dataset for c, _ in items}
        if len(datasets) != 1:
            raise ValueError(f"charge_many needs charges of one dataset, got {sorted(datasets)}")
        dataset = datasets.pop()
        self.settings.budget(dataset)  # a dataset without a budget: ConfigError before anything else
        for charge, exposures in items:
            validate_exposures(charge, exposures)
        deterministic = self.settings.run.deterministic
        retries = self.settings.lakehouse.commit_retries
        for attempt in range(retries + 1):
            snapshot = self.lakehouse.delta_table(PRIVACY_LEDGER)
            now = dt.datetime.now(dt.timezone.utc)
            new = [_row(c, e, now, deterministic) for c, e in items]
            candidates = [{**row, "params": json.loads(row["params"]), "spend": json.loads(row["spend"])}
                          for row in new]
            entries = self.entries(None, snapshot)
            budget = self.limits(dataset, entries)
            total = composed_spend(entries + candidates, budget, self.spans(entries + candidates))
            check(total, budget, dataset)
            try:
                self.lakehouse.append_rows(PRIVACY_LEDGER, new, guard=GUARD, snapshot=snapshot)
            except CommitFailedError:
                if attempt == retries:
                    raise LedgerBusy(f"the ledger is busy: {retries + 1} commit(s) of this charge conflicted with "
                                     f"concurrent charges (lakehouse.commit_retries = {retries}); nothing was "
                                     "charged, run the stage again") from None
                continue
            if tracked is not None:
                for (charge, _), row in zip(items, new):
                    _mirror(tracked, charge, row, total)
            return total
        raise AssertionError("unreachable")

    def entry_ids(self, run_id: str, stage: str | None = None) -> list[str]:
        return [e["entry_id"] for e in self.entries() if e["run_id"] == run_id and stage in (None, e["stage"])]


def _row(charge: Charge, exposures: dict | None, now, deterministic: bool) -> dict:
    params = {**charge.params, "deterministic": bool(charge.params.get("deterministic")) or deterministic}
    return {
        "entry_id": uuid.uuid4().hex,
        "dataset": charge.dataset,
        "stage": charge.stage,
        "run_id": charge.run_id,
        "mechanism": charge.mechanism,
        "guarantee": charge.guarantee,
        "params": dumps(params),
        "spend": dumps(charge.spend),
        "dp_event": charge.dp_event,
        "exposures": exposure_rows(exposures),
        "created_at": now,
    }


def _mirror(tracked, charge: Charge, row: dict, total: ComposedSpend) -> None:
    metrics = {}
    for key, value in charge.spend.items():
        if isinstance(value, (int, float)):
            metrics[f"privacy.{charge.guarantee}.{key}"] = value
    composed = total.to_dict()
    for kind, values in composed.items():
        for key, value in values.items():
            if isinstance(value, (int, float)):
                metrics[f"privacy.total.{kind}.{key}"] = value
    tracked.log_metrics(metrics)
    # the params stay in the (protected) ledger: they hold functions of the private data's structure (sigma,
    # SecretNoise's count pmfs, Aug-PE's largest record count) and the records read, which MLflow must not
    public = ("dataset", "stage", "run_id", "mechanism", "guarantee", "spend")
    summary = {"charge": {k: getattr(charge, k) for k in public}, "entry_id": row["entry_id"],
               "units_exposed": None if row["exposures"] is None else len(row["exposures"]), "composed_total": composed}
    tracked.log_dict(summary, f"privacy/{charge.stage}-{charge.mechanism}.json")
