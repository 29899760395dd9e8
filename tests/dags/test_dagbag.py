"""The DAGs load with zero import errors and have the task graphs of ``privtext.pipelines`` (the stage
order is defined there once), operators and retries."""
import json

from privtext.pipelines import PIPELINES, RETUNE

INSPECT = r"""
import json
from pathlib import Path
from airflow.dag_processing.dagbag import BundleDagBag

bag = BundleDagBag(dag_folder="dags", bundle_path=Path("dags").resolve())
out = {"errors": {k: v.splitlines()[-1] for k, v in bag.import_errors.items()}, "dags": {}}
for dag in bag.dags.values():
    out["dags"][dag.dag_id] = {
        "schedule": str(dag.timetable),
        "params": sorted(dag.params.keys()),
        "tasks": {t.task_id: {"downstream": sorted(t.downstream_task_ids), "operator": type(t).__name__,
                              "application": getattr(t, "application", None), "conn_id": getattr(t, "_conn_id", None),
                              "spark_binary": getattr(t, "_spark_binary", None),
                              "args": getattr(t, "application_args", None), "env": getattr(t, "env_vars", None),
                              "command": getattr(t, "bash_command", None),
                              "retries": t.retries, "backoff": t.retry_exponential_backoff}
                  for t in dag.tasks},
    }
print("JSON" + json.dumps(out))
"""

# the DAG tasks: every stage step; the nightly export's audit task runs the audit and its retune step (AmPL's loop,
# its target fixed) as one: jobs/audit_and_retune.py
CHAINS = {name: [s.name for s in steps if s.name != RETUNE] + ["report"] for name, steps in PIPELINES.items()}
CHAINS["nightly_sanitized_export"].append("retention")  # raw text past retention.restricted_days, after the night
COMMANDS = {"report": "report --date {{ ds }}", "retention": "retention run --date {{ ds }}"}  # privtext CLI tasks
OPTIONS = {name: {s.name: s.options for s in steps} for name, steps in PIPELINES.items()}
JOBS = {("nightly_sanitized_export", "audit"): ("audit_and_retune", {})}


def test_dagbag_loads_with_expected_graphs(airflow):
    PROJECT = airflow.project
    result = airflow.run([airflow.python, "-c", INSPECT], timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.split("JSON", 1)[1])
    assert out["errors"] == {}
    assert set(out["dags"]) == set(CHAINS)
    assert "expression='0 0 * * *'" in out["dags"]["nightly_sanitized_export"]["schedule"]  # @daily
    assert "expression='0 0 * * 0'" in out["dags"]["synthetic_refresh"]["schedule"]  # @weekly
    assert "expression='0 0 1 * *'" in out["dags"]["dped_training"]["schedule"]  # @monthly (or triggered)
    for dag_id, chain in CHAINS.items():
        dag = out["dags"][dag_id]
        assert {"config", "input_path", "py_files", "spark_properties"} <= set(dag["params"])
        tasks = dag["tasks"]
        assert set(tasks) == set(chain)
        for upstream, downstream in zip(chain, chain[1:]):  # a straight line, in this order
            assert tasks[upstream]["downstream"] == [downstream], (dag_id, upstream)
        assert tasks[chain[-1]]["downstream"] == []
        for task_id in (t for t in chain if t not in COMMANDS):  # every stage: spark-submit jobs/<stage>.py
            task = tasks[task_id]
            job, stage_options = JOBS.get((dag_id, task_id), (task_id, OPTIONS[dag_id][task_id]))
            assert task["operator"] == "SparkSubmitOperator"
            assert task["application"] == str(PROJECT / "jobs" / f"{job}.py")
            assert (PROJECT / "jobs" / f"{job}.py").exists()
            assert task["conn_id"] == "spark_default"
            assert task["spark_binary"] == str(PROJECT / ".venv" / "bin" / "spark-submit")
            assert task["args"][:4] == ["--conf", "{{ params.config }}", "--date", "{{ ds }}"]
            if task_id != "ingest":  # the pipeline's stage options, as command-line options
                options = [x for key, value in stage_options.items() for x in (f"--{key}", value)]
                assert task["args"][6:] == options, (dag_id, task_id)
            assert task["env"]["PYSPARK_PYTHON"] == str(PROJECT / ".venv" / "bin" / "python")
            assert task["retries"] == 2 and task["backoff"] == 2.0
        for task_id in COMMANDS.keys() & set(chain):
            assert tasks[task_id]["operator"] == "BashOperator"
            assert COMMANDS[task_id] in tasks[task_id]["command"], (dag_id, task_id)
    assert out["dags"]["nightly_sanitized_export"]["tasks"]["ingest"]["args"][-2:] == ["--input",
                                                                                       "{{ params.input_path }}"]
