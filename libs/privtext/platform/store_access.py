"""Least privilege on the object store: which zones each store identity reads and writes, and a probe of
what the credentials in this process's environment can actually read.

Three identities, each with its own key, scoped per bucket by the store itself (``IDENTITY_ZONES``):
``pipeline`` (stages, executors, ``privtext report``) reads and writes every zone; ``officer`` reads
``protected`` and ``published``; ``analyst`` reads ``published``. A process holds only its role's key,
in its environment (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``), never in a config file.

The code cannot tell which identity a key belongs to, so it asks the store: ``readable_zones`` probes each
object-store zone with a listing and HEADs under the zone root (no data is read), and
``require_confined`` refuses a reader whose credentials reach a zone its role must not read (an analyst
role with the pipeline's key: the code could not vouch for the zone boundary). Zones on local disk are
not probed: their boundary is the file system's permissions.
"""
from __future__ import annotations

import pyarrow.fs as pafs

from privtext.errors import Refused
from privtext.platform import storage
from privtext.platform.config import ZONES, LakehouseSettings

# identity -> zone -> access ("rw": read, list, write and delete; "r": read and list)
IDENTITY_ZONES: dict[str, dict[str, str]] = {
    "pipeline": {zone: "rw" for zone in ZONES},
    "officer": {"protected": "r", "published": "r"},
    "analyst": {"published": "r"},
}
STORE_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")  # a process's store key
PROBE_KEY = ".privtext-access-probe"  # never written: its HEAD answers 404 when reads are allowed, 403 when not


class StoreAccessUnverified(Refused):
    """The store answered a probe with neither data nor AccessDenied: the boundary cannot be checked."""


def is_access_denied(error: BaseException) -> bool:
    """An S3 AccessDenied (403) as pyarrow's S3 filesystem reports it."""
    return isinstance(error, OSError) and "ACCESS_DENIED" in str(error)


def can_read(lakehouse: LakehouseSettings, zone: str) -> bool:
    """Whether this process's store credentials may list or read under ``zone``'s root (an object-store
    zone): True if a listing, a HEAD of ``PROBE_KEY`` or a HEAD of a zone table's first Delta commit is
    answered (found or not found), False if every one is AccessDenied. The commits are probed because a
    store may answer a HEAD of a missing key with 403 to a key that may read but not list (as AWS does)."""
    from privtext.platform.tables import ALL_TABLES

    uri = lakehouse.zone_root(zone)
    fs, root = storage.filesystem(uri, lakehouse.zone_store(zone))
    heads = [PROBE_KEY] + [f"{spec.name}/_delta_log/{0:020d}.json" for spec in ALL_TABLES if spec.zone == zone]
    probes = [lambda: fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))]
    probes += [lambda key=key: fs.get_file_info(f"{root}/{key}") for key in heads]
    for probe in probes:
        try:
            probe()
            return True
        except OSError as error:
            if not is_access_denied(error):
                raise StoreAccessUnverified(f"could not check access to the {zone} zone ({uri}): "
                                            f"{str(error).splitlines()[0][:200]}") from None
    return False


def readable_zones(lakehouse: LakehouseSettings) -> list[str]:
    """The object-store zones this process's credentials can read (local zones are not listed)."""
    return [zone for zone in ZONES if not storage.is_local(lakehouse.zone_root(zone)) and can_read(lakehouse, zone)]


def require_confined(lakehouse: LakehouseSettings, allowed: tuple[str, ...], who: str, identity: str) -> None:
    """Refuse (exit 3) when this process's store credentials read an object-store zone outside ``allowed``:
    ``who`` (e.g. ``sql.role 'analyst'``) must run with the ``identity`` store identity's key."""
    beyond = [zone for zone in readable_zones(lakehouse) if zone not in allowed]
    if beyond:
        raise Refused(
            f"{who} reads {' and '.join(allowed)} only, but the object-store credentials in this environment "
            f"(AWS_ACCESS_KEY_ID) can also read {' and '.join(beyond)}: run it with the {identity!r} identity's "
            "key, which the store itself confines, since the code alone cannot vouch for the zone boundary")
