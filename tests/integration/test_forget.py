"""``privtext forget``: a user's rows leave every table and export, the files that held them leave the store,
the erasure is recorded keyed, a re-ingest quarantines the user as ``erased``; the other users' rows stay; a
night of another date running meanwhile (its own process: ingest, detect_pii, sanitize, publish, the user's
records among its input) loses nothing and brings nothing of the user back.

One small lakehouse (two ingested dates, hand-made derived rows and export, the concurrent night's date), one
Spark session and the night's."""
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from jvm_archive import java_options, spark_archive

from privtext.cli import main
from privtext.commands.forget import forget, parse_subjects, retention
from privtext.errors import UsageError
from privtext.ledger import Ledger
from privtext.pii.hashing import DETERMINISTIC_TEST_KEY, doc_pseudonym, subject_key
from privtext.platform import leases
from privtext.platform.tables import (
    DOC_EMBEDDINGS,
    DOCUMENTS,
    ERASURES,
    PII_SPANS,
    PUBLISHED_SANITIZED_DOCUMENTS,
    QUARANTINE,
    STAGED_SANITIZED_DOCUMENTS,
)
from privtext.stages.runner import run_stage
from tests_support import write_rows

DAYS = (dt.date(2026, 1, 14), dt.date(2026, 1, 15))
NIGHT = dt.date(2026, 1, 16)  # the night run in its own process while the forget runs
ALICE, BOB, CAROL, DAVE = "alice.qz@example.org", "bob.qz@example.org", "carol.qz@example.org", "dave.qz@example.org"
# unique tokens planted in each user's documents (the byte scan looks for them)
TOKENS = {ALICE: ("QZALPHA7731", "QZALPHA7732", "QZALPHA7733"), BOB: ("QZBRAVO5511",), CAROL: ("QZCHARLIE9901",),
          DAVE: ("QZDELTA4401", "QZDELTA4402")}  # Dave's first document of each date is forgotten by doc_id
DAVE_DOCS = tuple(f"{day}-dave.-0" for day in DAYS)
KEY = DETERMINISTIC_TEST_KEY


def _token(user, day, i) -> str:
    """Dave's first token is in the documents forgotten by doc_id only (not in the night's)."""
    return TOKENS[user][1 if (user, day) == (DAVE, NIGHT) else i % len(TOKENS[user])]


def _input(folder, day) -> str:
    """A day's JSONL: two documents per user, one malformed line of Alice's (quarantined with its raw text)."""
    a1, a2, a3 = TOKENS[ALICE]
    lines = [json.dumps({"doc_id": f"{day}-{user[:5]}-{i}", "user_id": user,
                         "text": f"Hi, this is {user.split('.')[0]}; order {_token(user, day, i)} "
                                 f"ships {day}. Call me back."})
             for user in (ALICE, BOB, CAROL, DAVE) for i in range(2)]
    lines.append('{"doc_id": "%s-alice-x", "user_id": "%s", "text": "ref %s broken' % (day, ALICE, a3))
    path = folder / f"in-{day}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _derived_rows(ctx, day):
    """Spans, embeddings, staged and published sanitized rows of the date's documents, and its export."""
    docs = [r for r in _rows(ctx, DOCUMENTS) if r["ingest_date"] == day]
    write_rows(ctx, PII_SPANS, [{"doc_id": d["doc_id"], "entity_type": "PERSON", "start": 12, "end": 17, "score": 0.9,
                                 "tier": "PII", "secret_id": "s", "run_id": "r", "date": day} for d in docs],
               {"date": [day]})
    write_rows(ctx, DOC_EMBEDDINGS, [{"doc_id": d["doc_id"], "embedding": [0.6, 0.8], "model": "m", "dim": 2,
                                      "run_id": "r", "date": day} for d in docs], {"date": [day]})
    sanitized = [{"doc_id": d["doc_id"], "sanitized_text": d["text"].replace("Hi", "Hello"), "n_spans": 1,
                  "n_replaced": 1, "method": "clusant", "params": "{}", "run_id": "r", "date": day} for d in docs]
    write_rows(ctx, STAGED_SANITIZED_DOCUMENTS, [{**s, "verbatim": 0, "verbatim_expected": 0.0} for s in sanitized],
               {"date": [day]})
    published = [{**s, "doc_id": doc_pseudonym(KEY, s["doc_id"])} for s in sanitized]
    write_rows(ctx, PUBLISHED_SANITIZED_DOCUMENTS, published, {"date": [day]})
    folder = os.path.join(ctx.settings.publish.export_path, "sanitized_documents", day.isoformat())
    os.makedirs(os.path.join(folder, "v0"))
    pq.write_table(pa.Table.from_pylist(published, schema=PUBLISHED_SANITIZED_DOCUMENTS.schema),
                   os.path.join(folder, "v0", "part-0.parquet"))
    with open(os.path.join(folder, "v0", "part-0.jsonl"), "w") as out:
        out.writelines(json.dumps({**r, "date": day.isoformat()}) + "\n" for r in published)
    manifest = {"target": "sanitized_documents", "date": day.isoformat(), "publish_run_id": "r", "rows": len(published),
                "files": [{"path": "v0/part-0.parquet", "format": "parquet", "rows": len(published)},
                          {"path": "v0/part-0.jsonl", "format": "jsonl", "rows": len(published)}]}
    with open(os.path.join(folder, "manifest.json"), "w") as out:
        json.dump(manifest, out)


def _hits(roots, tokens) -> dict[str, int]:
    """Files (under any of ``roots``) holding each token: a byte scan of every file, and of every Parquet file's
    decoded values too (its pages are compressed: a token in them need not appear as bytes)."""
    found = {t: 0 for t in tokens}
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                data = open(path, "rb").read()
                if data[:4] == b"PAR1":
                    data += json.dumps(pq.read_table(path).to_pylist(), default=str, ensure_ascii=False).encode()
                for t in tokens:
                    found[t] += t.encode() in data
    return found


def _rows(ctx, spec) -> list[dict]:
    """The table's current rows, read with delta-rs (no Spark job)."""
    return ctx.lakehouse.delta_table(spec).to_pyarrow_table().to_pylist()


def _counts(ctx, user, days=(*DAYS, NIGHT)) -> dict[str, int]:
    """The user's rows per table in ``days`` (documents by user_id, the others through its doc ids / pseudonyms)."""
    prefix = user[:5]

    def rows(spec):
        return [r for r in _rows(ctx, spec) if r[spec.date_column] in days]

    counts = {"documents": sum(r["user_id"] == user for r in rows(DOCUMENTS))}
    for spec in (PII_SPANS, DOC_EMBEDDINGS, STAGED_SANITIZED_DOCUMENTS):
        counts[spec.qualified_name] = sum(f"-{prefix}-" in r["doc_id"] for r in rows(spec))
    pseudonyms = {doc_pseudonym(KEY, f"{d}-{prefix}-{i}") for d in days for i in range(2)}
    counts["published"] = sum(r["doc_id"] in pseudonyms for r in rows(PUBLISHED_SANITIZED_DOCUMENTS))
    counts["quarantine"] = sum(user in r["raw_record"] for r in rows(QUARANTINE))
    return counts


def _published_checksum(ctx, user) -> str:
    pseudonyms = {doc_pseudonym(KEY, f"{d}-{user[:5]}-{i}") for d in DAYS for i in range(2)}
    texts = sorted(r["sanitized_text"] for r in _rows(ctx, PUBLISHED_SANITIZED_DOCUMENTS) if r["doc_id"] in pseudonyms)
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()


NIGHT_DRIVER = """
import sys
from privtext.settings import load_settings
from privtext.stages.runner import run_stage
settings = load_settings(sys.argv[1])
for stage, options in (("ingest", {"input_path": sys.argv[3]}), ("detect_pii", {}), ("sanitize", {}),
                       ("publish", {"target": "sanitized_documents", "override_gate": True,
                                    "reason": "test: a night beside a forget"})):
    run_stage(stage, settings, date=sys.argv[2], **options)
"""


def _night(tmp_path, settings) -> subprocess.Popen:
    """The night of ``NIGHT`` in its own process (its own Spark), with test_sanitize's small CluSanT setup."""
    conf = tmp_path / "night.yaml"
    conf.write_text(yaml.safe_dump({
        "lakehouse": {"root": settings.lakehouse.root}, "tracking": {"enabled": False}, "run": {"deterministic": False},
        "publish": {"export_path": settings.publish.export_path},
        "spark": {"master": "local[1]", "conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
                                                 # its cold driver JVM maps Spark's classes from the tests'
                                                 # class-data archive (tests/jvm_archive.py)
                                                 "spark.driver.extraJavaOptions": java_options(spark_archive())}},
        "pii": {"canaries": {"count": 4}},  # its detect_pii still measures (and charges) canaries: 4, not 40
        "clusant": {"entity_types": ["PERSON", "LOCATION"], "n_clusters": 4, "vocabulary": {"size": 40},
                    "cache_dir": str(tmp_path / "vocab-cache"),
                    "metrics": {"perplexity": False, "similarity": False, "max_documents": 0,
                                "utility_documents": 0}}}))  # no utility metrics: nothing here reads them
    # a deterministic release is never published: the night draws fresh noise, under the test's key (the same
    # pseudonyms as the forget's)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TMPDIR": str(tmp_path),
           "PRIVTEXT_HMAC_KEY": KEY.decode()}
    return subprocess.Popen([sys.executable, "-c", NIGHT_DRIVER, str(conf), NIGHT.isoformat(),
                             _input(tmp_path, NIGHT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_forget_erases_a_user_everywhere_and_a_reingest_quarantines_them(ctx, settings, tmp_path, capsys):
    inputs = {day: _input(tmp_path, day) for day in DAYS}
    for day in DAYS:
        run_stage("ingest", settings, date=day.isoformat(), input_path=inputs[day])
        _derived_rows(ctx, day)
    roots = [settings.lakehouse.root, settings.publish.export_path]
    everything = [t for ts in TOKENS.values() for t in ts] + [ALICE, CAROL]
    assert all(_hits(roots, everything).values())  # the scan finds every token before any forget
    bob_before, bob_text = _counts(ctx, BOB, DAYS), _published_checksum(ctx, BOB)
    assert _counts(ctx, ALICE) == {"documents": 4, "restricted.pii_spans": 4, "restricted.doc_embeddings": 4,
                                   "restricted.sanitized_documents": 4, "published": 4, "quarantine": 2}
    old_documents = ctx.lakehouse.version(DOCUMENTS)

    # a malformed list and an unknown id: clear messages, nothing written
    conf = tmp_path / "forget.yaml"
    conf.write_text(yaml.safe_dump({"lakehouse": {"root": settings.lakehouse.root}, "tracking": {"enabled": False},
                                    "run": {"deterministic": True},
                                    "publish": {"export_path": settings.publish.export_path}}))
    (tmp_path / "ids.txt").write_text(f"user:{ALICE}\nsomeone\n")
    with pytest.raises(UsageError, match="line 2: expected 'user:ID' or 'doc:ID'"):
        parse_subjects([], [], str(tmp_path / "ids.txt"))
    assert main(["--conf", str(conf), "forget", "--user-id", ALICE, "--user-id", " "]) == 2
    assert main(["--conf", str(conf), "forget", "--user-id", "nobody@example.org"]) == 0
    assert "nothing to forget, nothing written" in capsys.readouterr().out
    assert ctx.lakehouse.version(DOCUMENTS) == old_documents and not ctx.lakehouse.read_rows(ERASURES).num_rows

    # two users and two documents, first without the purge, while the night of another date runs (Alice's and
    # Carol's records among its input, ingested before the forget starts): the forget waits for the night's runs
    # of the dates it erases, then erases the night's rows of them too. Without the purge the old files still
    # hold the tokens (the negative control); the rerun has nothing left to delete and purges the files
    night = _night(tmp_path, settings)
    deadline = time.time() + 600
    while not any(name.startswith("detect_pii-") for name in leases.live(settings.lakehouse)):  # ingested
        assert night.poll() is None and time.time() < deadline, night.stdout.read().decode()[-3000:]
        time.sleep(0.2)
    subjects = parse_subjects([ALICE, CAROL], list(DAVE_DOCS), None)
    result = forget(settings, subjects, purge_files=False)
    assert night.wait() == 0, night.stdout.read().decode()[-3000:]  # the night lost nothing: it finished
    rows = result["rows"]
    assert rows.pop("restricted.pii_spans") >= 10 and rows == {  # the night's spans are Presidio's
        "published.sanitized_documents": 14, "restricted.sanitized_documents": 14, "restricted.doc_embeddings": 10,
        "restricted.quarantine": 3, "restricted.documents": 14}
    assert result["exports_reissued"] == 3 and result["subjects"] == 4
    charges = [(e["entry_id"], e["stage"]) for e in Ledger(ctx.lakehouse, settings).entries()]
    assert {"detect_pii", "sanitize", "publish"} <= {stage for _, stage in charges}  # the night's
    erased = TOKENS[ALICE] + TOKENS[CAROL] + TOKENS[DAVE][:1] + (ALICE, CAROL)
    assert all(_hits(roots, erased).values())
    again = forget(settings, subjects)
    assert sum(again["rows"].values()) == 0 and sum(again["files_removed"].values()) > 0
    assert _hits(roots, erased) == {t: 0 for t in erased}
    assert [(e["entry_id"], e["stage"]) for e in Ledger(ctx.lakehouse, settings).entries()] == charges  # all kept
    assert set(_counts(ctx, ALICE).values()) == {0}
    assert _counts(ctx, BOB, DAYS) == bob_before and _published_checksum(ctx, BOB) == bob_text  # the control user stays
    assert _counts(ctx, DAVE)["documents"] == 4 and all(_hits(roots, TOKENS[BOB] + TOKENS[DAVE][1:]).values())
    night_rows = {spec.qualified_name: sorted(r["doc_id"] for r in _rows(ctx, spec) if r["date"] == NIGHT)
                  for spec in (STAGED_SANITIZED_DOCUMENTS, PUBLISHED_SANITIZED_DOCUMENTS)}
    kept = sorted(f"{NIGHT}-{u}-{i}" for u in ("bob.q", "dave.") for i in range(2))  # the night's other rows
    assert sorted(r["doc_id"] for r in _rows(ctx, DOCUMENTS) if r["ingest_date"] == NIGHT) == kept
    assert night_rows == {STAGED_SANITIZED_DOCUMENTS.qualified_name: kept,
                          PUBLISHED_SANITIZED_DOCUMENTS.qualified_name: sorted(doc_pseudonym(KEY, d) for d in kept)}
    with pytest.raises(Exception, match="(?i)not found|no such file|does not exist"):
        ctx.lakehouse.read(DOCUMENTS, version=old_documents).collect()  # time travel cannot bring them back

    for day, removed in zip((*DAYS, NIGHT), (5, 5, 4)):  # each affected date's export re-issued without them
        folder = os.path.join(settings.publish.export_path, "sanitized_documents", day.isoformat())
        manifest = json.load(open(os.path.join(folder, "manifest.json")))
        assert [r["rows_removed"] for r in manifest["reissued"]] == [removed]
        assert sorted(os.listdir(folder)) == sorted(["manifest.json", manifest["files"][0]["path"].split("/")[0]])
        exported = pq.read_table(os.path.join(folder,
                                              next(f["path"] for f in manifest["files"] if f["format"] == "parquet")))
        gone = {doc_pseudonym(KEY, f"{day}-{u}-{i}") for u in ("alice", "carol") for i in range(2)}
        gone |= {doc_pseudonym(KEY, f"{day}-dave.-0")} if day in DAYS else set()
        assert manifest["rows"] == exported.num_rows == 8 - removed
        assert not gone & set(exported.column("doc_id").to_pylist())

    records = sorted(ctx.lakehouse.read_rows(ERASURES).to_pylist(), key=lambda r: r["created_at"])
    alice = [r for r in records if r["subject_key"] == subject_key(KEY, "user", ALICE)]
    assert [r["status"] for r in alice] == ["tombstoned", "erased"]  # the rerun deleted nothing: no new record
    rows = dict(alice[1]["rows"])  # two dates and the night's (no embed ran in it)
    assert rows.pop("restricted.pii_spans") >= 4 and rows == {
        "published.sanitized_documents": 6, "restricted.sanitized_documents": 6, "restricted.doc_embeddings": 4,
        "restricted.quarantine": 3, "restricted.documents": 6}
    dave = [r for r in records if r["subject_key"] == subject_key(KEY, "doc", DAVE_DOCS[0]) and r["status"] == "erased"]
    assert [dict(r["rows"])["published.sanitized_documents"] for r in dave] == [1]
    assert sorted(r["kind"] for r in records if r["status"] == "tombstoned") == ["doc"] * 14 + ["user"] * 2

    # the same input again: her records are quarantined as `erased` without their raw text, Bob's land
    run_stage("ingest", settings, date=DAYS[0].isoformat(), input_path=inputs[DAYS[0]])
    quarantined = [r for r in _rows(ctx, QUARANTINE) if r["ingest_date"] == DAYS[0]]
    assert [r["reason"] for r in quarantined] == ["erased"] * 6  # Alice's two and her malformed line, Carol's, Dave's
    assert all(r["raw_record"] == "" for r in quarantined)
    assert _hits(roots, TOKENS[ALICE] + (ALICE,)) == {t: 0 for t in TOKENS[ALICE] + (ALICE,)}
    assert [r["user_id"] for r in _rows(ctx, DOCUMENTS) if r["ingest_date"] == DAYS[0]].count(BOB) == 2
    assert _counts(ctx, ALICE)["documents"] == 0

    # retention of 0 days on DAYS[1]: the older date leaves the restricted zone; the published zone stays
    kept = settings.model_copy(update={"retention": settings.retention.model_copy(update={"restricted_days": 0})})
    swept = retention(kept, today=DAYS[1])
    assert swept["rows"]["restricted.documents"] == 3
    assert sorted(r["ingest_date"] for r in _rows(ctx, DOCUMENTS)) == [DAYS[1]] * 3 + [NIGHT] * 4
    assert [r["date"] for r in _rows(ctx, PUBLISHED_SANITIZED_DOCUMENTS)].count(DAYS[0]) == 3
    assert not _hits([settings.lakehouse.zone_root("restricted")], [f"ships {DAYS[0]}"])[f"ships {DAYS[0]}"]
