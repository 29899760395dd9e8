"""Sentence-encoder throughput on CPU: sentences/second for batch sizes 16, 64 and 256.

Encodes the same sentences (real movie-review snippets, never printed; synthetic sentences if the
shared data is absent) at each batch size in one run, after a warm-up, with ``embed.encoder`` (unit-norm
float32 outputs). Threads: ``--threads`` (default 2; the machine is shared).

    .venv/bin/python benchmarks/platform/embed_throughput.py [--n 1024] [--threads 2]
"""
from __future__ import annotations

import argparse
import csv
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

from privtext.embed.encoder import encode_texts  # noqa: E402
from privtext.embed.settings import EmbedSettings  # noqa: E402

import public_data  # noqa: E402

DATA = public_data.DATA_DIR / "reviews" / "movie_snippets.tsv"  # benchmarks/platform/public_data.py fills it
BATCH_SIZES = (16, 64, 256)


def sentences(n: int) -> list[str]:
    if DATA.exists():
        with DATA.open(encoding="utf-8") as handle:
            rows = [row["text"] for row in csv.DictReader(handle, delimiter="\t")]
        return (rows * (n // len(rows) + 1))[:n]
    return [f"Sentence number {i} talks about topic {i % 17} at some length." for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = sentences(args.n)
    print(f"sentences: {len(texts)}")
    print(f"mean_chars: {sum(map(len, texts)) / len(texts):.1f}")
    print(f"torch_threads: {args.threads}")
    rates = {}
    for batch_size in BATCH_SIZES:
        settings = EmbedSettings(device="cpu", batch_size=batch_size)
        encode_texts(texts[:batch_size], settings)  # warm-up (and model load)
        start = time.perf_counter()
        out = encode_texts(texts, settings)
        rates[batch_size] = len(texts) / (time.perf_counter() - start)
        assert out.shape == (len(texts), 384)
        print(f"sentences_per_second_batch_{batch_size}: {rates[batch_size]:.1f}")
    for batch_size in BATCH_SIZES[1:]:
        print(f"ratio_batch_{batch_size}_vs_{BATCH_SIZES[0]}: {rates[batch_size] / rates[BATCH_SIZES[0]]:.2f}")


if __name__ == "__main__":
    main()
