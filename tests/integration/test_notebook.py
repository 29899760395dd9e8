"""Analysts' access without Spark: the README snippet (deltalake + DuckDB) and the executed notebook.

The published zone is filled with delta-rs directly (demo-like rows of every published table, a ledger
charge, audits) so the notebook test needs no Spark and stays well under a minute; the end-to-end DAG
test covers published tables written by the real stages.
"""
import contextlib
import datetime as dt
import io
import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from privtext.ledger import Ledger
from privtext.platform.config import ObjectStoreSettings
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.tables import (
    ALL_TABLES,
    LEAKAGE_AUDITS,
    PUBLISHED_SANITIZED_DOCUMENTS,
    PUBLISHED_SYNTHETIC_DOCUMENTS,
    WORD_VECTORS,
)
from privtext.privacy.budget import mldp_charge
from privtext.report import write_report
from privtext.settings import PROJECT_ROOT
from tests_support import make_budget_settings

NOTEBOOK = PROJECT_ROOT / "notebooks" / "analyst_queries.ipynb"
DAY = dt.date(2026, 1, 15)

README_SNIPPET = '''
import duckdb
from deltalake import DeltaTable

docs = DeltaTable("lakehouse/published/sanitized_documents").to_pyarrow_dataset()
print(duckdb.sql("SELECT date, count(*) AS documents FROM docs GROUP BY date ORDER BY date").fetchall())
'''


def _published_lakehouse(root: Path, store=None):
    settings = make_budget_settings(root)
    if store is not None:  # the zones in a real S3 store's buckets
        settings = settings.model_copy(update={"lakehouse": settings.lakehouse.model_copy(update={
            "zone_roots": store.zone_roots(), "object_store": ObjectStoreSettings(**store.object_store())})})
    lake = Lakehouse(None, settings.lakehouse)
    lake.create_tables(ALL_TABLES)
    params = json.dumps({"guarantee": "mldp", "mechanism": "clusant", "eps_by_type": {"PERSON": 8.0, "LOCATION": 6.0}})
    lake = lake.as_publisher()  # fixtures of the published zone
    lake.append_rows(PUBLISHED_SANITIZED_DOCUMENTS, [
        {"doc_id": f"d{i}", "sanitized_text": f"hello PERSON_{i}", "n_spans": i % 3, "n_replaced": i % 3,
         "method": "clusant", "params": params, "run_id": "r-s", "date": DAY} for i in range(30)])
    lake.append_rows(PUBLISHED_SYNTHETIC_DOCUMENTS, [
        {"synthetic_id": f"s{i}", "text": "a synthetic message", "label": ["billing", "delivery"][i % 2],
         "method": "secpe", "round": 2, "run_id": "r-y", "date": DAY} for i in range(10)])
    lake.append_rows(WORD_VECTORS, [{"word": w, "vector": [0.1, 0.2, 0.3], "model_version": "v1", "run_id": "r-w"}
                                    for w in ("order", "refund")])
    Ledger(lake, settings).charge(mldp_charge("reviews", "sanitize", "r-s", "clusant", epsilon=8.0, pure_epsilon=40.0,
                                              metric="D_k", k=16, params={"date": DAY.isoformat()}), {"v1": 1})
    lake.append_rows(LEAKAGE_AUDITS, [
        {"target": "sanitized_documents", "date": DAY, "adversary": a, "eps": 8.0, "triplets": 300,
         "violation_ratio": v, "delta_target": 0.05, "log10_p_fail": -6.0, "utility_loss": 0.1, "passed": v < 0.05,
         "run_id": "r-a"} for a, v in (("rnn", 0.01), ("lstm", 0.02))])
    return settings


def test_readme_snippet_reads_published_with_deltalake_and_duckdb(tmp_path, monkeypatch):
    _published_lakehouse(tmp_path / "lakehouse")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(README_SNIPPET, {})
    assert out.getvalue().strip() == "[(datetime.date(2026, 1, 15), 30)]"


@pytest.mark.parametrize("where", ["local", "s3"])
def test_analyst_notebook_executes_on_demo_like_output(tmp_path, monkeypatch, request, where):
    store = request.getfixturevalue("s3_store") if where == "s3" else None
    for name, value in (store.env("pipeline") if store else {}).items():  # the pipeline writes the zones
        monkeypatch.setenv(name, value)
    settings = _published_lakehouse(tmp_path / "lakehouse", store)
    report = write_report(settings, DAY, "reviews", tmp_path / "reports") / "report.json"
    lake = Lakehouse(None, settings.lakehouse)
    for name, value in (store.env("analyst") if store else {}).items():  # the notebook runs as the analyst
        monkeypatch.setenv(name, value)
    if store:
        from privtext.platform.store_access import readable_zones

        assert readable_zones(settings.lakehouse) == ["published"]  # the kernel's key reads nothing else
    monkeypatch.setenv("PRIVTEXT_PUBLISHED", settings.lakehouse.zone_root("published"))
    monkeypatch.setenv("PRIVTEXT_STORAGE_OPTIONS", json.dumps(lake.storage_options(PUBLISHED_SANITIZED_DOCUMENTS)))
    monkeypatch.setenv("PRIVTEXT_REPORT", str(report))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()

    outputs = {i: cell.get("outputs", []) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"}
    assert not [o for outs in outputs.values() for o in outs if o.output_type == "error"]
    text = json.dumps([o for outs in outputs.values() for o in outs])
    assert "sanitized_documents" in text and "synthetic_documents" in text and "word_vectors" in text
    assert "image/png" in text  # the privacy/utility plots were drawn
    assert "metric local DP" in text  # the report's guarantee in plain words
    assert ("s3://privtext-published/" in text) == (where == "s3")  # it read the bucket
    executed = PROJECT_ROOT / "build" / "notebooks" / "analyst_queries.executed.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, executed)  # kept as the run's proof (build/ is git-ignored)


def test_published_is_a_database_in_the_spark_catalog(tmp_path, spark):
    settings = _published_lakehouse(tmp_path / "lakehouse")
    published = [s for s in ALL_TABLES if s.zone == "published"]
    assert Lakehouse(spark, settings.lakehouse).register_views(published) == [s.qualified_name for s in published]
    assert {r.tableName for r in spark.sql("SHOW TABLES IN published").collect()} >= {
        "sanitized_documents", "synthetic_documents", "word_vectors"}
    rows = spark.sql("SELECT date, count(*) AS n FROM published.sanitized_documents GROUP BY date").collect()
    assert [(r.date, r.n) for r in rows] == [(DAY, 30)]
