"""Spark overhead of the detect_pii and embed stages over the plain libraries, per core.

Same documents (real movie-review snippets, never printed), same code path, one thread per core:
* ``plain``: one Python process calling ``pii.detect.detect_many`` / ``embed.encoder.encode_texts``;
* ``spark_local1`` / ``spark_local2``: the whole stage (Delta read, mapInPandas, Delta commit) through
  ``run_stage`` on ``local[1]`` / ``local[2]``, timed on a rerun of the same
  date so the per-worker model load (reused Python workers) is excluded as it is for ``plain``.
Prints docs/second, and ``overhead_per_core`` = plain rate / (Spark rate / cores) - 1 (the aim: <= 0.2).

    .venv/bin/python benchmarks/platform/stage_overhead.py [--docs 2000]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import public_data

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

DATE = "2026-01-15"


def load_texts(n: int) -> list[str]:
    lines = public_data.path("reviews/movie_snippets.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return [line.split("\t", 2)[2] for line in lines[:n]]


def plain_rates(texts: list[str], settings) -> dict[str, float]:
    import torch

    from privtext.embed.encoder import encode_texts
    from privtext.pii.detect import detect_many, get_analyzer

    torch.set_num_threads(1)
    analyzer = get_analyzer(settings.pii)
    detect_many(analyzer, texts[:20], settings.pii)
    start = time.perf_counter()
    detect_many(analyzer, texts, settings.pii)
    detect = len(texts) / (time.perf_counter() - start)
    encode_texts(texts[:20], settings.embed)
    start = time.perf_counter()
    encode_texts(texts, settings.embed)
    return {"detect_pii": detect, "embed": len(texts) / (time.perf_counter() - start)}


def spark_rates(texts: list[str], cores: int, root: Path) -> dict[str, float]:
    import json

    from pyspark.sql import SparkSession

    from privtext.settings import load_settings
    from privtext.stages.runner import run_stage

    settings = load_settings(None, environ={}, overrides={
        "spark": {"master": f"local[{cores}]",
                  "conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": str(cores),
                                                       "spark.default.parallelism": str(cores)}},
        "lakehouse": {"root": str(root / f"lake{cores}")}, "tracking": {"enabled": False},
        "run": {"deterministic": True}})
    source = root / "docs.jsonl"
    source.write_text("".join(json.dumps({"doc_id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    run_stage("ingest", settings, date=DATE, input_path=str(source))
    rates = {}
    for stage in ("detect_pii", "embed"):
        run_stage(stage, settings, date=DATE)  # warm-up: loads the model in each Python worker
        start = time.perf_counter()
        run_stage(stage, settings, date=DATE)
        rates[stage] = len(texts) / (time.perf_counter() - start)
    SparkSession.getActiveSession().stop()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=2000)
    args = parser.parse_args()
    from privtext.settings import load_settings

    texts = load_texts(args.docs)
    plain = plain_rates(texts, load_settings(None, environ={}))
    print(f"docs: {len(texts)}")
    with tempfile.TemporaryDirectory() as tmp:
        spark = {cores: spark_rates(texts, cores, Path(tmp)) for cores in (1, 2)}
    for stage in ("detect_pii", "embed"):
        print(f"{stage}_plain_docs_per_second: {plain[stage]:.1f}")
        for cores, rates in spark.items():
            print(f"{stage}_spark_local{cores}_docs_per_second: {rates[stage]:.1f}")
            print(f"{stage}_spark_local{cores}_overhead_per_core: {plain[stage] / (rates[stage] / cores) - 1:.3f}")


if __name__ == "__main__":
    main()
