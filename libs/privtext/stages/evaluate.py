"""Stage ``evaluate``: utility of the date's staged synthetic documents -> ``protected.utility_reports``.

The sanitized export's utility rows are written by the ``sanitize`` stage itself (its ``_export_utility``).

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

import os
import tempfile
from dataclasses import dataclass

import numpy as np
from pyspark.sql import functions as F

from privtext.metrics.fid import fit_from_moments, frechet_distance, gaussian_fit
from privtext.metrics.utility import fit_classifier, histogram_summary, length_histogram, length_ks, length_plot
from privtext.platform.context import RunContext
from privtext.platform.spark import held_out, tree_sum
from privtext.platform.tables import DOC_EMBEDDINGS, DOCUMENTS, STAGED_SYNTHETIC_DOCUMENTS
from privtext.platform.utility_reports import write_utility


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


def run(ctx: RunContext) -> EvaluateResult:
    from privtext.embed.encoder import encode_texts

    synth = ctx.lakehouse.read(STAGED_SYNTHETIC_DOCUMENTS, date=ctx.date).select("text", "label", "method").toPandas()
    if len(synth) < 2:
        raise ValueError(f"evaluate needs >= 2 staged synthetic documents for {ctx.date}, found {len(synth)}")
    method = str(synth["method"].iloc[0])
    syn_emb = encode_texts(synth["text"].tolist(), ctx.settings.embed).astype(np.float64)
    clf = fit_classifier(syn_emb, synth["label"].fillna("").tolist(), seed=ctx.settings.run.seed)

    emb = (ctx.lakehouse.read(DOC_EMBEDDINGS, upto=ctx.date).where(F.col("model") == ctx.settings.embed.model)
           .dropDuplicates(["doc_id"]))
    docs = ctx.lakehouse.read(DOCUMENTS, upto=ctx.date).select("doc_id", "text", "label").dropDuplicates(["doc_id"])
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
