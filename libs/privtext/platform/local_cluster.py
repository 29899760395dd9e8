"""A real Spark standalone cluster on this machine: one master and N workers, each its own JVM process
(pyspark's ``spark-class ... deploy.master.Master`` / ``deploy.worker.Worker``), on free 127.0.0.1
ports, with work and log folders under a temporary directory, stopped by PID (process group: a
worker's executors go with it). For tests, demos and ``make cluster-demo``; production points
``spark.master`` at its own cluster.

    python -m privtext.platform.local_cluster --conf-out build/cluster/cluster.yaml -- \\
        .venv/bin/privtext --conf build/cluster/cluster.yaml demo

writes ``conf/local.yaml`` with ``spark.master`` set to the cluster and the project zip as
``spark.submit.pyFiles`` (shipped to the executors, as Airflow's spark-submit does), runs the command
and stops the cluster, whatever the command's outcome. With ``--s3`` the workers (hence the executors)
and the command hold the store's ``pipeline`` key; ``--analyst-command`` then runs a reader (e.g. the
analyst notebook) with the ``analyst`` key instead, without the pipeline's key or the HMAC key, and
with ``PRIVTEXT_PUBLISHED`` / ``PRIVTEXT_STORAGE_OPTIONS`` naming the published zone.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import yaml

from privtext.platform.config import PROJECT_ROOT
from privtext.platform.local_s3 import S3Store, s3_conf, seaweedfs
from privtext.platform.processes import free_port, stop
from privtext.platform.storage import delta_options
from privtext.platform.store_access import STORE_KEYS

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


@dataclass
class Cluster:
    url: str  # spark://127.0.0.1:PORT
    web_ui: str  # the master's web UI (its /json/ lists workers and applications)
    folder: Path  # logs/ and work/<worker>/ (each executor's stdout/stderr)
    pids: dict[str, int] = field(default_factory=dict)  # "master", "worker-0", ...

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.web_ui}/json/", timeout=5) as response:
            return json.load(response)


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def daemon_env(environ, env: dict[str, str] | None) -> dict[str, str]:
    """The master's and workers' environment: the caller's, less any store key (``STORE_KEYS``, a session
    token included), plus ``env``: the executors hold the one role's key they are given, or none."""
    return {**{k: v for k, v in environ.items() if k not in STORE_KEYS}, **(env or {}), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": environ.get("PYSPARK_PYTHON", sys.executable)}


@contextlib.contextmanager
def standalone_cluster(workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 120.0,
                       env: dict[str, str] | None = None) -> Iterator[Cluster]:
    """Start a master and ``workers`` workers, wait until all registered, yield the cluster, stop it.
    ``env`` is added to their environment (executors inherit it: e.g. the object store's credentials)."""
    with tempfile.TemporaryDirectory(prefix="privtext-cluster-") as tmp:
        folder = Path(tmp)
        (folder / "logs").mkdir()
        env = {**daemon_env(os.environ, env), "SPARK_LOG_DIR": str(folder / "logs")}
        port, ui = free_port(), free_port()
        cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}", folder)
        processes: list[subprocess.Popen] = []

        def start(name: str, args: list[str]) -> None:
            log = open(folder / "logs" / f"{name}.log", "wb")
            processes.append(subprocess.Popen([str(spark_class()), *args], env=env, stdout=log,
                                              stderr=subprocess.STDOUT,
                                              start_new_session=True))
            cluster.pids[name] = processes[-1].pid

        try:
            start("master", [MASTER, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)])
            _wait(lambda: _alive_workers(cluster) is not None, timeout, "the master's web UI", processes)
            for i in range(workers):
                work = folder / "work" / f"worker-{i}"
                work.mkdir(parents=True)
                start(f"worker-{i}", [WORKER, "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                                      "--work-dir", str(work), "--webui-port", str(free_port()), cluster.url])
            _wait(lambda: (_alive_workers(cluster) or 0) >= workers, timeout, f"{workers} registered workers",
                  processes)
            yield cluster
        finally:
            for process in reversed(processes):
                stop(process)


def _alive_workers(cluster: Cluster) -> int | None:
    try:
        return int(cluster.state().get("aliveworkers", 0))
    except OSError:
        return None


def _wait(ready, timeout: float, what: str, processes: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if any(p.poll() is not None for p in processes):
            raise RuntimeError(f"a cluster process exited while waiting for {what} (see its log)")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout:.0f} s")
        time.sleep(0.5)


def project_zip(out: Path) -> Path:
    """``libs/privtext`` as a zip for ``--py-files`` (the same archive the Airflow DAGs ship)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    source = PROJECT_ROOT / "libs" / "privtext"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(source.rglob("*.py")):
            archive.write(path, path.relative_to(source.parent))
    return out


def cluster_conf(cluster: Cluster, py_files: Path, base: dict | None = None) -> dict:
    """``base`` (an environment config) with ``spark.master`` on the cluster and the project zip shipped."""
    conf = dict(base or {})
    spark = dict(conf.get("spark") or {})
    spark_conf = dict(spark.get("conf") or {})
    spark_conf.update({"spark.submit.pyFiles": str(py_files), "spark.executor.memory": "768m",
                       "spark.sql.shuffle.partitions": "4"})
    conf["spark"] = {**spark, "master": cluster.url, "conf": spark_conf}
    return conf


def analyst_env(store: S3Store, conf: dict) -> dict[str, str]:
    """This process's environment for an analyst's reader: the ``analyst`` key instead of any other store
    key, no HMAC key (``run.hmac_key_env``), and the published zone's root and delta-rs storage options."""
    from privtext.platform.config import LakehouseSettings

    lakehouse = LakehouseSettings(**conf["lakehouse"])
    published = lakehouse.zone_root("published")
    hidden = {*STORE_KEYS, (conf.get("run") or {}).get("hmac_key_env", "PRIVTEXT_HMAC_KEY")}
    return {**{k: v for k, v in os.environ.items() if k not in hidden}, **store.env("analyst"),
            "PRIVTEXT_PUBLISHED": published,
            "PRIVTEXT_STORAGE_OPTIONS": json.dumps(delta_options(published, lakehouse.zone_store("published")))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--memory", default="1500m", help="memory per worker")
    parser.add_argument("--base-conf", default=str(PROJECT_ROOT / "conf" / "local.yaml"))
    parser.add_argument("--conf-out", required=True, help="where to write the cluster's environment config")
    parser.add_argument("--s3", action="store_true", help="zones and exports on a SeaweedFS S3 store started here")
    parser.add_argument("--analyst-command", help="with --s3: run this (one shell-quoted string) after the command "
                        "succeeded, with the analyst's store key only (e.g. the analyst notebook)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run on the cluster")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    if args.analyst_command and not args.s3:
        parser.error("--analyst-command needs --s3 (the analyst's key is the S3 store's)")
    base = yaml.safe_load(Path(args.base_conf).read_text()) or {}
    out = Path(args.conf_out).resolve()
    # its own lakehouse and exports next to the config: never the local demo's
    base = {**base, "lakehouse": {**(base.get("lakehouse") or {}), "root": str(out.parent / "lakehouse")},
            "publish": {**(base.get("publish") or {}), "export_path": str(out.parent / "exports")}}
    zip_path = project_zip(out.parent / "privtext.zip")
    with contextlib.ExitStack() as stack:
        env, store = {}, None
        if args.s3:
            store = stack.enter_context(seaweedfs())
            base, env = s3_conf(store, base), store.env("pipeline")
            print(f"SeaweedFS S3 {store.endpoint}: buckets {', '.join(store.buckets.values())}; identities "
                  f"{', '.join(store.credentials)} (the cluster and the command hold the pipeline's key)", flush=True)
        cluster = stack.enter_context(standalone_cluster(args.workers, args.cores, args.memory, env=env))
        out.write_text(yaml.safe_dump(cluster_conf(cluster, zip_path, base), sort_keys=False))
        print(f"standalone cluster {cluster.url}: {args.workers} workers x {args.cores} core(s), UI {cluster.web_ui}",
              flush=True)
        code = subprocess.call(command, env={**{k: v for k, v in os.environ.items() if k not in STORE_KEYS}, **env})
        if code or not args.analyst_command:
            return code
        print(f"as the analyst: {args.analyst_command}", flush=True)
        return subprocess.call(shlex.split(args.analyst_command), env=analyst_env(store, base))


if __name__ == "__main__":
    sys.exit(main())
