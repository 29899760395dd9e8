"""Weekly synthetic refresh: ingest (the week's files) -> detect_pii -> embed -> synthesize -> evaluate
-> publish synthetic_documents -> report.

``synthesize`` charges the ledger before it writes the staged release; ``publish`` (last Spark task)
is the only writer of ``published.synthetic_documents``.
"""
import pendulum
from airflow.sdk import DAG

from privtext_airflow import DEFAULT_ARGS, PARAMS, ingest_task, report_task, stage_task

with DAG(
    dag_id="synthetic_refresh",
    description="SecPE synthetic documents under (p,r)-secret protection, evaluated and published weekly",
    schedule="@weekly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params=PARAMS,
    tags=["privtext"],
):
    (ingest_task() >> stage_task("detect_pii") >> stage_task("embed") >> stage_task("synthesize")
     >> stage_task("evaluate")
     >> stage_task("publish", "--target", "synthetic_documents") >> report_task())
