"""``privtext report --date D``: the privacy report of one date, per dataset: one HTML file, images inside.

What a privacy officer reads first, in order:

1. A verdict card per product of the date (sanitized export, synthetic documents, word vectors: those
   with a ledger charge of the date in this dataset): published or refused and why (the publish gate's
   own checks, ``publish.gate_decision`` and ``lineage.lineage_problems``, re-run on the recorded audits
   and measurements), the guarantee in one plain sentence, and what it does NOT cover (missed
   detections with the measured canary recall, text outside the detected spans, the audit being a
   lower bound).
2. The budget per protected unit (``privacy.budget.usage`` of the ledger's composed spend) and its
   trend over data dates: the composed spend of the charges for data up to each date.
3. The leakage audits with their negative controls, and utility against a baseline.
4. A collapsed details section: every charge of the date in words, detection per type, stage metrics.

The date's runs are the run ids found in the date's partitions of the protected tables, in the MLflow
runs tagged with the date, and in ledger charges whose params name the date. Everything shown is an
aggregate or a parameter: only run ids are read from staged and published tables, no text is written.
Without Spark (delta-rs). ``report.json`` beside it holds the same figures as data. With ``--mlflow`` the
report is logged as artifacts of the pipeline's MLflow run (``tracking.pipeline_run``).
"""
from __future__ import annotations

import base64
import datetime as dt
import html
import io
import json
import math
import os
from pathlib import Path

from privtext.clusant import masking
from privtext.ledger import Ledger, charged_date, composed_spend, latest_measurement
from privtext.platform.lakehouse import Lakehouse, LakehouseError
from privtext.platform.tables import (
    EPS_FRONTIER,
    LEAKAGE_AUDITS,
    NOISY_CENTERS,
    PRIVACY_LEDGER,
    PUBLISHED_SANITIZED_DOCUMENTS,
    PUBLISHED_SYNTHETIC_DOCUMENTS,
    STAGED_SANITIZED_DOCUMENTS,
    STAGED_SYNTHETIC_DOCUMENTS,
    UTILITY_REPORTS,
    WORD_VECTORS,
)
from privtext.privacy.budget import ComposedSpend, describe, usage
from privtext.settings import Settings, resolve_uri

AUDIT_COLUMNS = ("target", "adversary", "release", "valid", "eps", "triplets", "violation_ratio", "delta_target",
                 "log10_p_fail", "utility_loss", "passed", "staged_runs", "run_id")
UTILITY_COLUMNS = ("target", "method", "metric", "value")
FRONTIER_COLUMNS = ("target", "source", "eps_pii", "eps_poii", "violation_ratio", "utility_loss", "chosen")
# product -> (the stage whose ledger charge of the date makes it part of the report, its staged and published tables)
PRODUCTS = {"sanitized export": ("sanitize", STAGED_SANITIZED_DOCUMENTS, PUBLISHED_SANITIZED_DOCUMENTS),
            "synthetic documents": ("synthesize", STAGED_SYNTHETIC_DOCUMENTS, PUBLISHED_SYNTHETIC_DOCUMENTS),
            "word vectors": ("train_dped", None, WORD_VECTORS)}
ROW_NAMES = {"sanitized export": "documents", "synthetic documents": "texts", "word vectors": "words"}
# utility metric -> (label, how to read it, baseline metric)
UTILITY_READING = {"downstream_accuracy": ("classifier trained on synthetic, accuracy on real", "higher is better",
                                           "majority_label_accuracy"),
                   "public_only_accuracy": ("classifier trained on the secret-free training messages as they are, "
                                            "accuracy on real", "the alternative release: if not lower than the "
                                            "synthetic accuracy, prefer publishing those", None),
                   "fid": ("Fréchet distance of embeddings (real vs synthetic)", "lower is better", None),
                   "length_ks": ("length distribution distance (KS)", "0 identical, 1 disjoint", None),
                   # the sanitized export (stages.sanitize._export_utility); baseline: the same classifier on the
                   # original
                   "sanitized_train_accuracy": ("classifier trained on sanitized text, accuracy on original text",
                                                "higher is better; baseline: trained on the original",
                                                "original_train_accuracy"),
                   "accuracy_gap": ("accuracy lost to sanitization (original minus sanitized)", "0: nothing lost",
                                    None),
                   "semantic_similarity": ("cosine of sentence embeddings, original vs sanitized", "1: same meaning",
                                           None),
                   "format_kept_share": ("replacements keeping their type and surface format", "1: every one", None)}


def _fmt(value) -> str:
    """A number for people: thousands separators, 3 significant digits, no float noise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
            return f"{value:.2g}"
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _pct(value: float) -> str:
    """A share as a percentage: 0.01% for 1e-4, 99.0%, 99.80% (never a misleading 0.0% or 100.0%)."""
    if 0 < value < 0.01:
        return f"{value * 100:.2g}%"
    return f"{value:.1%}" if value < 0.995 or value == 1 else f"{value:.2%}"


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
        draw = (f" One draw per value per {params['surrogate_epoch_days']}-day epoch, reused for all its occurrences: "
                "which spans hold the same value is disclosed (its count too), the value is not."
                if params.get("draw") else " n occurrences of one value compose to n times that.")
        return (f"{who}: {_fmt(eps)}-metric local DP per draw of a value, for the metric {metric}"
                f" (k={_fmt(k)}): the likelihood ratio of two values x, x' is at most e^({_fmt(eps)}*{metric}(x,x')); "
                f"across all values at most e^{_fmt(pure)} (pure local DP).{draw} The ledger sums the draws per "
                "value string, across the types the detector gave it.")
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


def data_date(entry: dict) -> dt.date:
    """The data date a charge is for: its params' ``date``, else the day it was recorded."""
    return charged_date(entry) or entry["created_at"].date()


def timeline(entries: list[dict], budget) -> list[tuple[dt.date, ComposedSpend]]:
    """The composed spend (worst unit per guarantee) of the charges for data up to each data date."""
    days = sorted({data_date(e) for e in entries})
    return [(day, composed_spend([e for e in entries if data_date(e) <= day], budget)) for day in days]


def _rows_by_run(lakehouse: Lakehouse, spec, date: dt.date) -> dict[str, int]:
    """Rows per run id in the date's partition (word vectors: in every model version)."""
    import pyarrow.compute as pc

    if spec is None:
        return {}
    try:
        dataset = lakehouse.delta_table(spec).to_pyarrow_dataset()
    except LakehouseError:
        return {}
    where = None if spec is WORD_VECTORS else pc.field("date") == date
    runs = dataset.to_table(columns=["run_id"], filter=where)["run_id"]
    return {c["values"]: c["counts"] for c in pc.value_counts(runs).to_pylist()}


def verdicts(settings: Settings, lakehouse: Lakehouse, day: dt.date, charges: list[dict], entries: list[dict],
             audits: list[dict], detection: dict | None) -> list[dict]:
    """Per product of the date: published or not and why, its guarantee and what it does not cover
    (``detection``: the date's canary measurement)."""
    from privtext.lineage import lineage_problems, staged_state
    from privtext.stages.publish import gate_decision

    out = []
    for product, (stage, staged_spec, published_spec) in PRODUCTS.items():
        mine = [c for c in charges if c["stage"] == stage]
        if not mine:
            continue
        latest_run = max(mine, key=lambda c: c["created_at"])["run_id"]
        staged, published = _rows_by_run(lakehouse, staged_spec, day), _rows_by_run(lakehouse, published_spec, day)
        overrides = [e for e in entries if e["stage"] == "publish" and charged_date(e) == day
                     and e["params"].get("target") == published_spec.name and e["created_at"] > mine[-1]["created_at"]]
        reasons = []
        if staged_spec is None:
            state = "published" if latest_run in published else "not published"
        elif staged and set(staged) == set(published):
            state = "published"
        else:
            state = "refused" if staged else "not staged"
            if stage == "sanitize" and staged:
                reasons = gate_decision([a for a in audits if a["target"] == published_spec.name],
                                        list(settings.publish.audit_adversaries),
                                        [staged_state(lakehouse, staged_spec, day, staged)])
                params = sorted({r["params"] for r in _rows_of_date(lakehouse, staged_spec, day, ("params",))})
                reasons += lineage_problems(lakehouse, settings, entries, day, params,
                                            settings.publish.min_canary_recall)[0]
            if state == "refused" and not reasons:
                state, reasons = "staged, not yet published", ["the gate's checks hold; run publish"]
        if state == "published" and overrides:
            last = overrides[-1]["params"]
            reasons = [f"the gate was bypassed ({overrides[-1]['mechanism'].removeprefix('gate_')}) by "
                       f"{last.get('who', '?')}: {last.get('why', '')}"] + list(last.get("gate_problems") or [])
        if stage == "train_dped":
            reasons += _word_vector_usefulness(max(mine, key=lambda c: c["created_at"]))
        if stage == "synthesize":
            reasons += _synthetic_decision(lakehouse, day)
        rows = published.get(latest_run, 0) if staged_spec is None else sum(published.values())
        spans = (masking.from_params(sorted({r["params"]
                                             for r in _rows_of_date(lakehouse, staged_spec, day, ("params",))}))
                 if stage == "sanitize" else None)
        out.append({"product": product, "state": state, "rows": rows if state == "published" else 0, "reasons": reasons,
                    "guarantee": _guarantee(product, mine, spans), "not_covered": _not_covered(product, detection),
                    "masking": masking.words(spans) if stage == "sanitize" else None})
    return out


def _guarantee(product: str, charges: list[dict], spans: dict | None = None) -> str:
    """The guarantee of a product's charges of the date, in one sentence; for the sanitized export also what
    was not replaced (``spans``: ``clusant.masking`` summary): masked as [TYPE], or left as written (allow-list)."""
    if product == "sanitized export":
        mldp = [c for c in charges if c["guarantee"] == "mldp"]
        rest = ""
        if spans and spans["masked"]:
            rest += (f" {spans['masked_share']:.1%} of the spans ({', '.join(spans['masked_types'])}) are not replaced "
                     "but masked as [TYPE] (nothing of the value is released).")
        if spans and spans["allowed"]:
            rest += (f" {spans['allowed_share']:.1%} are left as written: they equal a value the data team declared "
                     "public (clusant.allow_list).")
        if not mldp:
            return ("No formal guarantee: the sanitizer recorded none ("
                    + ", ".join(c["mechanism"] for c in charges) + ").")
        by_eps: dict = {}
        for c in mldp:
            by_eps.setdefault(c["spend"]["epsilon"], []).append(c)
        parts = []
        for eps, group in sorted(by_eps.items()):
            pure = sorted(c["spend"]["pure_epsilon"] for c in group)
            ratio = _fmt(math.exp(pure[-1]))
            types = ", ".join(sorted(c["params"].get("entity_type", "?") for c in group))
            parts.append(f"ε = {_fmt(eps)} for {types} "
                         f"(any two values at most {ratio} times more likely to give the same surrogate)")
        consistent = ("one draw per value per epoch, reused for its occurrences: "
                      if any(c["params"].get("draw") for c in mldp) else "per occurrence: ")
        lead = "Detected values are" if rest else "Every detected value is"
        return (f"{lead} replaced by a surrogate drawn with metric local differential privacy, "
                + consistent + "; ".join(parts) + "." + rest)
    c = max(charges, key=lambda c: c["created_at"])
    if product == "synthetic documents":
        p, r = c["spend"]["p"], c["spend"]["r"]
        return (f"({_fmt(p)}, {_fmt(r)})-secret protection: an attacker who starts with at most a {_pct(p)} chance of "
                f"reconstructing any one detected secret has at most a {_pct(r)} chance after seeing the synthetic "
                "texts.")
    eps, delta = c["spend"].get("epsilon"), c["spend"].get("delta")
    unit = c["params"].get("unit", "record")
    return (f"({_fmt(eps)}, {_fmt(delta)})-differential privacy per {unit}: adding or removing one {unit}'s messages "
            f"changes the probability of any set of word vectors by at most a factor {_fmt(math.exp(eps))}, "
            f"except with probability {_fmt(delta)}.")


def _synthetic_decision(lakehouse: Lakehouse, day: dt.date) -> list[str]:
    """evaluate's decision aid of the date (``stages.evaluate.decision``: synthetic table vs the secret-free
    documents as they are, from that run's accuracies), as the card says it."""
    rows = _rows_of_date(lakehouse, UTILITY_REPORTS, day, ("target", "details"))
    found = {json.loads(r["details"]).get("decision") for r in rows if r["target"] == "synthetic_documents"}
    return [f"Measured on held-out messages: {d}." for d in sorted(x for x in found if x)]


def _word_vector_usefulness(charge: dict) -> list[str]:
    """What the DPED charge bought: its best-case signal/noise per released vector (recorded with the
    charge, data-independent) and, within the measured range, the frontier of benchmarks/word_vectors/dped_frontier.py
    (20 Newsgroups: no setting reached a mean WordSim-353 Spearman of 0.15 at eps <= 16; public vectors 0.63-0.77)."""
    snr = (charge["params"].get("best_case_snr") or {}).get("hidden")
    if snr is None:
        return []
    noise = (f"the noise on each released vector is {_fmt(1 / snr)} times the largest possible signal (all teachers "
             "agreeing)")
    if (charge["spend"].get("epsilon") or math.inf) > 16:
        return [f"Usefulness not measured above ε = 16: {noise}."]
    return [f"Not useful at this budget: {noise}; on 20 Newsgroups no DPED setting at ε ≤ 16 reached a mean "
            "WordSim-353 Spearman of 0.15 over 3 noise draws, while public word vectors that use no private data "
            "score 0.63 to 0.77 (benchmarks/word_vectors/dped_frontier.py)."]


def miss_bound(recall: float, values: int) -> float:
    """95% upper confidence bound (Clopper-Pearson) on the share of values detection misses."""
    from scipy.stats import beta

    missed = round((1 - recall) * values)
    return 1.0 if values == 0 else float(beta.ppf(0.95, missed + 1, values - missed))


def _not_covered(product: str, detection: dict | None) -> list[str]:
    if product == "word vectors":
        return ["Groups of people (e.g. one company's staff) are protected only with ε times the group's size."]
    if detection:
        overall = detection["spend"]["overall"]
        missed = (f"Detection found {_pct(overall['recall'])} of {overall['values']:,} known values planted in "
                  f"tonight's canary documents: up to {_pct(miss_bound(overall['recall'], overall['values']))} of "
                  "real values may be missed (95% upper bound, for values like the canaries)")
    else:
        missed = "Detection recall was not measured for this date (pii.canaries.count is 0): missed values are unknown"
    if product == "synthetic documents":
        return [missed + ": an undetected secret is not protected.",
                "Messages without a detected secret count as public and guide the generation unprotected."]
    return [missed + ": a missed value is published verbatim.",
            "Text outside the detected spans is published unchanged; no guarantee covers it.",
            "The leakage audit is a lower bound on what its adversaries found, not a certificate."]


def collect(settings: Settings, day: dt.date, dataset: str) -> dict:
    """Everything the report shows, as plain data (also written as report.json)."""
    lakehouse = Lakehouse(None, settings.lakehouse)
    lakehouse.create(PRIVACY_LEDGER)
    ledger = Ledger(lakehouse, settings)
    entries = ledger.entries(dataset)
    budget = settings.budget(dataset)
    audits = _rows_of_date(lakehouse, LEAKAGE_AUDITS, day, AUDIT_COLUMNS)
    utility = _rows_of_date(lakehouse, UTILITY_REPORTS, day, UTILITY_COLUMNS + ("run_id",))
    frontier = _rows_of_date(lakehouse, EPS_FRONTIER, day, FRONTIER_COLUMNS)
    centers = _rows_of_date(lakehouse, NOISY_CENTERS, day, ("run_id",))
    runs = _mlflow_runs(settings, day.isoformat())
    run_ids = {r["run_id"] for r in audits + utility + centers} | {r.data.tags.get("privtext.run_id") for r in runs}
    charges = [e for e in entries if (e["run_id"] in run_ids or charged_date(e) == day)
               and e["guarantee"] != "detection_recall"]
    # a property of the date's data: the dataset's own measurement, else one in any dataset (the demo's
    # refresh measures its own source on the export's date)
    detection = latest_measurement(entries, day) or latest_measurement(ledger.entries(), day)
    spent = ledger.spent(dataset)
    trend = timeline(ledger.entries(), budget)  # the one account, every dataset's charges
    return {
        "dataset": dataset,
        "date": day.isoformat(),
        "products": verdicts(settings, lakehouse, day, charges, entries, audits, detection),
        "budget": budget.model_dump(),
        "spent": spent.to_dict(),
        "spent_in_words": describe(spent, budget),
        "usage": usage(spent, budget),
        "allow_list": list(settings.clusant.allow_list),
        "timeline": [(d.isoformat(), total.to_dict()) for d, total in trend],
        "trend": [(d.isoformat(), usage(total, budget)) for d, total in trend],
        "charges": [{"stage": e["stage"], "mechanism": e["mechanism"], "guarantee": e["guarantee"],
                     "spend": e["spend"], "run_id": e["run_id"], "created_at": e["created_at"].isoformat(),
                     "plain_words": plain_words(e, budget.delta_max)} for e in charges],
        "detection": detection["spend"] if detection else None,
        "audits": [{k: r[k] for k in AUDIT_COLUMNS} for r in audits],
        "utility": [{k: r[k] for k in UTILITY_COLUMNS} for r in utility
                    if r["target"] != "synthetic_noise"],  # functions of the private structure: protected only
        "frontier": sorted(frontier, key=lambda r: (r["source"], r["eps_pii"], r["eps_poii"])),
        "stage_metrics": [{"stage": r.data.tags.get("stage"), "pipeline": r.data.tags.get("pipeline"),
                           "metrics": dict(sorted(r.data.metrics.items()))} for r in runs],
    }


def _png(fig) -> str:
    """A matplotlib figure as a data URI (the report is one file)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _plot_trend(data: dict) -> str | None:
    """Spent vs limit per protected unit over data dates (one panel per unit)."""
    import matplotlib.pyplot as plt

    points: dict = {}
    for day, rows in data["trend"]:
        for row in rows:
            points.setdefault(row["guarantee"], (row, []))[1].append((day, row["spent"]))
    if not points:
        return None
    days = [d for d, _ in data["trend"]]
    fig, axes = plt.subplots(1, len(points), figsize=(3.6 * len(points), 2.6), squeeze=False)
    for ax, (row, series) in zip(axes[0], points.values()):
        ax.plot([days.index(d) for d, _ in series], [v for _, v in series], marker="o", color="tab:blue", label="spent")
        ax.axhline(row["limit"], color="tab:red", linestyle="--", label=f"limit {row['limit']:g}")
        ax.set_xticks(range(len(days)), days, fontsize=7, rotation=30 if len(days) > 3 else 0)
        ax.set_xlim(-0.5, len(days) - 0.5)
        ax.set_ylim(0, row["limit"] * 1.1)
        ax.set_title(f"per {row['unit']}: {row['measure']}", fontsize=8)
        ax.set_xlabel("data date", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return _png(fig)


def _audit_verdict(row: dict) -> str:
    if row["passed"]:
        return "no leakage found (a lower bound)"
    if row["violation_ratio"] >= row["delta_target"]:
        return "leakage found"
    return "below the target, but not confidently (too few triplets)"


def _plot_audits(audits: list[dict]) -> str | None:
    """Per adversary: the release (coloured by its reading) and its two controls (grey), against the target."""
    import matplotlib.pyplot as plt

    if not audits:
        return None
    colors = {"no leakage found (a lower bound)": "tab:green", "leakage found": "tab:red"}
    fig, ax = plt.subplots(figsize=(max(4.5, 1.5 * len(audits)), 2.6))
    names = [f"{r['adversary']}\n{SHORT_RELEASES.get(r['release'], r['release'])}" for r in audits]
    ax.bar(range(len(audits)), [r["violation_ratio"] for r in audits],
           color=[colors.get(_audit_verdict(r), "tab:orange") if r["release"] == "candidate" else "tab:gray"
                  for r in audits])
    ax.axhline(audits[0]["delta_target"], color="black", linestyle="--", label=f"target {audits[0]['delta_target']:g}")
    ax.set_xticks(range(len(audits)), names, fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("violation ratio", fontsize=8)
    ax.set_title("release: green no leakage found, red leakage, orange not confident; controls grey", fontsize=7)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _plot_frontier(points: list[dict], target: float | None) -> str | None:
    """AmPL's eps -> leakage and utility points of the date: the tuner's grid and the nightly loop's rounds,
    the setting staged for publishing circled."""
    import matplotlib.pyplot as plt

    if not points:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 2.8))
    for source, marker, label in (("tune", "o", "privtext tune sanitize"), ("retune", "s", "nightly loop")):
        rows = [p for p in points if p["source"] == source]
        if not rows:
            continue
        x = [p["eps_pii"] for p in rows]
        left.scatter(x, [p["violation_ratio"] for p in rows], marker=marker, label=label)
        right.scatter(x, [p["utility_loss"] if p["utility_loss"] is not None else float("nan") for p in rows],
                      marker=marker, label=label)
        for ax, key in ((left, "violation_ratio"), (right, "utility_loss")):
            for p in rows:
                if p["chosen"] and p[key] is not None:
                    ax.scatter([p["eps_pii"]], [p[key]], s=160, facecolors="none", edgecolors="black")
    if target is not None:
        left.axhline(target, color="black", linestyle="--", label=f"target {target:g}")
    left.set_ylabel("violation ratio", fontsize=8)
    right.set_ylabel("utility loss (tune: Eq. 14; loop: 1 - similarity)", fontsize=7)
    for ax in (left, right):
        ax.set_xlabel("eps of the PII tier (PoII: its own eps, see table)", fontsize=8)
        ax.legend(fontsize=7)
    fig.suptitle("what a stricter or looser sanitizer would cost (circled: the setting staged)", fontsize=8)
    fig.tight_layout()
    return _png(fig)


RELEASES = {"candidate": "the release", "control_identity": "control: unchanged text",
            "control_uniform": "control: every secret random"}
SHORT_RELEASES = {"candidate": "release", "control_identity": "control: unchanged",
                  "control_uniform": "control: random"}
FRONTIER_SOURCES = {"tune": "privtext tune sanitize", "retune": "nightly loop"}
CONTROL_EXPECTED = {"control_identity": False, "control_uniform": True}  # passed, as it must be


def _table(rows: list[list], head: list[str]) -> str:
    if not rows:
        return "<p class=muted>none for this date</p>"
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v) if not isinstance(v, str) else v)}</td>" for v in r)
                    + "</tr>" for r in rows)
    return "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + f"</tr>{cells}</table>"


def _card(product: dict) -> str:
    esc = html.escape
    ok = product["state"] == "published" and not product["reasons"]
    css = "ok" if ok else ("warn" if product["state"] == "published" else "bad")
    reasons = "".join(f"<li>{esc(r)}</li>" for r in product["reasons"])
    gaps = "".join(f"<li>{esc(g)}</li>" for g in product["not_covered"])
    rows = f" ({product['rows']:,} {ROW_NAMES[product['product']]})" if product["rows"] else ""
    return (f'<div class="card {css}"><h2>{esc(product["product"])}: <span class=state>{esc(product["state"].upper())}'
            f"</span>{esc(rows)}</h2>{f'<ul class=reasons>{reasons}</ul>' if reasons else ''}"
            + (f"<p><b>Spans.</b> {esc(product['masking'])}</p>" if product.get("masking") else "")
            + f"<p><b>Guarantee.</b> {esc(product['guarantee'])}</p><p><b>Not covered.</b></p><ul>{gaps}</ul></div>")


def _html(data: dict) -> str:
    esc = html.escape
    cards = "".join(_card(p) for p in data["products"]) or "<p>No release of this dataset for this date.</p>"
    budget_rows = [[r["unit"], r["guarantee"].replace("_", " "), r["measure"], _fmt(r["spent"]), _fmt(r["limit"]),
                    f"{r['spent'] / r['limit']:.0%}", _fmt(r["units"]), _fmt(r["near_limit"])] for r in data["usage"]]
    trend = _plot_trend(data)
    audits = data["audits"]
    audit_rows = []
    for r in audits:
        expected = CONTROL_EXPECTED.get(r["release"])
        reading = _audit_verdict(r) if expected is None else (
            ("failed, as it must" if not r["passed"] else "PASSED: the audit is blind, so it is invalid")
            if expected is False else ("passed, as it must" if r["passed"] else "FAILED: the audit is invalid"))
        audit_rows.append([r["adversary"], RELEASES.get(r["release"], r["release"]), _fmt(r["violation_ratio"]),
                           _fmt(r["delta_target"]), _fmt(r["triplets"]), _fmt(r["eps"]), reading])
    audit_png = _plot_audits(audits)
    frontier = data.get("frontier", [])
    frontier_png = _plot_frontier(frontier, audits[0]["delta_target"] if audits else None)
    frontier_rows = [[FRONTIER_SOURCES[p["source"]], _fmt(p["eps_pii"]), _fmt(p["eps_poii"]),
                      _fmt(p["violation_ratio"]), _fmt(p["utility_loss"]), "yes" if p["chosen"] else ""]
                     for p in frontier]
    utility = {(r["method"], r["metric"]): r["value"] for r in data["utility"]}
    utility_rows = [[method, UTILITY_READING[metric][0], _fmt(value),
                     _fmt(utility.get((method, UTILITY_READING[metric][2]))) if UTILITY_READING[metric][2] else "–",
                     UTILITY_READING[metric][1]]
                    for (method, metric), value in utility.items() if metric in UTILITY_READING]
    detection = data.get("detection")
    detection_rows = [[t, _fmt(v["values"]), _pct(v["recall"]), _pct(v["coverage"])]
                      for t, v in (detection or {}).get("by_type", {}).items()]
    metric_rows = [[m["stage"] or "", m["pipeline"] or "", k, _fmt(v)] for m in data["stage_metrics"]
                   for k, v in m["metrics"].items()]
    charges = "".join(f"<li>{esc(c['plain_words'])}</li>" for c in data["charges"]) or "<li>no charges</li>"
    img = lambda uri, alt: f'<img src="{uri}" alt="{alt}">' if uri else "<p class=muted>no data</p>"  # noqa: E731
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>privacy report {esc(data['dataset'])} {esc(data['date'])}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1000px;margin:1.5em auto;color:#222;line-height:1.4}}
table{{border-collapse:collapse;margin:.5em 0}}
td,th{{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}}
th{{background:#f3f3f3}}img{{max-width:100%}}.muted{{color:#777}}
.card{{border-left:8px solid;padding:.3em 1em;margin:.8em 0;background:#fafafa}}
.card h2{{margin:.3em 0;font-size:1.2em}}.ok{{border-color:#2a2}}.warn{{border-color:#e90}}.bad{{border-color:#d22}}
.ok .state{{color:#2a2}}.warn .state{{color:#c70}}.bad .state{{color:#d22}}summary{{cursor:pointer;font-weight:bold}}
</style></head><body>
<h1>Privacy report: {esc(data['dataset'])}, data of {esc(data['date'])}</h1>
<section id=verdict>{cards}</section>
<h2>Budget per protected unit</h2><p>Composed over every charge of the ledger (one account: every dataset's
charges), all stages and dates, against the budget of <code>{esc(data['dataset'])}</code>; the worst unit of each
kind.</p>
{_table(budget_rows, ['protected unit', 'guarantee', 'measure', 'spent', 'limit', 'used', 'units', 'near the limit'])}
<h3>Allow-list</h3><p>Values the data team declared public (<code>clusant.allow_list</code>): a span equal to one
(after Unicode NFC only: no case folding, no look-alikes, no substrings) is left as written and charged nothing.</p>
{_table([[v] for v in data.get('allow_list', [])], ['public value'])}
<h3>Trend over data dates</h3>{img(trend, 'budget spent per data date')}
<h2>Leakage audits and their controls</h2><p>Each audit trains an adversary to guess the secret behind a
replacement. Its two controls must behave: the unchanged text must fail, a random replacement must pass;
otherwise the audit cannot tell leaking from safe releases.</p>
{_table(audit_rows, ['adversary', 'release', 'violation ratio', 'target', 'triplets', 'eps', 'reading'])}
{img(audit_png, 'leakage audits') if audits else ''}
<h3>The sanitizer's eps against leakage and utility</h3><p>Points AmPL measured for this date: the nightly
loop's rounds (the configured eps first, stricter ones only after a refused audit) and, where it ran,
<code>privtext tune sanitize</code>'s grid. A privacy officer reads what a stricter or looser setting would cost.</p>
{_table(frontier_rows, ['measured by', 'eps PII', 'eps PoII', 'violation ratio', 'utility loss', 'staged'])}
{img(frontier_png, 'eps frontier') if frontier else ''}
<h2>Utility</h2>{_table(utility_rows, ['method', 'metric', 'value', 'baseline', 'reading'])}
<details><summary>Details: every charge of this date, detection per type, stage metrics</summary>
<h3>Charges of this date, in words</h3><ul>{charges}</ul>
<h3>Detection on canary documents, per type</h3>
{_table(detection_rows, ['type', 'planted values', 'found', 'characters covered'])}
<h3>Stage runs (MLflow metrics)</h3>{_table(metric_rows, ['stage', 'pipeline', 'metric', 'value'])}
</details></body></html>
"""


def write_report(settings: Settings, day: dt.date, dataset: str, out: str | Path) -> Path:
    """Write ``<out>/<dataset>/<date>/report.html`` (images inside) and ``report.json``; returns the folder."""
    import matplotlib

    matplotlib.use("Agg")
    folder = Path(out) / dataset / day.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    data = collect(settings, day, dataset)
    (folder / "report.json").write_text(json.dumps(data, indent=2, default=str))
    (folder / "report.html").write_text(_html(data))
    return folder


def log_report(tracked, folder: Path, dataset: str) -> None:
    """Log a report folder as artifacts ``privacy_report/<dataset>/`` of the (pipeline) run."""
    for path in sorted(folder.iterdir()):
        tracked.log_artifact(str(path), f"privacy_report/{dataset}")


def cmd_report(args) -> int:
    from privtext.platform.tracking import PIPELINE_RUN_ENV, pipeline_run
    from privtext.settings import load_settings
    from privtext.status import datasets

    settings = load_settings(args.conf)
    names = [args.dataset] if args.dataset else datasets(settings)
    out = args.out or resolve_uri(settings.publish.report_path)
    folders = {name: write_report(settings, args.date, name, out) for name in names}
    if args.mlflow:
        key = os.environ.get(PIPELINE_RUN_ENV)
        with pipeline_run(settings, args.pipeline, args.date.isoformat(), key=key) as tracked:
            for name, folder in folders.items():
                log_report(tracked, folder, name)
    for folder in folders.values():
        print(folder / "report.html")
    return 0


def register(sub) -> None:
    report = sub.add_parser("report", help="privacy report of a date (one HTML file): verdict, budget, audits, utility")
    report.add_argument("--date", required=True, type=dt.date.fromisoformat, help="YYYY-MM-DD")
    report.add_argument("--dataset", help="one dataset (default: the configured one and every dataset in the ledger)")
    report.add_argument("--out", help="output folder (default: publish.report_path, build/reports)")
    report.add_argument("--mlflow", action="store_true",
                        help="also log it as artifacts of the pipeline's MLflow run (PRIVTEXT_PIPELINE_RUN names it)")
    report.add_argument("--pipeline", default="adhoc", help="pipeline name of the MLflow run (with --mlflow)")
    report.set_defaults(func=cmd_report)
