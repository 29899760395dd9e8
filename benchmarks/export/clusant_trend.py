"""CluSanT's trend on real text (paper Figs. 3-4): semantic similarity and perplexity of sanitized documents,
CluSanT over SanText across (clusters, k), CusText (k = inf) alongside, at eps in {1, 8}; spans/second.

Documents (treated as private; only aggregates are printed): WNUT-16 tweets with their gold person /
geo-loc / company spans (-> PERSON / LOCATION / ORGANIZATION), and movie-review snippets with the spans
Presidio detects (privtext.pii). Spans are replaced by the sanitize stage's own executor function
(``privtext.clusant.sanitizer``: span merge, CluSanT per type, ``sanitize_documents``), vocabularies are
the public ones of ``privtext.clusant`` (embeddings cached in benchmarks/out/cache).
Semantic similarity: cosine of all-MiniLM-L6-v2 sentence embeddings, original vs sanitized, mean over
documents. Perplexity: ``privtext.generate.perplexity`` (local SmolLM2) on a subsample, when installed.
Improvement over SanText: similarity (CST - ST) / ST in %, higher is better; perplexity (CST - ST) / ST
in %, lower is better (the paper's convention). Heatmaps: benchmarks/out/clusant_trend_<metric>_eps<e>.png.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/export/clusant_trend.py [--docs 60] [--ppl-docs 30]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from privtext.pii.conll import WNUT16, data_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))  # public_data
import public_data

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "out"
WNUT_TYPES = {"person": "PERSON", "geo-loc": "LOCATION", "company": "ORGANIZATION"}
TYPES = ("PERSON", "LOCATION", "ORGANIZATION")


def wnut_docs(path: Path) -> list[tuple[str, list[tuple]]]:
    """Tweets (tokens joined with single spaces) with gold spans as (start, end, type, tier, score)."""
    docs, tokens, tags = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.strip():
            token, _, tag = line.partition("\t")
            tokens.append(token)
            tags.append(tag.strip())
            continue
        if tokens:
            text, spans, pos, current = " ".join(tokens), [], 0, None
            for token, tag in zip(tokens, tags):
                start, end = pos, pos + len(token)
                kind = WNUT_TYPES.get(tag[2:]) if tag[:2] in ("B-", "I-") else None
                if tag.startswith("I-") and current and current[2] == kind:
                    current[1] = end
                else:
                    if current:
                        spans.append(tuple(current) + ("PII" if current[2] == "PERSON" else "PoII", 1.0))
                    current = [start, end, kind] if kind and tag.startswith("B-") else None
                pos = end + 1
            if current:
                spans.append(tuple(current) + ("PII" if current[2] == "PERSON" else "PoII", 1.0))
            if spans:
                docs.append((text, spans))
        tokens, tags = [], []
    return docs


def review_docs(n: int, rng) -> list[tuple[str, list[tuple]]]:
    """Movie-review snippets with Presidio's PERSON / LOCATION / ORGANIZATION spans (those with at least one)."""
    from privtext.pii.detect import detect_spans, get_analyzer
    from privtext.pii.settings import PiiSettings

    reviews = pd.read_csv(public_data.path("reviews/movie_snippets.tsv"), sep="\t")["text"].astype(str).tolist()
    settings = PiiSettings(entities=list(TYPES))
    analyzer = get_analyzer(settings)
    docs = []
    for i in rng.permutation(len(reviews)):
        spans = [(s.start, s.end, s.entity_type, s.tier, s.score)
                 for s in detect_spans(analyzer, reviews[i], settings) if s.entity_type in TYPES]
        if spans:
            docs.append((reviews[i], spans))
        if len(docs) >= n:
            break
    return docs


def sanitizer_for(settings):
    """The settings' sanitizer, built once per settings (vocabularies from the disk cache)."""
    from privtext.clusant.sanitizer import ClusantSanitizer
    from privtext.embed.encoder import encode_phrases

    key = settings.clusant.model_dump_json()
    if key not in _SANITIZERS:
        _SANITIZERS[key] = ClusantSanitizer.build(settings.clusant, settings.pii.tier_of,
                                                  lambda p: encode_phrases(p, settings.embed), settings.embed.model)
    return _SANITIZERS[key]


_SANITIZERS: dict = {}


def sanitize_docs(settings, docs, seed: int) -> list[str]:
    from privtext.clusant.sanitizer import merge_spans, sanitize_documents
    from privtext.embed.encoder import encode_phrases

    merged = [merge_spans(spans, len(text)) for text, spans in docs]
    return sanitize_documents(sanitizer_for(settings), lambda p: encode_phrases(p, settings.embed),
                              np.random.default_rng(seed), [t for t, _ in docs], merged).texts


def heatmap(grid: np.ndarray, rows, cols, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.1 * len(cols) + 2, 0.7 * len(rows) + 1.5))
    im = ax.imshow(grid, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("k (CT = CusText, k = inf)")
    ax.set_ylabel("clusters per type (requested)")
    for (r, c), v in np.ndenumerate(grid):
        ax.text(c, r, f"{v:.1f}", ha="center", va="center", color="w", fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.colorbar(im)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=60, help="documents per source (tweets, reviews)")
    ap.add_argument("--ppl-docs", type=int, default=30, help="documents per setting scored by the LM (0: off)")
    ap.add_argument("--size", type=int, default=1000, help="vocabulary phrases per type")
    ap.add_argument("--clusters", type=int, nargs="+", default=[40, 180, 360, 720])
    ap.add_argument("--ks", type=float, nargs="+", default=[1.0, 4.0, 16.0, 64.0])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 8.0])
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    torch.set_num_threads(2)
    from privtext.embed.encoder import encode_texts
    from privtext.settings import load_settings

    rng = np.random.default_rng(0)
    tweets = wnut_docs(data_path(WNUT16))
    docs = [tweets[i] for i in rng.permutation(len(tweets))[: args.docs]] + review_docs(args.docs, rng)
    n_spans = sum(len(s) for _, s in docs)
    print(f"documents: {len(docs)}")
    print(f"spans: {n_spans}")
    base = load_settings(None, environ={}, overrides={"run": {"deterministic": True}, "clusant": {
        "entity_types": list(TYPES), "vocabulary": {"size": args.size}, "cache_dir": str(OUT / "cache"),
        "metrics": {"similarity": False, "perplexity": False}}})
    ppl_fn = None
    if args.ppl_docs > 0:
        try:
            from privtext.generate import perplexity
            from privtext.generate.settings import GenerateSettings

            perplexity(["warm up"], GenerateSettings())
            ppl_fn = lambda texts: perplexity(texts, GenerateSettings())  # noqa: E731
        except (ImportError, RuntimeError) as error:
            print(f"perplexity: unavailable ({type(error).__name__})")
    originals = encode_texts([t for t, _ in docs], base.embed).astype(np.float64)
    ppl_rows = rng.permutation(len(docs))[: args.ppl_docs]

    def measure(method, n_clusters, k, eps, seed=1):
        s = base.model_copy(update={"clusant": base.clusant.model_copy(update={
            "method": method, "n_clusters": n_clusters, "k": k, "eps": {"PII": eps, "PoII": eps}})})
        out = sanitize_docs(s, docs, seed)
        sim = float((encode_texts(out, base.embed) * originals).sum(axis=1).mean())
        ppl = float(np.nanmean(ppl_fn([out[i] for i in ppl_rows]))) if ppl_fn else float("nan")
        return sim, ppl

    # throughput of the stage's executor function (span merge, phrase encoding, CluSanT, splice)
    sanitize_docs(base, docs, 0)  # builds and caches the vocabularies and the worker's sanitizer
    started = time.perf_counter()
    sanitize_docs(base, docs, 0)
    print(f"sanitizer_spans_per_s_one_core: {n_spans / (time.perf_counter() - started):.0f}")
    from privtext.embed.encoder import encode_phrases

    types = [t for _, spans in docs for _, _, t, _, _ in spans]
    emb = encode_phrases([text[s:e] for text, spans in docs for s, e, *_ in spans], base.embed).astype(np.float64)
    sanitizer, reps = sanitizer_for(base), max(1, 20_000 // n_spans)
    started = time.perf_counter()
    for _ in range(reps):
        sanitizer.replace(rng, types, emb)
    print(f"mechanism_spans_per_s_one_core: {reps * n_spans / (time.perf_counter() - started):.0f}")

    OUT.mkdir(parents=True, exist_ok=True)
    cols = [f"{k:g}" for k in args.ks] + ["CT"]
    for eps in args.eps:
        st_sim, st_ppl = measure("santext", 1, 1.0, eps)
        print(f"eps{eps:g}_santext_similarity: {st_sim:.4f}")
        print(f"eps{eps:g}_santext_perplexity: {st_ppl:.2f}")
        sim_grid = np.zeros((len(args.clusters), len(cols)))
        ppl_grid = np.full_like(sim_grid, np.nan)
        for r, n_clusters in enumerate(args.clusters):
            for c, k in enumerate(list(args.ks) + [np.inf]):
                method = "custext" if np.isinf(k) else "clusant"
                sim, ppl = measure(method, n_clusters, 1.0 if np.isinf(k) else k, eps)
                sim_grid[r, c] = 100 * (sim - st_sim) / st_sim
                ppl_grid[r, c] = 100 * (ppl - st_ppl) / st_ppl
                tag = f"eps{eps:g}_clusters{n_clusters}_{'custext' if np.isinf(k) else f'k{k:g}'}"
                print(f"{tag}_similarity: {sim:.4f}")
                print(f"{tag}_similarity_improvement_over_santext_pct: {sim_grid[r, c]:.2f}")
                if ppl_fn:
                    print(f"{tag}_perplexity: {ppl:.2f}")
                    print(f"{tag}_perplexity_change_over_santext_pct: {ppl_grid[r, c]:.2f}")
        heatmap(sim_grid, args.clusters, cols, f"semantic similarity improvement over SanText (%), eps={eps:g}",
                OUT / f"clusant_trend_similarity_eps{eps:g}.png")
        if ppl_fn:
            heatmap(ppl_grid, args.clusters, cols, f"perplexity change over SanText (%, lower is better), eps={eps:g}",
                    OUT / f"clusant_trend_perplexity_eps{eps:g}.png")


if __name__ == "__main__":
    main()
