"""One writer per (stage, date): a lease file in the lakehouse, created atomically.

``stage_lease(lakehouse_settings, name, run_id)`` writes the owner (pid, host, run id, start, expiry) to a
temporary file and hard-links it to ``<lock dir>/<name>.lock``; the link fails if the lease exists, so
of two runs of the same stage and date exactly one gets it and the other refuses (``StageLocked``)
naming the owner, or, given ``wait_s``, retries that long first (table creation waits on the
``create-tables`` lease). Other names (other dates) never interfere. The owner renews the expiry every third of
``lakehouse.lease_seconds`` and removes the file when it ends. A lease whose owner is dead (same host, pid
gone: kill -9, a crashed JVM) or whose expiry has passed (any host) is taken over; the taker holds
``<name>.lock.takeover`` (created the same way) meanwhile, so two takers cannot both win.

Fencing: each lease carries a unique ``token``. While a stage holds its lease (``stage_lease``), every
lakehouse commit and the export's manifest commit first call ``check_held``: if the lease file no longer
holds this owner's token (an expired lease taken over while its owner stalled, a lease removed under
another ``lock_dir``), or a renewal failed, the commit is refused (``LeaseLost``) and nothing more of the
stage lands. The check runs just before each commit (a window of one commit, not a storage-side fence).
A renewal that finds the lease taken over or cannot write it is logged as an error and marks the lease lost.

Lock dir: ``lakehouse.lock_dir``, by default ``<lakehouse.root>/_locks`` for a local root; an
object-store root has no atomic create-if-absent here and needs a shared ``lock_dir``.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import re
import socket
import threading
import time
import uuid

from privtext.errors import Refused
from privtext.platform.config import ConfigError, LakehouseSettings, resolve_uri

TAKEOVER_GRACE_S = 60  # a takeover marker older than this was left by a taker that died
log = logging.getLogger("privtext")
_held: contextvars.ContextVar["Lease | None"] = contextvars.ContextVar("privtext_held_lease", default=None)


class StageLocked(Refused):
    """Another live run holds the lease of this stage and date."""


class LeaseLost(Refused):
    """This run's lease was taken over or could not be renewed: it must not commit anything more."""


def check_held() -> None:
    """Before a commit: refuse (``LeaseLost``) if the stage lease this run holds is no longer its own."""
    lease = _held.get()
    if lease is not None:
        lease.check()


def lock_dir(settings: LakehouseSettings) -> str:
    configured = settings.lock_dir
    if configured:
        folder = resolve_uri(configured)
    elif "://" in settings.root:
        raise ConfigError("lakehouse.lock_dir is required when lakehouse.root is an object-store URI "
                          f"({settings.root}): a local or shared (NFS) folder for the stage leases")
    else:
        folder = f"{resolve_uri(settings.root)}/_locks"
    if "://" in folder:
        raise ConfigError(f"lakehouse.lock_dir must be a local or mounted folder, got {configured!r}")
    os.makedirs(folder, exist_ok=True)
    return folder


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: str) -> dict | None:
    try:
        with open(path) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None
    except ValueError:  # never written partly (link/replace are atomic); a foreign file: treat as held
        return {"pid": -1, "host": "?", "run_id": "?", "started": 0, "expires": float("inf")}


def _write_new(path: str, owner: dict) -> bool:
    """Create ``path`` holding ``owner`` atomically; False if it already exists."""
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "w") as handle:
        json.dump(owner, handle)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.remove(tmp)


def _stale(owner: dict, now: float) -> bool:
    dead = owner["host"] == socket.gethostname() and not pid_alive(owner["pid"])
    return dead or now > owner["expires"]


def _describe(name: str, owner: dict) -> str:
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(owner["started"]))
    return (f"{name} is already running: pid {owner['pid']} on {owner['host']}, run {owner['run_id']}, "
            f"since {since}; refusing a second writer (the lease is taken over once that process is gone "
            f"or its lease expires)")


class Lease:
    """A held lease: renewed in the background until ``release``."""

    def __init__(self, path: str, owner: dict, seconds: float):
        self.path, self.owner, self.seconds = path, owner, seconds
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name=f"lease-{os.path.basename(path)}", daemon=True)
        self._renewer.start()

    lost: str | None = None  # why the lease is no longer this run's (set by the renewer)

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            if _read(self.path) != self.owner:  # taken over after we stalled past the expiry: never clobber it
                self.lost = "taken over by another run"
                log.error("lease %s was %s; this run will not commit", self.path, self.lost)
                return
            try:
                owner = {**self.owner, "expires": time.time() + self.seconds}
                tmp = f"{self.path}.{uuid.uuid4().hex}.tmp"
                with open(tmp, "w") as handle:
                    json.dump(owner, handle)
                os.replace(tmp, self.path)
                self.owner = owner
            except OSError as error:
                self.lost = f"not renewed ({error.strerror or type(error).__name__})"
                log.error("lease %s was %s; this run will not commit", self.path, self.lost)
                return

    def check(self) -> None:
        """Raise ``LeaseLost`` unless the lease file still holds this owner's token and renewals succeed."""
        current = _read(self.path)
        if self.lost is None and (current is None or current.get("token") != self.owner["token"]):
            self.lost = "taken over by another run" if current else "removed"
        if self.lost is not None:
            raise LeaseLost(f"the lease {os.path.basename(self.path)} of run {self.owner['run_id']} was {self.lost}: "
                            "nothing more is committed; rerun the stage")

    def release(self) -> None:
        self._stop.set()
        self._renewer.join()
        if _read(self.path) == self.owner:
            os.remove(self.path)


def acquire(settings: LakehouseSettings, name: str, run_id: str) -> Lease:
    """Take the lease ``name`` for this process or raise ``StageLocked``."""
    safe = re.sub(r"[^A-Za-z0-9_.=-]", "_", name)
    path = os.path.join(lock_dir(settings), f"{safe}.lock")
    seconds = settings.lease_seconds
    for _ in range(3):
        now = time.time()
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "run_id": run_id, "started": now,
                 "expires": now + seconds, "token": uuid.uuid4().hex}
        if _write_new(path, owner):
            return Lease(path, owner, seconds)
        holder = _read(path)
        if holder is not None and not _stale(holder, now):
            raise StageLocked(_describe(name, holder))
        if holder is not None:
            _take_over(path, holder, name)
    raise StageLocked(f"{name}: could not take the lease at {path} (contended); retry")


def live(settings: LakehouseSettings) -> dict[str, dict]:
    """The leases held now, name -> owner (stale ones left out): the runs in flight (``privtext forget``
    waits for those of the dates it erases)."""
    folder, now, found = lock_dir(settings), time.time(), {}
    for entry in sorted(os.listdir(folder)):
        owner = _read(os.path.join(folder, entry)) if entry.endswith(".lock") else None
        if owner is not None and not _stale(owner, now):
            found[entry.removesuffix(".lock")] = owner
    return found


def _take_over(path: str, holder: dict, name: str) -> None:
    """Remove the stale lease ``holder`` unless another taker holds the takeover marker."""
    marker = f"{path}.takeover"
    mine = {"pid": os.getpid(), "host": socket.gethostname(), "run_id": "takeover", "started": time.time(),
            "expires": time.time() + TAKEOVER_GRACE_S}
    if not _write_new(marker, mine):
        other = _read(marker)
        if other is None or not _stale(other, time.time()):
            raise StageLocked(f"{name}: another run is taking over the stale lease at {path}; retry")
        os.remove(marker)
        if not _write_new(marker, mine):
            raise StageLocked(f"{name}: another run is taking over the stale lease at {path}; retry")
    try:
        if _read(path) == holder:
            os.remove(path)
    finally:
        os.remove(marker)


@contextlib.contextmanager
def stage_lease(settings: LakehouseSettings, name: str, run_id: str, wait_s: float = 0):
    """Hold the lease ``name`` (e.g. ``ingest-2026-01-15``) for the duration of the block; while another
    process holds it, retry for up to ``wait_s`` seconds before refusing."""
    deadline = time.time() + wait_s
    while True:
        try:
            lease = acquire(settings, name, run_id)
            break
        except StageLocked:
            if time.time() >= deadline:
                raise
            time.sleep(0.1)
    held = _held.set(lease)
    try:
        yield lease
    finally:
        _held.reset(held)
        lease.release()
