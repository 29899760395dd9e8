"""The governed synthetic refresh on real labelled text: SecPE against Aug-PE and three baselines, through
the platform's own stages (Spark, the lakehouse, the ledger), side by side in one run.

Data: ``reviews/movie_snippets.tsv`` of ``benchmarks/platform/public_data.py`` (10,605 review sentences;
label = score > 0),
ingested, secrets detected (``--secrets random_words``: SecPE Sec. 4.2's words near the 20% document
frequency quantile; ``pii``: detected PII) and embedded by the ``ingest``, ``detect_pii`` and ``embed``
stages. ``secpe.holdout_fraction`` (0.2) of doc_ids is the held-out split: ``synthesize`` never reads it
and ``evaluate`` scores only it. Per r/p (``inf``: r = 1, no protection), in the order given, and per
seed, ``synthesize`` runs SecPE and Aug-PE (the stage refuses Aug-PE at inf: no noise, no guarantee),
then ``evaluate``; each run's figures print as it ends, and Ctrl-C stops with the summary of the runs
that ended. Baselines,
staged as the synthetic table and scored by the same ``evaluate``: ``round0`` (N_syn of the generator's
random samples, no private signal; per seed), ``public_only`` (the training documents without a secret,
as they are: SecPE treats them as public), ``real`` (every training document: the non-private upper
bound), ``real_n_syn`` (N_syn training documents drawn per seed: the real data at the synthetic table's
size, the ceiling of a perfect generator). Generations are not cached across runs: the same seed gives
the same round-0 pool (llama.cpp with fixed seeds), later rounds differ by method since the survivors do.

``--all-private``: every document holds a secret, the case the product is for. After ``detect_pii``, each
document left without a random word gets its rarest word as a secret too (``secpe_noise_per_centre.
cover_words``; every occurrence of the added words is appended to the date's spans, matched and keyed as
``detect_pii`` writes them). No document is public, so SecPE takes D_pub from the generator's round-0 pool
(``secpe.public_source`` auto), the label vocabulary is declared (``secpe.labels``: the file's labels), and
``public_only`` does not exist.

Printed (``name: value``): per method and r/p, the mean over seeds of downstream accuracy, FID, length
KS, mean length and label agreement (the share of synthetic texts that a classifier fitted on the real
training documents assigns the label they were generated for; on ``real``/``public_only`` it is that
classifier's training accuracy), with a 95% t interval; the vote (histogram) step's seconds and the ratio
Aug-PE / SecPE inside this run; the wall time of every stage and of the run.

    .venv/bin/python benchmarks/synthetic/secpe_vs_augpe.py [--docs 0 (all)] [--n-syn 200] [--variations 2]
        [--rounds 3] [--clusters 40] [--r-over-p 2 10 50 inf] [--seeds 0 1 2] [--methods secpe aug_pe]
        [--data movie_reviews | newsgroups]
        [--no-seed-baselines] [--secrets random_words] [--secret-words 700] [--temperature 1.0]
        [--generate-batch 16] [--all-private]
    .venv/bin/python benchmarks/synthetic/secpe_vs_augpe.py --summarize LOG [LOG ...]
        # seeds run in separate invocations
"""
from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))  # public_data
import public_data

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
os.environ.setdefault("PRIVTEXT_HMAC_KEY", secrets.token_hex(32))  # a throwaway run key, as the demo makes one

DATE = "2026-01-15"
DATA = public_data.DATA_DIR / "reviews" / "movie_snippets.tsv"
NEWSGROUPS = public_data.DATA_DIR / "corpus" / "20newsgroups-train.tab"
# --data newsgroups: 20 Newsgroups posts (lowercased letters only, label = the group), replies capped at 48 tokens
NEWSGROUPS_PROMPTS = {
    "random": "Write the start of one short post for the Usenet newsgroup {label}, two or three sentences on its "
              "topic. Reply with the post only.",
    "variation": "Rewrite this post from the Usenet newsgroup {label} with small changes in wording, keeping its "
                 "topic. Reply with the new post only.\n\nPost: {text}",
    "max_new_tokens": 48}
EVALUATED = ("downstream_accuracy", "fid", "length_ks", "synthetic_length_mean")  # the evaluate stage's
METRICS = EVALUATED + ("label_agreement",)


def write_corpus(path: Path, docs: int, out: Path) -> tuple[int, list[str]]:
    """The sampled documents as JSON lines; returns their number and the labels of the whole file."""
    import pandas as pd

    if path == NEWSGROUPS:  # Category<TAB>Text after 3 header lines
        full = pd.read_csv(path, sep="\t", skiprows=3, names=["label", "text"]).dropna()
        frame = full.sample(n=min(docs, len(full)), random_state=0) if docs else full
        frame = pd.DataFrame({"doc_id": "n" + frame.index.astype(str), "text": frame["text"], "label": frame["label"]})
    else:
        full = pd.read_csv(path, sep="\t")
        full = full.assign(label=(full["score"] > 0).map({True: "positive", False: "negative"}))
        frame = full.sample(n=min(docs, len(full)), random_state=0) if docs else full
        frame = pd.DataFrame({"doc_id": "m" + frame["id"].astype(str), "text": frame["text"], "label": frame["label"]})
    frame.to_json(out, orient="records", lines=True)
    return len(frame), sorted(full["label"].unique())


def load(root: Path, args, seed: int):
    from privtext.settings import load_settings

    huge = {"r_over_p_max": 1e300, "eps_max": 1e300, "delta_max": 0.5, "mldp_eps_max": 1e300}
    return load_settings(None, environ={}, overrides={
        "spark": {"master": "local[2]", "conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}},
        "lakehouse": {"root": str(root / "lake")}, "tracking": {"enabled": False},
        "run": {"dataset": args.data, "seed": seed, "deterministic": True},
        "generate": {"seed": seed, "temperature": args.temperature, "batch_size": args.generate_batch,
                     "prompts": {"newsgroups": NEWSGROUPS_PROMPTS}},
        "pii": {"secrets": {"mode": args.secrets, "random_words": {"n_words": args.secret_words}}},
        # every run composes on the same secrets: the benchmark measures utility, not the budget's decision
        "privacy": {"budgets": {"default": huge, args.data: huge}},
        "secpe": {"n_syn": args.n_syn, "variations": args.variations, "rounds": args.rounds, "clusters": args.clusters,
                  "labels": args.declared_labels}})


def cover_every_document(ctx) -> tuple[int, int]:
    """--all-private: the random words ``detect_pii`` chose plus each uncovered document's rarest word
    (``cover_words``); the added words' spans, matched and keyed as ``detect_pii`` writes them, join the
    date's spans. Returns (words added, documents still without a secret: no word of 3+ letters)."""
    import pandas as pd
    from pyspark.sql.pandas.types import from_arrow_schema

    from privtext.pii.hashing import load_hmac_key
    from privtext.pii.secrets import WordMatcher, doc_frequencies, match_frame, select_random_words, word_set
    from privtext.platform.tables import DOCUMENTS, PII_SPANS

    from secpe_noise_per_centre import cover_words

    run, rw = ctx.settings.run, ctx.settings.pii.secrets.random_words
    docs = ctx.lakehouse.read(DOCUMENTS, upto=ctx.date).select("doc_id", "text").toPandas()
    texts = docs["text"].fillna("").tolist()
    sets, freq = [word_set(t) for t in texts], doc_frequencies(texts)
    chosen = set(select_random_words(freq, rw.quantile, rw.n_words, rw.min_chars))  # as detect_pii chose them
    extra = cover_words(sets, freq, chosen, rw.min_chars)
    key = load_hmac_key(run.hmac_key_env, run.hmac_key_file, run.deterministic)
    added = match_frame(docs, WordMatcher(extra, rw.entity_type, rw.tier), key).assign(run_id=ctx.run_id, date=ctx.date)
    spans = pd.concat([ctx.lakehouse.read(PII_SPANS, date=ctx.date).toPandas(), added], ignore_index=True)
    ctx.lakehouse.replace_partitions(PII_SPANS, ctx.spark.createDataFrame(
        spans.astype({"start": "int32", "end": "int32"}), from_arrow_schema(PII_SPANS.schema)), {"date": [ctx.date]})
    return len(extra), sum(not s & (chosen | extra) for s in sets)


def stage_baseline(ctx, name: str, texts=None, labels=None, private=None, sample: int = 0) -> None:
    """Stage a baseline as the date's synthetic table: given texts, or the training documents (``private``:
    False = only those without a secret, None = all; ``sample``: that many of them, seeded by run.seed)."""
    import pandas as pd
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from privtext.platform.tables import DOCUMENTS, STAGED_SYNTHETIC_DOCUMENTS
    from privtext.stages.synthesize import load_corpus

    schema = from_arrow_schema(STAGED_SYNTHETIC_DOCUMENTS.schema)
    if texts is not None:
        df = ctx.spark.createDataFrame(pd.DataFrame({
            "synthetic_id": [f"{name}{i}" for i in range(len(texts))], "text": texts, "label": labels,
            "method": name, "round": 0, "run_id": ctx.run_id, "date": ctx.date}), schema)
    else:
        corpus, _ = load_corpus(ctx, use_labels=True)  # the training split, as synthesize reads it
        if private is not None:
            corpus = corpus.where(F.col("is_private") == F.lit(private))
        if sample:
            corpus = corpus.orderBy(F.xxhash64("doc_id", F.lit(ctx.settings.run.seed))).limit(sample)
        df = (corpus.select("doc_id").join(ctx.lakehouse.read(DOCUMENTS).select("doc_id", "text", "label"), "doc_id")
              .select(F.col("doc_id").alias("synthetic_id"), "text", "label", F.lit(name).alias("method"),
                      F.lit(0).alias("round"), F.lit(ctx.run_id).alias("run_id"),
                      F.lit(ctx.date).cast("date").alias("date")))
    ctx.lakehouse.replace_partitions(STAGED_SYNTHETIC_DOCUMENTS, df.select(*schema.names), {"date": [ctx.date]})


def round0(ctx, n_syn: int, labels: list) -> tuple[list, list]:
    """N_syn of the generator's random samples, split over labels as Alg. 3's first pool is."""
    from privtext.stages.synthesize import SparkGenerator

    gen, texts, names = SparkGenerator(ctx), [], []
    for i, label in enumerate(labels):
        n = math.ceil(n_syn / len(labels))
        texts += gen.random(n, label, seed=ctx.settings.run.seed * 1000 + i)
        names += [label] * n
    return texts, names


def label_judge(ctx, labels: list):
    """A classifier fitted on the real training documents' embeddings and labels (this benchmark's
    restricted-zone view; the driver holds them): it tells whether a synthetic text reads as its label."""
    import numpy as np
    from pyspark.sql import functions as F

    from privtext.metrics.utility import fit_classifier
    from privtext.stages.synthesize import load_corpus

    corpus, _ = load_corpus(ctx, use_labels=True)
    rows = corpus.where(F.col("label_code") >= 0).select("embedding", "label_code").toPandas()
    return fit_classifier(np.vstack(rows["embedding"]), [labels[c] for c in rows["label_code"]], seed=0)


def label_agreement(ctx, judge) -> float:
    """Share of the date's staged synthetic texts whose label the real-data judge agrees with: low means
    the generator does not write what the label asks, whatever the selection does."""
    from privtext.embed.encoder import encode_texts
    from privtext.platform.tables import STAGED_SYNTHETIC_DOCUMENTS

    synth = ctx.lakehouse.read(STAGED_SYNTHETIC_DOCUMENTS, date=ctx.date).select("text", "label").toPandas()
    correct, total = judge.correct(encode_texts(synth["text"].tolist(), ctx.settings.embed), synth["label"])
    return correct / total


def protected_noise(lakehouse) -> dict:
    """The last synthesize run's noise figures (sigma, centre_noise_sd) from ``protected.utility_reports``."""
    from pyspark.sql import functions as F

    from privtext.platform.tables import UTILITY_REPORTS
    from privtext.stages.synthesize import NOISE_TARGET

    rows = lakehouse.read(UTILITY_REPORTS).where(F.col("target") == NOISE_TARGET).collect()
    return {r["metric"]: r["value"] for r in rows}


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t interval over seeds (0 for one seed)."""
    import numpy as np
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float(v.mean()), 0.0
    return float(v.mean()), float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))


def summarize(logs: list[str]) -> None:
    """The markdown table of mean +- 95% t interval over seeds from the ``run[name,seed=S]`` lines of one or
    more outputs of this script (runs of other seeds in separate invocations); a (name, seed) seen twice
    counts once, and ``real`` / ``public_only`` (no seed of their own) once per name."""
    import re

    rows: dict[str, dict[int, dict]] = defaultdict(dict)
    pattern = re.compile(r"^run\[(.+),seed=(\d+)\]: (.*)$")
    for log in logs:
        for line in Path(log).read_text(encoding="utf-8").splitlines():
            if m := pattern.match(line):
                name, seed = m.group(1), 0 if m.group(1) in ("real", "public_only") else int(m.group(2))
                rows[name].setdefault(seed, {k: float(v) for k, v in (kv.split("=") for kv in m.group(3).split())})
    print("| | seeds | " + " | ".join(METRICS) + " |\n|---|---|" + "---|" * len(METRICS))
    for name, by_seed in rows.items():
        cells = []
        for metric in METRICS:
            mean, half = interval([r[metric] for r in by_seed.values()])
            cells.append(f"{mean:.3f}" + (f" ± {half:.3f}" if len(by_seed) > 1 else ""))
        print(f"| {name} | {','.join(map(str, sorted(by_seed)))} | " + " | ".join(cells) + " |")
    pairs = [(n, "round0") for n in rows if "[" in n] + [
        (n, n.replace("secpe", "aug_pe")) for n in rows if n.startswith("secpe")
        and n.replace("secpe", "aug_pe") in rows]
    for a, b in pairs:  # paired by seed: the same seed's round-0 pool and private sample
        seeds = sorted(set(rows[a]) & set(rows.get(b, {})))
        if seeds:
            mean, half = interval([rows[a][s]["downstream_accuracy"] - rows[b][s]["downstream_accuracy"]
                                   for s in seeds])
            print(f"accuracy_difference[{a} - {b}]: {mean:+.4f} +- {half:.4f} (paired, n={len(seeds)})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=0, help="documents sampled from the file (0: all)")
    ap.add_argument("--n-syn", type=int, default=200)
    ap.add_argument("--variations", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clusters", type=int, default=40)
    ap.add_argument("--r-over-p", type=float, nargs="+", default=[2.0, 10.0, 50.0, math.inf])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--methods", nargs="+", choices=["secpe", "aug_pe"], default=["secpe", "aug_pe"])
    ap.add_argument("--no-seed-baselines", action="store_true",
                    help="skip round0 and real_n_syn (the per-seed baselines), e.g. when rerunning one method")
    ap.add_argument("--secrets", choices=["random_words", "pii"], default="random_words")
    ap.add_argument("--secret-words", type=int, default=700,
                    help="random_words: words near the 20%% quantile "
                         "(700: ~30%% of the reviews hold one, >= 2,000 private)")
    ap.add_argument("--data", choices=["movie_reviews", "newsgroups"], default="movie_reviews",
                    help="newsgroups: corpus/20newsgroups-train.tab of benchmarks/platform/public_data.py (20 topics)")
    ap.add_argument("--temperature", type=float, default=1.0, help="generate.temperature (SecPE Table 1: 1.2)")
    ap.add_argument("--generate-batch", type=int, default=16,
                    help="generate.batch_size: sequences per forward pass of transformers (the engine on a GPU)")
    ap.add_argument("--all-private", action="store_true",
                    help="every document holds a secret (cover_words); SecPE's D_pub from the generator")
    ap.add_argument("--summarize", nargs="+", metavar="LOG",
                    help="print the table over seeds from the run[...] lines of earlier outputs, and stop")
    args = ap.parse_args()
    if args.summarize:
        return summarize(args.summarize)
    args.declared_labels = []  # secpe.labels: the file's labels under --all-private (no public document has one)

    from privtext.errors import Refused
    from privtext.ledger import Ledger
    from privtext.platform.context import RunContext
    from privtext.stages.runner import run_stage
    from privtext.stages.synthesize import load_corpus

    started = time.perf_counter()
    results: dict[str, list[dict]] = defaultdict(list)
    seconds: dict[str, list[float]] = defaultdict(list)

    def timed(name, call, *args, **kwargs):
        t0 = time.perf_counter()
        out = call(*args, **kwargs)
        seconds[name].append(time.perf_counter() - t0)
        return out

    def evaluate(settings, name):
        r = timed(f"evaluate[{name}]", run_stage, "evaluate", settings, date=DATE)
        assert r.split == "held_out"
        row = {m: getattr(r, m) for m in EVALUATED} | {
            "label_agreement": label_agreement(RunContext.create(settings, date=DATE), judge)}
        results[name].append(row | {"real": r.real, "majority": r.majority_accuracy})
        print(f"run[{name},seed={settings.run.seed}]: " + " ".join(f"{m}={v:.4f}" for m, v in row.items()),
              flush=True)  # each run as it ends: a long run cut short still reports what it measured

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        n_docs, file_labels = write_corpus(NEWSGROUPS if args.data == "newsgroups" else DATA, args.docs,
                                           root / "reviews.jsonl")
        if args.all_private:
            args.declared_labels = file_labels
        settings = load(root, args, args.seeds[0])
        for stage in ("ingest", "detect_pii", "embed"):
            options = {"input_path": str(root / "reviews.jsonl")} if stage == "ingest" else {}
            timed(stage, run_stage, stage, settings, date=DATE, **options)
        ctx = RunContext.create(settings, date=DATE)
        if args.all_private:
            added, uncovered = timed("cover_every_document", cover_every_document, ctx)
            print(f"all_private_cover_words: {added}\nall_private_documents_without_secret: {uncovered}")
        corpus, labels = load_corpus(ctx, use_labels=True)
        counts = {r["is_private"]: r["count"] for r in corpus.groupBy("is_private").count().collect()}
        print(f"documents: {n_docs}")
        print(f"training_private_documents: {counts.get(True, 0)}")
        print(f"training_public_documents: {counts.get(False, 0)}")
        print(f"labels: {json.dumps(labels)}")
        judge = label_judge(ctx, labels)
        for name, private in (("public_only", False), ("real", None)):
            if name == "public_only" and not counts.get(False):
                continue  # no document without a secret: nothing to publish as it is
            stage_baseline(ctx, name, private=private)
            evaluate(settings, name)
        print(f"held_out_documents: {results['real'][0]['real']}")
        print(f"majority_label_accuracy: {results['real'][0]['majority']:.3f}")
        for seed in [] if args.no_seed_baselines else args.seeds:
            settings = load(root, args, seed)
            ctx = RunContext.create(settings, date=DATE)
            texts, names = timed("round0_generate", round0, ctx, args.n_syn, labels)
            stage_baseline(ctx, "round0", texts, names)
            evaluate(settings, "round0")
            stage_baseline(ctx, "real_n_syn", sample=args.n_syn)
            evaluate(settings, "real_n_syn")
        try:  # every seed of a budget before the next budget; Ctrl-C ends early and reports what ran
            for ratio in args.r_over_p:
                for method in args.methods:
                    name = f"{method}[r/p={ratio:g}]"
                    for seed in args.seeds:
                        settings = load(root, args, seed)
                        try:
                            r = timed(f"synthesize[{name}]", run_stage, "synthesize", settings, date=DATE,
                                      method=method, r_over_p=ratio)
                        except (Refused, ValueError) as refused:  # Aug-PE without noise: no guarantee, refused
                            print(f"refused[{name}]: {type(refused).__name__}: {str(refused)[:120]}")
                            break
                        seconds[f"vote[{name}]"].append(r.vote_seconds)
                        seconds[f"generate[{name}]"].append(r.generate_seconds)
                        lake = RunContext.create(settings, date=DATE).lakehouse
                        charged = Ledger(lake, settings).entries()[-1]
                        sampled = charged["params"].get("expected_sampled")  # SecPE: sum of rho, m_k ~ it / K
                        noise = protected_noise(lake)  # the stage keeps its noise in the protected zone only
                        print(f"sigma[{name},seed={seed}]: {noise['sigma']:.4g} (generate {r.generate_seconds:.0f} s, "
                              f"vote {r.vote_seconds:.2f} s; D_pub {r.public_source or '-'}, {r.clusters} centres, "
                              f"noise sd {noise.get('centre_noise_sd', float('nan')):.3g}"
                              + (f", expected sampled {sampled:.0f})" if sampled is not None else ")"), flush=True)
                        evaluate(settings, name)
        except KeyboardInterrupt:
            print("interrupted: the summary covers the runs that ended")
        for name, rows in results.items():
            for metric in METRICS:
                mean, half = interval([row[metric] for row in rows])
                print(f"{metric}[{name}]: {mean:.4f} +- {half:.4f} (n={len(rows)})")
        for name, values in seconds.items():
            print(f"seconds[{name}]: {sum(values) / len(values):.2f}")
        for ratio in args.r_over_p:
            a, s = seconds.get(f"vote[aug_pe[r/p={ratio:g}]]"), seconds.get(f"vote[secpe[r/p={ratio:g}]]")
            if a and s:
                print(f"vote_seconds_ratio_augpe_over_secpe[r/p={ratio:g}]: {sum(a) / sum(s):.2f}")
    print(f"run_wall_seconds: {time.perf_counter() - started:.0f}")


if __name__ == "__main__":
    main()
