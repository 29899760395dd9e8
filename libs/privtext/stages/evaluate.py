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

The alternative release (``public_only_accuracy``): the same classifier fitted on the training split's
public documents (no secret of ``pii.secrets``: SecPE's public part, which the refresh already treats as
unprotected) as they are, scored on the same held-out documents. ``decision`` compares the run's own
figures: when public_only exists and scores at least the synthetic table, publishing the public documents
is the better table for a downstream classifier (and costs no secret budget, but protects nothing a
detector missed). At most ``PUBLIC_BASELINE_MAX`` public documents are fitted (a seeded sample, recorded).

The free release (``generator_only_accuracy``): the same classifier fitted on the synthesize run's own
round-0 samples (``protected.generator_samples``: written from the label prompts alone, no private data,
no budget), scored on the same documents. ``decision`` says whether the private selection added anything
over them on this run; where every document holds a secret it is the only other table there is.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame, functions as F

from privtext.metrics.fid import fit_from_moments, frechet_distance, gaussian_fit
from privtext.metrics.utility import fit_classifier, histogram_summary, length_histogram, length_ks, length_plot
from privtext.pii.secrets import secret_types
from privtext.platform.context import RunContext
from privtext.platform.spark import held_out, latest_delivery, tree_sum
from privtext.platform.tables import DOC_EMBEDDINGS, DOCUMENTS, GENERATOR_SAMPLES, PII_SPANS, STAGED_SYNTHETIC_DOCUMENTS
from privtext.platform.utility_reports import write_utility

PUBLIC_BASELINE_MAX = 20000  # public documents fitted for public_only (driver memory O(this x d))


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
    public_only_accuracy: float = float("nan")  # trained on the public training documents as they are
    public_documents: int = 0  # how many public documents that classifier was fitted on
    decision: str = ""  # which table to prefer, from the figures above
    generator_only_accuracy: float = float("nan")  # trained on the run's round-0 samples (the generator alone)
    generator_documents: int = 0


def decision(synthetic: float, public_only: float, public_documents: int, majority: float,
             generator: float = float("nan"), generator_documents: int = 0) -> str:
    """Which release a user should prefer, from one evaluate run's accuracies (a decision aid, measured):
    the public documents as they are against the synthetic table, then what the private selection added
    over the generator's own samples (no private data, no budget)."""
    if public_documents == 0 or np.isnan(public_only):
        verdict = (f"no public documents to compare with: the synthetic table ({synthetic:.0%}) is the only release "
                   f"built from the private documents; the majority label scores {majority:.0%}")
    elif public_only >= synthetic:
        verdict = (f"prefer the {public_documents:,} public documents as they are: {public_only:.0%} against "
                   f"{synthetic:.0%} for the synthetic table (they spend no secret budget, but a secret the detector "
                   "missed is published verbatim)")
    else:
        verdict = (f"prefer the synthetic table: {synthetic:.0%} against {public_only:.0%} for the "
                   f"{public_documents:,} public documents alone")
    if generator_documents == 0 or np.isnan(generator):
        return verdict
    if generator >= synthetic:
        return (f"{verdict}; the generator's own {generator_documents:,} samples (no private data, no budget) score "
                f"{generator:.0%}: the private selection added nothing on this run")
    return (f"{verdict}; the private selection added {synthetic - generator:.0%} over the generator's own "
            f"{generator_documents:,} samples ({generator:.0%})")


def _real_aggregates(real, clfs: list, dim: int, spark) -> tuple:
    """Executors' summable aggregates of the real documents: (n, sum, Gram matrix, correct per classifier
    of ``clfs``, scored, length histogram); the driver holds O(d^2), never real rows."""
    bc = spark.sparkContext.broadcast(clfs)

    def per_partition(frames):
        n, total, gram, scored = np.zeros(1), np.zeros(dim), np.zeros((dim, dim)), np.zeros(1)
        correct = np.zeros(len(bc.value))
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
                for i, clf in enumerate(bc.value):
                    c, t = clf.correct(x[labelled], f["label"][labelled].tolist())
                    correct[i] += c
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

    synth = (ctx.lakehouse.read(STAGED_SYNTHETIC_DOCUMENTS, date=ctx.date)
             .select("text", "label", "method", "run_id").toPandas())
    if len(synth) < 2:
        raise ValueError(f"evaluate needs >= 2 staged synthetic documents for {ctx.date}, found {len(synth)}")
    method = str(synth["method"].iloc[0])
    syn_emb = encode_texts(synth["text"].tolist(), ctx.settings.embed).astype(np.float64)
    clf = fit_classifier(syn_emb, synth["label"].fillna("").tolist(), seed=ctx.settings.run.seed)

    emb = (ctx.lakehouse.read(DOC_EMBEDDINGS, upto=ctx.date).where(F.col("model") == ctx.settings.embed.model)
           .select("doc_id", "embedding", "date"))
    docs = ctx.lakehouse.read(DOCUMENTS, upto=ctx.date).select("doc_id", "text", "label", "ingest_date")
    fraction = ctx.settings.secpe.holdout_fraction
    split = "held_out" if fraction > 0 else "training"
    corpus = latest_delivery(emb, docs).select("doc_id", "embedding", "text", "label")
    real = corpus.where(held_out(fraction)) if fraction > 0 else corpus
    public_clf, n_public = _public_classifier(ctx, corpus, fraction)
    generator_clf, n_generator = _generator_classifier(ctx, str(synth["run_id"].iloc[0]))
    clfs = [clf] + [c for c in (public_clf, generator_clf) if c is not None]
    n, total, gram, correct, scored, real_hist = _real_aggregates(real, clfs, syn_emb.shape[1], ctx.spark)
    n_real = int(n[0])
    if n_real < 2:
        raise ValueError(f"evaluate needs >= 2 embedded real documents in its split ({split}, "
                         f"secpe.holdout_fraction = {fraction}), found {n_real}")
    label_counts = [r["count"] for r in real.where(F.col("label").isNotNull()).groupBy("label").count().collect()]
    metrics, syn_hist = utility_metrics(n_real, total, gram, correct[0], scored[0], real_hist, syn_emb,
                                        synth["text"].tolist(), label_counts)
    if public_clf is not None and scored[0]:
        metrics["public_only_accuracy"] = float(correct[1] / scored[0])
    if generator_clf is not None and scored[0]:
        metrics["generator_only_accuracy"] = float(correct[len(clfs) - 1] / scored[0])
    public_only = metrics.get("public_only_accuracy", float("nan"))
    generator = metrics.get("generator_only_accuracy", float("nan"))
    verdict = decision(metrics["downstream_accuracy"], public_only, n_public, metrics["majority_label_accuracy"],
                       generator, n_generator)
    write_utility(ctx, "synthetic_documents", method, metrics, {
        "public_documents": n_public, "generator_documents": n_generator, "decision": verdict,
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
                          metrics["majority_label_accuracy"], split, public_only, n_public, verdict, generator,
                          n_generator)


def _generator_classifier(ctx: RunContext, run_id: str):
    """(classifier, texts) fitted on the synthesize run ``run_id``'s round-0 samples of this date
    (``protected.generator_samples``); (None, 0) when that run wrote none (e.g. a table staged otherwise)."""
    from privtext.embed.encoder import encode_texts

    rows = (ctx.lakehouse.read(GENERATOR_SAMPLES, date=ctx.date).where(F.col("run_id") == run_id)
            .select("text", "label").toPandas())
    if len(rows) < 2:
        return None, 0
    x = encode_texts(rows["text"].tolist(), ctx.settings.embed).astype(np.float64)
    return fit_classifier(x, rows["label"].fillna("").tolist(), seed=ctx.settings.run.seed), len(rows)


def _public_classifier(ctx: RunContext, corpus: DataFrame, fraction: float):
    """(classifier, documents) fitted on the training split's labelled documents without a secret (at most
    ``PUBLIC_BASELINE_MAX``, seeded sample); (None, 0) when there are none."""
    public = corpus.where(F.col("label").isNotNull()).where(~held_out(fraction))
    if ctx.lakehouse.exists(PII_SPANS):  # as synthesize's load_corpus: a document without a secret span is public
        secret = (ctx.lakehouse.read(PII_SPANS, upto=ctx.date)
                  .where(F.col("entity_type").isin(secret_types(ctx.settings.pii))).select("doc_id").distinct())
        public = public.join(secret, "doc_id", "left_anti")
    rows = (public.orderBy(F.xxhash64("doc_id", F.lit(ctx.settings.run.seed))).limit(PUBLIC_BASELINE_MAX)
            .select("embedding", "label").toPandas())
    if len(rows) == 0:
        return None, 0
    x = np.stack(rows["embedding"].to_numpy()).astype(np.float64)
    return fit_classifier(x, rows["label"].tolist(), seed=ctx.settings.run.seed), len(rows)
