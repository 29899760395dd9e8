"""Where zone files live: a ``pyarrow.fs`` filesystem for a URI (local path, ``s3://``, ``gs://``, ``abfs://``,
``hdfs://``) and the matching delta-rs storage options, from the zone's ``ObjectStoreSettings``.

Credentials are never passed: pyarrow's S3 filesystem and delta-rs read them from the process's
environment (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` or the host's role), on the driver and on
each executor (which builds its own filesystem from the settings it was sent).
"""
from __future__ import annotations

from urllib.parse import urlparse

import pyarrow.fs as pafs

from privtext.platform.config import ObjectStoreSettings


def is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


def filesystem(uri: str, store: ObjectStoreSettings) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding ``uri`` and the path inside it."""
    if is_local(uri):
        return pafs.LocalFileSystem(), uri.removeprefix("file://")
    if uri.startswith(("s3://", "s3a://")):
        parsed = urlparse(uri)
        options = {"region": store.region} if store.region else {}
        if store.endpoint:
            endpoint = urlparse(store.endpoint)
            options.update(endpoint_override=endpoint.netloc, scheme=endpoint.scheme or "https")
        return pafs.S3FileSystem(**options), f"{parsed.netloc}{parsed.path}".rstrip("/")
    return pafs.FileSystem.from_uri(uri)


def delta_options(uri: str, store: ObjectStoreSettings) -> dict[str, str]:
    """delta-rs ``storage_options`` for ``uri`` (no credentials: delta-rs reads them from the environment)."""
    if not uri.startswith(("s3://", "s3a://")):
        return {}
    options = {"aws_conditional_put": "etag"} if store.commit == "conditional_put" else {
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    if store.endpoint:
        options["AWS_ENDPOINT_URL"] = store.endpoint
    if store.region:
        options["AWS_REGION"] = store.region
    if store.allow_http:
        options["AWS_ALLOW_HTTP"] = "true"
    return options


def delete_files(uri: str, store: ObjectStoreSettings, relative_paths: list[str]) -> None:
    """Delete files under ``uri`` (missing ones are fine)."""
    fs, root = filesystem(uri, store)
    for rel in relative_paths:
        try:
            fs.delete_file(f"{root}/{rel}")
        except FileNotFoundError:
            pass


def move_dir(fs: pafs.FileSystem, source: str, target: str) -> None:
    """Rename a folder; an object store has no folders, so its files are copied, then the source removed."""
    if fs.type_name == "local":
        fs.move(source, target)
        return
    for info in fs.get_file_info(pafs.FileSelector(source, recursive=True)):
        if info.type == pafs.FileType.File:
            fs.copy_file(info.path, f"{target}{info.path[len(source):]}")
    fs.delete_dir(source)
