"""Stage train_dped on a tiny sample corpus: order of charge and release, refusal, shards, teacher output."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from conftest import make_settings
from privtext.ledger import BudgetExceeded, Ledger
from privtext.platform.context import RunContext
from privtext.platform.tables import DOCUMENTS, STAGED_WORD_VECTORS, WORD_VECTORS
from privtext.platform.tracking import tracking_uri
from privtext.sample_data import generate
from privtext.stages import train_dped
from privtext.stages.runner import run_stage

DATE = dt.date(2026, 1, 15)
TINY = {"n_teachers": 3, "dim": 16, "epochs": 1, "top_k": 3, "threshold": 1.0, "max_vocab": 150,
        "vocab_words_per_unit": 20, "vocab_threshold_sigmas": 2.0, "student_epochs": 5, "batch_size": 512,
        "min_snr": 0.0}  # 3 teachers release noise: these tests exercise the Spark path, not the utility gate
DOC_DDL = ("doc_id string, user_id string, text string, label string, metadata map<string,string>, "
           "ingest_date date, run_id string")


def _context(tmp_path, eps_max: float = 10.0, tracking: bool = False, deterministic: bool = True,
             **dped) -> RunContext:
    settings = make_settings(tmp_path / "lake", dped={**TINY, **dped}, tracking={"enabled": tracking},
                             privacy={"budgets": {"default": {"eps_max": eps_max, "delta_max": 1e-5}}},
                             run={"deterministic": deterministic})
    return RunContext.create(settings, date=DATE.isoformat())


def _write_docs(ctx: RunContext, n: int = 300, users: bool = True) -> None:
    rows = [(r["doc_id"], r["user_id"] if users else None, r["text"], r["label"], {}, DATE, "ingest")
            for r in generate(n, seed=3)]
    ctx.lakehouse.replace_partitions(DOCUMENTS, ctx.spark.createDataFrame(rows, DOC_DDL), {"ingest_date": [DATE]})


def test_train_dped_charges_before_release_and_publish_releases_public_words(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVTEXT_HMAC_KEY", "train-dped-test-key-0123456789")  # it keys the records it read
    ctx = _context(tmp_path, tracking=True, deterministic=False)  # fixed-seed noise is never published
    _write_docs(ctx)
    result = run_stage("train_dped", ctx.settings, date=DATE.isoformat(), epsilon=8.0)
    assert ctx.lakehouse.read(WORD_VECTORS).count() == 0  # staged only: publish releases it
    staged = ctx.lakehouse.read(STAGED_WORD_VECTORS, date=DATE).collect()
    assert run_stage("publish", ctx.settings, date=DATE.isoformat(), target="word_vectors").gate == "ledger_charged"
    assert result.adjacency == "user" and result.documents == 300 and result.teachers == 3
    assert result.epsilon_pld <= 8.0 * (1 + 1e-3) and result.epsilon_rdp >= result.epsilon_pld
    entries = Ledger(ctx.lakehouse, ctx.settings).entries("default")
    assert [e["entry_id"] for e in entries] == [result.ledger_entry_id]
    assert entries[0]["params"]["adjacency"] == "user" and entries[0]["params"]["queries_charged"] == 150

    published = ctx.lakehouse.read(WORD_VECTORS).collect()
    assert len(published) == len(staged) == result.released_words > 0
    assert sorted((r["word"], list(r["vector"])) for r in published) == sorted((r["word"], list(r["vector"]))
                                                                               for r in staged)
    assert {r["model_version"] for r in published} == {result.model_version}
    assert {len(r["vector"]) for r in published} == {16}
    words = {r["word"] for r in published}
    assert words <= set(train_dped.public_words())
    assert all(np.isfinite(r["vector"]).all() for r in published)
    # order: the ledger entry was committed before the word vectors' commit
    history = ctx.lakehouse.delta_table(STAGED_WORD_VECTORS).history()
    write_ms = max(h["timestamp"] for h in history if h.get("operation") != "CREATE TABLE")
    assert entries[0]["created_at"].timestamp() * 1000 <= write_ms
    # the student is registered in MLflow with the ledger entry and (eps, delta) in its description
    import mlflow

    mlflow.set_tracking_uri(tracking_uri(ctx.settings))
    version = mlflow.MlflowClient().get_model_version(train_dped.MODEL_NAME, result.model_version)
    assert result.ledger_entry_id in version.description and "epsilon=8" in version.description
    vectors = mlflow.pyfunc.load_model(f"models:/{train_dped.MODEL_NAME}/{result.model_version}").predict(
        pd.DataFrame({"word": [published[0]["word"], "zzznotaword"]}))
    assert np.allclose(vectors[0], published[0]["vector"]) and np.isnan(vectors[1]).all()


def test_refused_budget_writes_nothing(tmp_path):
    ctx = _context(tmp_path, eps_max=1.0)
    _write_docs(ctx, n=50)
    with pytest.raises(BudgetExceeded):
        train_dped.run(ctx, epsilon=2.0)
    assert ctx.lakehouse.read(WORD_VECTORS).count() == ctx.lakehouse.read(STAGED_WORD_VECTORS).count() == 0
    assert Ledger(ctx.lakehouse, ctx.settings).entries("default") == []


def test_noise_dominated_settings_are_refused_before_the_charge(tmp_path):
    from privtext.dped.aggregation import NoiseDominated

    ctx = _context(tmp_path, min_snr=1.0)  # the gate as in base.yaml: 3 teachers x 150 queries at eps 8 is noise
    _write_docs(ctx, n=50)
    with pytest.raises(NoiseDominated, match="nothing charged"):
        train_dped.run(ctx, epsilon=8.0)
    assert Ledger(ctx.lakehouse, ctx.settings).entries("default") == []
    assert ctx.lakehouse.read(STAGED_WORD_VECTORS).count() == 0


def test_shards_are_disjoint_by_user_or_by_document(tmp_path):
    ctx = _context(tmp_path)
    _write_docs(ctx, n=200)
    docs = ctx.lakehouse.read(DOCUMENTS)
    sharded, adjacency = train_dped.with_units_and_shards(docs, 4, "s")
    rows = sharded.select("doc_id", "user_id", "unit", "shard").collect()
    assert adjacency == "user"
    assert len({r["doc_id"] for r in rows}) == 200  # every document in exactly one shard
    by_user: dict[str, set] = {}
    for r in rows:
        by_user.setdefault(r["user_id"], set()).add(r["shard"])
    assert all(len(s) == 1 for s in by_user.values()) and len({r["shard"] for r in rows}) == 4
    with_gap = docs.withColumn("user_id", docs.user_id.substr(1, 0).cast("string")).limit(5)
    assert train_dped.with_units_and_shards(with_gap, 4, "s")[1] == "record"


def test_the_charge_keeps_the_records_it_read_and_the_join_counts_each_secret_by_its_units(tmp_path):
    """The read set a DPED charge keeps (keyed ids): joined to spans found at any time, the group size per
    secret is the distinct users (user-level adjacency) or documents (record-level) read holding it."""
    from privtext.privacy.reads import holders, joined

    ctx = _context(tmp_path)
    key = b"train-dped-test-key-16+"
    docs = ctx.spark.createDataFrame(
        [("d1", "u1", "x"), ("d2", "u1", "x"), ("d3", "u2", "x"), ("d4", "u3", "x"), ("d5", None, "x")],
        "doc_id string, user_id string, text string")
    # s1: 3 documents of 2 users; s2: one document twice; s3: an unread document
    spans = holders(key, ["d1", "d1", "d2", "d3", "d4", "d4", "d9"], ["s1", "s1", "s1", "s1", "s2", "s2", "s3"],
                    ["PERSON"] * 7)
    by_user, adjacency = train_dped.with_units_and_shards(docs.where("doc_id != 'd5'"), 2, "s")
    assert adjacency == "user"
    read = train_dped.records_read(by_user, adjacency, key)
    assert len(read["records"]) == len(read["units"]) == 4 and joined(read, spans) == {"s1": 2, "s2": 1}
    by_doc, adjacency = train_dped.with_units_and_shards(docs, 2, "s")
    assert adjacency == "record"
    read = train_dped.records_read(by_doc, adjacency, key)
    assert "units" not in read and len(read["records"]) == 5 and joined(read, spans) == {"s1": 3, "s2": 1}


def test_teacher_task_returns_only_answers(tmp_path):
    ctx = _context(tmp_path)
    _write_docs(ctx, n=120)
    settings = ctx.settings.dped
    words = train_dped.public_words()
    docs, _ = train_dped.with_units_and_shards(ctx.lakehouse.read(DOCUMENTS), 3, "s")
    tokens = train_dped.tokenized(docs, words)
    queries = np.arange(40)
    answers = train_dped.teacher_answer_frame(tokens, len(words), queries, settings, None, seed=1)
    assert answers.schema.names == ["shard", "query", "hidden", "votes"]
    rows = answers.collect()
    # one row per (teacher, query): N * M, whatever the number of documents
    assert len(rows) == 3 * 40 and {r["shard"] for r in rows} == {0, 1, 2}
    assert all(np.linalg.norm(r["hidden"]) <= settings.clip_hidden + 1e-5 and len(r["votes"]) == settings.top_k
               for r in rows)


def test_demo_embeddings_with_base_settings_charge_nothing(tmp_path):
    # privtext demo --all used to charge 4 of 10 per user and stage nothing; base.yaml's DPED setting is
    # noise-dominated (best-case SNR 0.025), so the demo's line says so and the ledger stays empty
    import io

    from privtext.demo import StageLines, dp_embeddings

    settings = make_settings(tmp_path / "lake", privacy={"budgets": {"default": {"eps_max": 10.0, "delta_max": 1e-5}}})
    assert settings.dped.n_teachers == 50 and settings.dped.min_snr == 1.0  # the shipped defaults
    ctx = RunContext.create(settings, date=DATE.isoformat())
    _write_docs(ctx, n=40)
    line = dp_embeddings(settings, DATE.isoformat(), StageLines(io.StringIO()))
    assert line.startswith("nothing published") and "would release noise" in line and "nothing charged" in line
    assert Ledger(ctx.lakehouse, settings).entries("default") == []
    assert ctx.lakehouse.read(STAGED_WORD_VECTORS).count() == 0
