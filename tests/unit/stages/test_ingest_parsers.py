"""ingest's pure parsers and load-size rule, without Spark: every record lands or is quarantined with its reason."""
import codecs
import json

import pytest

from privtext.stages.ingest import IngestError, _parse_csv, _parse_jsonl, check_load_size, keyed_doc_id


def reasons(records):
    return [(r["line_no"], r["reason"]) for r in records]


def test_jsonl_keeps_good_lines_and_quarantines_each_bad_one_with_its_line():
    content = (b'{"doc_id": "a", "text": "hi", "tag": 3}\n\n{"text": oops}\n[1, 2]\n\xff\xfe\n'
               b'{"text": "x", "m": {"k": 1}}\n')
    records = _parse_jsonl(content, "f.jsonl")
    assert reasons(records) == [(1, None), (3, "malformed JSON: Expecting value"), (4, "malformed JSON: not an object"),
                                (5, "invalid UTF-8"), (6, None)]
    good = [r for r in records if r["reason"] is None]
    assert good[0]["doc_id"] == "a" and good[0]["metadata"] == {"tag": "3"} and good[1]["metadata"] == {"m": '{"k": 1}'}
    assert all(r["text"] is None and r["metadata"] == {} for r in records if r["reason"])  # nothing kept of a bad one


def test_jsonl_array_utf16_bom_and_a_file_without_text():
    array = json.dumps([{"text": "é"}, 5]).encode("utf-16")  # with its BOM
    assert reasons(_parse_jsonl(array, "a.json")) == [(1, None), (2, "malformed JSON: not an object")]
    assert _parse_jsonl(codecs.BOM_UTF8 + b'{"text": "caf\xc3\xa9"}\n', "b.jsonl")[0]["text"] == "café"
    no_text = _parse_jsonl(b'{"body": "x"}\n{"body": "y"}\n', "c.jsonl")
    assert {r["reason"] for r in no_text} == {"file has no 'text' column"}


def test_csv_wrong_field_counts_are_quarantined_and_an_open_quote_is_one_record_to_the_end():
    records = _parse_csv(b'doc_id,text\n1,"hello, world"\n2\n3,"multi\nline"\n', "f.csv", ",")
    assert reasons(records) == [(2, None), (3, "wrong field count: 1 (header has 2)"), (4, None)]
    assert records[0]["text"] == "hello, world" and records[2]["text"] == "multi\nline"
    broken = _parse_csv(b'doc_id,text\n1,ok\n2,"never closed\n3,swallowed\n', "g.csv", ",")
    assert reasons(broken) == [(2, None),
                               (3, "CSV parse error in the record starting at line 3: unexpected end of data")]
    assert broken[1]["raw_record"] == '2,"never closed\n3,swallowed\n'  # the open quote's record: the rest of the file


def test_csv_reads_on_past_a_long_field_and_a_stray_quote_row_by_row():
    """Issue 47: one field over the csv module's limit mid-file lost every row after it (49 of 100)."""
    import csv

    rows = [f"r{i},row {i}" for i in range(100)]
    rows[50] = "r50," + "x" * 200_000
    records = _parse_csv(("doc_id,text\n" + "\n".join(rows) + "\n").encode(), "long.csv", ",")
    assert len("x" * 200_000) > csv.field_size_limit()  # control: the csv module's own limit breaks on this row
    assert [r["doc_id"] for r in records] == [f"r{i}" for i in range(100)] and all(r["reason"] is None for r in records)
    assert len(records[50]["text"]) == 200_000  # parsed whole (ingest.max_chars decides whether it lands)
    stray = _parse_csv(b'doc_id,text\n1,fine\n2,"bad"x\n3,"multi\nline"\n4,after\n', "q.csv", ",")
    assert reasons(stray) == [(2, None),
                              (3, "CSV parse error in the record starting at line 3: ',' expected after '\"'"),
                              (4, None), (6, None)]
    assert [r["text"] for r in stray if r["reason"] is None] == ["fine", "multi\nline", "after"]


def test_a_repeated_csv_header_or_json_key_is_quarantined_with_every_value_kept():
    header = _parse_csv(b"doc_id,text,text\n1,first,second\n2,a,b\n", "h.csv", ",")
    assert reasons(header) == [(2, "duplicate column 'text' in the CSV header (file quarantined)"),
                               (3, "duplicate column 'text' in the CSV header (file quarantined)")]
    assert header[0]["raw_record"] == "1,first,second"
    lines = _parse_jsonl(b'{"text": "first", "text": "second"}\n{"text": "x", "m": {"k": 1, "k": 2}}\n'
                         b'{"text": "once", "m": {"k": 1}}\n', "d.jsonl")
    assert reasons(lines) == [(1, "malformed JSON: duplicate key in an object"),
                              (2, "malformed JSON: duplicate key in an object"), (3, None)]  # control: no repeat
    assert "first" in lines[0]["raw_record"] and "second" in lines[0]["raw_record"]
    array = _parse_jsonl(b'[{"text": "a", "text": "b"}, {"text": "c"}]', "a.json")
    assert reasons(array) == [(1, "malformed JSON: duplicate key in an object"), (2, None)]
    assert array[0]["raw_record"] == '{"text": "a", "text": "b"}'


@pytest.mark.parametrize("text, reason", [
    ({"k": "v"}, "text is an object, not a string"), (["a"], "text is a list, not a string"),
    (12, "text is a number, not a string"), (1.5, "text is a number, not a string"),
    (True, "text is a boolean, not a string"),
    ("\u00a0\u00a0", "empty text"), ("\u2003 \u2002\u3000", "empty text"), ("\x00\x00\x00", "empty text"),
    ("\u200b\ufeff\t\n", "empty text"),
    ("12", None), ("a\u00a0b", None), ("\x00x", None),  # controls: a string, words between odd spaces
])
def test_a_text_that_is_not_a_string_or_is_blank_is_quarantined(text, reason):
    (record,) = _parse_jsonl(json.dumps({"doc_id": "d", "text": text}).encode(), "t.jsonl")
    assert record["reason"] == reason and (record["text"] is None) == (reason is not None)


def test_ids_and_labels_over_the_documented_maximum_are_quarantined():
    from privtext.stages.ingest import MAX_ID_CHARS

    lines = [{"doc_id": "d" * 1_000_000, "text": "a"}, {"doc_id": "e" * MAX_ID_CHARS, "text": "b"},
             {"text": "c", "user_id": "u" * (MAX_ID_CHARS + 1)}, {"text": "d", "label": "l" * (MAX_ID_CHARS + 1)}]
    records = _parse_jsonl("\n".join(json.dumps(x) for x in lines).encode(), "i.jsonl")
    assert reasons(records) == [(1, f"doc_id longer than {MAX_ID_CHARS} characters"), (2, None),
                                (3, f"user_id longer than {MAX_ID_CHARS} characters"),
                                (4, f"label longer than {MAX_ID_CHARS} characters")]


def test_a_fifo_socket_or_device_in_the_drop_folder_is_skipped_and_listed_never_opened(tmp_path):
    """Issue 47: a named pipe called pipe.jsonl blocked ingest with no output."""
    import os
    import signal
    import socket

    from privtext.stages.ingest import IngestError, _input_files, _read_regular, file_problems

    (tmp_path / "good.jsonl").write_text('{"text": "a"}\n')
    os.mkfifo(tmp_path / "pipe.jsonl")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock.jsonl"))
        signal.alarm(20)  # a blocked open fails the test instead of hanging it
        try:
            inputs, skipped = _input_files(str(tmp_path))
            assert inputs == [str(tmp_path / "good.jsonl")]
            assert sorted(skipped) == ["pipe.jsonl (a FIFO)", "sock.jsonl (a socket)"]
            assert file_problems(inputs) == {}
            with pytest.raises(OSError, match="not a regular file"):
                _read_regular(str(tmp_path / "pipe.jsonl"))  # swapped in after the listing: an error, not a hang
            with pytest.raises(IngestError, match="is a FIFO, not a regular file or a folder"):
                _input_files(str(tmp_path / "pipe.jsonl"))
        finally:
            signal.alarm(0)


def test_load_size_refuses_an_empty_or_much_smaller_load_unless_allowed():
    with pytest.raises(IngestError, match=r"no usable document in this load \(malformed JSON: 2\)"):
        check_load_size(0, 10, {"malformed JSON": 2}, 0.5)
    with pytest.raises(IngestError, match="fewer than ingest.min_ratio_of_previous=0.5 of the 10"):
        check_load_size(4, 10, {}, 0.5)
    check_load_size(5, 10, {}, 0.5)
    check_load_size(0, 10, {}, 0.5, allow_empty=True)
    check_load_size(1, 10, {}, 0.5, allow_smaller=True)


def test_keyed_doc_id_depends_on_key_file_and_text():
    ids = {keyed_doc_id(k, f, t)
           for k, f, t in [(b"k1", "a", "x"), (b"k2", "a", "x"), (b"k1", "b", "x"), (b"k1", "a", "y")]}
    assert len(ids) == 4 and keyed_doc_id(b"k1", "a", "x") == keyed_doc_id(b"k1", "a", "x")
    assert len(keyed_doc_id(b"k1", "a", "x")) == 32


def _all_valid(records):
    """Every string of every record encodes as UTF-8 (else Arrow refuses the whole batch)."""
    for r in records:
        for value in [r["doc_id"], r["user_id"], r["text"], r["label"], r["source_file"], r["raw_record"],
                      r["reason"], *r["metadata"].keys(), *r["metadata"].values()]:
            if value is not None:
                value.encode("utf-8")
    return True


def test_lone_surrogates_in_ids_labels_and_keys_quarantine_the_record_only():
    content = (b'{"doc_id": "\\ud800", "text": "a"}\n{"text": "b", "label": "\\udfff"}\n'
               b'{"text": "c", "\\ud83d": 1}\n{"doc_id": "ok", "text": "good"}\n')
    records = _parse_jsonl(content, "s.jsonl")
    assert reasons(records) == [(1, "invalid Unicode in doc_id"), (2, "invalid Unicode in label"),
                                (3, "invalid Unicode in a field name"), (4, None)]
    assert _all_valid(records) and "\\ud800" in records[0]["raw_record"]


def test_a_latin1_header_a_deep_json_and_a_first_line_array_do_not_lose_the_file_or_its_good_lines():
    header = _parse_csv(b'doc_id,t\xe9xt\n1,hello\n', "h.csv", ",")
    assert reasons(header) == [(1, "invalid UTF-8 in the CSV header (file quarantined)")] and _all_valid(header)
    deep = b"[" * 200_000 + b"]" * 200_000
    records = _parse_jsonl(deep + b'\n{"text": "after"}\n', "d.jsonl")
    assert [r["reason"] for r in records][0].startswith("malformed JSON: nested deeper than")
    assert records[-1]["text"] == "after" and _all_valid(records)
    first_array = _parse_jsonl(b'[1,2,3]\n' + b''.join(b'{"text": "t%d"}\n' % i for i in range(4)), "a.jsonl")
    assert reasons(first_array) == [(1, "malformed JSON: not an object")] + [(i, None) for i in range(2, 6)]
    only_deep = _parse_jsonl(b"[" * 200_000 + b"]" * 200_000, "e.json")
    assert len(only_deep) == 1 and "nested deeper" in only_deep[0]["reason"]


def test_parquet_structs_with_decimals_and_timestamps_become_json_metadata(tmp_path):
    import datetime as dt
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    from privtext.stages.ingest import _parse_parquet

    table = pa.table({"text": ["hi"],
                      "extra": [{"amount": decimal.Decimal("1.50"), "at": dt.datetime(2026, 1, 2, 3, 4)}]})
    pq.write_table(table, tmp_path / "p.parquet")
    (records,) = list(_parse_parquet(str(tmp_path / "p.parquet"), "p.parquet"))
    assert records[0]["reason"] is None
    assert json.loads(records[0]["metadata"]["extra"]) == {"amount": "1.50", "at": "2026-01-02 03:04:00"}


@pytest.mark.parametrize("name", ["f.jsonl", "f.json", "f.csv"])
def test_generated_bytes_never_break_a_parser_and_every_string_is_valid(name):
    """Any bytes: each record lands or is quarantined with a reason; no exception, no invalid string."""
    from hypothesis import given, settings, strategies as st

    from privtext.stages.ingest import _parsed_chunks

    lines = st.one_of(st.binary(max_size=60),
                      st.text(max_size=30).map(lambda t: json.dumps({"text": t, t: t}).encode()),
                      st.sampled_from([b"[1,2,3]", b'{"doc_id": "\\udc80", "text": "x"}', b"[" * 3000, b"\xff\xfe",
                                       b'"a"', b"{}", b'{"text": null}', b"\x00", b"doc_id,text"]))

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(lines, max_size=6))
    def check(chunks):
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            path = f"{folder}/{name}"
            with open(path, "wb") as f:
                f.write(b"\n".join(chunks))
            for records in _parsed_chunks(path, name, ","):
                assert _all_valid(records)
                assert all(r["source_file"] == name for r in records)
                assert all(r["text"] is None and r["metadata"] == {} for r in records if r["reason"])

    check()
