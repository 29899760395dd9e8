"""``privtext report --date D``: the privacy report of one date, per dataset (HTML + PNG plots).

Sections: the budget spent vs the budget over time (``protected.privacy_ledger``: the dataset's
charges composed with ``ledger.composed_spend`` as of the end of each day that had charges), the
guarantees of the date's runs in plain words, the leakage audits of the date
(``protected.leakage_audits``) and its utility metrics (``protected.utility_reports`` and the metrics
of the date's MLflow stage runs).

The date's runs are the run ids found in the date's partitions of the protected tables, in the
MLflow runs tagged with the date, and in ledger charges whose params name the date. Everything shown
is an aggregate or a parameter: no restricted table is read and no text is written. Without Spark:
the tables are small protected tables, read with delta-rs. With ``--mlflow`` the report is logged as
artifacts of the pipeline's MLflow run (``tracking.pipeline_run``), next to the nested stage runs.
"""
from __future__ import annotations

import datetime as dt
import html
import json
import math
import os
from pathlib import Path

from privtext.settings import PROJECT_ROOT, Settings
from privtext.platform.lakehouse import Lakehouse, LakehouseError
from privtext.ledger import Ledger, composed_spend
from privtext.privacy.budget import describe
from privtext.platform.tables import LEAKAGE_AUDITS, NOISY_CENTERS, PRIVACY_LEDGER, UTILITY_REPORTS

# Spent quantity of each composed guarantee and the budget key that limits it.
LIMITS = {
    "secret_protection": ("r_over_p", "r_over_p_max", "r / p"),
    "approx_dp": ("epsilon", "eps_max", "epsilon at delta_max"),
    "mldp": ("epsilon", "mldp_eps_max", "metric-LDP epsilon of the most replaced value"),
}
AUDIT_COLUMNS = ("target", "adversary", "release", "valid", "eps", "triplets", "violation_ratio", "delta_target",
                 "log10_p_fail", "utility_loss", "passed")
UTILITY_COLUMNS = ("target", "method", "metric", "value")


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def plain_words(entry: dict, delta: float | None = None) -> str:
    """What one ledger charge guarantees, in a sentence (epsilon from its dp_event at ``delta`` if not recorded)."""
    spend, params = entry["spend"], entry["params"]
    who = f"{entry['stage']} / {entry['mechanism']}"
    adjacency = params.get("adjacency")
    neighbours = f" Neighbouring datasets: {adjacency}." if adjacency else ""
    kind = entry["guarantee"]
    if kind == "secret_protection":
        return (f"{who}: (p={_fmt(spend['p'])}, r={_fmt(spend['r'])})-secret protection. An attacker who could "
                f"reconstruct any one registered secret with prior probability p={_fmt(spend['p'])} succeeds with "
                f"probability at most r={_fmt(spend['r'])} after seeing the release. This protects one point of the "
                f"trade-off curve (a relaxation of differential privacy), not membership.{neighbours}")
    if kind == "approx_dp":
        eps, delta = spend.get("epsilon"), spend.get("delta", delta)
        if eps is None and entry.get("dp_event") and delta is not None:
            from privtext.privacy.accounting import epsilon_of, event_from_json

            eps = epsilon_of(event_from_json(entry["dp_event"]), delta)
        if eps is None:
            return f"{who}: approximate differential privacy; see the ledger entry's dp_event.{neighbours}"
        return (f"{who}: ({_fmt(eps)}, {_fmt(delta)})-differential privacy. Adding or removing one protected unit "
                f"changes the probability of any output by at most a factor e^{_fmt(eps)} = {_fmt(math.exp(eps))}, "
                f"except with probability {_fmt(delta)}.{neighbours}")
    if kind == "gdp":
        mu = spend.get("mu")
        return (f"{who}: {_fmt(mu)}-Gaussian DP. Telling whether one protected unit was in the data is at least as "
                f"hard as telling N(0,1) from N({_fmt(mu)},1).{neighbours}")
    if kind == "mldp":
        eps, metric, k = spend.get("epsilon"), params.get("metric", "the recorded metric"), params.get("k")
        pure = spend.get("pure_epsilon")
        return (f"{who}: {_fmt(eps)}-metric local DP per replaced occurrence of a value, for the metric {metric}"
                f" (k={_fmt(k)}): the likelihood ratio of two values x, x' is at most e^({_fmt(eps)}*{metric}(x,x')); "
                f"across all values at most e^{_fmt(pure)} (pure local DP). n occurrences of one value compose to "
                f"n times that; the ledger sums them per value.")
    if kind == "empirical_mpl":
        return f"{who}: measured leakage from an audit, recorded for the record; it is not a guarantee."
    why = f" Recorded because: {params['why']}." if params.get("why") else ""
    return f"{who}: no formal privacy guarantee is claimed for this output ({kind}).{why}"


def _rows_of_date(lakehouse: Lakehouse, spec, date: dt.date, columns) -> list[dict]:
    import pyarrow.compute as pc

    try:
        table = lakehouse.delta_table(spec)
    except LakehouseError:
        return []
    return table.to_pyarrow_dataset().to_table(filter=pc.field("date") == date, columns=list(columns)).to_pylist()


def _mlflow_runs(settings: Settings, date: str) -> list:
    """The MLflow stage runs tagged with the date (empty when tracking is off)."""
    if not settings.tracking.enabled:
        return []
    from privtext.platform.tracking import use_mlflow

    mlflow = use_mlflow(settings)
    experiment = mlflow.get_experiment_by_name(settings.tracking.experiment)
    runs = mlflow.search_runs([experiment.experiment_id], f"tags.date = '{date}'", output_format="list")
    return [r for r in runs if r.data.tags.get("stage") not in (None, "pipeline")]


def timeline(entries: list[dict], budget) -> list[tuple[dt.date, dict]]:
    """The composed spend (worst unit per guarantee) as of the end of each day with charges."""
    days = sorted({e["created_at"].date() for e in entries})
    return [(day, composed_spend([e for e in entries if e["created_at"].date() <= day], budget)) for day in days]


def collect(settings: Settings, date: str, dataset: str) -> dict:
    """Everything the report shows, as plain data (also written as report.json)."""
    day = dt.date.fromisoformat(date)
    lakehouse = Lakehouse(None, settings.lakehouse)
    lakehouse.create(PRIVACY_LEDGER)
    ledger = Ledger(lakehouse, settings)
    entries = ledger.entries(dataset)
    budget = settings.budget(dataset)
    audits = _rows_of_date(lakehouse, LEAKAGE_AUDITS, day, AUDIT_COLUMNS + ("run_id",))
    utility = _rows_of_date(lakehouse, UTILITY_REPORTS, day, UTILITY_COLUMNS + ("run_id",))
    centers = _rows_of_date(lakehouse, NOISY_CENTERS, day, ("run_id",))
    runs = _mlflow_runs(settings, date)
    run_ids = {r["run_id"] for r in audits + utility + centers} | {r.data.tags.get("privtext.run_id") for r in runs}
    charges = [e for e in entries if e["run_id"] in run_ids or e["params"].get("date") == date]
    measured = [e for e in entries if e["guarantee"] == "detection_recall" and e["params"].get("date") == date]
    detection = max(measured, key=lambda e: e["created_at"])["spend"] if measured else None
    return {
        "dataset": dataset,
        "date": date,
        "budget": budget.model_dump(),
        "spent": ledger.spent(dataset),
        "spent_in_words": describe(ledger.spent(dataset), budget),
        "timeline": [(d.isoformat(), total) for d, total in timeline(entries, budget)],
        "charges": [{"stage": e["stage"], "mechanism": e["mechanism"], "guarantee": e["guarantee"],
                     "spend": e["spend"], "run_id": e["run_id"], "created_at": e["created_at"].isoformat(),
                     "plain_words": plain_words(e, budget.delta_max)} for e in charges],
        "detection": detection,
        "audits": [{k: r[k] for k in AUDIT_COLUMNS} for r in audits],
        "utility": [{k: r[k] for k in UTILITY_COLUMNS} for r in utility],
        "stage_metrics": [{"stage": r.data.tags.get("stage"), "pipeline": r.data.tags.get("pipeline"),
                           "metrics": dict(sorted(r.data.metrics.items()))} for r in runs],
    }


def _plot_budget(data: dict, path: Path) -> bool:
    import matplotlib.pyplot as plt

    kinds = [k for k in LIMITS if any(k in total for _, total in data["timeline"])]
    if not kinds:
        return False
    import matplotlib.dates as mdates

    fig, axes = plt.subplots(1, len(kinds), figsize=(max(6.5, 4.5 * len(kinds)), 3.4), squeeze=False, sharex=True)
    days = [dt.date.fromisoformat(d) for d, _ in data["timeline"]]
    for ax, kind in zip(axes[0], kinds):
        key, limit_key, label = LIMITS[kind]
        points = [(dt.date.fromisoformat(d), total[kind][key]) for d, total in data["timeline"] if kind in total]
        ax.step([p[0] for p in points], [p[1] for p in points], where="post", marker="o", label="spent")
        limit = data["budget"].get(limit_key)
        if limit is not None:
            ax.axhline(limit, color="tab:red", linestyle="--", label=f"budget {limit_key} = {limit:g}")
        ax.set_ylim(bottom=0)
        ax.set_xlim(min(days) - dt.timedelta(days=1), max(days) + dt.timedelta(days=1))
        ax.set_title(kind)
        ax.set_ylabel(label)
        ax.legend(fontsize=8, loc="best")
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    fig.suptitle(f"dataset '{data['dataset']}': privacy spent vs budget")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _plot_audits(data: dict, path: Path) -> bool:
    import matplotlib.pyplot as plt

    rows = data["audits"]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(max(4.5, 1.2 * len(rows)), 3.4))
    names = [f"{r['target']}\n{r['adversary']} eps={_fmt(r['eps'])}" for r in rows]
    colors = ["tab:green" if r["passed"] else "tab:red" for r in rows]
    ax.bar(range(len(rows)), [r["violation_ratio"] for r in rows], color=colors, label="violation ratio")
    ax.scatter(range(len(rows)), [r["delta_target"] for r in rows], color="black", marker="_", s=400,
               label="delta target", zorder=3)
    ax.set_xticks(range(len(rows)), names, fontsize=7)
    ax.set_ylabel("mPL violation ratio")
    ax.set_title(f"leakage audits {data['date']} (green: passed)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _plot_utility(data: dict, path: Path) -> bool:
    import matplotlib.pyplot as plt

    rows = [r for r in data["utility"] if r["value"] is not None and math.isfinite(r["value"])]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(6.5, 0.35 * len(rows) + 1.5))
    ax.barh(range(len(rows)), [r["value"] for r in rows], color="tab:blue")
    ax.set_yticks(range(len(rows)), [f"{r['target']} / {r['method']} / {r['metric']}" for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_title(f"utility metrics {data['date']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _table(rows: list[dict], columns) -> str:
    if not rows:
        return "<p><em>none for this date</em></p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _detection(detection: dict | None) -> str:
    """Canary recall: values detection misses are published verbatim, and no guarantee covers them."""
    if not detection:
        return "<p><strong>Not measured for this date</strong> (pii.canaries.count is 0): missed values are unknown.</p>"
    overall = detection["overall"]
    rows = [{"type": t, "values": v["values"], "recall": f"{v['recall']:.1%}", "characters covered": f"{v['coverage']:.1%}"}
            for t, v in detection["by_type"].items()]
    return (f"<p>Detection found {overall['recall']:.1%} of {overall['values']} known values in tonight's canary "
            f"documents ({overall['coverage']:.1%} of their characters). Values it misses are published verbatim: "
            "no guarantee above covers them.</p>" + _table(rows, ("type", "values", "recall", "characters covered")))


def _html(data: dict, images: dict[str, bool]) -> str:
    esc = html.escape
    spent = "".join(f"<li>{esc(sentence)}</li>" for sentence in data["spent_in_words"])
    budget = esc(json.dumps({k: v for k, v in data["budget"].items() if v is not None}))
    charges = "".join(f"<li>{esc(c['plain_words'])}</li>" for c in data["charges"]) or "<li>no charges</li>"
    metrics = [{"stage": m["stage"], "pipeline": m["pipeline"], "metrics": ", ".join(
        f"{k}={_fmt(v)}" for k, v in m["metrics"].items())} for m in data["stage_metrics"]]

    def img(name):
        return f'<img src="{name}.png" alt="{name}">' if images.get(name) else "<p><em>no data</em></p>"

    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>privtext privacy report {esc(data['dataset'])} {esc(data['date'])}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px;font-size:13px}}img{{max-width:100%}}</style></head><body>
<h1>Privacy report: dataset <code>{esc(data['dataset'])}</code>, {esc(data['date'])}</h1>
<h2>Budget</h2><p>Budget: <code>{budget}</code></p><p>Spent so far (all charges, composed):</p><ul>{spent}</ul>
{img('budget')}
<h2>Guarantees of this date's runs</h2><ul>{charges}</ul>
<h2>What detection missed (measured on canaries)</h2>{_detection(data.get("detection"))}
<h2>Leakage audits (mPL)</h2>{img('audits')}{_table(data['audits'], AUDIT_COLUMNS)}
<h2>Utility</h2>{img('utility')}{_table(data['utility'], UTILITY_COLUMNS)}
<h3>Stage runs (MLflow metrics)</h3>{_table(metrics, ('stage', 'pipeline', 'metrics'))}
</body></html>
"""


def write_report(settings: Settings, date: str, dataset: str, out: str | Path) -> Path:
    """Write ``<out>/<dataset>/<date>/``: report.html, report.json and the PNGs; returns the folder."""
    import matplotlib

    matplotlib.use("Agg")
    folder = Path(out) / dataset / date
    folder.mkdir(parents=True, exist_ok=True)
    data = collect(settings, date, dataset)
    images = {"budget": _plot_budget(data, folder / "budget.png"),
              "audits": _plot_audits(data, folder / "audits.png"),
              "utility": _plot_utility(data, folder / "utility.png")}
    (folder / "report.json").write_text(json.dumps(data, indent=2, default=str))
    (folder / "report.html").write_text(_html(data, images))
    return folder


def datasets(settings: Settings) -> list[str]:
    """The configured dataset and every dataset with a ledger charge."""
    lakehouse = Lakehouse(None, settings.lakehouse)
    lakehouse.create(PRIVACY_LEDGER)
    return sorted({settings.run.dataset} | {e["dataset"] for e in Ledger(lakehouse, settings).entries()})


def log_report(tracked, folder: Path, dataset: str) -> None:
    """Log a report folder as artifacts ``privacy_report/<dataset>/`` of the (pipeline) run."""
    for path in sorted(folder.iterdir()):
        tracked.log_artifact(str(path), f"privacy_report/{dataset}")


def cmd_report(args) -> int:
    from privtext.settings import load_settings
    from privtext.platform.tracking import PIPELINE_RUN_ENV, pipeline_run

    settings = load_settings(args.conf)
    names = [args.dataset] if args.dataset else datasets(settings)
    folders = {name: write_report(settings, args.date, name, args.out) for name in names}
    if args.mlflow:
        with pipeline_run(settings, args.pipeline, args.date, key=os.environ.get(PIPELINE_RUN_ENV)) as tracked:
            for name, folder in folders.items():
                log_report(tracked, folder, name)
    for folder in folders.values():
        print(folder / "report.html")
    return 0


def register(sub) -> None:
    report = sub.add_parser("report", help="privacy report of a date (HTML + PNG): budget, guarantees, audits, utility")
    report.add_argument("--date", required=True, help="YYYY-MM-DD")
    report.add_argument("--dataset", help="one dataset (default: the configured one and every dataset in the ledger)")
    report.add_argument("--out", default=str(PROJECT_ROOT / "build" / "reports"), help="output folder")
    report.add_argument("--mlflow", action="store_true",
                        help="also log it as artifacts of the pipeline's MLflow run (PRIVTEXT_PIPELINE_RUN names it)")
    report.add_argument("--pipeline", default="adhoc", help="pipeline name of the MLflow run (with --mlflow)")
    report.set_defaults(func=cmd_report)
