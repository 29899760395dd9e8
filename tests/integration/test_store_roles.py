"""The zones enforced by the store itself: per-role keys on a real S3 store (SeaweedFS, the session's one).

A Delta table per zone is written with the pipeline's key; then each identity's key, alone in this
process's environment (as in that role's processes), is tried on each zone outside Spark, with the
readers an analyst has at hand: delta-rs (``DeltaTable``) + DuckDB over the Arrow dataset, a listing, a
direct GET of the Delta log's first commit and of a known Parquet key (a ranged GET: no HEAD first), and a
write (a Delta append). The observed 3x3 matrix must equal ``IDENTITY_ZONES``, each denied cell denied by
the store (AccessDenied on every reader, no data, no listing). The negative control: the same check, with
one identity's key handed to every role (the single all-powerful identity the store had before), fails.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import os
import re
import urllib.error
import urllib.parse
import urllib.request

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from deltalake import DeltaTable, write_deltalake

from privtext.errors import Refused
from privtext.platform.config import ZONES, LakehouseSettings, ObjectStoreSettings
from privtext.platform.storage import delta_options, filesystem
from privtext.platform.store_access import IDENTITY_ZONES, STORE_KEYS, readable_zones, require_confined

ROWS = pa.table({"doc_id": ["d1", "d2", "d3"], "text": ["a", "b", "c"]})


@contextlib.contextmanager
def holding(env: dict[str, str]):
    """This process's environment with ``env``'s store key and no other (restored afterwards)."""
    saved = {name: os.environ.pop(name) for name in STORE_KEYS if name in os.environ}
    os.environ.update(env)
    try:
        yield
    finally:
        for name in env:
            os.environ.pop(name, None)
        os.environ.update(saved)


@pytest.fixture(scope="module")
def zones(s3_server):
    """The session store's zones under this module's own prefix, a 3-row Delta table in each (written with
    the pipeline's key); yields (lakehouse settings, {zone: table uri}, {zone: a Parquet key of it})."""
    import dataclasses

    store = dataclasses.replace(s3_server, prefix="store-roles/")
    lakehouse = LakehouseSettings(zone_roots=store.zone_roots(),
                                  object_store=ObjectStoreSettings(**store.object_store()))
    uris, parquet = {}, {}
    with holding(store.env("pipeline")):
        for zone in ZONES:
            uris[zone] = f"{lakehouse.zone_root(zone)}/docs"
            write_deltalake(uris[zone], ROWS, storage_options=options(lakehouse, zone))
            parquet[zone] = DeltaTable(uris[zone], storage_options=options(lakehouse, zone)).file_uris()[0]
    return store, lakehouse, uris, parquet


def options(lakehouse: LakehouseSettings, zone: str) -> dict[str, str]:
    return delta_options(lakehouse.zone_root(zone), lakehouse.zone_store(zone))


def direct_get(lakehouse: LakehouseSettings, zone: str, uri: str) -> bytes:
    """A plain GET of ``uri``'s object (no HEAD, no listing first), signed with AWS Signature V4 by hand
    with this process's key; raises ``OSError("HTTP <status> <S3 error code>")`` when the store refuses."""
    endpoint = urllib.parse.urlparse(lakehouse.zone_store(zone).endpoint)
    bucket_key = urllib.parse.quote(uri.removeprefix("s3://"))
    now = dt.datetime.now(dt.timezone.utc)
    stamp, day, region = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d"), lakehouse.zone_store(zone).region
    payload = hashlib.sha256(b"").hexdigest()
    headers = {"host": endpoint.netloc, "x-amz-content-sha256": payload, "x-amz-date": stamp}
    signed = ";".join(headers)
    request = "\n".join(["GET", f"/{bucket_key}", "", *(f"{k}:{v}" for k, v in headers.items()), "", signed, payload])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(request.encode()).hexdigest()])
    key = ("AWS4" + os.environ["AWS_SECRET_ACCESS_KEY"]).encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    auth = (f"AWS4-HMAC-SHA256 Credential={os.environ['AWS_ACCESS_KEY_ID']}/{scope}, SignedHeaders={signed}, "
            f"Signature={signature}")
    get = urllib.request.Request(f"{endpoint.scheme}://{endpoint.netloc}/{bucket_key}",
                                 headers={**headers, "Authorization": auth})
    try:
        with urllib.request.urlopen(get, timeout=10) as response:
            return response.read()
    except urllib.error.HTTPError as error:
        code = re.search(rb"<Code>(\w+)</Code>", error.read() or b"")
        raise OSError(f"HTTP {error.code} {code.group(1).decode() if code else ''}") from None


def attempts(lakehouse: LakehouseSettings, zone: str, uri: str, parquet: str) -> dict:
    """Each reader's outcome on ``zone`` with this process's key: the value read, or the exception."""
    fs, root = filesystem(lakehouse.zone_root(zone), lakehouse.zone_store(zone))

    def duckdb_count():
        dataset = DeltaTable(uri, storage_options=options(lakehouse, zone)).to_pyarrow_dataset()  # noqa: F841
        return duckdb.sql("SELECT count(*) FROM dataset").fetchall()[0][0]

    readers = {
        "deltatable+duckdb": duckdb_count,
        "listing": lambda: [i.path for i in fs.get_file_info(pafs.FileSelector(root, recursive=True))],
        "GET _delta_log": lambda: direct_get(lakehouse, zone, f"{uri}/_delta_log/00000000000000000000.json"),
        "GET parquet": lambda: direct_get(lakehouse, zone, parquet),
    }
    out = {}
    for name, read in readers.items():
        try:
            out[name] = read()
        except Exception as error:  # noqa: BLE001 - the outcome is what the test looks at
            out[name] = error
    return out


def denied(outcome) -> bool:
    """An AccessDenied (HTTP 403) as pyarrow or delta-rs reports it."""
    text = str(outcome)
    return isinstance(outcome, Exception) and ("ACCESS_DENIED" in text or "403" in text or "AccessDenied" in text)


def observe(lakehouse, uris, parquet, key_of: dict[str, dict[str, str]]) -> tuple[dict, list[Exception]]:
    """The access matrix {(identity, zone): "rw" / "r" / "w" / "-"} with ``key_of[identity]``'s key, and
    every error seen. A cell reads when all readers return the table's data, and is denied when all are
    AccessDenied; anything else (a partial read, another error) fails the test."""
    matrix, errors = {}, []
    for identity, env in key_of.items():
        with holding(env):
            for zone in ZONES:
                seen = attempts(lakehouse, zone, uris[zone], parquet[zone])
                errors += [o for o in seen.values() if isinstance(o, Exception)]
                reads = (seen["deltatable+duckdb"] == ROWS.num_rows
                         and any(p.endswith(".parquet") for p in seen["listing"])
                         if not any(isinstance(o, Exception) for o in seen.values()) else False)
                if not reads:
                    assert all(denied(o) for o in seen.values()), (identity, zone, seen)
                try:  # a write: a Delta commit into a table of its own (the read table stays as it is)
                    write_deltalake(f"{uris[zone]}-writes", ROWS.slice(0, 1), mode="append",
                                    storage_options=options(lakehouse, zone))
                    writes = True
                except Exception as error:  # noqa: BLE001
                    assert denied(error), (identity, zone, error)
                    errors.append(error)
                    writes = False
                matrix[identity, zone] = ("r" if reads else "") + ("w" if writes else "") or "-"
    return matrix, errors


EXPECTED = {(identity, zone): IDENTITY_ZONES[identity].get(zone, "-") for identity in IDENTITY_ZONES for zone in ZONES}


def show(matrix: dict) -> str:
    return "\n".join([f"{'':10}" + "".join(f"{z:>12}" for z in ZONES)] + [
        f"{identity:10}" + "".join(f"{matrix[identity, z]:>12}" for z in ZONES) for identity in IDENTITY_ZONES])


def test_each_identity_reads_and_writes_exactly_its_zones_on_the_store(zones):
    store, lakehouse, uris, parquet = zones
    matrix, errors = observe(lakehouse, uris, parquet, {i: store.env(i) for i in IDENTITY_ZONES})
    print("\nobserved on SeaweedFS (r: read, w: write, -: AccessDenied):\n" + show(matrix))
    assert matrix == EXPECTED
    assert EXPECTED["analyst", "restricted"] == EXPECTED["analyst", "protected"] == EXPECTED["officer",
                                                                                             "restricted"] == "-"
    assert len(errors) == 4 * 3 + 6  # every denied reader and write raised (3 denied read cells x 4 readers, 6 writes)
    leaked = [s for s in store.secrets() for e in errors if s in str(e) or s in repr(e)]
    assert not leaked  # no key (id or secret) in any exception message


def test_only_the_pipeline_key_deletes_objects_on_the_store(zones):
    """What ``privtext forget``'s purge and export re-issue do to a zone, a DeleteObject, with each role's key:
    the store refuses the officer's and the analyst's on every zone (on the DeleteObject itself where the key
    may read the zone, on its HEAD where not) and the object stays; the pipeline's deletes it (the control)."""
    store, lakehouse, _, _ = zones

    def delete(zone: str, path: str) -> None:  # a filesystem of this process's key (pyarrow reads it when built)
        filesystem(lakehouse.zone_root(zone), lakehouse.zone_store(zone))[0].delete_file(path)

    for zone in ZONES:
        victim = f"{filesystem(lakehouse.zone_root(zone), lakehouse.zone_store(zone))[1]}/erasure-probe/part-0.parquet"
        with holding(store.env("pipeline")):
            fs, _ = filesystem(lakehouse.zone_root(zone), lakehouse.zone_store(zone))
            with fs.open_output_stream(victim) as out:
                out.write(b"PAR1 a file a forget would purge")
        for identity in ("officer", "analyst"):
            operation = "DeleteObject" if zone in IDENTITY_ZONES[identity] else "HeadObject"
            with holding(store.env(identity)), pytest.raises(OSError, match=f"ACCESS_DENIED during {operation}"):
                delete(zone, victim)
        with holding(store.env("pipeline")):
            fs, _ = filesystem(lakehouse.zone_root(zone), lakehouse.zone_store(zone))
            assert fs.get_file_info(victim).type == pafs.FileType.File, (zone, "deleted by a reader's key")
            delete(zone, victim)
            assert fs.get_file_info(victim).type == pafs.FileType.NotFound, zone


def test_negative_control_one_identity_for_every_role_fails_the_same_check(zones):
    """The store as it was (one identity handed to every role): the check must not pass it."""
    store, lakehouse, uris, parquet = zones
    matrix, _ = observe(lakehouse, uris, parquet, {i: store.env("pipeline") for i in IDENTITY_ZONES})
    print("\none key for every role:\n" + show(matrix))
    assert matrix != EXPECTED
    assert {cell for cell in EXPECTED if matrix[cell] != EXPECTED[cell]} == {
        (identity, zone) for identity in ("officer", "analyst") for zone in ZONES}  # every non-pipeline cell


def test_readers_are_refused_when_their_key_reads_beyond_their_role(zones):
    """``privtext sql``'s check before anything starts: sql.role analyst with the pipeline's or the officer's
    key is refused (the code cannot vouch for the boundary), with the analyst's key it passes; the probe
    sees exactly the identity's zones."""
    from privtext.commands import sql

    store, lakehouse, _, _ = zones
    for identity in IDENTITY_ZONES:
        with holding(store.env(identity)):
            assert readable_zones(lakehouse) == [z for z in ZONES if z in IDENTITY_ZONES[identity]], identity
    for role, allowed_identity in sql.ROLE_IDENTITY.items():
        for identity in IDENTITY_ZONES:
            with holding(store.env(identity)):
                confined = set(IDENTITY_ZONES[identity]) <= set(sql.ROLE_ZONES[role])
                try:
                    require_confined(lakehouse, sql.ROLE_ZONES[role], f"sql.role {role!r}", allowed_identity)
                    assert confined, (role, identity)
                except Refused as refusal:
                    assert not confined, (role, identity)
                    message = str(refusal)
                    assert f"sql.role {role!r}" in message and f"{allowed_identity!r} identity" in message
                    beyond = sorted(set(IDENTITY_ZONES[identity]) - set(sql.ROLE_ZONES[role]), key=ZONES.index)
                    assert f"can also read {' and '.join(beyond)}:" in message
                    assert not any(s in message for s in store.secrets())
    assert not set(IDENTITY_ZONES["officer"]) <= set(sql.ROLE_ZONES["analyst"])  # officer's key: analyst refused


def test_privtext_sql_as_analyst_with_the_pipeline_key_is_refused_before_spark(zones, tmp_path):
    from privtext.commands import sql
    from tests_support import make_budget_settings

    store, lakehouse, _, _ = zones
    settings = make_budget_settings(tmp_path / "lake")
    settings = settings.model_copy(update={"lakehouse": settings.lakehouse.model_copy(update={
        "zone_roots": lakehouse.zone_roots, "object_store": lakehouse.object_store})})
    assert settings.sql.role == "analyst"
    with holding(store.env("pipeline")), pytest.raises(Refused, match="can also read restricted and protected"):
        sql.query(settings, "SELECT 1")


def _unauthenticated(port: int, paths: list[str]) -> list[tuple[str, bytes]]:
    """What a caller without key or certificate gets from ``port``: per path a plain HTTP GET and the same GET
    over TLS without a client certificate, as (status line or error, body)."""
    import socket
    import ssl

    def get(sock, path) -> tuple[str, bytes]:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        data = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        return head.split(b"\r\n")[0].decode("latin-1") or "closed", body

    answers = []
    for path in paths:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            answers.append(get(sock, path))
        tls = ssl.create_default_context()
        tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, tls.wrap_socket(raw) as sock:
                answers.append(get(sock, path))
        except (ssl.SSLError, OSError) as error:
            answers.append((f"TLS refused: {type(error).__name__}", b""))
    return answers


def _exposed(store, objects: dict[str, bytes]) -> dict[str, list[str]]:
    """Per listening TCP port of the store (but S3's), the answers that served an object's bytes or any 2xx
    other than the admin port's health and metrics; S3's port must refuse the keyless GETs."""
    from privtext.platform.local_s3 import listeners

    paths = [p for key in objects for p in (f"/buckets/{key}", f"/{key}")] + ["/dir/status", "/"]
    ports, _ = listeners(store.pid)
    names = {port: flag for flag, port in store.ports.items()}
    assert set(ports) <= set(names), f"unexpected listeners: {set(ports) - set(names)}"
    exposed = {}
    for port in ports:
        answers = _unauthenticated(port, paths)
        leaks = [line for line, body in answers if any(content[:64] in body for content in objects.values())
                 or (re.match(r"HTTP/\S+ 2\d\d", line) and names[port] != "admin.port")]
        if names[port] == "s3.port":
            assert all(" 403 " in line for line, _ in answers[::2]), answers[::2]
        if leaks:
            exposed[names[port]] = leaks
    return exposed


def test_no_port_of_the_store_serves_zone_data_without_its_keys(zones):
    """Issue 47: the filer's HTTP port served restricted data with no key. Every TCP port weed listens on is
    probed with a plain GET and a TLS GET without a client certificate, for a restricted Delta commit and
    Parquet file by both the filer's and S3's path forms: none answers with data; S3 answers 403. Its Unix
    sockets are in the store's private folder or owner-only. Negative control: the same store without its
    security.toml serves the object through the filer's port."""
    from privtext.platform.local_s3 import listeners, seaweedfs

    store, lakehouse, uris, parquet = zones
    with holding(store.env("pipeline")):
        keys = [uris["restricted"].removeprefix("s3://") + "/_delta_log/00000000000000000000.json",
                parquet["restricted"].removeprefix("s3://")]
        objects = {key: direct_get(lakehouse, "restricted", f"s3://{key}") for key in keys}
    assert _exposed(store, objects) == {}
    for path in listeners(store.pid)[1]:
        assert path.startswith(f"{store.folder}/") or not os.stat(path).st_mode & 0o022, path
    assert oct(os.stat(store.folder).st_mode & 0o777) == "0o700"

    with seaweedfs(buckets={zone: f"open-{zone}" for zone in ZONES}, secure=False) as open_store:
        key = "open-restricted/lake/_delta_log/00000000000000000000.json"
        env = open_store.env("pipeline")
        fs = pafs.S3FileSystem(access_key=env["AWS_ACCESS_KEY_ID"], secret_key=env["AWS_SECRET_ACCESS_KEY"],
                               endpoint_override=open_store.endpoint.split("://")[1], scheme="http", region="us-east-1")
        with fs.open_output_stream(key) as out:
            out.write(objects[keys[0]])
        assert "filer.port" in _exposed(open_store, {key: objects[keys[0]]})
