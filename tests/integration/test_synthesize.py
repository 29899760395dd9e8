"""Stage synthesize: Spark private statistics, secret groups, charge-before-write, budget refusal.

The corpus (documents, embeddings, spans: 3 Spark writes and 36 encodings) is written once for the module into
a template lakehouse; each test gets its own copy of it (its ledger, staged tables and MLflow store its own)."""
import dataclasses
import datetime as dt
import hashlib
import importlib
import json
import shutil

import numpy as np
import pytest
from pyspark.sql.pandas.types import from_arrow_schema

from privtext.ledger import BudgetExceeded, Ledger
from privtext.platform.spark import tree_sum
from privtext.platform.tables import (
    DOC_EMBEDDINGS,
    DOCUMENTS,
    GENERATOR_SAMPLES,
    NOISY_CENTERS,
    PII_SPANS,
    STAGED_SYNTHETIC_DOCUMENTS,
)
from privtext.sample_data import generate
from privtext.secpe.secret_clustering import PublicClusters, private_cluster_stats
from privtext.stages import synthesize

DATE = dt.date(2026, 1, 15)
N_DOCS = 36


def _write_corpus(ctx, private_every: int = 3):
    from privtext.embed.encoder import encode_texts

    spark, lh = ctx.spark, ctx.lakehouse
    rows = generate(N_DOCS, seed=3)
    docs = [{**{k: r[k] for k in ("doc_id", "user_id", "text", "label")}, "metadata": {}, "ingest_date": DATE,
             "run_id": "t"} for r in rows]
    lh.replace_partitions(DOCUMENTS, spark.createDataFrame(docs, from_arrow_schema(DOCUMENTS.schema)),
                          {"ingest_date": [DATE]})
    emb = encode_texts([r["text"] for r in rows], ctx.settings.embed)
    lh.replace_partitions(DOC_EMBEDDINGS, spark.createDataFrame(
        [{"doc_id": r["doc_id"], "embedding": e.tolist(), "model": ctx.settings.embed.model, "dim": emb.shape[1],
          "run_id": "t", "date": DATE} for r, e in zip(rows, emb)], from_arrow_schema(DOC_EMBEDDINGS.schema)),
                          {"date": [DATE]})
    # every third document is private (``private_every``); secrets s0..s3 repeat across documents, d0 holds two
    spans = [{"doc_id": r["doc_id"], "entity_type": "PERSON", "start": 0, "end": 1, "score": 1.0, "tier": "PII",
              "secret_id": f"s{i % 4}", "run_id": "t", "date": DATE} for i, r in enumerate(rows)
             if i % private_every == 0]
    spans.append({**spans[0], "secret_id": "s9"})
    lh.replace_partitions(PII_SPANS, spark.createDataFrame(spans, from_arrow_schema(PII_SPANS.schema)),
                          {"date": [DATE]})
    return rows, emb


def _held_out_ids(rows, fraction):
    """The held-out split computed here, independently of Spark: SHA-256 of the salted doc_id, 52 bits."""
    share = lambda d: int(hashlib.sha256(f"privtext-holdout:{d}".encode()).hexdigest()[:13], 16) / 16**13  # noqa: E731
    return {r["doc_id"] for r in rows if share(r["doc_id"]) < fraction}


@pytest.fixture(scope="module")
def corpus_lake(tmp_path_factory, spark):
    """The template: a lakehouse holding ``_write_corpus``'s tables and nothing else (no ledger entry)."""
    from conftest import make_settings
    from privtext.platform.context import RunContext

    root = tmp_path_factory.mktemp("synthesize-corpus") / "lake"
    rows, emb = _write_corpus(RunContext.create(make_settings(root), date=str(DATE)))
    return root, rows, emb


@pytest.fixture
def corpus(tmp_path, corpus_lake):
    """This test's lakehouse at ``tmp_path / "lake"``: a copy of the template; the corpus's rows and embeddings."""
    root, rows, emb = corpus_lake
    shutil.copytree(root, tmp_path / "lake")
    return rows, emb


@pytest.fixture
def ctx(corpus, settings):
    """The conftest's context, over a copy of the corpus."""
    from privtext.platform.context import RunContext

    return RunContext.create(settings, date=str(DATE))


@pytest.fixture
def ctx_all(tmp_path, corpus):
    """A context whose synthesize sees every document (no held-out split), over a copy of the corpus."""
    from conftest import make_settings
    from privtext.platform.context import RunContext

    return RunContext.create(make_settings(tmp_path / "lake", secpe={"holdout_fraction": 0.0}), date=str(DATE))


def test_synthesize_never_reads_the_held_out_split(ctx, corpus):
    rows, _ = corpus
    held = _held_out_ids(rows, ctx.settings.secpe.holdout_fraction)
    assert 0 < len(held) < N_DOCS  # 36 ids at 0.2: the check below has both sides to tell apart
    corpus, _ = synthesize.load_corpus(ctx, use_labels=True)
    seen = {r.doc_id for r in corpus.select("doc_id").collect()}
    assert seen == {r["doc_id"] for r in rows} - held


def test_split_groups_and_spark_statistics_match_numpy(ctx_all, corpus):
    ctx = ctx_all
    rows, emb = corpus
    corpus, labels = synthesize.load_corpus(ctx, use_labels=True)
    assert labels == sorted({r["label"] for i, r in enumerate(rows) if i % 3})
    private = corpus.where("is_private")
    assert private.count() == 12
    groups, sizes, keys, n_secrets = synthesize.secret_groups(private)
    assert n_secrets == 5 and sorted(sizes.tolist()) == [1, 2, 3, 3, 3]  # d0 = {s0, s9} is its own group
    # the executors' tree-summed statistics equal the numpy pass over the same rows
    clusters = PublicClusters.create(emb[:3], [2, 3, 4])
    dim = emb.shape[1]

    def per_partition(frames):
        counts, sums = np.zeros(3), np.zeros((3, dim))
        for f in frames:
            c, s = private_cluster_stats(np.stack(f["embedding"].to_numpy()), clusters, 1.0)
            counts, sums = counts + c, sums + s
        return counts, sums

    counts, sums = tree_sum(private.select("embedding").repartition(3), per_partition)
    private_emb = emb[[i for i in range(N_DOCS) if i % 3 == 0]]
    ref_counts, ref_sums = private_cluster_stats(private_emb, clusters, 1.0)
    np.testing.assert_array_equal(counts, ref_counts)
    np.testing.assert_allclose(sums, ref_sums, atol=1e-5)
    pub = synthesize.public_kmeans(corpus.where(~corpus.is_private), labels, 8, ctx.settings.secpe, 0)
    assert pub.sizes.sum() == N_DOCS - 12 and set(pub.labels.tolist()) == set(range(len(labels)))


def test_augpe_charge_records_each_secrets_record_count(ctx_all):
    """Aug-PE's charge names each secret with the records holding it in the data it read (s0..s3: 3
    documents each, s9: 1), not 1: a later record-level event composes with the right group size."""
    ctx = ctx_all
    corpus, _ = synthesize.load_corpus(ctx, use_labels=True)
    corpus = corpus.where("label_code >= 0")
    private = corpus.where("is_private")
    cfg = synthesize._config(ctx, {"method": "aug_pe", "rounds": 1})
    synthesize._calibrate_and_charge(ctx, cfg, corpus, private, private.count())
    (entry,) = Ledger(ctx.lakehouse, ctx.settings).entries()
    assert {e["unit"]: e["records"] for e in entry["exposures"]} == {"s0": 3, "s1": 3, "s2": 3, "s3": 3, "s9": 1}
    assert entry["params"]["max_records_per_secret"] == 3
    # the records it read, public ones too (keyed): a secret found in them later reaches this release
    assert len(entry["params"]["read"]["records"]) == corpus.count() > private.count()
    assert entry["params"]["pair"]["record_event"]


def test_public_kmeans_caps_k_at_the_labels_distinct_points(spark):
    """Spark's KMeans fails (index out of bounds) when a label has fewer distinct points than k: duplicated
    public texts (templates, copies) must give fewer centres, not a failed stage."""
    from privtext.secpe.settings import SecpeSettings

    rows = [([1.0, 0.0], 0)] * 3 + [([0.0, 1.0], 1)] * 2 + [([1.0, 1.0], 1), ([0.5, 0.5], 1)]
    public = spark.createDataFrame(rows, "embedding array<float>, label_code int")
    pub = synthesize.public_kmeans(public, ["a", "b"], 8, SecpeSettings(), 0)  # asks 3 and 5 centres
    assert pub.sizes[pub.labels == 0].tolist() == [3]
    np.testing.assert_allclose(pub.centers[pub.labels == 0], [[1.0, 0.0]])
    assert (pub.labels == 1).sum() == 3 and pub.sizes[pub.labels == 1].sum() == 4


def test_budget_refused_run_writes_nothing(ctx):
    lh = ctx.lakehouse
    before = {spec.name: lh.version(spec) for spec in (NOISY_CENTERS, STAGED_SYNTHETIC_DOCUMENTS)}
    with pytest.raises(BudgetExceeded):  # default budget r_over_p_max = 50
        synthesize.run(ctx, method="secpe", r_over_p=100.0, n_syn=2, rounds=1, clusters=4, variations=1)
    after = {spec.name: lh.version(spec) for spec in (NOISY_CENTERS, STAGED_SYNTHETIC_DOCUMENTS)}
    assert after == before
    assert Ledger(lh, ctx.settings).entries() == []


def _generator_ready() -> bool:
    """The stage needs the ``generate`` config section and the local model package."""
    from privtext.settings import Settings

    try:
        local = importlib.import_module("privtext.generate.local")
        from privtext.generate import GenerateSettings

        local.resolve_model_path(GenerateSettings().model)
    except (ImportError, RuntimeError):
        return False
    return "generate" in Settings.model_fields


@pytest.mark.skipif(not _generator_ready(), reason="needs Settings.generate and the local LLM package")
@pytest.mark.parametrize("method", ["secpe", "aug_pe"])
def test_full_run_charges_before_writing_and_leaks_nothing(tmp_path, corpus, monkeypatch, method):
    from conftest import make_settings
    from privtext.platform.context import RunContext
    from privtext.platform.lakehouse import Lakehouse
    from privtext.stages.runner import run_stage

    settings = make_settings(tmp_path / "lake", tracking={"enabled": True})
    rows, _ = corpus
    charges_at_write = []
    original = Lakehouse.replace_partitions

    def spy(self, spec, df, partition_values):
        if spec in (NOISY_CENTERS, STAGED_SYNTHETIC_DOCUMENTS):
            charges_at_write.append(len(Ledger(self, settings).entries()))
        return original(self, spec, df, partition_values)

    monkeypatch.setattr(Lakehouse, "replace_partitions", spy)
    result = run_stage("synthesize", settings, date=str(DATE), method=method, n_syn=2, rounds=1, clusters=4,
                       variations=1, r_over_p=10.0)
    assert result.synthetic == 2 and charges_at_write and min(charges_at_write) == 1
    ctx = RunContext.create(settings, date=str(DATE))
    synth = ctx.lakehouse.read(STAGED_SYNTHETIC_DOCUMENTS).toPandas()
    private_texts = [r["text"] for i, r in enumerate(rows) if i % 3 == 0]
    assert not any(p in t for p in private_texts for t in synth.text)
    blob = b"".join(p.read_bytes() for p in (tmp_path / "lake").rglob("*") if p.is_file()
                    and ("mlruns" in p.parts or p.name == "mlflow.db"))
    assert not any(p.encode()[:40] in blob for p in private_texts)
    # nothing derived from the secrets' structure through sigma leaves the protected zone (issue 46, item 3):
    # the noise figures and the charge's params (sigma, count pmfs, the largest record count, the records read)
    assert not {"sigma", "centre_noise_sd", "secret_groups"} & set(dataclasses.asdict(result))
    for name in (b"centre_noise_sd", b"count_pmfs", b"max_records_per_secret", b"expected_sampled", b'"read"'):
        assert name not in blob, name
    assert protected_noise(ctx)["sigma"] > 0  # kept where only the protected zone reads it


def protected_noise(ctx) -> dict:
    from pyspark.sql import functions as F

    from privtext.platform.tables import UTILITY_REPORTS

    rows = ctx.lakehouse.read(UTILITY_REPORTS, date=DATE).where(F.col("target") == synthesize.NOISE_TARGET).collect()
    return {r["metric"]: r["value"] for r in rows}


@pytest.mark.skipif(not _generator_ready(), reason="needs Settings.generate and the local LLM package")
def test_all_private_corpus_takes_d_pub_from_the_generator(tmp_path, spark, monkeypatch, caplog):
    """Every document holds a secret: public_source documents is refused before any charge (the message
    names the key and its values); auto falls back to the generator, whose centres come from round 0's
    pool only (never a private embedding, never the public-documents KMeans), under the same one charge."""
    from conftest import make_settings
    from privtext.platform.context import RunContext
    from privtext.sample_data import LABELS
    from privtext.secpe.secret_clustering import generated_public_clusters

    settings = make_settings(tmp_path / "lake", secpe={"holdout_fraction": 0.0, "labels": list(LABELS),
                                                       "public_source": "documents"})
    ctx = RunContext.create(settings, date=str(DATE))
    rows, emb = _write_corpus(ctx, private_every=1)
    versions = {spec.name: ctx.lakehouse.version(spec) for spec in (NOISY_CENTERS, STAGED_SYNTHETIC_DOCUMENTS)}
    with pytest.raises(ValueError, match="secpe.public_source.*documents, generator, auto"):
        synthesize.run(ctx, n_syn=4, rounds=1, clusters=4, variations=2)
    assert Ledger(ctx.lakehouse, settings).entries() == []
    assert {spec.name: ctx.lakehouse.version(spec) for spec in (NOISY_CENTERS, STAGED_SYNTHETIC_DOCUMENTS)} == versions

    pools = []
    monkeypatch.setattr(synthesize, "public_kmeans", lambda *a, **k: pytest.fail("public documents were clustered"))
    monkeypatch.setattr(synthesize, "generated_public_clusters",
                        lambda pool, *a: pools.append(pool) or generated_public_clusters(pool, *a))
    ctx = RunContext.create(settings.model_copy(update={"secpe": settings.secpe.model_copy(
        update={"public_source": "auto"})}), date=str(DATE))
    result = synthesize.run(ctx, n_syn=4, rounds=1, clusters=4, variations=2)
    assert (result.public_source, result.public_documents, result.private_documents) == ("generator", 0, N_DOCS)
    (pool,) = pools
    assert pool.shape[0] == len(LABELS) * 2  # ceil(4 / 4 labels) x L = 2 per label: round 0's pool
    assert np.abs(pool[:, None, :] - emb[None, :, :]).max(axis=2).min() > 1e-3  # no private row in it
    assert result.clusters == len(LABELS)  # K 4 over 4 labels: one centre each, n_k = 2
    (entry,) = Ledger(ctx.lakehouse, settings).entries()
    assert entry["guarantee"] == "secret_protection"
    # the centres' noise, 2 R sigma / n_k per direction with n_k = 2, a function of the secrets' structure
    # through sigma: kept in the protected zone (above the warning level: votes ~ random), never in the result,
    # MLflow or the log
    noise = protected_noise(ctx)
    sigma = entry["params"]["pair"]["sigma"]
    assert noise["sigma"] == pytest.approx(sigma)
    assert noise["centre_noise_sd"] == pytest.approx(2 * settings.secpe.clip_radius * sigma / 2)
    assert noise["centre_noise_sd"] > synthesize.NOISE_SD_WARN and noise["noise_above_warn"] == 1.0
    assert not {"sigma", "centre_noise_sd", "secret_groups"} & set(dataclasses.asdict(result))
    assert not any("close to random" in r.getMessage() for r in caplog.records)  # the log says nothing of it
    synth = ctx.lakehouse.read(STAGED_SYNTHETIC_DOCUMENTS).toPandas()
    assert len(synth) == 4 and set(synth.label) <= set(LABELS)
    assert not any(r["text"] in t for r in rows for t in synth.text)
    # the free baseline: ceil(4 / 4 labels) = 1 round-0 sample per label, of this run, scored by evaluate as a
    # classifier fitted on them (computed here again, without Spark) on the same documents
    from privtext.embed.encoder import encode_texts
    from privtext.metrics.utility import fit_classifier
    from privtext.stages import evaluate

    alone = ctx.lakehouse.read(GENERATOR_SAMPLES).toPandas()
    assert sorted(alone.label) == sorted(LABELS) and set(alone.run_id) == {ctx.run_id} and set(alone["round"]) == {0}
    assert not any(r["text"] in t for r in rows for t in alone.text)
    gap = np.abs(encode_texts(alone.text.tolist(), settings.embed)[:, None, :] - pool[None]).max(axis=2)
    assert gap.min(axis=1).max() < 1e-5  # each one is a text of round 0's pool
    report = evaluate.run(ctx)
    clf = fit_classifier(encode_texts(alone.text.tolist(), settings.embed).astype(np.float64), alone.label.tolist(),
                         seed=settings.run.seed)
    labelled = [i for i, r in enumerate(rows) if r["label"] is not None]
    correct, total = clf.correct(emb[labelled].astype(np.float64), [rows[i]["label"] for i in labelled])
    assert report.generator_documents == 4 and report.generator_only_accuracy == pytest.approx(correct / total)
    assert report.decision.startswith("no public documents") and "the generator's own 4 samples" in report.decision


def test_evaluate_reports_fid_lengths_and_accuracy(ctx, corpus):
    from privtext.platform.tables import UTILITY_REPORTS
    from privtext.stages import evaluate

    rows, embeddings = corpus
    # a staged release that copies public documents: accuracy must be high, FID finite
    public = [r for i, r in enumerate(rows) if i % 3][:12]
    synth = [{"synthetic_id": f"x{i}", "text": r["text"], "label": r["label"], "method": "secpe", "round": 1,
              "run_id": "t", "date": DATE} for i, r in enumerate(public)]
    ctx.lakehouse.replace_partitions(STAGED_SYNTHETIC_DOCUMENTS, ctx.spark.createDataFrame(
        synth, from_arrow_schema(STAGED_SYNTHETIC_DOCUMENTS.schema)), {"date": [DATE]})
    result = evaluate.run(ctx)
    held = _held_out_ids(rows, ctx.settings.secpe.holdout_fraction)  # scored: the held-out split only
    assert result.split == "held_out" and result.real == len(held) and result.synthetic == 12
    assert result.downstream_accuracy > 0.5 and np.isfinite(result.fid) and 0 <= result.length_ks <= 1
    labels = [r["label"] for r in rows if r["label"] is not None and r["doc_id"] in held]  # always the most frequent
    assert result.majority_accuracy == pytest.approx(max(map(labels.count, set(labels))) / len(labels))
    report = ctx.lakehouse.read(UTILITY_REPORTS).toPandas()
    assert set(report.metric) >= {"fid", "downstream_accuracy", "majority_label_accuracy", "length_ks"}
    assert report.loc[report.metric == "fid", "value"].item() == pytest.approx(result.fid)
    details = json.loads(report.details.iloc[0])
    assert details["split"] == "held_out" and details["real"] == len(held) and details["holdout_fraction"] == 0.2
    # the alternative release, computed here without Spark: the classifier fitted on the training split's
    # documents without a secret (every third one holds one), scored on the held-out documents
    from privtext.metrics.utility import fit_classifier

    emb = {r["doc_id"]: e for r, e in zip(rows, embeddings)}
    public = [r for i, r in enumerate(rows) if i % 3 and r["doc_id"] not in held and r["label"] is not None]
    clf = fit_classifier(np.stack([emb[r["doc_id"]] for r in public]).astype(np.float64),
                         [r["label"] for r in public], seed=ctx.settings.run.seed)
    scored = [r for r in rows if r["doc_id"] in held and r["label"] is not None]
    correct, total = clf.correct(np.stack([emb[r["doc_id"]] for r in scored]).astype(np.float64),
                                 [r["label"] for r in scored])
    assert result.public_documents == len(public) == details["public_documents"]
    assert result.public_only_accuracy == pytest.approx(correct / total)
    assert details["decision"] == result.decision and result.decision.startswith(
        "prefer the synthetic table" if result.downstream_accuracy > result.public_only_accuracy else "prefer the")
    assert result.generator_documents == 0 and np.isnan(result.generator_only_accuracy)  # staged by hand: no run's
    assert "generator" not in result.decision

