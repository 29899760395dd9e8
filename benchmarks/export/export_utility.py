"""What an analyst loses with the sanitized export, on labelled text: CluSanT vs plain redaction vs the original.

Two labelled corpora, each detected (Presidio, the ``detect_pii`` stage's ``detect_many``) and sanitized as the
nightly export does (``clusant.sanitizer.sanitize_documents`` with ``conf/base.yaml``'s settings, static
phrase encoder), never printed:
* ``reviews``: real movie-review sentences (``reviews/movie_snippets.tsv`` of ``benchmarks/platform/public_data.py``,
  label = score > 0)
  with PII planted around them by the sample generator (``sample_data.plant_pii``: names, cities, dates,
  emails, phones, companies in ``REVIEW_FRAMES``);
* ``support``: the sample corpus (``privtext sample-data --n N --seed S``) with its four labels.
For each: a TF-IDF + logistic-regression classifier trained on the original / the CluSanT export / the
``[TYPE]``-redacted text of one training split, all scored on the original test texts
(``metrics.export_utility.downstream_accuracy``), the majority-label baseline, the mean cosine of sentence
embeddings (``embed.model``) original vs sanitized over the documents with spans (at most
``--similarity-docs``), and the share of CluSanT replacements kept in their type and surface format.
With ``--stage-docs N``, instead: the nightly cost of the ``sanitize`` stage's utility job on the sample corpus
(N documents, local[2], warm Python workers): the stage's metrics seconds with the similarity/perplexity job
off (``clusant.metrics.max_documents: 0``), so that they time the utility job alone, with
``clusant.metrics.utility_documents`` at its default and at 0 (off), alternating, ``--repeats`` times each.
Prints ``name: value`` lines.

    .venv/bin/python benchmarks/export/export_utility.py [--n 3000] [--seed 7]
    .venv/bin/python benchmarks/export/export_utility.py --stage-docs 1000
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))  # public_data
import public_data

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def corpora(n: int, seed: int) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """corpus -> (doc ids, texts, labels)."""
    import pandas as pd

    from privtext import sample_data

    support = sample_data.generate(n, seed=seed)
    reviews = pd.read_csv(public_data.path("reviews/movie_snippets.tsv"), sep="\t")
    picked = sorted(random.Random(seed).sample(range(len(reviews)), min(n, len(reviews))))
    rows = reviews.iloc[picked]
    planted = sample_data.plant_pii([str(t) for t in rows["text"]], seed=seed)
    return {"reviews": ([f"r{i}" for i in rows["id"]], [p["text"] for p in planted],
                        ["positive" if s > 0 else "negative" for s in rows["score"]]),
            "support": ([r["doc_id"] for r in support], [r["text"] for r in support], [r["label"] for r in support])}


def measure(settings, sanitizer, encode, analyzer, ids, texts, labels, seed: int, similarity_docs: int) -> dict:
    import numpy as np

    from privtext.clusant.sanitizer import merge_spans, placeholder, sanitize_documents, splice
    from privtext.embed.encoder import encode_texts
    from privtext.metrics.export_utility import TEST_FRACTION, downstream_accuracy, is_test
    from privtext.pii.detect import detect_many

    started = time.perf_counter()
    found = detect_many(analyzer, texts, settings.pii)
    detect_seconds = time.perf_counter() - started
    docs = [merge_spans([(s.start, s.end, s.entity_type, s.tier, s.score) for s in spans], len(t))
            for t, spans in zip(texts, found)]
    out = sanitize_documents(sanitizer, encode, np.random.default_rng(seed), texts, docs)
    redacted = [splice(t, [(s, e) for s, e, _, _ in d], [placeholder(ty) for _, _, ty, _ in d])
                for t, d in zip(texts, docs)]
    test = [is_test(d, TEST_FRACTION) for d in ids]
    started = time.perf_counter()
    clusant = downstream_accuracy(texts, out.texts, labels, test, seed)
    classifier_seconds = time.perf_counter() - started
    redaction = downstream_accuracy(texts, redacted, labels, test, seed)
    with_spans = [i for i, d in enumerate(docs) if d][:similarity_docs]
    originals = encode_texts([texts[i] for i in with_spans], settings.embed).astype(np.float64)
    similarity = {name: float((originals * encode_texts([s[i] for i in with_spans], settings.embed)).sum(axis=1).mean())
                  for name, s in (("clusant", out.texts), ("redacted", redacted))}
    replaced = sum(sum(r.values()) for r in out.replaced)
    return {
        "documents": len(texts), "documents_with_spans": sum(bool(d) for d in docs),
        "spans": sum(len(d) for d in docs), "replaced": replaced, "masked": sum(sum(m.values()) for m in out.masked),
        "train_documents": int(clusant["train_documents"]), "test_documents": int(clusant["test_documents"]),
        "majority_label_accuracy": clusant["majority_label_accuracy"],
        "original_train_accuracy": clusant["original_train_accuracy"],
        "clusant_train_accuracy": clusant["sanitized_train_accuracy"], "clusant_accuracy_gap": clusant["accuracy_gap"],
        "redacted_train_accuracy": redaction["sanitized_train_accuracy"],
        "redacted_accuracy_gap": redaction["accuracy_gap"],
        "clusant_similarity": similarity["clusant"], "redacted_similarity": similarity["redacted"],
        "similarity_documents": len(with_spans),
        "clusant_format_kept_share": sum(out.format_kept) / max(1, replaced),
        "clusant_same_as_input_share": sum(out.same_as_input) / max(1, replaced),
        "detect_seconds": detect_seconds, "classifier_pair_seconds": classifier_seconds,
    }


def stage_cost(n: int, seed: int, repeats: int) -> None:
    """Seconds the utility job adds to the sanitize stage (its metrics seconds with and without it)."""
    import statistics
    import tempfile

    from privtext import sample_data
    from privtext.settings import load_settings
    from privtext.stages.runner import run_stage

    date = "2026-01-15"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        overrides = {"spark": {"master": "local[2]", "conf": {"spark.ui.enabled": "false"}},
                     "lakehouse": {"root": str(root / "lake")}, "tracking": {"enabled": False},
                     "clusant": {"cache_dir": str(Path(__file__).resolve().parents[2] / "cache" / "clusant"),
                                 "metrics": {"max_documents": 0}},
                     "run": {"deterministic": True},
                     "privacy": {"budgets": {"default": {"r_over_p_max": 50.0, "eps_max": 10.0, "delta_max": 1e-5,
                                                         "mldp_eps_max": 1e12}}}}
        settings = load_settings(None, environ={}, overrides=overrides)
        off = load_settings(None, environ={}, overrides={**overrides, "clusant": {
            **overrides["clusant"], "metrics": {"max_documents": 0, "utility_documents": 0}}})
        source = sample_data.write_jsonl(sample_data.generate(n, seed=seed), root / "docs.jsonl")
        run_stage("ingest", settings, date=date, input_path=str(source))
        run_stage("detect_pii", settings, date=date)
        run_stage("sanitize", settings, date=date)  # warm-up: vocabularies, models in the Python workers
        seconds = {"on": [], "off": []}
        for _ in range(repeats):
            for name, s in (("on", settings), ("off", off)):
                seconds[name].append(run_stage("sanitize", s, date=date).metrics_seconds)
    on, off_ = statistics.median(seconds["on"]), statistics.median(seconds["off"])
    print(f"export_utility_stage_documents: {n}")
    print(f"export_utility_stage_metrics_seconds_with_utility: {on:.2f} "
          f"(runs: {', '.join(f'{x:.2f}' for x in seconds['on'])})")
    print(f"export_utility_stage_metrics_seconds_without: {off_:.2f} "
          f"(runs: {', '.join(f'{x:.2f}' for x in seconds['off'])})")
    print(f"export_utility_stage_extra_seconds: {on - off_:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=3000, help="documents per corpus")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--similarity-docs", type=int, default=500)
    parser.add_argument("--stage-docs", type=int, default=0, help="measure the stage's utility job instead")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.stage_docs:
        stage_cost(args.stage_docs, args.seed, args.repeats)
        return
    from privtext.pii.detect import get_analyzer
    from privtext.sanitizer_setup import build_sanitizer
    from privtext.settings import load_settings

    settings = load_settings(None, environ={}, overrides={
        "clusant": {"cache_dir": str(Path(__file__).resolve().parents[2] / "cache" / "clusant")}})
    sanitizer, encode = build_sanitizer(settings)
    analyzer = get_analyzer(settings.pii)
    print(f"export_utility_seed: {args.seed}")
    print(f"export_utility_eps: PII {settings.clusant.eps['PII']}, PoII {settings.clusant.eps['PoII']}")
    for corpus, (ids, texts, labels) in corpora(args.n, args.seed).items():
        figures = measure(settings, sanitizer, encode, analyzer, ids, texts, labels, args.seed, args.similarity_docs)
        for name, value in figures.items():
            print(f"export_utility_{corpus}_{name}: {value:.4f}" if isinstance(value, float)
                  else f"export_utility_{corpus}_{name}: {value}")


if __name__ == "__main__":
    main()
