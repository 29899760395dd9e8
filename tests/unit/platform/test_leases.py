"""One writer per (stage, date), with real processes: a held lease refuses a second run, other dates
proceed, a SIGKILLed owner's lease is taken over, and of several racing processes exactly one wins."""
import json
import os
import signal
import time

import pytest

from privtext.platform.leases import StageLocked, acquire, lock_dir, stage_lease
from privtext.settings import ConfigError, load_settings
from tests_support import hold_lease


def _settings(root, **lakehouse):
    return load_settings(None, overrides={"lakehouse": {"root": str(root), **lakehouse}}, environ={}).lakehouse


def test_second_writer_of_a_date_refuses_other_dates_proceed_dead_owner_taken_over(tmp_path):
    settings = _settings(tmp_path)
    owner = hold_lease(tmp_path, "ingest-2026-01-15")
    try:
        assert owner.stdout.readline().strip() == "held"
        with pytest.raises(StageLocked) as refused:
            acquire(settings, "ingest-2026-01-15", "second")
        message = str(refused.value)
        assert f"pid {owner.pid}" in message and "run run-a" in message and "already running" in message
        with stage_lease(settings, "ingest-2026-01-16", "other-date"):  # another date: no interference
            pass
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        with stage_lease(settings, "ingest-2026-01-15", "after-kill") as lease:  # the dead pid's lease is taken over
            assert json.load(open(lease.path))["run_id"] == "after-kill"
        assert not os.path.exists(lease.path)  # released at the end
    finally:
        owner.kill()
        owner.wait()


def test_racing_processes_exactly_one_wins(tmp_path):
    procs = [hold_lease(tmp_path, "sanitize-2026-01-15", tag=str(i)) for i in range(4)]
    outcomes = [p.stdout.readline().split()[0] for p in procs]
    for p in procs:
        p.kill()
        p.wait()
    assert sorted(outcomes) == ["held", "refused", "refused", "refused"]


def test_expired_lease_of_another_host_is_taken_over_a_live_one_is_not(tmp_path):
    settings = _settings(tmp_path)
    path = os.path.join(lock_dir(settings), "publish-2026-01-15.lock")
    foreign = {"pid": 1, "host": "elsewhere", "run_id": "remote", "started": time.time()}
    with open(path, "w") as handle:
        json.dump({**foreign, "expires": time.time() + 600}, handle)
    with pytest.raises(StageLocked, match="pid 1 on elsewhere, run remote"):
        acquire(settings, "publish-2026-01-15", "mine")
    with open(path, "w") as handle:
        json.dump({**foreign, "expires": time.time() - 1}, handle)
    acquire(settings, "publish-2026-01-15", "mine").release()


def test_lease_is_renewed_while_held(tmp_path):
    lease = acquire(_settings(tmp_path, lease_seconds=0.3), "embed-2026-01-15", "slow")
    first = lease.owner["expires"]
    time.sleep(0.5)
    assert json.load(open(lease.path))["expires"] > first
    lease.release()


def test_object_store_root_needs_a_lock_dir(tmp_path):
    with pytest.raises(ConfigError, match="lakehouse.lock_dir is required"):
        lock_dir(_settings("s3://bucket/lake"))
    assert lock_dir(_settings("s3://bucket/lake", lock_dir=str(tmp_path / "locks"))) == str(tmp_path / "locks")


def test_a_run_whose_lease_was_taken_over_commits_nothing(tmp_path):
    """Fencing: the owner stalls past its expiry, another run takes the lease over; the stalled owner's
    next lakehouse commit is refused (its files removed) while the new owner commits."""
    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.leases import LeaseLost
    from privtext.platform.tables import PRIVACY_LEDGER
    from privtext.settings import load_settings

    settings = load_settings(None, overrides={"lakehouse": {"root": str(tmp_path / "lake"), "lease_seconds": 600}},
                             environ={}).lakehouse
    lake = Lakehouse(None, settings)
    lake.create(PRIVACY_LEDGER)
    row = {name: None for name in PRIVACY_LEDGER.schema.names}
    with stage_lease(settings, "publish-2026-01-15", "stalled") as lease:
        lease._stop.set()  # the owner stalls: no renewal; its lease expires and is taken over
        lease._renewer.join()
        with open(lease.path) as handle:
            expired = {**json.load(handle), "expires": time.time() - 1}
        with open(lease.path, "w") as handle:
            json.dump(expired, handle)
        lease.owner = expired
        taker = acquire(settings, "publish-2026-01-15", "taker")
        version = lake.version(PRIVACY_LEDGER)
        with pytest.raises(LeaseLost, match="publish-2026-01-15.lock of run stalled was taken over by another run"):
            lake.append_rows(PRIVACY_LEDGER, [{**row, "entry_id": "late"}])
        assert lake.version(PRIVACY_LEDGER) == version
        assert sorted(os.listdir(lake.table_uri(PRIVACY_LEDGER))) == ["_delta_log"]  # the refused files removed
    taker.release()


def test_a_failed_renewal_marks_the_lease_lost(tmp_path, caplog, monkeypatch):
    from privtext.platform import leases

    lease = acquire(_settings(tmp_path, lease_seconds=0.3), "embed-2026-01-15", "unlucky")

    def no_writes(path, mode="r", *args, **kwargs):  # the lock dir's disk is full: renewals cannot write
        if "w" in mode:
            raise OSError(28, "No space left on device")
        return open(path, mode, *args, **kwargs)

    monkeypatch.setattr(leases, "open", no_writes, raising=False)
    time.sleep(0.5)
    with pytest.raises(leases.LeaseLost, match=r"was not renewed \(No space left on device\)"):
        lease.check()
    assert "was not renewed" in caplog.text
    monkeypatch.undo()
    lease.release()
