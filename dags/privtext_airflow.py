"""What privtext's DAGs share: one ``SparkSubmitOperator`` per stage, DAG params, retries. No data logic.

Every task runs ``jobs/<stage>.py`` with ``spark-submit`` from the project's virtual environment
(its pyspark), on the master of the Airflow connection ``spark_default`` (``local[2]`` as set up by
``make airflow``; point it at YARN / k8s / spark:// for a cluster). The project's code travels with
the job as ``--py-files`` (``build/airflow/privtext.zip``, built by ``make airflow``); executors run
the project venv's Python (``PYSPARK_PYTHON``). The date is ``{{ ds }}``; the privtext config file,
the input path and an optional spark-defaults properties file (submit-time Spark conf) are DAG params,
overridable per run (``airflow dags trigger -c '{"config": "conf/cluster.yaml"}'``).

Reruns are safe and failures leave ``published`` untouched because the stages guarantee it (each date
replaces its own partitions; only ``publish``, the last Spark task, writes ``published``, after its
gate). The final ``report`` task writes the privacy report into the pipeline's MLflow run, under
which every stage's run is nested (``PRIVTEXT_PIPELINE_RUN`` names it).
"""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, Param

PROJECT = Path(os.environ.get("PRIVTEXT_HOME") or Path(__file__).resolve().parents[1])
VENV_BIN = Path(os.environ.get("PRIVTEXT_VENV_BIN") or PROJECT / ".venv" / "bin")
SPARK_CONN_ID = "spark_default"

PARAMS = {
    "config": Param("conf/local.yaml", type="string",
                    description="privtext config file (absolute, or relative to the project)"),
    "input_path": Param(str(PROJECT / "build" / "sample" / "messages-3000-7.jsonl"), type="string",
                        description="file or folder that ingest loads"),
    "py_files": Param(str(PROJECT / "build" / "airflow" / "privtext.zip"), type="string",
                      description="the project as a zip/wheel shipped with --py-files"),
    "spark_properties": Param("", type="string",
                              description="optional spark-defaults file: submit-time Spark conf (executors, memory)"),
}

DEFAULT_ARGS = {
    "owner": "privtext",
    "retries": 2,
    "retry_delay": timedelta(minutes=1),
    "retry_exponential_backoff": 2.0,  # 1 min, then 2 min, ... capped below
    "max_retry_delay": timedelta(minutes=30),
}

# One MLflow parent run per DAG run; the stage runs of all tasks nest under it.
ENV = {
    "PRIVTEXT_HOME": str(PROJECT),
    "PYSPARK_PYTHON": str(VENV_BIN / "python"),
    "PYSPARK_DRIVER_PYTHON": str(VENV_BIN / "python"),
    "PRIVTEXT_PIPELINE_RUN": "{{ dag.dag_id }}/{{ run_id }}",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def stage_task(stage: str, *options: str, task_id: str | None = None) -> SparkSubmitOperator:
    """``spark-submit jobs/<stage>.py --conf <config> --date {{ ds }} --pipeline <dag> <options>``."""
    return SparkSubmitOperator(
        task_id=task_id or stage,
        application=str(PROJECT / "jobs" / f"{stage}.py"),
        conn_id=SPARK_CONN_ID,
        spark_binary=str(VENV_BIN / "spark-submit"),
        py_files="{{ params.py_files }}",
        properties_file="{{ params.spark_properties }}",
        conf={"spark.log.level": "WARN"},  # the task log keeps the job's own output, not Spark's INFO lines
        name=f"privtext-{stage}-{{{{ ds }}}}",
        application_args=["--conf", "{{ params.config }}", "--date", "{{ ds }}", "--pipeline", "{{ dag.dag_id }}",
                          *options],
        env_vars=ENV,
    )


def ingest_task() -> SparkSubmitOperator:
    return stage_task("ingest", "--input", "{{ params.input_path }}")


def report_task() -> BashOperator:
    """``privtext report`` for the date, logged as artifacts of the pipeline's MLflow run."""
    return BashOperator(
        task_id="report",
        bash_command=(f"{VENV_BIN / 'privtext'} --conf {{{{ params.config }}}} report --date {{{{ ds }}}} "
                      f"--pipeline {{{{ dag.dag_id }}}} --mlflow"),
        env=ENV,
        append_env=True,
        cwd=str(PROJECT),
    )


def retention_task() -> BashOperator:
    """``privtext retention run`` for the date: raw text older than ``retention.restricted_days`` erased
    (nothing read or written while that key is unset); the ledger and the published tables stay."""
    return BashOperator(
        task_id="retention",
        bash_command=f"{VENV_BIN / 'privtext'} --conf {{{{ params.config }}}} retention run --date {{{{ ds }}}}",
        env=ENV,
        append_env=True,
        cwd=str(PROJECT),
    )


def privtext_dag(dag_id: str, description: str, schedule: str) -> DAG:
    """A privtext DAG: the shared params, retries and start date; one active run at a time."""
    return DAG(
        dag_id=dag_id,
        description=description,
        schedule=schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        default_args=DEFAULT_ARGS,
        params=PARAMS,
        tags=["privtext"],
    )
