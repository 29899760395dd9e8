"""Nightly sanitized export: ingest -> detect_pii -> embed -> sanitize -> audit -> publish -> report.

``publish`` copies the date's sanitized documents to ``published`` only if the leakage audit passed;
any failure before it leaves ``published`` as it was. Rerunning a date replaces that date's partitions.
"""
import pendulum
from airflow.sdk import DAG

from privtext_airflow import DEFAULT_ARGS, PARAMS, ingest_task, report_task, stage_task

with DAG(
    dag_id="nightly_sanitized_export",
    description="CluSanT-sanitized documents, mPL-audited, published nightly",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params=PARAMS,
    tags=["privtext"],
):
    (ingest_task() >> stage_task("detect_pii") >> stage_task("embed") >> stage_task("sanitize")
     >> stage_task("audit", "--target", "sanitized_documents")
     >> stage_task("publish", "--target", "sanitized_documents") >> report_task())
