"""DPED teacher training time: teachers as parallel Spark tasks (local[2]) vs one after another.

Same data (a seeded 20 Newsgroups subset, see --docs), same teachers, same answers: for N in
{5, 10, 20} the ``train_dped`` stage's Spark path (``teacher_answer_frame`` -> ``released_answers``:
one ``applyInPandas`` task per shard, torch with 1 thread, answers summed and released per block of
queries in Spark, here with negligible noise) against a plain
loop in this process (``train_teacher`` + ``teacher_answers`` per shard, torch with 1 thread, the
answers summed in numpy). Prints `name: value` lines; the ratio is sequential / parallel. Spark's
Python workers are warmed up first (one small run, timed separately).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from privtext.dped.aggregation import NoiseMultipliers, aggregate, vote_histogram
from privtext.dped.dped import encode
from privtext.dped.evaluate import load_labeled_corpus
from privtext.dped.settings import DpedSettings
from privtext.dped.sharding import assign_shards
from privtext.dped.teacher import teacher_answers, train_teacher
from privtext.dped.vocabulary import public_anchor, public_words
from privtext.platform.spark import get_spark
from privtext.settings import load_settings
from privtext.stages.train_dped import released_answers, teacher_answer_frame

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))  # public_data
import public_data


def sequential(docs, shard, n_words, queries, settings, anchor, seed):
    hidden = np.zeros((queries.size, settings.dim))
    votes = []
    for i in range(settings.n_teachers):
        t = train_teacher([docs[j] for j in np.flatnonzero(shard == i)], n_words, settings, seed * 100_003 + i)
        h, v = teacher_answers(t, queries, settings.top_k, clip=settings.clip_hidden, anchor=anchor)
        hidden += h
        votes.append(v)
    return hidden, vote_histogram(votes, queries.size)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(public_data.DATA_DIR), help="benchmarks/platform/public_data.py fills it")
    ap.add_argument("--docs", type=int, default=1500)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--teachers", default="5,10,20")
    args = ap.parse_args()
    torch.set_num_threads(1)
    texts, _ = load_labeled_corpus(os.path.join(args.data, "corpus/20newsgroups-train.tab"), args.docs, seed=0)
    words = public_words()
    docs = encode(texts, words)
    counts = np.bincount(np.concatenate(docs), minlength=len(words))
    queries = np.sort(np.argsort(-counts, kind="stable")[: args.queries])
    base = DpedSettings(epochs=args.epochs, dim=100, threshold=0.5)  # max votes are integers: no tie at T
    anchor = public_anchor(words, base.dim)
    spark = get_spark(load_settings(None, overrides={"spark": {"master": "local[2]", "conf": {
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}}}, environ={}))
    print(f"docs: {len(texts)}")
    print(f"tokens: {int(counts.sum())}")
    print(f"queries: {queries.size}")
    print(f"epochs: {base.epochs}")
    print(f"spark_master: {spark.sparkContext.master}")

    def frame(n: int):
        shard = assign_shards([str(i) for i in range(len(texts))], n, base.shard_salt).shard
        pdf = pd.DataFrame({"shard": shard.astype(np.int32), "doc_id": [f"{i:07d}" for i in range(len(docs))],
                            "ids": [d.astype(np.int32) for d in docs]})
        return shard, spark.createDataFrame(pdf, "shard int, doc_id string, ids array<int>")

    # negligible (the noise grid needs sigma >> 2^-52 |value|)
    tiny = NoiseMultipliers(threshold=1e-4, hidden=1e-4, vote=1e-4)

    def parallel(df, settings):
        answers = teacher_answer_frame(df, len(words), queries, settings, anchor, seed=1)
        return released_answers(answers, queries.size, settings, tiny, deterministic=True, seed=1)

    t = time.time()
    parallel(frame(2)[1].limit(50), base.model_copy(update={"n_teachers": 2, "epochs": 1}))
    print(f"spark_warmup_s: {time.time() - t:.1f}")
    for n in (int(x) for x in args.teachers.split(",")):
        settings = base.model_copy(update={"n_teachers": n})
        shard, df = frame(n)
        df = df.cache()
        df.count()
        t = time.time()
        agg_par = parallel(df, settings)
        par = time.time() - t
        t = time.time()
        h_seq, v_seq = sequential(docs, shard, len(words), queries, settings, anchor, seed=1)
        agg_seq = aggregate(h_seq, v_seq, settings, tiny, np.random.default_rng(1))
        seq = time.time() - t
        df.unpersist()
        print(f"n{n}.parallel_spark_s: {par:.1f}")
        print(f"n{n}.sequential_s: {seq:.1f}")
        print(f"n{n}.speedup_sequential_over_parallel: {seq / par:.2f}")
        # same seeds, same shards: the two paths must release the same hidden means and labels with the
        # same vote counts (ties between equal counts may break differently)
        counts = [np.sort(np.take_along_axis(v_seq.toarray(), np.maximum(a.labels, 0), 1), 1)
                  for a in (agg_par, agg_seq)]
        same = np.array_equal(agg_par.answered, agg_seq.answered) and np.allclose(
            agg_par.hidden, agg_seq.hidden, atol=1e-3, equal_nan=True) and np.array_equal(*counts)
        print(f"n{n}.same_answers: {bool(same)}")
    spark.stop()


if __name__ == "__main__":
    main()
