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
