"""Stage publish: the audit gate (refuse, accept, override recorded; invalid, stale and deterministic
releases refused), atomic exports with checksums, reruns."""
import datetime as dt
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from conftest import make_settings
from privtext.ledger import Ledger
from privtext.lineage import staged_state
from privtext.pii.canaries import GENERATORS
from privtext.platform.context import RunContext
from privtext.platform.tables import LEAKAGE_AUDITS, PUBLISHED_SANITIZED_DOCUMENTS, STAGED_SANITIZED_DOCUMENTS
from privtext.privacy.budget import mldp_charge
from privtext.stages import publish
from privtext.stages.publish import PublishRefused

DATE = dt.date(2026, 1, 15)
TARGET = "sanitized_documents"


def make_ctx(tmp_path, run_id, deterministic=False, **publish_conf):
    conf = {"export_path": str(tmp_path / "exports"), "audit_adversaries": ["lstm", "rnn"], "min_canary_recall": 0.0,
            **publish_conf}
    key_file = tmp_path / "hmac.key"  # a real key: publish pseudonymises doc_ids
    key_file.exists() or key_file.write_text("publish-test-key-0123456789abcdef")
    settings = make_settings(tmp_path / "lake", publish=conf, run={"deterministic": deterministic,
                                                                     "hmac_key_file": str(key_file)})
    return RunContext.create(settings, date=DATE.isoformat(), run_id=run_id)


def stage(ctx, texts, method="clusant", run_id="san-1", doc_ids=None, params='{"k": 16.0}', verbatim=0, expected=0.0):
    rows = [(doc_ids[i] if doc_ids else f"d{i}", t, 1, 1, method, params, run_id, DATE, int(i < verbatim),
             expected / len(texts)) for i, t in enumerate(texts)]
    df = ctx.spark.createDataFrame(rows, from_arrow_schema(STAGED_SANITIZED_DOCUMENTS.schema))
    ctx.lakehouse.replace_partitions(STAGED_SANITIZED_DOCUMENTS, df, {"date": [DATE]})
    Ledger(ctx.lakehouse, ctx.settings).charge(mldp_charge("default", "sanitize", run_id, method, epsilon=8.0,
                                                           pure_epsilon=40.0, metric="D_k", k=16.0), {"v1": 1})


def audit(ctx, results, valid=True, staged_runs=None):
    """Audit rows of the date; by default they read the staged partition as it is now (its state)."""
    if staged_runs is None:
        runs = {r["run_id"]
                for r in ctx.lakehouse.read(STAGED_SANITIZED_DOCUMENTS, date=DATE).select("run_id").collect()}
        staged_runs = staged_state(ctx.lakehouse, STAGED_SANITIZED_DOCUMENTS, DATE, runs)
    controls = [("lstm", 0.9, False, "control_identity"), ("lstm", 0.01, valid, "control_uniform")]
    rows = [(TARGET, DATE, adv, 8.0, 1000, ratio, 0.05, -4.0, 0.1, passed, release, valid, staged_runs, "audit-run")
            for adv, ratio, passed, release in [(*r, "candidate") for r in results] + controls]
    df = ctx.spark.createDataFrame(rows, from_arrow_schema(LEAKAGE_AUDITS.schema))
    ctx.lakehouse.replace_partitions(LEAKAGE_AUDITS, df, {"date": [DATE]})


def published(ctx):
    return sorted(r["sanitized_text"] for r in ctx.lakehouse.read(PUBLISHED_SANITIZED_DOCUMENTS)
                  .where(F.col("date") == F.lit(DATE)).collect())


def check_export(date_dir: Path, texts):
    """The manifest's files exist, match their checksums and row counts, and hold exactly ``texts``."""
    manifest = json.loads((date_dir / "manifest.json").read_text())
    assert manifest["rows"] == len(texts)
    for f in manifest["files"]:
        data = (date_dir / f["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["bytes"]
    parquet = [r for f in manifest["files"] if f["format"] == "parquet"
               for r in pq.read_table(date_dir / f["path"]).to_pylist()]
    jsonl = [json.loads(line) for f in manifest["files"] if f["format"] == "jsonl"
             for line in (date_dir / f["path"]).read_text().splitlines()]
    assert sorted(r["sanitized_text"] for r in parquet) == sorted(r["sanitized_text"] for r in jsonl) == sorted(texts)
    assert {r["date"] for r in jsonl} == {DATE.isoformat()}
    versions = [p.name for p in date_dir.iterdir() if p.is_dir()]
    assert versions == [manifest["files"][0]["path"].split("/")[0]]  # no leftover attempt or old version
    return manifest


def test_gate_refuses_failing_or_missing_audits_then_publishes_when_passed(tmp_path):
    ctx = make_ctx(tmp_path, "pub-1")
    stage(ctx, ["Hi [PERSON], café ✓", "Order 7 shipped to Lyon"])
    with pytest.raises(PublishRefused, match=rf"target {TARGET} date {DATE}.*no leakage audit by lstm"):
        publish.run(ctx, target=TARGET)
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.123, False)])
    with pytest.raises(PublishRefused,
                       match=rf"target {TARGET} date {DATE}.*rnn found leakage: violation ratio 0.123") as refused:
        publish.run(ctx, target=TARGET)
    assert [r.split(":")[0] for r in refused.value.reasons] == ["rnn found leakage"]  # one reason per failing check
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.02, True)], valid=False)  # the uniform control failed
    with pytest.raises(PublishRefused, match=r"lstm audit is invalid: .*control_uniform"):
        publish.run(ctx, target=TARGET)
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.02, True)], staged_runs="san-0")  # audited an earlier sanitize
    with pytest.raises(PublishRefused,
                       match=r"lstm audit is stale: it read staged run\(s\) san-0, the partition now holds san-1"):
        publish.run(ctx, target=TARGET)
    assert published(ctx) == [] and not (tmp_path / "exports").exists()  # refusals write nothing

    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.02, True)])
    result = publish.run(ctx, target=TARGET)
    assert result.gate == "passed" and result.rows == 2
    assert published(ctx) == sorted(["Hi [PERSON], café ✓", "Order 7 shipped to Lyon"])
    manifest = check_export(tmp_path / "exports" / TARGET / DATE.isoformat(), published(ctx))
    sanitize_ids = [e["entry_id"] for e in Ledger(ctx.lakehouse, ctx.settings).entries() if e["stage"] == "sanitize"]
    assert manifest["privacy"]["ledger_entry_ids"] == sanitize_ids and manifest["privacy"]["methods"] == ["clusant"]
    assert manifest["gate"] == {"outcome": "passed"}  # audit figures stay in protected
    assert manifest["published_table"]["version"] == result.published_version
    formats = [f["format"] for f in manifest["files"]]
    assert formats.count("parquet") == formats.count("jsonl") == result.files // 2 >= 1


def test_failed_publish_keeps_the_previous_export_and_rerun_replaces(tmp_path, monkeypatch):
    ctx = make_ctx(tmp_path, "pub-1", require_audit=False)
    stage(ctx, ["first A", "first B"])
    assert publish.run(ctx, target=TARGET).gate == "not_required"
    date_dir = tmp_path / "exports" / TARGET / DATE.isoformat()
    before = check_export(date_dir, ["first A", "first B"])

    stage(ctx, ["second A", "second B", "second C"], run_id="san-2")

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(publish, "commit_manifest", crash)
    with pytest.raises(OSError, match="disk full"):
        publish.run(make_ctx(tmp_path, "pub-2", require_audit=False), target=TARGET)
    assert check_export(date_dir, ["first A", "first B"]) == before  # previous export intact, attempt removed

    monkeypatch.undo()
    publish.run(make_ctx(tmp_path, "pub-3", require_audit=False), target=TARGET)
    after = check_export(date_dir, ["second A", "second B", "second C"])
    assert after["publish_run_id"] == "pub-3" and published(ctx) == ["second A", "second B", "second C"]
    records = [e for e in Ledger(ctx.lakehouse, ctx.settings).entries() if e["stage"] == "publish"]
    assert all(e["guarantee"] == "none" and e["params"]["why"].startswith("publish.require_audit is false")
               for e in records)


def test_override_is_recorded_and_custext_is_never_published(tmp_path):
    ctx = make_ctx(tmp_path, "pub-1")
    stage(ctx, ["x [PERSON]"])
    audit(ctx, [("lstm", 0.4, False), ("rnn", 0.01, True)])
    with pytest.raises(PublishRefused, match="needs --reason"):
        publish.run(ctx, target=TARGET, override_gate=True)
    result = publish.run(ctx, target=TARGET, override_gate=True, reason="legal sign-off #42")
    assert result.gate == "override" and published(ctx) == ["x [PERSON]"]
    (record,) = [e for e in Ledger(ctx.lakehouse, ctx.settings).entries() if e["stage"] == "publish"]
    assert record["guarantee"] == "none" and record["run_id"] == "pub-1" and record["spend"] == {}
    assert record["params"]["why"] == "legal sign-off #42" and record["params"]["who"]
    assert "lstm found leakage: violation ratio 0.4" in record["params"]["gate_problems"][0]
    manifest = json.loads((tmp_path / "exports" / TARGET / DATE.isoformat() / "manifest.json").read_text())
    assert record["entry_id"] in manifest["privacy"]["ledger_entry_ids"] and manifest["gate"]["outcome"] == "override"

    stage(ctx, ["y [PERSON]"], method="custext", run_id="san-2")
    with pytest.raises(PublishRefused, match="no privacy guarantee"):
        publish.run(ctx, target=TARGET, override_gate=True, reason="try anyway")
    assert published(ctx) == ["x [PERSON]"]


def test_deterministic_releases_are_never_published(tmp_path):
    fixed = make_ctx(tmp_path, "pub-1", deterministic=True, require_audit=False)
    stage(fixed, ["a [PERSON]"])  # charged by a deterministic run: its charge says so
    with pytest.raises(PublishRefused, match=r"run.deterministic releases .* never published \(san-1\)"):
        publish.run(make_ctx(tmp_path, "pub-2", require_audit=False), target=TARGET, override_gate=True, reason="x")
    stage(make_ctx(tmp_path, "pub-3"), ["b [PERSON]"], run_id="san-2")
    with pytest.raises(PublishRefused, match="this publish run"):
        publish.run(fixed, target=TARGET)
    assert published(fixed) == []


def detect(ctx, values: dict[str, str], recall: float = 0.99, run_id: str = "det-1", measured_types=None):
    """A detect_pii night as the stage leaves it: the date's spans partition replaced by ``values``
    (doc_id -> entity type), then its canary measurement recording that partition (``detect_pii._lineage``)."""
    from privtext.platform.tables import PII_SPANS
    from privtext.privacy.budget import measurement
    from privtext.stages.detect_pii import _lineage

    rows = [(doc_id, etype, 0, 4, 0.9, "PII", f"s-{doc_id}", run_id, DATE) for doc_id, etype in values.items()]
    ctx.lakehouse.replace_partitions(PII_SPANS, ctx.spark.createDataFrame(rows, from_arrow_schema(PII_SPANS.schema)),
                                     {"date": [DATE]})
    types = measured_types or [t for t in ctx.settings.pii.detected_entities() if t in GENERATORS]
    scores = {"overall": {"values": 3 * len(types), "recall": recall, "coverage": recall},
              "by_type": {t: {"values": 3, "recall": recall, "coverage": recall} for t in types}}
    Ledger(ctx.lakehouse, ctx.settings).charge(measurement(
        "default", "detect_pii", run_id, "canaries", guarantee="detection_recall", values=scores,
        params={"date": DATE.isoformat(), "canaries": len(types), **_lineage(ctx)}))


def sanitize(ctx, texts, run_id="san-1"):
    """A sanitize run as the stage stages it: its rows' params carry the detection lineage it read."""
    from privtext.lineage import detection_lineage

    lineage = detection_lineage(ctx.lakehouse, ctx.settings, Ledger(ctx.lakehouse, ctx.settings).entries("default"),
                                DATE)
    stage(ctx, texts, run_id=run_id, params=json.dumps({"k": 16.0, "lineage": lineage}))


def with_entities(ctx, entities):
    pii = ctx.settings.pii.model_copy(update={"entities": entities})
    ctx.settings = ctx.settings.model_copy(update={"pii": pii})
    return ctx


def test_gate_needs_the_staged_releases_own_detection_recall(tmp_path):
    ctx = make_ctx(tmp_path, "pub-1", min_canary_recall=0.9)
    stage(ctx, ["x [PERSON]"])  # staged without a detection lineage
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.01, True)])
    with pytest.raises(PublishRefused, match="records no single detect_pii lineage"):
        publish.run(ctx, target=TARGET)
    detect(ctx, {"d0": "PERSON"}, recall=0.8)
    sanitize(ctx, ["x [PERSON]"])
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.01, True)])
    with pytest.raises(PublishRefused, match=r"detection recall on canaries 0.800 < publish.min_canary_recall 0.9"):
        publish.run(ctx, target=TARGET)
    Ledger(ctx.lakehouse, ctx.settings).charge(__import__("privtext.privacy.budget", fromlist=["x"]).measurement(
        "default", "detect_pii", "det-9", "canaries", guarantee="detection_recall",
        values={"overall": {"values": 3, "recall": 1.0, "coverage": 1.0}, "by_type": {}},
        # a later, better measurement of the date: not this release's
        params={"date": DATE.isoformat(), "canaries": 1}))
    with pytest.raises(PublishRefused, match=r"0.800 < publish.min_canary_recall"):
        publish.run(ctx, target=TARGET)
    detect(ctx, {"d0": "PERSON"}, recall=0.95, run_id="det-2")  # detect again, then sanitize and audit again
    sanitize(ctx, ["x [PERSON]"], run_id="san-2")
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.01, True)])
    publish.run(ctx, target=TARGET)
    manifest = json.loads((tmp_path / "exports" / TARGET / DATE.isoformat() / "manifest.json").read_text())
    assert manifest["detection"]["recall"] == 0.95 and manifest["detection"]["by_type"]["PERSON"]["recall"] == 0.95


def test_gate_refuses_values_published_as_they_came_in_whatever_the_audit_says(tmp_path):
    """Negative control: a passed audit does not let a value the sanitizer left unchanged through; the share
    allowed is publish.max_verbatim_share (default 0)."""
    ctx = make_ctx(tmp_path, "pub-1")
    texts = ["call ０９０－１２３４－５６７８", "Order 7 shipped to Lyon", "x"]
    stage(ctx, texts, verbatim=1)  # the mechanism cannot draw it (expected 0): a sanitizer bug
    audit(ctx, [("lstm", 0.0, True), ("rnn", 0.0, True)])
    with pytest.raises(PublishRefused, match=r"1 of 3 replaced values are published as they came in"):
        publish.run(ctx, target=TARGET)
    assert published(ctx) == []
    stage(ctx, texts, verbatim=3, expected=0.001)  # three where the mechanism explains 0.001: refused
    audit(ctx, [("lstm", 0.0, True), ("rnn", 0.0, True)])
    with pytest.raises(PublishRefused, match=r"3 of 3 replaced values"):
        publish.run(ctx, target=TARGET)
    loose = make_ctx(tmp_path, "pub-2", max_verbatim_share=1.0)
    assert publish.run(loose, target=TARGET).rows == 3
    stage(ctx, texts, verbatim=1, expected=0.3)  # one draw of a public phrase that is the value: eps-LDP allows it
    audit(ctx, [("lstm", 0.0, True), ("rnn", 0.0, True)])
    assert publish.run(make_ctx(tmp_path, "pub-3"), target=TARGET).rows == 3


def test_bypass_a_resanitized_partition_under_the_audited_run_id_is_refused(tmp_path):
    """Issue 32 (a): audit a normal release, re-sanitize under the audited run id from spans of a detect
    run restricted to NRP, detect normally again, publish: refused (stale audit, replaced spans)."""
    from privtext.stages.runner import stage_parser

    ctx = make_ctx(tmp_path, "pub-1", min_canary_recall=0.9)
    full = list(ctx.settings.pii.entities)
    detect(ctx, {"d0": "PERSON", "d1": "PHONE_NUMBER"})
    sanitize(ctx, ["Hi [PERSON]", "call [PHONE_NUMBER]"])
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.01, True)])
    detect(with_entities(ctx, ["NRP"]), {}, run_id="det-nrp", measured_types=["NRP"])
    sanitize(ctx, ["Hi Alice Smith", "call 555-0100"], run_id="san-1")  # the audited run's id, reused
    detect(with_entities(ctx, full), {"d0": "PERSON"}, run_id="det-3")
    with pytest.raises(PublishRefused) as refused:
        publish.run(ctx, target=TARGET)
    reasons = " | ".join(refused.value.reasons)
    assert "lstm audit is stale" in reasons and "replaced the spans the staged release was sanitized from" in reasons
    assert published(ctx) == [] and not (tmp_path / "exports").exists()
    with pytest.raises(SystemExit):  # and a run id is never taken from the command line
        stage_parser("sanitize").parse_args(["--run-id", "san-1"])


def test_bypass_b_a_release_sanitized_without_phone_detection_is_refused(tmp_path):
    """Issue 32 (b): detect without EMAIL/PHONE, sanitize, audit (passes), detect normally, publish: refused
    (its canaries never covered PHONE_NUMBER, later spans, other settings); the later run's recall is not its."""
    ctx = make_ctx(tmp_path, "pub-1", min_canary_recall=0.9)
    full = list(ctx.settings.pii.entities)
    with_entities(ctx, [t for t in full if t not in ("EMAIL_ADDRESS", "PHONE_NUMBER")])
    detect(ctx, {"d0": "PERSON"})
    sanitize(ctx, ["Hi [PERSON], call 555-0100"])
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.01, True)])
    with_entities(ctx, full)
    with pytest.raises(PublishRefused) as refused:  # before any new detect run: the settings and canaries
        publish.run(ctx, target=TARGET)
    reasons = " | ".join(refused.value.reasons)
    assert "the detection settings (pii entity types, recognizers) changed" in reasons
    assert "measured no canary of EMAIL_ADDRESS, PHONE_NUMBER" in reasons
    detect(ctx, {"d0": "PERSON", "d1": "PHONE_NUMBER"}, recall=1.0, run_id="det-2")
    with pytest.raises(PublishRefused, match="replaced the spans the staged release was sanitized from"):
        publish.run(ctx, target=TARGET)
    assert published(ctx) == [] and not (tmp_path / "exports").exists()


def test_published_doc_ids_are_keyed_pseudonyms_whatever_the_input_supplied(tmp_path):
    from privtext.pii.hashing import doc_pseudonym

    ctx = make_ctx(tmp_path, "pub-1")
    supplied = ["alice.smith@example.com", "+1 555 0100", "doc-0003"]
    stage(ctx, ["a [PERSON]", "b [PERSON]", "c [PERSON]"], doc_ids=supplied)
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.02, True)])
    publish.run(ctx, TARGET)
    key = (tmp_path / "hmac.key").read_text().encode()
    rows = ctx.lakehouse.read(PUBLISHED_SANITIZED_DOCUMENTS).collect()
    assert sorted(r["doc_id"] for r in rows) == sorted(doc_pseudonym(key, d) for d in supplied)
    assert doc_pseudonym(key, "doc-0003") != doc_pseudonym(b"another-key-0123456789", "doc-0003")  # keyed
    date_dir = tmp_path / "exports" / TARGET / DATE.isoformat()
    exported = [p for p in date_dir.rglob("*") if p.is_file()]
    ids = [r["doc_id"] for p in exported if p.suffix == ".parquet" for r in pq.read_table(p).to_pylist()]
    assert sorted(ids) == sorted(r["doc_id"] for r in rows)
    assert not any(d.encode() in p.read_bytes() for d in supplied for p in exported)  # JSONL and manifest too


def test_a_publisher_overtaken_after_its_commit_leaves_the_later_manifests_files(tmp_path, monkeypatch):
    """Two publishers of one date (the lease bypassed): B commits its manifest right after A's; A's
    clean-up must not delete the files B's manifest names."""
    ctx = make_ctx(tmp_path, "pub-a", require_audit=False)
    stage(ctx, ["a [PERSON]"])
    date_dir = tmp_path / "exports" / TARGET / DATE.isoformat()
    commit = publish.commit_manifest

    def then_b_commits(fs, folder, manifest):
        path = commit(fs, folder, manifest)
        (date_dir / "b-version").mkdir()
        (date_dir / "b-version" / "part.parquet").write_bytes(b"b")
        commit(fs, folder, {**manifest, "publish_run_id": "pub-b",
                            "files": [{**manifest["files"][0], "path": "b-version/part.parquet"}]})
        return path

    monkeypatch.setattr(publish, "commit_manifest", then_b_commits)
    publish.run(ctx, target=TARGET)
    manifest = json.loads((date_dir / "manifest.json").read_text())
    assert manifest["publish_run_id"] == "pub-b" and (date_dir / "b-version" / "part.parquet").exists()


def deliver(ctx, texts: dict[str, str]):
    """An ingest of the date as the stage leaves it: its documents partition replaced (new files)."""
    from privtext.platform.tables import DOCUMENTS
    from tests_support import document, write_rows

    write_rows(ctx, DOCUMENTS, [document(d, t, DATE) for d, t in texts.items()], {"ingest_date": [DATE]})


@pytest.mark.parametrize("redelivery", ["other texts", "one character"])
def test_a_redelivered_date_is_refused_until_detect_pii_reads_it_again(tmp_path, redelivery):
    """Issue 46 (1): ingest, detect_pii, ingest the same doc_ids again, sanitize, audit, publish. The lineage
    binds the documents detection read: sanitize refuses the changed date (saying to rerun detect_pii); a
    release sanitized before the re-delivery is refused at publish. Control: after detect_pii reads the
    re-delivered documents, the same sequence publishes."""
    from privtext.lineage import DocumentsChanged
    from privtext.sample_data import generate

    ctx = make_ctx(tmp_path, "pub-1", min_canary_recall=0.9)
    first = {r["doc_id"]: r["text"] for r in generate(2, seed=7)}  # the sample generator: doc ids d000000, d000001
    changed = dict(first, d000001=first["d000001"][:-1] + ("x" if first["d000001"][-1] != "x" else "y"))
    again = {r["doc_id"]: r["text"] for r in generate(2, seed=8)} if redelivery == "other texts" else changed
    assert again.keys() == first.keys() and again != first
    deliver(ctx, first)
    detect(ctx, {"d000000": "PERSON", "d000001": "PHONE_NUMBER"})
    deliver(ctx, again)  # no detect_pii since
    with pytest.raises(DocumentsChanged,
                       match=r"changed since the detect_pii run det-1 .* rerun detect_pii for 2026-01-15"):
        sanitize(ctx, ["Hi, I am [PERSON]", "call [PHONE_NUMBER]"])
    # a release sanitized from the first delivery, re-delivered before publish: refused at the gate too
    deliver(ctx, first)
    detect(ctx, {"d000000": "PERSON", "d000001": "PHONE_NUMBER"}, run_id="det-2")
    sanitize(ctx, ["Hi, I am [PERSON]", "call [PHONE_NUMBER]"])
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.01, True)])
    deliver(ctx, again)
    with pytest.raises(PublishRefused, match=r"changed since the detect_pii run det-2 .* rerun detect_pii"):
        publish.run(ctx, target=TARGET)
    assert published(ctx) == []
    # control: detect_pii reads the re-delivery, then sanitize, audit and publish go through
    detect(ctx, {"d000000": "PERSON", "d000001": "PHONE_NUMBER"}, run_id="det-3")
    sanitize(ctx, ["Hi, I am [PERSON]", "[EMAIL_ADDRESS]"], run_id="san-2")
    audit(ctx, [("lstm", 0.01, True), ("rnn", 0.01, True)])
    assert publish.run(ctx, target=TARGET).rows == 2
