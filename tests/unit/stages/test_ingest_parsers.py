"""ingest's pure parsers and load-size rule, without Spark: every record lands or is quarantined with its reason."""
import codecs
import json

import pytest

from privtext.stages.ingest import IngestError, _parse_csv, _parse_jsonl, check_load_size, keyed_doc_id


def reasons(records):
    return [(r["line_no"], r["reason"]) for r in records]


def test_jsonl_keeps_good_lines_and_quarantines_each_bad_one_with_its_line():
    content = b'{"doc_id": "a", "text": "hi", "tag": 3}\n\n{"text": oops}\n[1, 2]\n\xff\xfe\n{"text": "x", "m": {"k": 1}}\n'
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


def test_csv_wrong_field_counts_are_quarantined_and_a_parse_error_quarantines_the_file():
    records = _parse_csv(b'doc_id,text\n1,"hello, world"\n2\n3,"multi\nline"\n', "f.csv", ",")
    assert reasons(records) == [(2, None), (3, "wrong field count: 1 (header has 2)"), (4, None)]
    assert records[0]["text"] == "hello, world" and records[2]["text"] == "multi\nline"
    broken = _parse_csv(b'doc_id,text\n1,ok\n2,"never closed\n', "g.csv", ",")
    assert len(broken) == 2 and all("CSV parse error in the record starting at line 3" in r["reason"] for r in broken)


def test_load_size_refuses_an_empty_or_much_smaller_load_unless_allowed():
    with pytest.raises(IngestError, match=r"no usable document in this load \(malformed JSON: 2\)"):
        check_load_size(0, 10, {"malformed JSON": 2}, 0.5)
    with pytest.raises(IngestError, match="fewer than ingest.min_ratio_of_previous=0.5 of the 10"):
        check_load_size(4, 10, {}, 0.5)
    check_load_size(5, 10, {}, 0.5)
    check_load_size(0, 10, {}, 0.5, allow_empty=True)
    check_load_size(1, 10, {}, 0.5, allow_smaller=True)


def test_keyed_doc_id_depends_on_key_file_and_text():
    ids = {keyed_doc_id(k, f, t) for k, f, t in [(b"k1", "a", "x"), (b"k2", "a", "x"), (b"k1", "b", "x"), (b"k1", "a", "y")]}
    assert len(ids) == 4 and keyed_doc_id(b"k1", "a", "x") == keyed_doc_id(b"k1", "a", "x")
    assert len(keyed_doc_id(b"k1", "a", "x")) == 32
