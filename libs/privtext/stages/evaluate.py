"""Stage ``evaluate``: utility of the date's staged synthetic documents -> ``protected.utility_reports``.

The sanitized export's utility rows are written by ``export_utility`` here, called from the ``sanitize``
stage after its write (``metrics.export_utility``: a classifier trained on sanitized vs original text).

Metrics (SecPE Sec. 4): Fréchet distance between the real and synthetic sentence-embedding sets
(FID on ``embed.model`` embeddings), word-length distributions (summary + KS distance), and
downstream accuracy of a classifier fitted on the synthetic texts' embeddings and labels, tested on
the held-out real documents (``metrics.utility``). The real side is computed in the executors as
summable aggregates (n, sum, Gram matrix for FID; length histogram; correct/total counts with the
broadcast classifier), so the driver holds O(d^2), never real rows. Synthetic texts are a DP release,
collected (N_syn rows). The report holds aggregates of private data that are not noised: it stays in
the protected zone (not a release). The length plot goes to MLflow as an artifact.

Held-out split (SecPE Sec. 4 tests on a separate split): the real documents scored are those up to the
run's date in the held-out split (``secpe.holdout_fraction`` of doc_ids by hash, ``platform.spark.held_out``),
which ``synthesize`` never reads; the report's details record the split (fraction, rule, documents scored).
With ``holdout_fraction: 0`` the corpus synthesize voted with is scored, and the details say ``training``.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import DoubleType, StructField, StructType

from privtext.metrics.export_utility import ACCURACY_METRICS, TEST_FRACTION, downstream_accuracy, is_test
from privtext.metrics.fid import fit_from_moments, frechet_distance, gaussian_fit
from privtext.metrics.utility import fit_classifier, histogram_summary, length_histogram, length_ks, length_plot
from privtext.platform.context import RunContext
from privtext.platform.spark import held_out, tree_sum
from privtext.platform.tables import DOC_EMBEDDINGS, DOCUMENTS, STAGED_SYNTHETIC_DOCUMENTS, UTILITY_REPORTS


@dataclass
class EvaluateResult:
    method: str
    synthetic: int
    real: int
    fid: float
    downstream_accuracy: float
    length_ks: float
    real_length_mean: float
    synthetic_length_mean: float
    majority_accuracy: float  # the baseline: always guessing the real documents' most frequent label
    split: str  # the real documents scored: "held_out" (never seen by synthesize) or "training"


def _real_aggregates(real, clf, dim: int, spark) -> tuple:
    """Executors' summable aggregates of the real documents: (n, sum, Gram matrix, correct, scored,
    length histogram); the driver holds O(d^2), never real rows."""
    bc = spark.sparkContext.broadcast(clf)

    def per_partition(frames):
        n, total, gram, correct, scored = np.zeros(1), np.zeros(dim), np.zeros((dim, dim)), np.zeros(1), np.zeros(1)
        hist = length_histogram([])
        for f in frames:
            if not len(f):
                continue
            x = np.stack(f["embedding"].to_numpy()).astype(np.float64)
            n += len(f)
            total += x.sum(axis=0)
            gram += x.T @ x
            hist += length_histogram(f["text"].tolist())
            labelled = f["label"].notna().to_numpy()
            if labelled.any():
                c, t = bc.value.correct(x[labelled], f["label"][labelled].tolist())
                correct += c
                scored += t
        return n, total, gram, correct, scored, hist

    try:
        return tree_sum(real, per_partition)
    finally:
        bc.unpersist()


def utility_metrics(n_real: int, total, gram, correct: float, scored: float, real_hist, syn_emb, syn_texts: list[str],
                    label_counts: list[int]) -> tuple[dict, object]:
    """The report's metrics from the real side's aggregates and the synthetic side (pure): FID, downstream
    and majority-label accuracy, length KS and both length summaries. Returns (metrics, synthetic histogram)."""
    fd = frechet_distance(*fit_from_moments(n_real, total, gram), *gaussian_fit(syn_emb))
    syn_hist = length_histogram(syn_texts)
    metrics = {"fid": fd, "downstream_accuracy": float(correct / scored) if scored else float("nan"),
               "majority_label_accuracy": max(label_counts) / sum(label_counts) if label_counts else float("nan"),
               "length_ks": length_ks(real_hist, syn_hist),
               **{f"real_length_{k}": v for k, v in histogram_summary(real_hist).items()},
               **{f"synthetic_length_{k}": v for k, v in histogram_summary(syn_hist).items()}}
    return metrics, syn_hist


def write_utility(ctx: RunContext, target: str, method: str, metrics: dict, details: dict) -> None:
    """Replace ``target``'s rows of the date in ``protected.utility_reports`` (other targets' rows of the
    date are kept: the export and the synthetic refresh may run on the same date)."""
    rows = pd.DataFrame({"target": target, "method": method, "metric": list(metrics),
                         "value": [float(v) for v in metrics.values()], "details": json.dumps(details),
                         "run_id": ctx.run_id, "date": ctx.date})
    new = ctx.spark.createDataFrame(rows, from_arrow_schema(UTILITY_REPORTS.schema))
    kept = ctx.lakehouse.read(UTILITY_REPORTS, date=ctx.date).where(F.col("target") != target)
    ctx.lakehouse.replace_partitions(UTILITY_REPORTS, kept.unionByName(new), {"date": [ctx.date]})


ACCURACY_SCHEMA = StructType([StructField(name, DoubleType()) for name in ACCURACY_METRICS])


def _accuracy_batches(seed: int):
    """mapInPandas body (one partition): a classifier trained on the sanitized vs the original text, one row of
    aggregates (``metrics.export_utility.downstream_accuracy``); no text leaves the executor."""

    def run(frames):
        frame = pd.concat(list(frames), ignore_index=True)
        if len(frame):
            test = [is_test(d, TEST_FRACTION) for d in frame["doc_id"]]
            yield pd.DataFrame([downstream_accuracy(frame["text"].tolist(), frame["sanitized_text"].tolist(),
                                                    frame["label"].tolist(), test, seed)])[list(ACCURACY_METRICS)]

    return run


def export_utility(ctx: RunContext, staged, similarity: float | None, format_kept_share: float) -> None:
    """What an analyst loses with the sanitized export, as the date's ``sanitized_documents`` rows (aggregates
    only): a classifier trained on the sanitized vs the original text of at most
    ``clusant.metrics.utility_documents`` labelled documents of the date (first by hash of doc_id; split by
    doc_id hash; both scored on the original test texts), in one small job after sanitize's write, with
    sanitize's sampled similarity and its share of replacements kept in their type and surface format.
    ``staged``: sanitize's output (doc_id, sanitized_text). An empty training or test split (no labelled
    document) gives no accuracy rows."""
    limit = ctx.settings.clusant.metrics.utility_documents
    if limit == 0:
        return
    labelled = (ctx.lakehouse.read(DOCUMENTS, date=ctx.date).where(F.col("label").isNotNull())
                .select("doc_id", "text", "label"))
    sample = (labelled.join(staged.select("doc_id", "sanitized_text"), "doc_id")
              .orderBy(F.sha2("doc_id", 256)).limit(limit).coalesce(1))
    row = sample.mapInPandas(_accuracy_batches(ctx.settings.run.seed), ACCURACY_SCHEMA).first()
    measured = {**(row.asDict() if row is not None else {}), "format_kept_share": format_kept_share,
                "semantic_similarity": similarity}
    metrics = {k: v for k, v in measured.items() if v is not None and math.isfinite(v)}  # an empty split: no row
    write_utility(ctx, "sanitized_documents", ctx.settings.clusant.method, metrics, {
        "classifier": "tfidf_logistic_regression", "trained_on": "sanitized vs original text, same split",
        "scored_on": "original test texts", "max_documents": limit, "test_fraction": TEST_FRACTION,
        "split_rule": "sha256('privtext-holdout:' + doc_id)[:13 hex] / 16^13 < test_fraction",
        "similarity_documents": ctx.settings.clusant.metrics.max_documents})


def run(ctx: RunContext) -> EvaluateResult:
    from privtext.embed.encoder import encode_texts

    synth = ctx.lakehouse.read(STAGED_SYNTHETIC_DOCUMENTS, date=ctx.date).select("text", "label", "method").toPandas()
    if len(synth) < 2:
        raise ValueError(f"evaluate needs >= 2 staged synthetic documents for {ctx.date}, found {len(synth)}")
    method = str(synth["method"].iloc[0])
    syn_emb = encode_texts(synth["text"].tolist(), ctx.settings.embed).astype(np.float64)
    clf = fit_classifier(syn_emb, synth["label"].fillna("").tolist(), seed=ctx.settings.run.seed)

    emb = ctx.lakehouse.read(DOC_EMBEDDINGS, upto=ctx.date).where(F.col("model") == ctx.settings.embed.model)
    docs = ctx.lakehouse.read(DOCUMENTS, upto=ctx.date).select("doc_id", "text", "label")
    fraction = ctx.settings.secpe.holdout_fraction
    split = "held_out" if fraction > 0 else "training"
    real = emb.select("doc_id", "embedding").join(docs, "doc_id")
    if fraction > 0:
        real = real.where(held_out(fraction))
    n, total, gram, correct, scored, real_hist = _real_aggregates(real, clf, syn_emb.shape[1], ctx.spark)
    n_real = int(n[0])
    if n_real < 2:
        raise ValueError(f"evaluate needs >= 2 embedded real documents in its split ({split}, "
                         f"secpe.holdout_fraction = {fraction}), found {n_real}")
    label_counts = [r["count"] for r in real.where(F.col("label").isNotNull()).groupBy("label").count().collect()]
    metrics, syn_hist = utility_metrics(n_real, total, gram, correct[0], scored[0], real_hist, syn_emb,
                                        synth["text"].tolist(), label_counts)
    write_utility(ctx, "synthetic_documents", method, metrics, {
        "synthetic": len(synth), "real": n_real, "scored": int(scored[0]), "classifier": "logistic_regression",
        "embedding": ctx.settings.embed.model, "split": split, "holdout_fraction": fraction,
        "holdout_rule": "sha256('privtext-holdout:' + doc_id)[:13 hex] / 16^13 < fraction"})
    if ctx.tracked is not None:
        ctx.tracked.log_metrics({f"utility.{k}": v for k, v in metrics.items()})
        with tempfile.TemporaryDirectory() as tmp:
            ctx.tracked.log_artifact(length_plot(real_hist, syn_hist, os.path.join(tmp, "lengths.png"),
                                                 f"{method}: words per text"), "evaluate")
    return EvaluateResult(method, len(synth), n_real, metrics["fid"], metrics["downstream_accuracy"],
                          metrics["length_ks"], metrics["real_length_mean"], metrics["synthetic_length_mean"],
                          metrics["majority_label_accuracy"], split)
