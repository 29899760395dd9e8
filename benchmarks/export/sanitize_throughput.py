"""Sanitize throughput: the whole stage on local[2] vs the plain sanitizer on one core, same spans.

The bundled sample corpus (synthetic support messages with planted PII, never printed) is ingested and
run through detect_pii; then, side by side in one run:
* ``plain``: one Python process, one torch thread, ``clusant.sanitizer.sanitize_documents`` over the
  same documents and merged spans (phrase encoding + CluSanT + splice), vocabularies already built, for
  both phrase encoders (static pieces, the default, and the transformer), each with the mean cosine
  similarity of original vs sanitized documents and the largest exact pure-LDP eps' of its mechanisms;
* ``stage``: ``run_stage("sanitize")`` on local[2], timed on a rerun of the date (warm Python workers, as
  for ``plain``): vocabularies, the ledger charge, the executors, the Delta commit and the bounded
  quality-metrics job (``clusant.metrics.max_documents``) all inside the timing.
Prints spans/second, the stage's spans/second per core, and ``overhead_per_core`` = plain / per-core - 1.

    .venv/bin/python benchmarks/export/sanitize_throughput.py [--docs 8000]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

DATE = "2026-01-15"
CORES = 2


def plain(settings, texts: list[str], spans: list[list]) -> dict[str, float]:
    """One core, no Spark: spans/second of ``sanitize_documents``, the mean cosine (sentence encoder) of
    original vs sanitized documents, and the largest exact pure-LDP eps' of any type's mechanism."""
    import numpy as np
    import torch

    from privtext.clusant.sanitizer import merge_spans, sanitize_documents
    from privtext.embed.encoder import encode_texts
    from privtext.sanitizer_setup import build_sanitizer

    torch.set_num_threads(1)
    sanitizer, encode = build_sanitizer(settings)
    docs = [merge_spans(s, len(t)) for t, s in zip(texts, spans)]
    sanitize_documents(sanitizer, encode, np.random.default_rng(0), texts[:50], docs[:50])  # loads the encoder
    started = time.perf_counter()
    out = sanitize_documents(sanitizer, encode, np.random.default_rng(0), texts, docs)
    rate = sum(len(d) for d in docs) / (time.perf_counter() - started)
    sample = slice(0, 1000)  # the similarity over the first 1,000 documents (MiniLM on whole texts is the slow part)
    similarity = (encode_texts(texts[sample], settings.embed) * encode_texts(out.texts[sample],
                                                                             settings.embed)).sum(axis=1).mean()
    ldp = max(ts.mechanism.guarantee()["ldp_eps"] for ts in sanitizer.per_type.values())
    return {"spans_per_second_one_core": rate, "similarity": float(similarity), "max_ldp_eps": ldp}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=8000)
    args = parser.parse_args()
    from deltalake import DeltaTable
    from pyspark.sql import SparkSession

    from privtext import sample_data
    from privtext.settings import load_settings
    from privtext.stages.runner import run_stage

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        settings = load_settings(None, environ={}, overrides={
            "spark": {"master": f"local[{CORES}]", "conf": {"spark.ui.enabled": "false"}},
            "lakehouse": {"root": str(root / "lake")}, "tracking": {"enabled": False},
            "clusant": {"cache_dir": str(Path(__file__).resolve().parents[2] / "cache" / "clusant")},
            "run": {"deterministic": True},
            # the benchmark sanitizes the same date repeatedly: no per-value limit (the stage still composes and
            # charges)
            "privacy": {"budgets": {"default": {"r_over_p_max": 50.0, "eps_max": 10.0, "delta_max": 1e-5,
                                                "mldp_eps_max": 1e12}}}})
        source = sample_data.write_jsonl(sample_data.generate(args.docs, seed=7), root / "docs.jsonl")
        run_stage("ingest", settings, date=DATE, input_path=str(source))
        run_stage("detect_pii", settings, date=DATE)
        run_stage("sanitize", settings, date=DATE)  # warm-up: vocabularies on disk, models in the Python workers
        started = time.perf_counter()
        result = run_stage("sanitize", settings, date=DATE)
        stage_rate = result.spans / (time.perf_counter() - started)
        no_metrics = settings.model_copy(update={"clusant": settings.clusant.model_copy(update={
            "metrics": settings.clusant.metrics.model_copy(update={"max_documents": 0})})})
        started = time.perf_counter()
        bare_rate = run_stage("sanitize", no_metrics, date=DATE).spans / (time.perf_counter() - started)
        lake = settings.lakehouse.root
        docs = DeltaTable(f"{lake}/restricted/documents").to_pandas(columns=["doc_id", "text"])
        found = DeltaTable(f"{lake}/restricted/pii_spans").to_pandas(columns=["doc_id", "start", "end", "entity_type",
                                                                              "tier", "score"])
        SparkSession.getActiveSession().stop()
    by_doc = {d: [] for d in docs["doc_id"]}
    for r in found.itertuples():
        by_doc[r.doc_id].append((r.start, r.end, r.entity_type, r.tier or "PII", r.score or 0.0))
    texts, spans = list(docs["text"]), [by_doc[d] for d in docs["doc_id"]]
    print(f"docs: {args.docs}")
    print(f"spans: {result.spans}")
    for encoder in ("static", "transformer"):
        figures = plain(settings.model_copy(
            update={"clusant": settings.clusant.model_copy(update={"phrase_encoder": encoder})}), texts, spans)
        for name, value in figures.items():
            print(f"sanitize_plain_{encoder}_{name}: {value:.4f}")
        if encoder == settings.clusant.phrase_encoder:
            print("sanitize_stage_overhead_per_core: "
                  f"{figures['spans_per_second_one_core'] / (stage_rate / CORES) - 1:.3f}")
    print(f"sanitize_stage_{settings.clusant.phrase_encoder}_local{CORES}_spans_per_second: {stage_rate:.1f}")
    print(f"sanitize_stage_spans_per_second_per_core: {stage_rate / CORES:.1f}")
    print(f"sanitize_stage_metrics_job_seconds: {result.metrics_seconds:.1f}")
    print(f"sanitize_stage_without_metrics_spans_per_second_per_core: {bare_rate / CORES:.1f}")
    print(f"sanitize_stage_similarity_sampled: {result.semantic_similarity:.4f}")

if __name__ == "__main__":
    main()
