"""DPED word embeddings (monthly, or triggered by hand): train_dped -> evaluate -> report.

``train_dped`` charges the ledger, then writes ``published.word_vectors`` for its model version.
"""
import pendulum
from airflow.sdk import DAG

from privtext_airflow import DEFAULT_ARGS, PARAMS, report_task, stage_task

with DAG(
    dag_id="dped_training",
    description="DP word embeddings (teacher ensemble + noisy aggregation + student)",
    schedule="@monthly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params=PARAMS,
    tags=["privtext"],
):
    stage_task("train_dped") >> stage_task("evaluate") >> report_task()
