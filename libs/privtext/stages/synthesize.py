"""Stage ``synthesize``: SecPE (or the Aug-PE baseline) synthetic text -> staged ``synthetic_documents``.

Data: ``restricted.doc_embeddings`` (``embed.model``) and ``restricted.documents`` (labels) up to the
run's date, less the held-out split that ``evaluate`` scores (``secpe.holdout_fraction``); a document is private
when ``restricted.pii_spans`` holds a secret of it (the entity types of ``pii.secrets.mode``), public otherwise
(SecPE's split). Labels: ``secpe.labels`` when declared (the vocabulary declared public), else those of the public
documents; documents with another label are not read.

Flow (driver state O(K d + N_syn L d + #secret groups), never O(private rows)):
1. D_pub (``secpe.public_source``, ``secret_clustering.choose_public_source``): the public documents'
   KMeans (Spark MLlib, per label with K split by public label sizes) -> centres and sizes; or, for a
   corpus with too few public documents (all private: the case the product is for), KMeans of round 0's
   generated pool on the driver at the first vote (``secret_clustering.generated_public_clusters``: no
   private row read, no budget spent). ``documents`` with no public document is refused before any charge.
2. SecretNoise on the private records grouped by their secret set: Spark collects one row per distinct
   set (its sorted secret ids and record count), the driver solves the LP and calibrates sigma
   (``secpe.secret_clustering.group_secret_noise``: T rounds, 2 Gaussian releases per round) and
   joins one rho per group back to the records. Aug-PE: sigma = c_max sqrt(T) / mu(p, r), with c_max
   the largest record count of one secret (``secpe.aug_pe``). Both charges record, per secret, the
   records holding it in the data read (all nights up to the date, less the held-out split and the
   documents without a known label, which the release never reads): the secret's group size; and the set
   of records read (``privacy.reads``), which the ledger joins to the secrets found later: Aug-PE's
   per-record event reaches them at their group size, and a secret SecPE read as public (no noise) has
   no guarantee at all.
3. The ledger is charged (guarantee ``secret_protection``, spend (p, r)) before any private statistic
   is computed; a refused charge (``BudgetExceeded``) leaves every table as it was.
4. Protected Evolution (``secpe.evolution.evolve``): each round, the executors assign the rho-sampled
   private rows to the broadcast public centres and return per-partition (counts, sums), tree-reduced
   to the driver (SecPE); or every document votes for its nearest broadcast candidate (Aug-PE).
   Candidates are generated in Spark tasks for the local model, on the driver for an endpoint.
5. ``protected.noisy_centers`` (every round's Eq. 7 release), ``protected.generator_samples`` (the first
   ceil(N_syn / labels) of each label's round-0 samples: the generator alone, no private data, which
   ``evaluate`` scores beside the table) and ``protected.synthetic_documents`` (the N_syn survivors)
   replace the date's partition; MLflow gets per-round histogram summaries and
   timings (no text, no embedding).
6. sigma, and SecPE's centre noise per direction (median 2 R sigma / n_k), are functions of the private
   secrets' structure through sigma (SecretNoise's LP; Aug-PE's c_max): they stay in the protected zone,
   ``protected.utility_reports`` (target ``synthetic_noise``, with ``noise_above_warn``: 1 above
   ``NOISE_SD_WARN``, where the centres' votes are close to random), never in MLflow, the log or the stage
   result (the ledger's entry, also protected, holds sigma too).
"""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from privtext.ledger import Ledger
from privtext.pii.secrets import secret_types
from privtext.platform.config import resolve_uri
from privtext.platform.context import RunContext
from privtext.platform.spark import held_out, latest_delivery, tree_sum
from privtext.platform.tables import (
    DOC_EMBEDDINGS,
    DOCUMENTS,
    GENERATOR_SAMPLES,
    NOISY_CENTERS,
    PII_SPANS,
    STAGED_SYNTHETIC_DOCUMENTS,
)
from privtext.platform.utility_reports import write_utility
from privtext.privacy.accounting import gaussian_event
from privtext.privacy.budget import Exposure, secret_charge, secret_event_charge
from privtext.privacy.mechanisms import make_rng
from privtext.privacy.reads import read_set, run_key
from privtext.secpe.aug_pe import augpe_secret_sigma, augpe_vote, private_votes
from privtext.secpe.evolution import evolve, secpe_vote
from privtext.secpe.secret_clustering import (
    NO_LABEL,
    PublicClusters,
    centres_per_label,
    choose_public_source,
    generated_public_clusters,
    group_secret_noise,
    private_cluster_stats,
    secret_count_pmfs,
)
from privtext.secpe.settings import SecpeSettings

# a centre's noise sd per direction above this: its vote is close to random (docs/products/synthetic.md: at 0.38,
# 20 Newsgroups all private, the table scored 0.09 below the generator's own samples; at 0.08 it cost nothing)
NOISE_SD_WARN = 0.1
NOISE_TARGET = "synthetic_noise"  # protected.utility_reports rows of the run's noise (module doc, step 6)



@dataclass
class SynthesizeResult:
    method: str
    synthetic: int
    rounds: int
    public_documents: int
    private_documents: int
    clusters: int
    public_source: str  # D_pub of the SecPE clusters: documents | generator ("" for Aug-PE)
    r_over_p: float
    vote_seconds: float
    generate_seconds: float
    embed_seconds: float


def add_arguments(parser) -> None:
    parser.add_argument("--method", choices=["secpe", "aug_pe"], help="default: secpe.method")
    parser.add_argument("--n-syn", dest="n_syn", type=int, help="N_syn (default: secpe.n_syn)")
    parser.add_argument("--rounds", type=int, help="T (default: secpe.rounds)")
    parser.add_argument("--clusters", type=int, help="K public centres (default: secpe.clusters)")
    parser.add_argument("--r-over-p", dest="r_over_p", type=float, help="r/p budget (default: secpe.r_over_p)")
    parser.add_argument("--variations", type=int, help="L (default: secpe.variations)")


def load_corpus(ctx: RunContext, use_labels: bool) -> tuple[DataFrame, list]:
    """(doc_id, embedding, label_code, secrets, is_private) per embedded document; label names from
    ``secpe.labels`` when declared, else from the public docs (label_code -1: a label not among them)."""

    lh = ctx.lakehouse
    emb = (lh.read(DOC_EMBEDDINGS, upto=ctx.date).where(F.col("model") == ctx.settings.embed.model)
           .where(~held_out(ctx.settings.secpe.holdout_fraction))  # evaluate's split is never seen here
           .select("doc_id", "embedding", "date"))
    docs = lh.read(DOCUMENTS, upto=ctx.date).select("doc_id", "label", "ingest_date")
    spans = (lh.read(PII_SPANS, upto=ctx.date).where(F.col("entity_type").isin(secret_types(ctx.settings.pii)))
             .select("doc_id", "secret_id").distinct())
    secrets = spans.groupBy("doc_id").agg(F.array_sort(F.collect_set("secret_id")).alias("secrets"))
    # one vote per document, its latest delivery (Aug-PE's record-level accounting)
    corpus = (latest_delivery(emb, docs).select("doc_id", "embedding", "label").join(secrets, "doc_id", "left")
              .withColumn("is_private", F.col("secrets").isNotNull()))
    labels: list = [None]
    if use_labels and ctx.settings.secpe.labels:
        labels = list(ctx.settings.secpe.labels)
    elif use_labels:
        found = sorted(r.label for r in corpus.where(~F.col("is_private") & F.col("label").isNotNull())
                       .select("label").distinct().collect())
        labels = found or [None]
    if labels == [None]:
        corpus = corpus.withColumn("label_code", F.lit(0))
    else:
        mapping = F.create_map(*[x for i, name in enumerate(labels) for x in (F.lit(name), F.lit(i))])
        corpus = corpus.withColumn("label_code", F.coalesce(mapping[F.col("label")], F.lit(-1)))
    return corpus.select("doc_id", "embedding", "label_code", "secrets", "is_private"), labels


def public_kmeans(public: DataFrame, labels: list, k_total: int, settings: SecpeSettings, seed: int) -> PublicClusters:
    """KMEANS(D_pub, K) on Spark MLlib, per label (K split in proportion to public label sizes, >= 2,
    at most the label's distinct embeddings: MLlib's training fails when fewer distinct points than k)."""
    from pyspark.ml.clustering import KMeans
    from pyspark.ml.functions import array_to_vector

    # each label's size and distinct embeddings in one job, not a distinct count per label (the struct counts a
    # null embedding as one value, as ``distinct().count()`` did)
    per_label = {r.label_code: (r["n"], r["distinct"]) for r in public.groupBy("label_code").agg(
        F.count(F.lit(1)).alias("n"), F.countDistinct(F.struct("embedding")).alias("distinct")).collect()}
    sizes = {c: n for c, (n, _) in per_label.items()}
    ks = centres_per_label([sizes.get(c, 0) for c in range(len(labels))], k_total, minimum=2)
    centers, counts, codes = [], [], []
    for c in range(len(labels)):
        n, distinct = per_label.get(c, (0, 0))
        if n == 0:
            continue
        part = public.where(F.col("label_code") == c)
        if distinct == 1:  # MLlib needs k >= 2; one distinct public point is its own centre
            found, found_sizes = [np.asarray(part.first().embedding, dtype=np.float32)], [n]
        else:
            k = min(distinct, ks[c])
            model = KMeans(k=k, seed=seed, maxIter=settings.kmeans_max_iter).fit(
                part.select(array_to_vector("embedding").alias("features")))
            found, found_sizes = model.clusterCenters(), list(model.summary.clusterSizes)
        centers += [np.asarray(x, dtype=np.float32) for x in found]
        counts += found_sizes
        codes += [c if labels != [None] else NO_LABEL] * len(found)
    return PublicClusters.create(np.vstack(centers), counts, codes)


def secret_groups(private: DataFrame) -> tuple[list, np.ndarray, list, int]:
    """Distinct secret sets of the private records: (secret-index lists, record counts, secret-id
    lists, number of secrets); one collected row per set, O(#groups) on the driver."""
    rows = private.groupBy("secrets").count().collect()
    secret_index: dict[str, int] = {}
    groups = [[secret_index.setdefault(s, len(secret_index)) for s in r.secrets] for r in rows]
    return groups, np.array([r["count"] for r in rows], dtype=np.int64), [r.secrets for r in rows], len(secret_index)


class SparkGenerator:
    """The configured generator, run in Spark tasks (texts partitioned) for the local model, or
    directly on the driver for an endpoint (its own thread pool). Candidates are synthetic: collecting
    them is O(N_syn L) and carries no private data."""

    def __init__(self, ctx: RunContext):
        from privtext.generate import get_generator

        self.settings = ctx.settings.generate
        if self.settings.cache_dir:  # the transformers engine's model copy, under the project wherever tasks run
            self.settings = self.settings.model_copy(update={"cache_dir": resolve_uri(self.settings.cache_dir)})
        self.dataset = ctx.settings.run.dataset if ctx.settings.run.dataset in self.settings.prompts else "default"
        self.spark = ctx.spark
        self.local = self.settings.backend == "local"
        self.generator = None if self.local else get_generator(self.settings, self.dataset)
        self.partitions = max(1, ctx.spark.sparkContext.defaultParallelism)

    def _distributed(self, items: list, call) -> list:
        settings, dataset = self.settings, self.dataset
        frame = self.spark.createDataFrame(pd.DataFrame({"i": range(len(items)), "item": items}))
        frame = frame.repartition(min(self.partitions, max(1, len(items))))

        def task(frames):
            from privtext.generate import get_generator

            gen = get_generator(settings, dataset)
            for f in frames:
                out = call(gen, f["item"].tolist(), int(f["i"].iloc[0]) if len(f) else 0)
                yield pd.DataFrame({"i": f["i"], "out": out})

        rows = frame.mapInPandas(task, "i long, out array<string>").collect()
        return [r.out for r in sorted(rows, key=lambda r: r.i)]

    def random(self, n, label, seed=None):
        if not self.local:
            return self.generator.random(n, label, seed=seed)
        return [x[0] for x in self._distributed([label] * n, lambda g, items, i: [
            [t] for t in g.random(len(items), items[0] if items else label, seed=(seed or 0) + i)])]

    def variation(self, texts, L, label=None, seed=None):
        if not self.local:
            return self.generator.variation(texts, L, label=label, seed=seed)
        return self._distributed(list(texts),
                                 lambda g, items, i: g.variation(items, L, label=label, seed=(seed or 0) + i))


def _embedder(settings):
    from privtext.embed.encoder import encode_texts

    return lambda texts: encode_texts(list(texts), settings.embed)


@dataclass
class _Noise:
    """The noise calibrated and charged before any private statistic: sigma, and SecretNoise's per-group
    sampling rates (``rho``, aligned with ``keys``; None for Aug-PE)."""
    sigma: float
    groups: list
    keys: list
    rho: np.ndarray | None


def _config(ctx: RunContext, overrides: dict) -> SecpeSettings:
    cfg = ctx.settings.secpe.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    SecpeSettings.model_validate(cfg.model_dump())  # validate the CLI overrides too
    if ctx.tracked is not None:
        ctx.tracked.log_params({f"secpe.{k}": v for k, v in cfg.model_dump().items()})
    return cfg


def _calibrate_and_charge(ctx: RunContext, cfg: SecpeSettings, corpus: DataFrame, private: DataFrame,
                          n_private: int) -> _Noise:
    """SecretNoise (SecPE) or Aug-PE's sigma, then the ledger charge (refused: nothing is written)."""
    read = read_set(run_key(ctx.settings.run), ((r["doc_id"], None) for r in corpus.select("doc_id").toLocalIterator()),
                    secret_types(ctx.settings.pii))  # every document read, public or private: O(records)
    groups, sizes, keys, n_secrets = secret_groups(private)
    secret_ids = [None] * n_secrets
    for idxs, ids in zip(groups, keys):
        for j, sid in zip(idxs, ids):
            secret_ids[j] = sid
    dataset, det, date = ctx.settings.run.dataset, ctx.settings.run.deterministic, ctx.date.isoformat()
    if cfg.method == "secpe":
        noise = group_secret_noise(groups, sizes, n_secrets, cfg.p, cfg.r, cfg.rounds)
        pmfs, variant, records = secret_count_pmfs(groups, sizes, noise.rho, n_secrets)
        params = {"date": date, "rounds": cfg.rounds, "clusters": cfg.clusters,
                  "clip_radius": cfg.clip_radius, "secret_groups": noise.n_groups,
                  "expected_sampled": noise.expected_sampled,
                  "private_documents": n_private, "read": read}
        charge = secret_charge(dataset, "synthesize", ctx.run_id, "secpe_histogram", p=cfg.p, r=cfg.r,
                               sigma=noise.sigma,
                               rounds=cfg.rounds, releases_per_round=2, count_pmfs=pmfs, params=params,
                               deterministic=det)
        exposures = {sid: Exposure(1, int(variant[j]), int(records[j])) for j, sid in enumerate(secret_ids)}
        result = _Noise(noise.sigma, groups, keys, noise.rho)
    else:
        # records holding each secret in the data the votes read (O(secrets) rows): its group size
        per_secret = {r["s"]: int(r["count"]) for r in
                      private.select(F.explode("secrets").alias("s")).groupBy("s").count().toLocalIterator()}
        c_max = max(per_secret.values(), default=0)
        sigma = augpe_secret_sigma(cfg.p, cfg.r, cfg.rounds, c_max)
        params = {"date": date, "sigma": sigma, "rounds": cfg.rounds, "max_records_per_secret": c_max,
                  "clip_radius": cfg.clip_radius, "private_documents": n_private, "read": read}
        if sigma <= 0:
            raise ValueError(f"secpe.r_over_p = {cfg.r_over_p}: Aug-PE without noise has no guarantee; "
                             "use a finite r_over_p")
        charge = secret_event_charge(dataset, "synthesize", ctx.run_id, "aug_pe_histogram", p=cfg.p, r=cfg.r,
                                     event=gaussian_event(sigma, max(c_max, 1), cfg.rounds), params=params,
                                     deterministic=det, record_event=gaussian_event(sigma, 1, cfg.rounds))
        exposures = {sid: Exposure(1, 0, per_secret[sid]) for sid in secret_ids}
        result = _Noise(sigma, groups, keys, None)
    Ledger(ctx.lakehouse, ctx.settings).charge(charge, exposures or None, tracked=ctx.tracked)  # None: no secret yet
    return result


def _secpe_vote(ctx: RunContext, cfg: SecpeSettings, corpus: DataFrame, private: DataFrame, labels: list,
                noise: _Noise, rng, dim: int, n_private: int, releases: list, source: str):
    """SecPE's vote: rho-sampled private rows assigned to the broadcast public centres, per-partition
    (counts, sums) tree-reduced to the driver. The public centres: the public documents' KMeans
    (``source`` documents) or round 0's generated pool's (generator, built at the first vote)."""
    spark, R, seed = ctx.spark, cfg.clip_radius, ctx.settings.run.seed
    labelled = labels != [None]
    if source == "documents":
        public = public_kmeans(corpus.where(~F.col("is_private")), labels, cfg.clusters, cfg, seed)
    else:
        def public(pool, pool_labels):  # no private row: only the candidates RANDOM_API wrote
            return generated_public_clusters(pool, pool_labels, cfg.clusters, R, seed, labelled)
    rho_table = spark.createDataFrame(pd.DataFrame({"key": [_key(k) for k in noise.keys], "rho": noise.rho}))
    sampled = (private.withColumn("key", F.sha2(F.concat_ws("\u0001", "secrets"), 256))
               .join(F.broadcast(rho_table), "key").select("embedding", "label_code", "rho"))

    def private_stats(t: int, clusters: PublicClusters):
        round_seed = int(rng.integers(2**63))
        if n_private == 0:
            return np.zeros(clusters.k), np.zeros((clusters.k, dim))
        bc = spark.sparkContext.broadcast(clusters)

        def per_partition(frames):
            from pyspark import TaskContext

            part = TaskContext.get().partitionId()
            prng = np.random.default_rng([round_seed, part])
            counts = np.zeros(bc.value.k)
            sums = np.zeros((bc.value.k, dim))
            for f in frames:
                emb = np.stack(f["embedding"].to_numpy()) if len(f) else np.zeros((0, dim), np.float32)
                keep = prng.random(len(f)) < f["rho"].to_numpy()
                c, s = private_cluster_stats(emb, bc.value, R, keep, f["label_code"].to_numpy() if labelled else None)
                counts += c
                sums += s
            return counts, sums

        stats = tree_sum(sampled, per_partition)
        bc.unpersist()
        return stats

    return secpe_vote(private_stats, public, noise.sigma, rng, R,
                      on_release=lambda t, noisy: releases.append((t, noisy)))


def _augpe_vote(ctx: RunContext, cfg: SecpeSettings, corpus: DataFrame, labels: list, sigma: float, rng):
    """Aug-PE's vote: every document votes for its nearest broadcast candidate."""
    spark, R = ctx.spark, cfg.clip_radius
    voters = corpus.select("embedding", "label_code")
    labelled = labels != [None]

    def votes(t, cand_emb, cand_labels):
        bc = spark.sparkContext.broadcast((cand_emb, cand_labels))

        def per_partition(frames):
            out = np.zeros(bc.value[0].shape[0])
            for f in frames:
                if len(f):
                    out += private_votes(np.stack(f["embedding"].to_numpy()), bc.value[0], R,
                                         f["label_code"].to_numpy() if labelled else None, bc.value[1])
            return (out,)

        (hist,) = tree_sum(voters, per_partition)
        bc.unpersist()
        return hist

    return augpe_vote(votes, sigma, rng)


def _write(ctx: RunContext, method: str, result, releases: list, labels: list) -> None:
    """Replace the date's partitions of ``protected.noisy_centers`` (SecPE), the generator-only baseline
    (``protected.generator_samples``) and the staged synthetic documents."""
    spark, date = ctx.spark, ctx.date
    if releases:
        rows = [{"run_id": ctx.run_id, "round": t, "label": None if c < 0 else labels[c], "center_id": k,
                 "noisy_count": float(noisy.counts[k]), "center": noisy.centers[k].astype(np.float32).tolist(),
                 "date": date}
                for t, noisy in releases for k, c in enumerate(noisy.labels)]
        ctx.lakehouse.replace_partitions(NOISY_CENTERS, spark.createDataFrame(
            pd.DataFrame(rows), from_arrow_schema(NOISY_CENTERS.schema)), {"date": [date]})
    alone = pd.DataFrame({"synthetic_id": [uuid.uuid4().hex for _ in result.generator_only],
                          "text": [t for t, _ in result.generator_only], "label": [l for _, l in result.generator_only],
                          "method": "generator", "round": np.zeros(len(result.generator_only), dtype=np.int32),
                          "run_id": ctx.run_id, "date": date})
    ctx.lakehouse.replace_partitions(GENERATOR_SAMPLES, spark.createDataFrame(
        alone, from_arrow_schema(GENERATOR_SAMPLES.schema)), {"date": [date]})
    synth = pd.DataFrame({"synthetic_id": [uuid.uuid4().hex for _ in result.texts], "text": result.texts,
                          "label": result.labels, "method": method,
                          "round": np.asarray(result.born, dtype=np.int32), "run_id": ctx.run_id, "date": date})
    ctx.lakehouse.replace_partitions(STAGED_SYNTHETIC_DOCUMENTS,
                                     spark.createDataFrame(synth, from_arrow_schema(STAGED_SYNTHETIC_DOCUMENTS.schema)),
                                     {"date": [date]})


def _log_rounds(tracked, result, labels: list) -> None:
    if tracked is None:
        return
    for s in result.rounds:
        tracked.log_metrics({f"round{s.round}.{k}": v for k, v in s.__dict__.items()
                             if isinstance(v, (int, float)) and k != "round"})
    tracked.log_dict({"rounds": [s.__dict__ for s in result.rounds], "labels": [str(x) for x in labels]},
                     "synthesize/rounds.json")


def run(ctx: RunContext, method: str | None = None, n_syn: int | None = None, rounds: int | None = None,
        clusters: int | None = None, r_over_p: float | None = None, variations: int | None = None) -> SynthesizeResult:
    cfg = _config(ctx, dict(method=method, n_syn=n_syn, rounds=rounds, clusters=clusters, r_over_p=r_over_p,
                            variations=variations))
    run_cfg = ctx.settings.run
    rng = make_rng(run_cfg.deterministic, run_cfg.seed)
    corpus, labels = load_corpus(ctx, cfg.use_labels)
    corpus = corpus.where(F.col("label_code") >= 0).cache()
    private = corpus.where("is_private")
    public_per_label = {r.label_code: r["count"] for r in
                        corpus.where(~F.col("is_private")).groupBy("label_code").count().collect()}
    n_private, n_public = private.count(), sum(public_per_label.values())
    source = ""
    if cfg.method == "secpe":  # refused here, before any charge; Aug-PE reads no public centre
        source = choose_public_source(cfg.public_source, [public_per_label.get(c, 0) for c in range(len(labels))],
                                      cfg.clusters)
    if n_private + n_public == 0:
        raise ValueError("synthesize found no embedded document with a known label to learn from")
    dim = len(corpus.select("embedding").first().embedding)

    noise = _calibrate_and_charge(ctx, cfg, corpus, private, n_private)  # before any private statistic is computed
    releases: list[tuple[int, object]] = []
    if cfg.method == "secpe":
        vote = _secpe_vote(ctx, cfg, corpus, private, labels, noise, rng, dim, n_private, releases, source)
    else:
        vote = _augpe_vote(ctx, cfg, corpus, labels, noise.sigma, rng)
    result = evolve(SparkGenerator(ctx), _embedder(ctx.settings), vote, labels, cfg.n_syn, cfg.variations,
                    cfg.rounds, cfg.clip_radius, seed=run_cfg.seed)
    corpus.unpersist()
    _write(ctx, cfg.method, result, releases, labels)
    _log_rounds(ctx.tracked, result, labels)
    n_clusters = releases[0][1].counts.size if releases else 0
    write_utility(ctx, NOISE_TARGET, cfg.method, noise_figures(noise.sigma, releases),
                  {"protected": "functions of the private secrets' structure through sigma: never in MLflow, the log "
                                "or the stage result", "noise_sd_warn": NOISE_SD_WARN, "dimensions": dim,
                   "clip_radius": cfg.clip_radius, "public_source": source})
    return SynthesizeResult(
        cfg.method, len(result.texts), cfg.rounds, n_public, n_private, n_clusters, source,
        cfg.r_over_p, sum(s.vote_seconds for s in result.rounds), sum(s.generate_seconds for s in result.rounds),
        sum(s.embed_seconds for s in result.rounds))


def noise_figures(sigma: float, releases: list) -> dict[str, float]:
    """What the run's noise was, for the protected zone only (module doc, step 6): sigma and, for SecPE, the
    centres' median noise per direction (2 R sigma / n_k) and whether it is above ``NOISE_SD_WARN``."""
    figures = {"sigma": float(sigma)}
    if releases:
        sd = float(np.median(releases[0][1].noise_sd))
        figures.update(centre_noise_sd=sd, noise_above_warn=float(sd > NOISE_SD_WARN))
    return figures


def _key(secrets) -> str:
    """Spark's sha2(concat_ws('\\x01', secrets), 256) of a sorted secret-id list, on the driver."""
    return hashlib.sha256("\u0001".join(secrets).encode()).hexdigest()
