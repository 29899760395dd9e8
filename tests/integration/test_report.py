"""``privtext report``: budget over time, the date's guarantees, audits, utility; logged to the pipeline run."""
import datetime as dt
import json
import math
import re

import pytest
import yaml

from privtext.cli import main
from privtext.ledger import Ledger
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.tables import EPS_FRONTIER, LEAKAGE_AUDITS, PRIVACY_LEDGER, UTILITY_REPORTS
from privtext.platform.tracking import PIPELINE_RUN_ENV, pipeline_run, stage_run
from privtext.privacy.accounting import epsilon_of, gaussian_event
from privtext.privacy.budget import dp_charge, mldp_charge, secret_charge
from privtext.privacy.secret_protection import r_from_mu
from privtext.settings import load_settings

DATE = "2026-01-15"


def _ledger_row(day, run_id, p, sigma):
    """A SecPE charge on secret s1 recorded on ``day``: one record sampled every round, T = 1 (a Gaussian)."""
    charge = secret_charge("reviews", "synthesize", run_id, "secpe_histogram", p=p, r=5 * p, sigma=sigma, rounds=1,
                           releases_per_round=2, count_pmfs=[[0.0, 1.0]])
    return {"entry_id": f"e-{day}", "dataset": "reviews", "stage": "synthesize", "run_id": run_id,
            "mechanism": charge.mechanism, "guarantee": charge.guarantee, "params": json.dumps(charge.params),
            "spend": json.dumps(charge.spend), "dp_event": None,
            "exposures": [{"unit": "s1", "occurrences": 1, "variant": 0, "records": 1}],
            "created_at": dt.datetime.fromisoformat(f"{day}T03:00:00+00:00")}


@pytest.fixture
def conf(tmp_path):
    data = {"lakehouse": {"root": str(tmp_path / "lake")}, "tracking": {"enabled": True},
            "privacy": {"budgets": {"reviews": {"r_over_p_max": 10.0, "eps_max": 4.0, "delta_max": 1e-5,
                                                "mldp_eps_max": 20.0}}}}
    path = tmp_path / "conf.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


EXPORT_UTILITY = {"original_train_accuracy": 0.912, "sanitized_train_accuracy": 0.874, "accuracy_gap": 0.038,
                  "semantic_similarity": 0.781, "format_kept_share": 0.963}


def _fill(settings):
    """Two earlier days of charges, today's three charges (one run of another date), audits, utility."""
    lake = Lakehouse(None, settings.lakehouse)
    for spec in (PRIVACY_LEDGER, LEAKAGE_AUDITS, UTILITY_REPORTS, EPS_FRONTIER):
        lake.create(spec)
    lake.append_rows(PRIVACY_LEDGER, [_ledger_row("2026-01-13", "old1", 0.01, 8.0),
                                      _ledger_row("2026-01-14", "old2", 0.01, 8.0)])
    ledger = Ledger(lake, settings)
    event = gaussian_event(sigma=6.0, count=3)
    ledger.charge(dp_charge("reviews", "train_dped", "run-d", "dped", event=event, delta=1e-5, unit="record",
                            params={"adjacency": "one document", "date": DATE}))
    ledger.charge(mldp_charge("reviews", "sanitize", "run-s", "clusant", epsilon=3.0, pure_epsilon=9.0, metric="D_k",
                              k=16, params={"date": DATE}), {"v1": 1})
    ledger.charge(mldp_charge("reviews", "sanitize", "run-other", "clusant", epsilon=1.0, pure_epsilon=3.0,
                              metric="D_k", k=16, params={"date": "2026-01-10"}), {"v1": 1})
    audit = {"target": "sanitized_documents", "eps": 2.0, "triplets": 900, "delta_target": 0.05,
             "log10_p_fail": -6.0, "utility_loss": 0.1}
    lake.append_rows(LEAKAGE_AUDITS, [
        {**audit, "date": dt.date(2026, 1, 15), "adversary": "lstm", "violation_ratio": 0.01, "passed": True,
         "run_id": "run-a"},
        {**audit, "date": dt.date(2026, 1, 15), "adversary": "rnn", "violation_ratio": 0.2, "passed": False,
         "run_id": "run-a"},
        {**audit, "date": dt.date(2026, 1, 14), "adversary": "rnn", "violation_ratio": 0.5, "passed": False,
         "run_id": "run-x"}])
    export = {"target": "sanitized_documents", "method": "clusant", "details": "{}", "run_id": "run-s",
              "date": dt.date(2026, 1, 15)}
    lake.append_rows(UTILITY_REPORTS, [
        {"target": "synthetic_documents", "method": "secpe", "metric": "accuracy", "value": 0.8, "details": "{}",
         "run_id": "run-d", "date": dt.date(2026, 1, 15)},
        *({**export, "metric": m, "value": v} for m, v in EXPORT_UTILITY.items())])
    point = {"target": "sanitized_documents", "run_id": "run-t", "date": dt.date(2026, 1, 15), "chosen": False}
    lake.append_rows(EPS_FRONTIER, [
        {**point, "source": "tune", "eps_pii": 4.0, "eps_poii": 4.0, "violation_ratio": 0.004, "utility_loss": 0.31},
        {**point, "source": "tune", "eps_pii": 1.6, "eps_poii": 4.0, "violation_ratio": 0.003, "utility_loss": 0.33},
        {**point, "source": "retune", "eps_pii": 2.0, "eps_poii": 4.0, "violation_ratio": 0.0039, "utility_loss": 0.22,
         "chosen": True},
        {**point, "source": "tune", "eps_pii": 9.0, "eps_poii": 9.0, "violation_ratio": 0.9, "utility_loss": 0.1,
         "date": dt.date(2026, 1, 14)}])
    return event


def test_report_html_pngs_guarantees_and_mlflow_run_tree(conf, tmp_path, monkeypatch):
    settings = load_settings(conf, environ={})
    event = _fill(settings)
    key = "nightly_sanitized_export/manual__2026-01-15"
    monkeypatch.setenv(PIPELINE_RUN_ENV, key)
    with stage_run(settings, "nightly_sanitized_export", "sanitize", DATE, "run-s") as tracked:
        tracked.log_metrics({"documents": 12})  # a separate process's stage run: nests via the env key

    out = tmp_path / "reports"
    assert main(["--conf", str(conf), "report", "--date", DATE, "--dataset", "reviews", "--out", str(out),
                 "--mlflow", "--pipeline", "nightly_sanitized_export"]) == 0

    folder = out / "reviews" / DATE
    data = json.loads((folder / "report.json").read_text())
    # budget over data dates (params.date, else the day recorded), composed cumulatively: the 2026-01-10
    # charge, recorded after the others, comes first
    days = [d for d, _ in data["timeline"]]
    assert days == ["2026-01-10", "2026-01-13", "2026-01-14", "2026-01-15"]
    r_over_p = [t["secret_protection"]["r_over_p"] for _, t in data["timeline"] if "secret_protection" in t]
    # Gaussians: mu adds in squares; on day 3 the record-level DPED event meets secret s1 (one record)
    expected = [r_from_mu(0.01, math.sqrt(mu2)) / 0.01 for mu2 in (2 / 64, 4 / 64, 4 / 64 + 3 / 36)]
    assert r_over_p == pytest.approx(expected, rel=1e-2) and r_over_p[1] < 2 * r_over_p[0]
    assert data["spent"]["approx_dp"]["epsilon"] == pytest.approx(epsilon_of(event, 1e-5), rel=1e-9)
    assert data["spent"]["mldp"]["epsilon"] == pytest.approx(4.0)  # value v1 on two dates: 3 + 1
    # the date's guarantees: runs of the date only (by table run ids, MLflow tags, params.date)
    stages = sorted(c["run_id"] for c in data["charges"])
    assert stages == ["run-d", "run-s"]
    words = " ".join(c["plain_words"] for c in data["charges"])
    assert "differential privacy" in words and "metric local DP" in words and "one document" in words
    assert [a["adversary"] for a in data["audits"]] == ["lstm", "rnn"]  # 2026-01-14's audit left out
    assert {(r["method"], r["metric"]): r["value"] for r in data["utility"]} == {
        ("secpe", "accuracy"): pytest.approx(0.8),
        **{("clusant", m): pytest.approx(v) for m, v in EXPORT_UTILITY.items()}}
    assert data["stage_metrics"][0]["metrics"]["documents"] == 12
    assert sorted(p.name for p in folder.iterdir()) == ["report.html", "report.json"]  # images inside the page
    page = (folder / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 3 and "metric local DP" in page  # trend, audits, frontier
    # the eps frontier of the date (the other date's point left out), the staged setting marked
    assert [(p["source"], p["eps_pii"]) for p in data["frontier"]] == [("retune", 2.0), ("tune", 1.6), ("tune", 4.0)]
    frontier = page.split("against leakage and utility</h3>")[1].split("<h2>")[0]
    assert re.search(r"<td>nightly loop</td><td>2</td><td>4</td><td>0\.0039</td><td>0\.22</td><td>yes</td>", frontier)
    assert frontier.count("<td>privtext tune sanitize</td>") == 2 and "<td>9</td>" not in frontier
    assert "2026-01-10" not in page  # the other date's charge is not among this date's guarantees
    # the export's utility: sanitized-trained accuracy beside the original-trained baseline, the gap, similarity, format
    utility = page.split("<h2>Utility</h2>")[1].split("<details>")[0]
    assert "none for this date" not in utility
    assert re.search(r"<td>clusant</td><td>classifier trained on sanitized text[^<]*</td>"
                     r"<td>0\.874</td><td>0\.912</td>", utility)
    for label, value in (("accuracy lost to sanitization", "0.038"), ("cosine of sentence embeddings", "0.781"),
                         ("replacements keeping their type and surface format", "0.963")):
        assert re.search(f"<td>{label}[^<]*</td><td>{re.escape(value)}</td>", utility), label

    # MLflow: one pipeline run holding the report artifacts, the stage run nested under it
    import mlflow

    experiment = mlflow.get_experiment_by_name("privtext")
    runs = mlflow.search_runs([experiment.experiment_id], output_format="list")
    parents = [r for r in runs if r.data.tags.get("privtext.pipeline_key") == key]
    assert len(parents) == 1
    parent = parents[0].info.run_id
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent]
    assert [c.data.tags["stage"] for c in children] == ["sanitize"]
    artifacts = {a.path for a in mlflow.artifacts.list_artifacts(run_id=parent, artifact_path="privacy_report/reviews")}
    assert {"privacy_report/reviews/report.html", "privacy_report/reviews/report.json"} == artifacts


def test_pipeline_run_nests_stage_runs_in_process(conf):
    settings = load_settings(conf, environ={})
    with pipeline_run(settings, "demo", DATE) as parent:
        parent_id = parent.run_id
        with stage_run(settings, "demo", "ingest", DATE, "r1") as child:
            child_id = child.run_id
    import mlflow

    assert mlflow.get_run(child_id).data.tags["mlflow.parentRunId"] == parent_id
    assert mlflow.get_run(parent_id).data.tags["stage"] == "pipeline"


def test_the_synthetic_card_carries_evaluates_decision_of_its_date(conf):
    from privtext.report import _synthetic_decision

    lake = Lakehouse(None, load_settings(conf, environ={}).lakehouse)
    lake.create(UTILITY_REPORTS)
    decision = "prefer the 9 public documents as they are: 90% against 80% for the synthetic table"
    row = {"target": "synthetic_documents", "method": "secpe", "metric": "public_only_accuracy", "value": 0.9,
           "run_id": "r"}
    lake.append_rows(UTILITY_REPORTS, [
        {**row, "details": json.dumps({"decision": decision}), "date": dt.date(2026, 1, 15)},
        {**row, "details": json.dumps({"decision": "another date's"}), "date": dt.date(2026, 1, 14)},
        {**row, "target": "sanitized_documents", "details": json.dumps({"decision": "the export's"}),
         "date": dt.date(2026, 1, 15)}])
    assert _synthetic_decision(lake, dt.date(2026, 1, 15)) == [f"Measured on held-out messages: {decision}."]
    assert _synthetic_decision(lake, dt.date(2026, 1, 16)) == []
