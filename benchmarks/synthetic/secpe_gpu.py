"""SecPE at the paper's operating point on a machine without Spark (a GPU machine): the algorithm layer
(``privtext.secpe``) with transformers' batched generation and the sentence encoder on CUDA, on 20 Newsgroups.

Two steps, because the GPU machine has no Java, no Spark and no project venv (nor the bundled models,
which travel in parts: ``benchmarks/synthetic/gpu_check.sh``):

* ``prepare`` (with the project's venv): the 20NG posts, the held-out split (``platform.spark.held_out``'s
  rule), SecPE Sec. 4.2's random-word secrets at the 0.2 quantile of the training posts' document
  frequencies, and per r/p the noise the ``synthesize`` stage would calibrate (SecretNoise's sigma and
  per-record rho for T rounds, 2 releases per round; Aug-PE's sigma), from ``secpe_noise_per_centre``'s
  helpers; written to one ``bundle.json.gz``.
* ``run``: the ``synthesize`` stage's steps in memory: per-label KMeans of the public posts (K split by
  public label sizes, as ``public_kmeans``), each round a fresh Bernoulli(rho) sample of the private posts
  assigned to the centres (``private_cluster_stats``), Eq. 7's release and Alg. 3's vote (``secpe_vote``,
  ``evolve``); Aug-PE: every training post votes (``private_votes``, ``augpe_vote``). Scored as
  ``evaluate`` does: a logistic regression (``metrics.utility.fit_classifier``) fitted on the synthetic
  texts' embeddings, accuracy on the held-out posts, FID against them, and label agreement (the share of
  texts a classifier fitted on the real training posts gives their generated label). Baselines: ``round0`` (the
  first N_syn / #labels of each label's round-0 pool of the run: the generator alone), ``real_n_syn``
  (N_syn training posts), ``public_only`` and ``real``. No ledger, no lakehouse: a measurement, not a release.

Prints ``name: value`` lines as each run ends (its wall time and the seconds spent generating, embedding
and voting); a run is not started when the longest run so far would end past ``--deadline`` seconds. Usage:
    .venv/bin/python benchmarks/synthetic/secpe_gpu.py prepare --out .gpu/data [--n-words 700] [--r-over-p 2 10]
        [--rounds 5]
        [--all-private]  # every training post private (cover_words): run takes D_pub from round 0's pool,
                         # no public_only
    python3 benchmarks/synthetic/secpe_gpu.py run --bundle .gpu/data --model M.gguf --encoder DIR [--n-syn 1000]
        [--variations 6] [--rounds 5] [--clusters 50] [--temperature 1.2] [--generate-batch 512]
        [--runs secpe:10:0 aug_pe:2:0 ...] [--deadline 420]
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

P = 1e-4


def prepare(args) -> None:
    from privtext.pii.secrets import doc_frequencies

    from secpe_noise_per_centre import DATA, calibrate, corpus_posts, random_word_secrets

    posts = corpus_posts(DATA)
    train = [text for _, text, held in posts if not held]
    train_secrets, words = random_word_secrets(train, doc_frequencies(train), args.n_words, args.all_private)
    secrets = iter(train_secrets)
    doc_secrets = [() if held else next(secrets) for _, _, held in posts]
    labels = sorted({label for label, _, _ in posts})
    noise = {}
    for ratio in args.r_over_p:
        keys, group_noise, augpe = calibrate(train_secrets, len(words), ratio, args.rounds)
        rho = dict(zip(keys, group_noise.rho.tolist()))
        noise[f"{ratio:g}"] = {"secpe_sigma": group_noise.sigma, "augpe_sigma": augpe,
                               "rho": [rho.get(s, 0.0) for s in doc_secrets]}
    bundle = {"labels": labels, "texts": [t for _, t, _ in posts],
              "label_codes": [labels.index(l) for l, _, _ in posts],
              "held_out": [h for _, _, h in posts], "private": [bool(s) for s in doc_secrets], "noise": noise,
              "n_words": args.n_words, "rounds": args.rounds, "p": P, "all_private": args.all_private}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with gzip.open(Path(args.out) / "bundle.json.gz", "wt", encoding="utf-8") as f:
        json.dump(bundle, f)
    print(f"posts: {len(posts)}\nprivate: {sum(bundle['private'])}\nheld_out: {sum(bundle['held_out'])}\n" + "".join(
        f"rp{k}_secpe_sigma: {v['secpe_sigma']:.3f}\nrp{k}_augpe_sigma: {v['augpe_sigma']:.2f}\n"
        for k, v in noise.items()))


class RecordingGenerator:
    """The generator, keeping each label's round-0 pool (the ``round0`` baseline comes from the run's own pool)."""

    def __init__(self, generator):
        self.generator, self.pools, self.seconds = generator, {}, 0.0

    def random(self, n, label, seed=None):
        start = time.perf_counter()
        texts = self.generator.random(n, label, seed=seed)
        self.seconds += time.perf_counter() - start
        self.pools[label] = texts
        return texts

    def variation(self, texts, L, label=None, seed=None):
        start = time.perf_counter()
        out = self.generator.variation(texts, L, label=label, seed=seed)
        self.seconds += time.perf_counter() - start
        return out


def public_clusters(emb, codes, n_labels: int, k_total: int, seed: int):
    """KMEANS(D_pub, K) per label, K split by public label sizes (>= 2), as the stage's ``public_kmeans``."""
    from sklearn.cluster import KMeans

    from privtext.secpe.secret_clustering import PublicClusters, centres_per_label

    centers, sizes, labels = [], [], []
    split = centres_per_label([int((codes == c).sum()) for c in range(n_labels)], k_total, minimum=2)
    for c, k in enumerate(split):
        part = emb[codes == c]
        if k == 0:
            continue
        model = KMeans(n_clusters=k, random_state=seed, n_init=1, max_iter=30).fit(part)
        centers.append(model.cluster_centers_)
        sizes += np.bincount(model.labels_, minlength=k).tolist()
        labels += [c] * k
    return PublicClusters.create(np.vstack(centers), sizes, labels)


def score(name: str, emb, labels, test_emb, test_labels, judge, extra: dict | None = None) -> dict:
    """Held-out accuracy of a classifier trained on (emb, labels), FID against the held-out posts, and label
    agreement: the share of texts that ``judge`` (fitted on the real training posts) gives the label they
    were generated for, as ``secpe_vs_augpe.label_agreement``."""
    from privtext.metrics.fid import fid
    from privtext.metrics.utility import fit_classifier

    correct, total = fit_classifier(emb, labels, seed=0).correct(test_emb, test_labels)
    agree, n = judge.correct(emb, labels)
    out = {"accuracy": correct / total, "fid": fid(test_emb, emb), "label_agreement": agree / n, "texts": len(labels),
           **(extra or {})}
    for key, value in out.items():
        print(f"{name}_{key}: {value:.4f}" if isinstance(value, float) else f"{name}_{key}: {value}", flush=True)
    return out


def run(args) -> None:
    import torch

    from privtext.embed.encoder import encode_texts
    from privtext.embed.settings import EmbedSettings
    from privtext.generate import GenerateSettings, get_generator
    from privtext.metrics.utility import fit_classifier
    from privtext.privacy.mechanisms import make_rng
    from privtext.secpe.aug_pe import augpe_vote, private_votes
    from privtext.secpe.evolution import evolve, secpe_vote
    from privtext.secpe.secret_clustering import generated_public_clusters, private_cluster_stats

    from secpe_vs_augpe import NEWSGROUPS_PROMPTS

    started = time.perf_counter()
    with gzip.open(Path(args.bundle) / "bundle.json.gz", "rt", encoding="utf-8") as f:
        bundle = json.load(f)
    if args.rounds != bundle["rounds"]:
        raise SystemExit(f"--rounds {args.rounds} must equal the bundle's {bundle['rounds']} "
                         "(its noise is for T rounds)")
    print(f"device: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu'}", flush=True)
    embed_settings = EmbedSettings(model=args.encoder, device="auto", batch_size=256)
    embed = lambda texts: encode_texts(list(texts), embed_settings)  # noqa: E731
    t0 = time.perf_counter()
    emb_all = embed(bundle["texts"])
    print(f"real_posts: {len(emb_all)}\nreal_embed_seconds: {time.perf_counter() - t0:.1f}", flush=True)
    names = bundle["labels"]
    codes = np.asarray(bundle["label_codes"])
    held, private = np.asarray(bundle["held_out"]), np.asarray(bundle["private"])
    test_emb, test_labels = emb_all[held], [names[c] for c in codes[held]]
    train, public = ~held, ~held & ~private
    print(f"training_posts: {train.sum()}\npublic_posts: {public.sum()}\nprivate_posts: {(train & private).sum()}")
    judge = fit_classifier(emb_all[train], [names[c] for c in codes[train]], seed=0)
    baselines = {"real": score("real", emb_all[train], [names[c] for c in codes[train]], test_emb, test_labels, judge)}
    if public.any():
        baselines["public_only"] = score("public_only", emb_all[public], [names[c] for c in codes[public]],
                                         test_emb, test_labels, judge)
        clusters = public_clusters(emb_all[public], codes[public], len(names), args.clusters, seed=0)
        print(f"clusters: {clusters.k}\npublic_per_centre_median: {np.median(clusters.sizes):.0f}", flush=True)
    else:  # every post private: D_pub is round 0's generated pool, as secpe.public_source: generator
        def clusters(pool, pool_labels):
            built = generated_public_clusters(pool, pool_labels, args.clusters, 1.0, seed=0)
            print(f"clusters: {built.k}\ngenerated_per_centre_median: {np.median(built.sizes):.0f}", flush=True)
            return built
    settings = GenerateSettings(engine=args.engine, device="auto", model=args.model, batch_size=args.generate_batch,
                                temperature=args.temperature, prompts={"newsgroups": NEWSGROUPS_PROMPTS})
    results, longest = dict(baselines), 0.0
    for spec in args.runs:
        if time.perf_counter() - started + longest > args.deadline:
            print(f"skipped_past_deadline: {spec}", flush=True)
            continue
        method, ratio, seed = spec.split(":")
        name, seed, noise = f"{method}_rp{ratio}_seed{seed}", int(seed), bundle["noise"].get(ratio)
        rng = make_rng(True, seed)
        if method == "secpe":
            sigma = noise["secpe_sigma"] if noise else 0.0
            rho = np.asarray(noise["rho"]) if noise else private.astype(float)
            sampler = np.random.default_rng([seed, 1])
            rows = train & private

            def stats(t, clusters, rows=rows, rho=rho, sampler=sampler):
                keep = sampler.random(rows.sum()) < rho[rows]
                return private_cluster_stats(emb_all[rows], clusters, 1.0, keep, codes[rows])

            vote = secpe_vote(stats, clusters, sigma, rng, 1.0)
        else:
            sigma = noise["augpe_sigma"]
            vote = augpe_vote(lambda t, cand,
                              cand_codes: private_votes(emb_all[train], cand, 1.0, codes[train], cand_codes),
                              sigma, rng)
        generator = RecordingGenerator(get_generator(settings.model_copy(update={"seed": seed}), "newsgroups"))
        t0 = time.perf_counter()
        result = evolve(generator, embed, vote, names, args.n_syn, args.variations, args.rounds, 1.0, seed=seed)
        wall = time.perf_counter() - t0
        longest = max(longest, wall * 1.1)  # the baselines' scoring below adds a few seconds
        results[name] = score(name, embed(result.texts), result.labels, test_emb, test_labels, judge, {
            "sigma": float(sigma), "wall_seconds": wall, "generate_seconds": generator.seconds,
            "embed_seconds": sum(r.embed_seconds for r in result.rounds),
            "vote_seconds": sum(r.vote_seconds for r in result.rounds),
            "mean_words": float(np.mean([len(t.split()) for t in result.texts]))})
        per_label = math.ceil(args.n_syn / len(names))
        pool = [(t, label) for label in names for t in generator.pools.get(label, [])[:per_label]]
        results[f"round0_seed{seed}"] = score(f"round0_seed{seed}", embed([t for t, _ in pool]), [l for _, l in pool],
                                             test_emb, test_labels, judge)
        pick = np.random.default_rng(seed).choice(np.flatnonzero(train), size=args.n_syn, replace=False)
        results[f"real_n_syn_seed{seed}"] = score(f"real_n_syn_seed{seed}", emb_all[pick],
                                                  [names[c] for c in codes[pick]],
                                                 test_emb, test_labels, judge)
    print(f"total_seconds: {time.perf_counter() - started:.1f}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    prep = sub.add_parser("prepare")
    prep.add_argument("--out", required=True)
    prep.add_argument("--n-words", type=int, default=700)
    prep.add_argument("--r-over-p", type=float, nargs="+", default=[2.0, 10.0])
    prep.add_argument("--rounds", type=int, default=5)
    prep.add_argument("--all-private", action="store_true",
                      help="every training post holds a secret (cover_words); run then takes D_pub from round 0's pool")
    go = sub.add_parser("run")
    go.add_argument("--bundle", required=True)
    go.add_argument("--model", required=True, help="the GGUF file (generate.model as a path)")
    go.add_argument("--encoder", required=True, help="the sentence encoder's folder (embed.model as a path)")
    go.add_argument("--engine", default="auto")
    go.add_argument("--n-syn", type=int, default=1000)
    go.add_argument("--variations", type=int, default=6)
    go.add_argument("--rounds", type=int, default=5, help="T: must equal prepare's --rounds (the noise is for T)")
    go.add_argument("--clusters", type=int, default=50)
    go.add_argument("--temperature", type=float, default=1.2)
    go.add_argument("--generate-batch", type=int, default=512)
    go.add_argument("--runs", nargs="+", default=["secpe:10:0", "secpe:2:0", "aug_pe:2:0"],
                    help="method:r_over_p:seed, in order (r/p inf: secpe without noise)")
    go.add_argument("--deadline", type=float, default=420,
                    help="seconds by which the runs must end (none starts that would not)")
    go.add_argument("--out", help="write every figure as JSON here")
    args = ap.parse_args()
    prepare(args) if args.step == "prepare" else run(args)


if __name__ == "__main__":
    main()
