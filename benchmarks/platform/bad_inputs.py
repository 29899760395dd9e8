"""Issue #22's "must show": every bad-input case through the real CLI (`privtext run ingest` on local
Spark + Delta, in a temporary lakehouse), with the rows that landed, the rows quarantined per reason,
the exit code and the message; then the refusals: an empty load over a date with data, a stale audit
at publish, an unknown dataset, and `privtext sql` statements that are not read-only.

Each case is its own date: a ``good.jsonl`` of 3 documents beside the bad file(s), so "3 landed" means
the rest of the load survived the bad file. ``ingest.max_chars`` is 1000 here. Prints a Markdown table
and ``name: value`` lines.

    .venv/bin/python benchmarks/platform/bad_inputs.py
"""
from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PRIVTEXT_HMAC_KEY="bad-inputs-benchmark-key-0123456789")

LONG = "words " * 1000  # 6,000 characters, 6 x max_chars


def _good(folder: Path) -> None:
    (folder / "good.jsonl").write_text("".join(json.dumps({"text": f"good message {i}"}) + "\n" for i in range(3)))


def _parquet(folder: Path, name: str, columns: dict) -> None:
    pq.write_table(pa.table(columns), folder / name)


def _loop(folder: Path) -> None:
    (folder / "a.jsonl").symlink_to(folder / "b.jsonl")
    (folder / "b.jsonl").symlink_to(folder / "a.jsonl")


CASES = {  # name -> writes the bad file(s) into the drop folder
    "CSV with a UTF-8 BOM": lambda f: (f / "bom.csv").write_bytes("\ufefftext,label\nfrom a BOM file,x\n".encode()),
    "blank-lines JSONL": lambda f: (f / "blank.jsonl").write_text("\n \n\n"),
    "0-byte file": lambda f: (f / "zero.jsonl").write_bytes(b""),
    "header-only CSV": lambda f: (f / "header.csv").write_text("text,label\n"),
    "JSON array (one non-object)": lambda f: (f / "array.json").write_text(json.dumps([{"text": "in an array"}, 7])),
    "UTF-16 JSONL with BOM": lambda f: (f / "u16.jsonl").write_bytes(json.dumps({"text": "Grüße"}).encode("utf-16")),
    "UTF-32 JSONL with BOM": lambda f: (f / "u32.jsonl").write_bytes(json.dumps({"text": "Grüße"}).encode("utf-32")),
    "Parquet int32 vs int64 + extra column": lambda f: (
        _parquet(f, "a.parquet", {"text": ["pa"], "n": pa.array([1], pa.int32())}),
        _parquet(f, "b.parquet", {"text": ["pb"], "n": pa.array([2], pa.int64()), "extra": ["x"]})),
    "Parquet string vs int32 (conflict)": lambda f: (
        _parquet(f, "a.parquet", {"text": ["pa"], "n": pa.array([1], pa.int32())}),
        _parquet(f, "c.parquet", {"text": ["pc"], "n": ["three"]})),
    "stray README.txt, _ and . files": lambda f: [(f / n).write_text("{}")
                                                  for n in ("README.txt", "_x.jsonl", ".y.jsonl")],
    "text 6x ingest.max_chars": lambda f: (f / "long.jsonl").write_text(json.dumps({"text": LONG}) + "\n"),
    "CSV unterminated quote": lambda f: (f / "quote.csv").write_text('text\nfine\n"never closed\nswallowed\n'),
    "CSV 200 KB field": lambda f: (f / "huge.csv").write_text("text\n" + "x" * 200_000 + "\n"),
    "malformed JSON, invalid UTF-8, NUL": lambda f: (f / "mixed.jsonl").write_bytes(
        b'{broken\n{"text": "bad \xff bytes"}\n' + json.dumps({"text": "nul \x00 inside"}).encode() + b"\n"),
    "duplicate doc_id across files": lambda f: [(f / n).write_text(json.dumps({"doc_id": "same", "text": n}) + "\n")
                                               for n in ("d1.jsonl", "d2.jsonl")],
    "symlink loop": _loop,
    "file without a text column": lambda f: (f / "notext.csv").write_text("doc_id,body\n1,hello\n"),
    # issue 47
    "CSV 200 KB field in row 51 of 100": lambda f: (f / "long.csv").write_text(
        "text\n" + "\n".join("x" * 200_000 if i == 50 else f"row {i}" for i in range(100)) + "\n"),
    "FIFO named pipe.jsonl": lambda f: os.mkfifo(f / "pipe.jsonl"),
    "NBSP / em-space / NUL-only texts": lambda f: (f / "blank.jsonl").write_text(
        "".join(json.dumps({"text": t}) + "\n" for t in ("\u00a0\u00a0", "\u2003\u2003", "\x00\x00"))),
    "1,000,000-character doc_id": lambda f: (f / "id.jsonl").write_text(json.dumps({"doc_id": "i" * 1_000_000,
                                                                                   "text": "x"}) + "\n"),
    "text as JSON object, list, number": lambda f: (f / "types.jsonl").write_text(
        "".join(json.dumps({"text": t}) + "\n" for t in ({"a": 1}, [1], 42))),
    "repeated CSV column / JSON key": lambda f: ((f / "rep.csv").write_text("text,text\na,b\n"),
                                                 (f / "rep.jsonl").write_text('{"text": "a", "text": "b"}\n')),
}


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from privtext.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue().strip()


def _rows(root: Path, date: str) -> tuple[int, dict[str, int]]:
    from deltalake import DeltaTable

    docs = DeltaTable(str(root / "restricted/documents")).to_pandas()
    bad = DeltaTable(str(root / "restricted/quarantine")).to_pandas()
    bad = bad[bad.ingest_date.astype(str) == date]
    return int((docs.ingest_date.astype(str) == date).sum()), bad.groupby("reason").size().to_dict()


def _ingest_case(conf: Path, root: Path, tmp: Path, day: int, name: str, write, good=True, extra=()) -> dict:
    date = (dt.date(2026, 6, 1) + dt.timedelta(days=day)).isoformat()
    folder = tmp / f"drop-{day}"
    folder.mkdir()
    if good:
        _good(folder)
    write(folder)
    code, out, err = _cli(["--conf", str(conf), "run", "ingest", "--input", str(folder), "--date", date, *extra])
    landed, reasons = _rows(root, date) if (root / "restricted/documents").exists() else (0, {})
    skipped = json.loads(out).get("skipped_files") if code == 0 and out else None
    message = err.splitlines()[-1] if err else (f"skipped: {', '.join(skipped)}" if skipped else "")
    return {"case": name, "landed": landed, "quarantined": "; ".join(f"{r}: {n}" for r, n in sorted(reasons.items())),
            "exit": code, "message": message, "date": date}


def _stale_audit(conf: Path, root: Path) -> str:
    """A staged partition sanitized again (run san-1) after its audit (which read san-0): publish refuses."""
    from privtext.ledger import Ledger
    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.tables import LEAKAGE_AUDITS, STAGED_SANITIZED_DOCUMENTS
    from privtext.privacy.budget import mldp_charge
    from privtext.settings import load_settings

    settings = load_settings(conf)
    lake = Lakehouse(None, settings.lakehouse)
    day = dt.date(2026, 7, 1)
    lake.append_rows(STAGED_SANITIZED_DOCUMENTS, [{"doc_id": "d1", "sanitized_text": "Hi [PERSON]", "n_spans": 1,
                                                   "n_replaced": 0, "method": "clusant", "params": "{}",
                                                   "run_id": "san-1", "date": day}])
    Ledger(lake, settings).charge(mldp_charge("default", "sanitize", "san-1", "clusant", epsilon=2.0,
                                              pure_epsilon=5.0, metric="D_k", k=4.0), {"v1": 1})
    audit = {"target": "sanitized_documents", "date": day, "adversary": "lstm", "eps": 2.0, "triplets": 1000,
             "delta_target": 0.05, "log10_p_fail": -9.0, "utility_loss": 0.1, "valid": True, "staged_runs": "san-0",
             "run_id": "aud-0"}
    lake.append_rows(LEAKAGE_AUDITS, [{**audit, "release": "candidate", "violation_ratio": 0.0, "passed": True}])
    return _cli(["--conf", str(conf), "run", "publish", "--target", "sanitized_documents", "--date", day.isoformat()])


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="privtext-bad-inputs-") as tmp_name:
        tmp = Path(tmp_name)
        root = tmp / "lake"
        conf = tmp / "conf.yaml"
        conf.write_text(yaml.safe_dump({
            "lakehouse": {"root": str(root)}, "tracking": {"enabled": False}, "ingest": {"max_chars": 1000},
            "spark": {"master": "local[2]", "conf": {"spark.ui.enabled": "false"}},
            "publish": {"export_path": str(tmp / "exports"), "audit_adversaries": ["lstm"], "min_canary_recall": 0.0}}))
        rows = [_ingest_case(conf, root, tmp, i, name, write) for i, (name, write) in enumerate(CASES.items())]
        n = len(rows)
        rows.append(_ingest_case(conf, root, tmp, n, "only a bad file (nothing usable)", CASES["blank-lines JSONL"],
                                 good=False))
        empty = tmp / "empty"
        empty.mkdir()
        (empty / "blank.jsonl").write_text("\n \n")
        for name, extra in (("empty load over a date with data", ()), ("the same, --allow-empty", ("--allow-empty",))):
            date = rows[0]["date"]  # holds the BOM case's documents
            code, _, err = _cli(["--conf", str(conf), "run", "ingest", "--input", str(empty), "--date", date, *extra])
            landed, reasons = _rows(root, date)
            rows.append({"case": name, "landed": landed, "exit": code, "message": err.splitlines()[-1] if err else "",
                         "quarantined": "; ".join(f"{r}: {k}" for r, k in sorted(reasons.items()))})
        print("| case | landed | quarantined (reason: rows) | exit | message |\n|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['case']} | {r['landed']} | {r['quarantined']} | {r['exit']} | {r['message']} |")
        print()
        refusals = {"stale audit": _stale_audit(conf, root)}
        os.environ["PRIVTEXT_RUN__DATASET"] = "tickets"
        refusals["unknown dataset"] = _cli(["--conf", str(conf), "run", "ingest", "--input", str(tmp / "drop-0"),
                                            "--date", "2026-08-01"])
        del os.environ["PRIVTEXT_RUN__DATASET"]
        for statement in ("SELECT text FROM restricted.documents", "CREATE TABLE t AS SELECT 1",
                          f"INSERT OVERWRITE DIRECTORY '{tmp}/x' SELECT * FROM published.sanitized_documents",
                          "SELECT * FROM parquet.`/etc`", "DROP TABLE published.sanitized_documents",
                          "SELECT count(*) FROM published.sanitized_documents"):
            refusals[f"sql {statement}"] = _cli(["--conf", str(conf), "sql", statement])
        for name, (code, out, err) in refusals.items():
            print(f"{name} -> exit {code}: {err.splitlines()[0] if err else out.strip()}")
        print()
        print(f"bad_input_cases: {len(rows)}")
        print(f"bad_input_cases_good_rows_landed: {sum(r['landed'] >= 3 for r in rows[:n])} of {n}")


if __name__ == "__main__":
    main()
