"""Stage ``embed``: ``restricted.documents`` -> ``restricted.doc_embeddings``, incrementally per model.

A document is its (doc_id, ingest date): the same doc_id delivered again on a later date with other text
is another document, and gets its own embedding. Its row lies in the partition of its ingest date
(``date`` = ``documents.ingest_date``), as its spans do; readers match embeddings to documents on both.
Only documents (ingested up to the run's date) without an embedding for ``embed.model`` are encoded
(found by (doc_id, date); texts are read only from the dates holding one, normally the run's own date);
the run replaces those dates' partitions, keeping their rows of other models and of earlier runs, and
re-encodes its own date's documents, so a rerun of a date replaces its own rows and never re-encodes what
earlier nights did. Two nights at once (both catching up the same backlog) never both land it: the write
is a claim per model (``run``), computed again from the new snapshot by the night that loses it.

Encoding runs in ``mapInPandas``: one sentence-transformers model per Python worker (the encoder's
module cache), Arrow batches of ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows. On a cluster
with Spark GPU scheduling (``spark.executor.resource.gpu.amount``, ``spark.task.resource.gpu.amount``
and a discovery script in ``spark.conf``) each task uses the GPU Spark assigned it; otherwise CUDA
when present, else CPU.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import pandas as pd
from deltalake.exceptions import CommitFailedError
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DateType, FloatType, StringType, StructField, StructType

from privtext.embed.settings import EmbedSettings
from privtext.platform.context import RunContext
from privtext.platform.spark import by_document
from privtext.platform.tables import DOC_EMBEDDINGS, DOCUMENTS

log = logging.getLogger("privtext")
EMBED_SCHEMA = StructType([StructField("doc_id", StringType()), StructField("date", DateType()),
                           StructField("embedding", ArrayType(FloatType()))])


@dataclass
class EmbedResult:
    documents: int
    embedded: int
    already_embedded: int
    dim: int


def task_device(settings: EmbedSettings) -> EmbedSettings:
    """Pin the task to the GPU Spark assigned it (``TaskContext.resources()``), if any."""
    from pyspark import TaskContext

    context = TaskContext.get()
    gpus = context.resources().get("gpu") if context is not None else None
    if gpus is None or not gpus.addresses or settings.device == "cpu":
        return settings
    import torch

    torch.cuda.set_device(int(gpus.addresses[0]))
    return settings.model_copy(update={"device": "cuda"})


def _encode_partition(settings: EmbedSettings):
    def encode(frames):
        from privtext.embed.encoder import encode_texts

        task_settings = task_device(settings)
        for frame in frames:
            vectors = encode_texts(frame["text"].tolist(), task_settings)
            yield pd.DataFrame({"doc_id": frame["doc_id"], "date": frame["date"], "embedding": list(vectors)})

    return encode


CLAIM_ATTEMPTS = 5  # concurrent nights of one model: each lost claim recomputes what is still missing


def run(ctx: RunContext) -> EmbedResult:
    """Encode the missing documents under a claim per model: the write commits only if no other run of
    this model committed since the snapshot the missing documents were computed from; else it is
    recomputed from the new snapshot (what the other night encoded is then done), so two nights at once
    never encode a document twice."""
    for attempt in range(CLAIM_ATTEMPTS):
        try:
            return _run_once(ctx)
        except CommitFailedError:
            if attempt + 1 == CLAIM_ATTEMPTS:
                raise
            log.info("embed %s: another run of %s committed first; recomputing the missing documents",
                     ctx.date, ctx.settings.embed.model)
    raise AssertionError("unreachable")


def _run_once(ctx: RunContext) -> EmbedResult:
    settings = ctx.settings.embed
    model = F.col("model") == settings.model
    snapshot = ctx.lakehouse.delta_table(DOC_EMBEDDINGS)
    docs = ctx.lakehouse.read(DOCUMENTS, upto=ctx.date).select("doc_id", F.col("ingest_date").alias("date"))
    existing = ctx.lakehouse.read(DOC_EMBEDDINGS, snapshot.version())
    # a document is (doc_id, ingest date): an id used again on a later date is another document
    done_before = existing.where(model & (F.col("date") != F.lit(ctx.date))).select("doc_id", "date")
    # the anti-join reads ids only; texts are read from the dates that hold a document to encode (tonight's,
    # unless a night was missed or the model is new), not from every night
    pending = sorted({r[0] for r in docs.join(done_before, ["doc_id", "date"], "left_anti").select("date")
                      .distinct().collect()} | {ctx.date})
    texts = ctx.lakehouse.read(DOCUMENTS, since=pending[0], upto=ctx.date)
    todo = (texts.select("doc_id", "text", F.col("ingest_date").alias("date"))
            .join(done_before, ["doc_id", "date"], "left_anti"))
    new_rows = (by_document(todo, ctx.settings).mapInPandas(_encode_partition(settings), EMBED_SCHEMA)
                .withColumn("model", F.lit(settings.model))
                .withColumn("dim", F.size("embedding"))
                .withColumn("run_id", F.lit(ctx.run_id)))
    # the replaced partitions keep their other rows: other models', and this model's from earlier runs
    kept = existing.where(F.col("date").isin(pending) & ~(model & (F.col("date") == F.lit(ctx.date))))
    ctx.lakehouse.replace_partitions(DOC_EMBEDDINGS, kept.unionByName(new_rows), {"date": pending},
                                     snapshot=snapshot, claim=f"privtext.embed.{settings.model}")
    mine = ctx.lakehouse.read(DOC_EMBEDDINGS, since=pending[0], upto=ctx.date).where(
        model & (F.col("run_id") == ctx.run_id))
    embedded = mine.count()
    dims = [r["dim"] for r in mine.select("dim").distinct().collect()]
    ctx.tracked.log_params({"embed.model": settings.model, "embed.batch_size": settings.batch_size,
                            "embed.device": settings.device})
    return EmbedResult(documents=docs.count(), embedded=embedded,
                       already_embedded=done_before.count(), dim=dims[0] if dims else 0)
