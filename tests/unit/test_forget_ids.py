"""``privtext forget``'s id list: any script is an id, a malformed entry refuses the whole list (naming where, not
the value), and the keyed subject ids an erasure records are not the published pseudonyms."""
import pytest
from hypothesis import given, settings, strategies as st

from privtext.commands.forget import MAX_ID_CHARS, parse_subjects
from privtext.errors import UsageError
from privtext.pii.hashing import DETERMINISTIC_TEST_KEY, doc_pseudonym, subject_key

IDS = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40).filter(str.strip)


@settings(max_examples=200, deadline=None)
@given(users=st.lists(IDS, min_size=1, max_size=4), docs=st.lists(IDS, max_size=4))
def test_a_file_of_any_script_gives_the_same_ids_as_the_options(tmp_path_factory, users, docs):
    path = tmp_path_factory.mktemp("ids") / "ids.txt"
    path.write_text("# erasure requests\n\n" + "".join(f"user:{u}\r\n" for u in users)
                    + "".join(f"doc:{d}\n" for d in docs),
                    encoding="utf-8", newline="")
    from_file = parse_subjects([], [], str(path))
    assert from_file == parse_subjects(users, docs, None)
    assert from_file.users == tuple(dict.fromkeys(users)) and from_file.docs == tuple(dict.fromkeys(docs))


@pytest.mark.parametrize("users,line,where", [
    ([" "], None, "--user-id #1: the id is blank"),
    (["ok", "a\x00b"], None, "--user-id #2: the id holds a control character"),
    (["x" * (MAX_ID_CHARS + 1)], None, f"--user-id #1: the id is longer than {MAX_ID_CHARS}"),
    ([], "someone@example.org", "line 2: expected 'user:ID' or 'doc:ID'"),
    ([], "user:\tsecret\x07id", "line 2: the id holds a control character"),
    ([], "user:   ", "line 2: the id is blank"),
])
def test_a_malformed_entry_refuses_the_list_without_echoing_it(tmp_path, users, line, where):
    path = None
    if line is not None:
        path = tmp_path / "ids.txt"
        path.write_text(f"user:fine\n{line}\n")
    with pytest.raises(UsageError) as refused:
        parse_subjects(users, [], str(path) if path else None)
    assert where in str(refused.value) and "nothing was erased" in str(refused.value)
    assert "secret" not in str(refused.value) and "someone" not in str(refused.value)


def test_no_id_at_all_is_a_usage_error():
    with pytest.raises(UsageError, match="needs --user-id, --doc-id or --from-file"):
        parse_subjects([], [], None)


def test_subject_keys_are_keyed_and_apart_from_pseudonyms():
    key = DETERMINISTIC_TEST_KEY
    assert subject_key(key, "user", "a") != subject_key(key, "doc", "a") != doc_pseudonym(key, "a")
    assert subject_key(key, "user", "a") != subject_key(b"another-key-of-16-bytes", "user", "a")
    assert len(subject_key(key, "user", "alice@example.org")) == 32


def test_a_forget_waits_for_the_runs_in_flight_of_its_dates_only(tmp_path):
    """``wait_for_runs`` on real lease files: a run of another date, the erasure's own lease and a run whose
    process is gone are not waited for; a run of an erased date (or a named run) is, until it releases."""
    import datetime as dt
    import subprocess
    import sys
    import threading
    import time

    from privtext.commands.forget import runs_in_flight, wait_for_runs
    from privtext.platform import leases
    from privtext.settings import load_settings

    conf = load_settings(None, overrides={"lakehouse": {"root": str(tmp_path / "lake")}}, environ={})
    night, other = dt.date(2026, 1, 16), dt.date(2026, 1, 14)
    detect = leases.acquire(conf.lakehouse, f"detect_pii-{night}", "r1")
    publish = leases.acquire(conf.lakehouse, f"publish-sanitized_documents-{other}", "r2")
    erasure = leases.acquire(conf.lakehouse, "erasure", "r3")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = leases.acquire(conf.lakehouse, f"ingest-{night}", "r4")
    gone.release()  # then the same lease as left by a process killed -9: its pid no longer exists
    leases._write_new(gone.path, {**gone.owner, "pid": int(dead.stdout)})
    try:
        assert runs_in_flight(conf) == {f"detect_pii-{night}": ("r1", night),
                                        f"publish-sanitized_documents-{other}": ("r2", other)}
        start = time.monotonic()
        wait_for_runs(conf, {dt.date(2026, 1, 15)})
        assert time.monotonic() - start < 2.0  # nothing of that date in flight
        threading.Timer(1.5, detect.release).start()
        start = time.monotonic()
        wait_for_runs(conf, {night})
        assert time.monotonic() - start >= 1.5
        threading.Timer(1.0, publish.release).start()
        start = time.monotonic()
        wait_for_runs(conf, runs={(f"publish-sanitized_documents-{other}", "r2")})
        assert time.monotonic() - start >= 1.0 and runs_in_flight(conf) == {}
    finally:
        for lease in (detect, publish, erasure):
            lease.release()
