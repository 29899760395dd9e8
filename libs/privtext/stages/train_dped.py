"""Stage ``train_dped``: restricted.documents -> DPED word embeddings (dped-paper.txt, Alg. 1).

Guarantee: (epsilon, delta)-DP w.r.t. adding/removing one unit (user when every document has a
``user_id``, else document), for the vocabulary selection and all M queries together (PLD accountant;
RDP cross-check logged); the ledger is charged before any text is read. Sensitivities:
``privtext.dped.aggregation``. The flow, step by step (what each Spark task returns, what reaches the
driver): docs/products/word-vectors.md, "How the stage runs".
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from pyspark.sql import DataFrame, functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StructField,
    StructType,
)

from privtext.dped.aggregation import (
    Aggregate,
    NoiseMultipliers,
    aggregate,
    calibrate,
    dped_event,
    require_signal,
    sensitivities,
    sigmas,
)
from privtext.dped.settings import DpedSettings
from privtext.dped.sharding import shard_of
from privtext.dped.student import train_student
from privtext.dped.teacher import teacher_answers, train_teacher
from privtext.dped.vocabulary import dp_select, public_anchor, public_words, tokenize, unit_top_ids
from privtext.errors import Refused
from privtext.ledger import Ledger
from privtext.platform.context import RunContext
from privtext.platform.tables import DOCUMENTS, STAGED_WORD_VECTORS
from privtext.privacy.accounting import epsilon_of
from privtext.privacy.budget import dp_charge
from privtext.privacy.mechanisms import make_rng
from privtext.privacy.reads import read_set, run_key
from privtext.torch_scope import torch_scope

MODEL_NAME = "dped-word-embeddings"

# The ONLY columns a teacher task returns: query position, clipped hidden vector, top-k vote set.
TEACHER_ANSWER_SCHEMA = StructType([
    StructField("shard", IntegerType(), False),
    StructField("query", IntegerType(), False),
    StructField("hidden", ArrayType(FloatType()), False),
    StructField("votes", ArrayType(IntegerType()), False),
])
# What a release task returns per query: the noisy check's outcome and the noisy releases (NaN / -1 where abstained).
_RELEASE_SCHEMA = StructType([
    StructField("query", IntegerType(), False),
    StructField("answered", BooleanType(), False),
    StructField("hidden", ArrayType(DoubleType()), True),
    StructField("labels", ArrayType(LongType()), True),
])


class EmptyVocabulary(Refused):
    """No public word passed the DP vocabulary selection: nothing is released; the run's charge stands."""


@dataclass
class TrainDpedResult:
    documents: int
    teachers: int
    adjacency: str
    queries: int
    released_words: int
    answered_fraction: float
    epsilon: float
    delta: float
    epsilon_pld: float
    epsilon_rdp: float
    ledger_entry_id: str
    model_version: str
    teacher_seconds: float


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--epsilon", type=float, help="the run's epsilon (default: dped.epsilon in conf)")
    parser.add_argument("--teachers", type=int, help="number of teachers N (default: dped.n_teachers)")
    parser.add_argument("--all-dates", dest="all_dates", action="store_true",
                        help="train on every ingest date instead of --date")


# ------------------------------------------------------------------------------------------------
# Spark pieces (executors)
# ------------------------------------------------------------------------------------------------

def with_units_and_shards(docs: DataFrame, n_shards: int, salt: str) -> tuple[DataFrame, str]:
    """Add ``unit`` and ``shard`` columns; adjacency "user" iff every row has a user_id."""
    missing = docs.where(F.col("user_id").isNull() | (F.col("user_id") == "")).limit(1).count()
    adjacency = "user" if missing == 0 else "record"
    unit = (F.concat(F.lit("user:"), F.col("user_id")) if adjacency == "user"
            else F.concat(F.lit("doc:"), F.col("doc_id")))

    @F.pandas_udf(IntegerType())
    def shard_udf(units: pd.Series) -> pd.Series:
        return pd.Series([shard_of(u, n_shards, salt) for u in units], dtype="int32")

    return docs.withColumn("unit", unit).withColumn("shard", shard_udf(F.col("unit"))), adjacency


def tokenized(docs: DataFrame, words: list[str]) -> DataFrame:
    """Replace ``text`` by ``ids``: positions of its tokens in the public word list (others dropped)."""
    index = {w: i for i, w in enumerate(words)}

    @F.pandas_udf(ArrayType(IntegerType()))
    def ids_udf(texts: pd.Series) -> pd.Series:
        return pd.Series([np.array([index[t] for t in tokenize(x or "") if t in index], dtype=np.int32)
                          for x in texts])

    return docs.withColumn("ids", ids_udf(F.col("text"))).drop("text")


def unit_counts(tokens: DataFrame, n_words: int, words_per_unit: int) -> np.ndarray:
    """[|V|] number of units using each word (each unit: at most ``words_per_unit`` words), reduced
    in Spark; only the count vector reaches the driver."""
    def top(pdf: pd.DataFrame) -> pd.DataFrame:
        ids = np.concatenate([np.asarray(x, dtype=np.int64) for x in pdf["ids"]]) if len(pdf) else np.zeros(0, np.int64)
        return pd.DataFrame({"word": unit_top_ids(ids, words_per_unit).astype(np.int32)})

    per_unit = tokens.select("unit", "ids").groupBy("unit").applyInPandas(top, "word int")
    counts = np.zeros(n_words, dtype=np.int64)
    for row in per_unit.groupBy("word").count().collect():
        counts[row["word"]] = row["count"]
    return counts


def teacher_answer_frame(tokens: DataFrame, n_words: int, query_ids: np.ndarray, settings: DpedSettings,
                         anchor: np.ndarray | None, seed: int) -> DataFrame:
    """One task per shard trains its teacher (on its rows in ``doc_id`` order, seeded by shard) and
    returns only its answers (TEACHER_ANSWER_SCHEMA)."""
    query_ids = np.asarray(query_ids, dtype=np.int64)

    def teach(pdf: pd.DataFrame) -> pd.DataFrame:
        shard = int(pdf["shard"].iloc[0])
        pdf = pdf.sort_values("doc_id", kind="stable")  # shuffles do not keep row order; seeds should
        docs = [np.asarray(x, dtype=np.int64) for x in pdf["ids"]]
        with torch_scope(threads=1):
            teacher = train_teacher(docs, n_words, settings, seed * 100_003 + shard)
            hidden, votes = teacher_answers(teacher, query_ids, settings.top_k, clip=settings.clip_hidden,
                                            anchor=anchor)
        return pd.DataFrame({"shard": np.full(query_ids.size, shard, dtype=np.int32),
                             "query": np.arange(query_ids.size, dtype=np.int32),
                             "hidden": list(hidden.astype(np.float32)), "votes": list(votes.astype(np.int32))})

    # one partition per shard (range partitioning on the shard key; the groupBy reuses it), so the
    # teachers run as parallel tasks rather than being coalesced into one
    by_shard = tokens.select("shard", "doc_id", "ids").repartitionByRange(settings.n_teachers, "shard")
    return by_shard.groupBy("shard").applyInPandas(teach, TEACHER_ANSWER_SCHEMA)


def released_answers(answers: DataFrame, n_queries: int, settings: DpedSettings, multipliers: NoiseMultipliers,
                     deterministic: bool, seed: int, block: int = 256) -> Aggregate:
    """Eq. 1-2 with the noisy check, released in Spark: the teachers' answers are grouped by blocks of
    ``block`` queries; each task sums its block's N hidden vectors and vote sets (the [block, M] vote
    histogram) and releases the block with ``aggregation.aggregate`` (rows are independent; noise from
    ``make_rng`` in the task: ChaCha20 keyed from os.urandom, or PCG64(seed, block) when deterministic).
    Only the release reaches the driver: answered flag, noisy hidden mean [d] and noisy top-k labels per
    query, O(M (d + k)) whatever N (the raw vote histogram, up to M * min(M, N k) counts, never leaves
    the executors). A failed task's retry draws fresh noise and its first attempt's output is discarded:
    one release per block is ever observed."""
    def release(pdf: pd.DataFrame) -> pd.DataFrame:
        b = int(pdf["block"].iloc[0])
        first, last = b * block, min((b + 1) * block, n_queries)
        local = pdf["query"].to_numpy().astype(np.int64) - first
        hidden_sum = np.zeros((last - first, settings.dim))
        np.add.at(hidden_sum, local, np.stack(pdf["hidden"].to_numpy()).astype(np.float64))
        votes = [np.asarray(v, dtype=np.int64) for v in pdf["votes"]]
        rows = np.repeat(local, [v.size for v in votes])
        cols = np.concatenate(votes) if votes else np.zeros(0, np.int64)
        keep = cols >= 0
        hist = sp.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])), shape=(last - first, n_queries))
        rng = make_rng(deterministic, seed * 1_000_003 + b)
        agg = aggregate(hidden_sum, hist, settings, multipliers, rng, first_query=first)
        n = last - first
        return pd.DataFrame({
            "query": np.arange(first, last, dtype=np.int32), "answered": agg.answered,
            "hidden": list(agg.hidden) if agg.hidden is not None else [None] * n,
            "labels": list(agg.labels) if agg.labels is not None else [None] * n})

    released = (answers.withColumn("block", (F.col("query") / F.lit(block)).cast("int"))
                .groupBy("block").applyInPandas(release, _RELEASE_SCHEMA))
    answered = np.zeros(n_queries, dtype=bool)
    hidden = np.full((n_queries, settings.dim), np.nan) if multipliers.hidden is not None else None
    labels = np.full((n_queries, settings.top_k), -1, dtype=np.int64) if multipliers.vote is not None else None
    for row in released.toLocalIterator():  # M rows of O(d + k)
        q = row["query"]
        answered[q] = row["answered"]
        if hidden is not None:
            hidden[q] = row["hidden"]
        if labels is not None:
            labels[q] = row["labels"]
    return Aggregate(answered=answered, hidden=hidden, labels=labels)


# ------------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------------

def n_charged_queries(settings: DpedSettings, n_public: int) -> int:
    """M charged: the first max_vocab public words, or max_vocab >= |DP-selected vocabulary|."""
    return min(settings.max_vocab or n_public, n_public)


def run(ctx: RunContext, epsilon: float | None = None, teachers: int | None = None,
        all_dates: bool = False) -> TrainDpedResult:
    update = {k: v for k, v in (("epsilon", epsilon), ("n_teachers", teachers)) if v is not None}
    settings = DpedSettings.model_validate({**ctx.settings.dped.model_dump(), **update})
    seed = ctx.settings.run.seed
    rng = make_rng(ctx.settings.run.deterministic, seed)
    words = public_words()
    n_queries = n_charged_queries(settings, len(words))
    multipliers = calibrate(settings, n_queries)
    snr = require_signal(settings, multipliers, n_queries)  # data-independent: refuses before any charge or read
    event = dped_event(settings, multipliers, n_queries)

    docs = ctx.lakehouse.read(DOCUMENTS, date=None if all_dates else ctx.date)
    docs, adjacency = with_units_and_shards(docs.select("doc_id", "user_id", "text"), settings.n_teachers,
                                            settings.shard_salt)
    entry_id, eps_pld, eps_rdp = _charge(ctx, settings, multipliers, event, n_queries, adjacency,
                                         records_read(docs, adjacency, run_key(ctx.settings.run)), snr)

    tokens = tokenized(docs, words).select("doc_id", "unit", "shard", "ids").cache()
    try:
        n_docs = tokens.count()
        if settings.vocabulary_mode == "dp_selection":
            counts = unit_counts(tokens, len(words), settings.vocab_words_per_unit)
            vocab = dp_select(counts, words, multipliers.vocabulary, settings.vocab_words_per_unit,
                              settings.vocab_threshold_sigmas, settings.max_vocab, rng)
        else:
            vocab = words[:n_queries]
        if not vocab:
            raise EmptyVocabulary("no public word passed the DP vocabulary selection: nothing to release (the "
                                  "charge stands)")
        index = {w: i for i, w in enumerate(words)}
        query_ids = np.array([index[w] for w in vocab], dtype=np.int64)
        anchor = public_anchor(words, settings.dim)
        t0 = time.time()
        answers = teacher_answer_frame(tokens, len(words), query_ids, settings, anchor, seed)
        agg = released_answers(answers, len(vocab), settings, multipliers, ctx.settings.run.deterministic, seed)
        teacher_seconds = time.time() - t0
    finally:
        tokens.unpersist()

    vectors = train_student(agg, settings, seed)
    released = np.flatnonzero(agg.answered)
    model_version = _log_model(ctx, settings, vocab, vectors, released, entry_id)
    out = pd.DataFrame({"word": [vocab[i] for i in released],
                        "vector": [vectors[i].astype(np.float32) for i in released],
                        "model_version": model_version, "run_id": ctx.run_id, "method": "dped", "date": ctx.date})
    frame = ctx.spark.createDataFrame(out, schema=from_arrow_schema(STAGED_WORD_VECTORS.schema))
    ctx.lakehouse.replace_partitions(STAGED_WORD_VECTORS, frame, {"date": [ctx.date]})
    ctx.tracked.log_metrics({"dped.released_words": len(released), "dped.queries": len(vocab),
                             "dped.answered_fraction": float(agg.answered.mean()) if len(vocab) else 0.0})
    return TrainDpedResult(
        documents=n_docs, teachers=settings.n_teachers, adjacency=adjacency, queries=len(vocab),
        released_words=int(released.size), answered_fraction=float(agg.answered.mean()) if len(vocab) else 0.0,
        epsilon=settings.epsilon, delta=settings.delta, epsilon_pld=eps_pld, epsilon_rdp=eps_rdp,
        ledger_entry_id=entry_id, model_version=model_version, teacher_seconds=teacher_seconds,
    )


def records_read(docs: DataFrame, adjacency: str, key: bytes) -> dict:
    """The read set of the run (``privacy.reads.read_set``): each document read, with its user for user-level
    adjacency; ids only, O(records) on the driver."""
    rows = docs.select("doc_id", "unit").distinct().toLocalIterator()
    return read_set(key, ((r["doc_id"], r["unit"] if adjacency == "user" else None) for r in rows))


def _charge(ctx: RunContext, settings: DpedSettings, multipliers: NoiseMultipliers, event, n_queries: int,
            adjacency: str, read: dict, snr: dict[str, float]) -> tuple[str, float, float]:
    """Charge the whole run (vocabulary + M queries) before anything is computed or released."""
    eps_pld = epsilon_of(event, settings.delta)
    eps_rdp = epsilon_of(event, settings.delta, accountant="rdp")
    ledger = Ledger(ctx.lakehouse, ctx.settings)
    dataset = ctx.settings.run.dataset
    unit = "user" if adjacency.startswith("user") else "record"
    ledger.charge(dp_charge(
        dataset, "train_dped", ctx.run_id, "dped_noisy_aggregation", event=event, delta=settings.delta, unit=unit,
        params={"date": ctx.date.isoformat(), "adjacency": adjacency, "n_teachers": settings.n_teachers,
                "queries_charged": n_queries,
                "vocabulary_mode": settings.vocabulary_mode, "variant": settings.variant,
                "top_k": settings.top_k, "threshold": settings.threshold, "clip_hidden": settings.clip_hidden,
                "noise_multipliers": vars(multipliers), "sensitivities": sensitivities(settings),
                "sigmas": sigmas(settings, multipliers), "best_case_snr": snr, "epsilon_rdp": eps_rdp,
                "records": len(read["records"]), "read": read},
        deterministic=ctx.settings.run.deterministic), None, tracked=ctx.tracked)
    entry = [e for e in ledger.entries(dataset) if e["run_id"] == ctx.run_id and e["stage"] == "train_dped"][-1]
    return entry["entry_id"], eps_pld, eps_rdp


def _log_model(ctx: RunContext, settings: DpedSettings, vocab: list[str], vectors: np.ndarray,
               released: np.ndarray, entry_id: str) -> str:
    """Log + register the student in MLflow (after the charge); returns the model version string."""
    if not ctx.settings.tracking.enabled:
        return f"run-{ctx.run_id}"
    import os
    import tempfile

    import mlflow

    from privtext.dped.model import WordVectorsModel

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "word_vectors.npz")
        np.savez(path, words=np.array([vocab[i] for i in released]), vectors=vectors[released].astype(np.float32))
        info = mlflow.pyfunc.log_model(name="dped_student", python_model=WordVectorsModel(),
                                       artifacts={"word_vectors": path}, registered_model_name=MODEL_NAME,
                                       pip_requirements=["numpy", "pandas"])
    version = str(info.registered_model_version)
    description = (f"DPED student word vectors; (epsilon={settings.epsilon:g}, delta={settings.delta:g})-DP "
                   f"(PLD); privacy ledger entry {entry_id}; run {ctx.run_id}; {released.size} words, "
                   f"dim {settings.dim}")
    mlflow.MlflowClient().update_model_version(MODEL_NAME, version, description=description)
    return version
