"""``privtext status [--date D]``: the last run of each pipeline and its gate verdict, what its sanitized
export did with the spans (the share masked as [TYPE], which types and why; ``clusant.masking``), the budget
left per dataset and the tables' row counts. Also the figures of the demo's summary.

Reads MLflow run metadata, the ledger's composed spend (``privacy.budget.compose`` via the ledger) and
Delta row counts with delta-rs: no Spark, no text.
"""
from __future__ import annotations

import datetime as dt

from privtext.clusant import masking
from privtext.ledger import Ledger
from privtext.platform.lakehouse import Lakehouse, LakehouseError
from privtext.platform.tables import ALL_TABLES, PRIVACY_LEDGER, STAGED_SANITIZED_DOCUMENTS
from privtext.privacy.budget import usage
from privtext.settings import Settings

# publish's ``publish.gate`` param -> the verdict in words
GATE_WORDS = {"passed": "passed", "override": "overridden by an operator (on the ledger)",
              "not_required": "not required (publish.require_audit false, on the ledger)",
              "ledger_charged": "passed (DP charge on the ledger)", "refused": "refused"}


def table_rows(settings: Settings, date: str | None = None) -> list[tuple[str, int | None]]:
    """(table, rows) for every table; with ``date`` the rows of that date's partition (tables partitioned by
    date); None: not created."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lake = Lakehouse(None, settings.lakehouse)
    out = []
    for spec in ALL_TABLES:
        try:
            dataset = lake.delta_table(spec).to_pyarrow_dataset()
        except LakehouseError:
            out.append((spec.qualified_name, None))
            continue
        if date and spec.partition_by and spec.schema.field(spec.partition_by[0]).type == pa.date32():
            out.append((spec.qualified_name,
                        dataset.count_rows(filter=pc.field(spec.partition_by[0]) == dt.date.fromisoformat(date))))
        else:
            out.append((spec.qualified_name, dataset.count_rows()))
    return out


def masking_of(settings: Settings, date: str) -> dict | None:
    """The date's sanitized export span counts (``clusant.masking``) from its staged rows' params; None if none."""
    import pyarrow.compute as pc

    try:
        dataset = Lakehouse(None, settings.lakehouse).delta_table(STAGED_SANITIZED_DOCUMENTS).to_pyarrow_dataset()
    except LakehouseError:
        return None
    params = dataset.to_table(columns=["params"], filter=pc.field("date") == dt.date.fromisoformat(date))["params"]
    return masking.from_params(pc.unique(params).to_pylist()) if len(params) else None


def datasets(settings: Settings) -> list[str]:
    """The configured dataset and every dataset with a ledger charge."""
    lakehouse = Lakehouse(None, settings.lakehouse)
    lakehouse.create(PRIVACY_LEDGER)
    return sorted({settings.run.dataset} | {e["dataset"] for e in Ledger(lakehouse, settings).entries()})


def budget_usage(settings: Settings, dataset: str) -> list[dict]:
    """``privacy.budget.usage`` of the dataset's composed spend: one row per protected unit."""
    lakehouse = Lakehouse(None, settings.lakehouse)
    lakehouse.create(PRIVACY_LEDGER)
    return usage(Ledger(lakehouse, settings).spent(dataset), settings.budget(dataset))


def usage_line(row: dict) -> str:
    """One usage row in words, e.g. ``per value: 12 of 200 used (6%; metric-LDP ..., worst of 1,234 values)``."""
    units = f", worst of {row['units']:,} {row['unit']}s" if row["units"] else ""
    return (f"per {row['unit']}: {row['spent']:.3g} of {row['limit']:g} used ({row['spent'] / row['limit']:.0%}; "
            f"{row['measure']}{units})")


def gate_words(params: dict) -> str:
    gate = params.get("publish.gate")
    if gate is None:
        return "-"
    words = GATE_WORDS.get(gate, gate)
    return f"{words}: {params['publish.refused']}" if gate == "refused" and params.get("publish.refused") else words


def last_runs(settings: Settings, date: str | None = None) -> list[dict]:
    """The last MLflow run of each pipeline (of ``date`` if given): status, start, failed stage, gate verdict."""
    from privtext.pipelines import PIPELINES
    from privtext.platform.tracking import use_mlflow

    mlflow = use_mlflow(settings)
    experiment = mlflow.get_experiment_by_name(settings.tracking.experiment)
    out = []
    for name in PIPELINES:
        where = f"tags.stage = 'pipeline' and tags.pipeline = '{name}'" + (f" and tags.date = '{date}'" if date else "")
        runs = mlflow.search_runs([experiment.experiment_id], where, max_results=1,
                                  order_by=["attributes.start_time DESC"], output_format="list")
        if not runs:
            out.append({"pipeline": name, "run": None})
            continue
        run = runs[0]
        children = mlflow.search_runs([experiment.experiment_id], f"tags.`mlflow.parentRunId` = '{run.info.run_id}'",
                                      output_format="list")
        publish = [c for c in children if c.data.tags.get("stage") == "publish"]
        out.append({"pipeline": name, "run": run.info.run_id, "date": run.data.tags.get("date"),
                    "status": run.info.status,
                    "started": dt.datetime.fromtimestamp(run.info.start_time / 1000, dt.timezone.utc),
                    "failed": [c.data.tags.get("stage") for c in children if c.info.status == "FAILED"],
                    "gate": gate_words(publish[0].data.params) if publish else "none (no publish stage)",
                    "sanitized": any(c.data.tags.get("stage") == "sanitize" for c in children)})
    return out


def render(settings: Settings, date: str | None = None) -> str:
    """The status as text (what ``privtext status`` prints)."""
    lines = [f"pipelines (last run{' of ' + date if date else ''}, MLflow):"]
    if settings.tracking.enabled:
        for r in last_runs(settings, date):
            if r["run"] is None:
                lines.append(f"  {r['pipeline']:26s} no run")
                continue
            state = f"failed at {', '.join(r['failed'])}" if r["failed"] else r["status"].lower()
            lines.append(f"  {r['pipeline']:26s} date {r['date']}  {r['started']:%Y-%m-%d %H:%M} UTC  {state}; "
                         f"gate: {r['gate']}")
            if r["sanitized"] and r["date"]:
                lines.append(f"  {'':26s} {masking.words(masking_of(settings, r['date']))}")
    else:
        lines.append("  tracking is off (tracking.enabled: false)")
    lines.append("budget per dataset (composed over every charge):")
    for dataset in datasets(settings):
        rows = budget_usage(settings, dataset)
        lines.append(f"  {dataset}:" + ("" if rows else " nothing spent"))
        lines += [f"    {usage_line(r)}" for r in rows]
    lines.append(f"tables (rows{' in the ' + date + ' partition' if date else ''}):")
    for name, rows in table_rows(settings, date):
        lines.append(f"  {name:38s} {'not created' if rows is None else f'{rows:>9,}'}")
    return "\n".join(lines)


def cmd_status(args) -> int:
    from privtext.settings import load_settings

    print(render(load_settings(args.conf), args.date))
    return 0


def register(sub) -> None:
    status = sub.add_parser("status", help="last run of each pipeline, gate verdict, budget left, table rows")
    status.add_argument("--date", help="YYYY-MM-DD: that date's runs and partitions")
    status.set_defaults(func=cmd_status)
