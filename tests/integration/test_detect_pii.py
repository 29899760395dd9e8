"""Stage detect_pii on real Presidio: offsets, the secret registry across nights, no raw values stored."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from privtext.platform.context import RunContext
from privtext.platform.tables import DOCUMENTS, PII_SPANS
from privtext.stages import detect_pii
from privtext.stages.runner import run_stage
from tests_support import document, write_rows

NIGHT1, NIGHT2 = "2026-03-01", "2026-03-02"
EMAIL = "zoë.müller@example.org"
LONG_FILLER = "The parcel was late again and nobody answered. " * 60  # ~2.9k chars: several chunks


def _docs(date, rows):
    return [document(d, t, date, user_id=u) for d, t, u in rows]


def _spans(ctx, date):
    return {(r["doc_id"], r["entity_type"], r["start"], r["end"]): r["secret_id"]
            for r in ctx.lakehouse.read(PII_SPANS).where(F.col("date") == F.lit(date).cast("date")).collect()}


@pytest.fixture
def night_settings(tmp_path):
    from conftest import make_settings

    # small chunks force the multi-chunk path on the long document; tracking on: no raw value in MLflow either
    return make_settings(tmp_path / "lake", pii={"max_chunk_chars": 2000, "chunk_overlap_chars": 100},
                         tracking={"enabled": True})


def test_offsets_registry_across_two_nights_and_rerun_and_no_raw_value_stored(night_settings, tmp_path):
    """One lakehouse, three detect_pii runs (night 1, night 2, night 2 again): night 1's offsets (unicode,
    several chunks), its canary measurement; the registry's counts across both nights and the rerun; no raw
    value in the spans' files or the tracking store after all three."""
    ctx = RunContext.create(night_settings, date=NIGHT1)
    texts = {
        "u1": f"Grüße! Schreib an {EMAIL} oder ruf 212-555-0173 an.",
        "long": LONG_FILLER + f"Contact {EMAIL} now. " + LONG_FILLER + "Card 4111 1111 1111 1111 was charged.",
        "empty": "",
        "blank": "   \n\t ",
    }
    registry_night1 = [("a", f"Mail {EMAIL} please.", "u1"), ("b", f"My address is {EMAIL}.", "u2"),
                       ("ingrid", f"Ingrid Svensson wrote from {EMAIL}, call 212-555-0173.", "u1")]
    write_rows(ctx, DOCUMENTS, _docs(NIGHT1, [(k, v, "user-a") for k, v in texts.items()] + registry_night1),
               {"ingest_date": [NIGHT1]})
    write_rows(ctx, DOCUMENTS, _docs(NIGHT2, [("c", f"Again: {EMAIL}", "u1"),
                                              ("d", "Refund jane.roe@example.net today", "u3")]),
               {"ingest_date": [NIGHT2]})
    texts.update({d: t for d, t, _ in registry_night1})
    result = run_stage("detect_pii", night_settings, date=NIGHT1)
    spans = _spans(ctx, NIGHT1)
    found = {(doc, etype, texts[doc][s:e]) for doc, etype, s, e in spans}
    assert ("u1", "EMAIL_ADDRESS", EMAIL) in found
    assert ("u1", "PHONE_NUMBER", "212-555-0173") in found
    assert ("long", "EMAIL_ADDRESS", EMAIL) in found  # after the first chunk boundary
    assert ("long", "CREDIT_CARD", "4111 1111 1111 1111") in found  # in the last chunk
    assert not any(doc in ("empty", "blank") for doc, *_ in spans)
    # same normalized value -> same keyed secret id in every document
    ids = {sid for (doc, etype, *_), sid in spans.items() if etype == "EMAIL_ADDRESS"}
    assert len(ids) == 1
    assert result.documents == 7 and result.private_documents == 5  # all but empty and blank
    assert len([doc for doc, *_ in spans if doc == "ingrid"]) >= 3  # the name, the e-mail, the phone
    # canaries were detected with the batch, scored and dropped: no canary row in any table
    assert 0.5 < result.canary_recall <= 1.0 and 0.0 < result.canary_coverage <= 1.0
    assert not any(doc.startswith("canary-") for doc, *_ in spans)
    from privtext.ledger import Ledger

    (record,) = [e for e in Ledger(ctx.lakehouse, ctx.settings).entries() if e["guarantee"] == "detection_recall"]
    assert record["spend"]["overall"]["recall"] == result.canary_recall and record["params"]["date"] == NIGHT1
    assert record["spend"]["overall"]["values"] == 3 * night_settings.pii.canaries.count
    from privtext.lineage import partition_state, settings_digest

    day = dt.date.fromisoformat(NIGHT1)  # the measurement names the spans it measured
    assert record["params"]["spans_state"] == partition_state(ctx.lakehouse, PII_SPANS, day)
    assert record["params"]["settings_digest"] == settings_digest(night_settings.pii)

    run_stage("detect_pii", night_settings, date=NIGHT2)
    run_stage("detect_pii", night_settings, date=NIGHT2)  # a rerun must not double count
    email_id = next(sid for (doc, etype, *_), sid in _spans(ctx, NIGHT2).items()
                    if doc == "c" and etype == "EMAIL_ADDRESS")
    spans_version = ctx.lakehouse.version(PII_SPANS)
    registry = {r["secret_id"]: r for r in ctx.spark.table(detect_pii.register_registry_view(ctx.lakehouse)).collect()}
    row = registry[email_id]
    assert (row["doc_count"], row["user_count"]) == (6, 3)  # u1, long, a, b, ingrid; c: user-a, u1, u2
    assert (row["first_date"], row["last_date"]) == (dt.date(2026, 3, 1), dt.date(2026, 3, 2))
    assert row["entity_type"] == "EMAIL_ADDRESS" and row["tier"] == "PII"
    assert len([r for r in registry.values() if r["entity_type"] == "EMAIL_ADDRESS"]) == 2
    assert len(ctx.lakehouse.read(PII_SPANS).where("doc_id = 'c'").collect()) == 1  # replaced, not appended
    # the nightly stage writes only its date's spans: one commit per run, no registry table to merge
    assert spans_version == 3 and not (Path(ctx.settings.lakehouse.zone_root("restricted")) / "secrets").exists()

    split_view = ctx.spark.table(detect_pii.register_split_view(ctx.lakehouse, night_settings.pii))
    split = {r["doc_id"]: r["is_private"] for r in split_view.collect()}
    assert split == {"a": True, "b": True, "c": True, "d": True, "u1": True, "long": True, "ingrid": True,
                     "empty": False, "blank": False}

    secrets = [EMAIL, "212-555-0173", "Ingrid Svensson", "4111 1111 1111 1111", "jane.roe@example.net"]
    stored = [p for p in (tmp_path / "lake" / "restricted" / "pii_spans").rglob("*") if p.is_file()]
    stored += [p for p in (tmp_path / "lake").rglob("*") if p.is_file() and "mlruns" in p.parts]
    stored += [tmp_path / "lake" / "mlflow.db"]
    assert {".parquet", ".json", ".db"} <= {p.suffix for p in stored}  # the spans, their log, the tracking store
    for path in stored:
        blob = Path(path).read_bytes()
        for value in secrets:
            for form in {value, value.lower(), value.casefold()}:
                assert form.encode() not in blob, f"raw value in {path}"


def test_missing_hmac_key_refused_outside_deterministic(tmp_path):
    from conftest import make_settings
    from privtext.pii.hashing import MissingKeyError

    settings = make_settings(tmp_path / "lake",
                             run={"deterministic": False, "hmac_key_env": "PRIVTEXT_TEST_NO_SUCH_KEY"})
    with pytest.raises(MissingKeyError, match="PRIVTEXT_TEST_NO_SUCH_KEY"):
        run_stage("detect_pii", settings, date=NIGHT1)
