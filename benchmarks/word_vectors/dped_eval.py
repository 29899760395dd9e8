"""DPED utility vs privacy on 20 Newsgroups (a seeded subset; see --docs), printing `name: value`.

Side by side in one run, on the same subset: non-private SGNS (the reference), noiseless
distillation from the same teachers (what sharding alone costs; NOT private), and DPED at eps in
{1, 2, 4, 8} (delta 1e-5) for the full method (hidden + votes), output-only (PATE-like) and
hidden-only, evaluated on SimLex-999, WordSim-353 (Spearman, covered pairs), cosine to the
non-private vectors by frequency quintile over the released words (the paper's Fig. 3, in the public
anchor frame; output-only students are not in that frame, so their cosines are ~0 by construction;
plot in benchmarks/out/), and 20-class
accuracy (averaged word vectors + logistic regression, 25% held out). Teachers are trained once on
the public word list (eps-independent); per eps the DP vocabulary is selected (record-level units:
20NG has no users), the teachers answer those queries, and the student is trained. The pure
functions are the ones the ``train_dped`` stage runs in Spark (here in one process).

Accounting printed next to the paper's claims: our epsilon is the PLD composition of the vocabulary
selection and all M charged queries (check + hidden + votes each), with the corrected
sensitivities (2 C_h / N, sqrt(2k), noisy threshold); RDP is printed as a cross-check.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from privtext.dped.aggregation import NoiseMultipliers, calibrate, dped_event, sigmas
from privtext.dped.dped import encode, release, train_teachers
from privtext.dped.evaluate import (
    classification_accuracy,
    cosine_by_frequency_band,
    load_labeled_corpus,
    load_word_pairs,
    to_frame,
    word_similarity,
)
from privtext.dped.settings import DpedSettings
from privtext.dped.sharding import assign_shards
from privtext.dped.teacher import train_teacher
from privtext.dped.vocabulary import dp_select, public_anchor, public_words, unit_word_counts
from privtext.privacy.accounting import epsilon_of
from privtext.privacy.mechanisms import make_rng

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))  # public_data
import public_data

VARIANTS = ("combined", "output_only", "hidden_only")
# dped-paper.txt, Fig. 2 / Table 1 / App. C (WikiText-2 + IMDb, not 20NG; printed for reference only)
PAPER = {"paper.wordsim_eps1_dped": 0.57, "paper.wordsim_eps2_full": 0.60, "paper.wordsim_eps2_output_only": 0.56,
         "paper.wordsim_eps2_hidden_only": 0.49, "paper.rarest_quintile_cosine_eps1_dped": 0.42}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(public_data.DATA_DIR), help="benchmarks/platform/public_data.py fills it")
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--teachers", type=int, default=10)
    ap.add_argument("--max-vocab", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)  # more torch threads thrash on a loaded 2-core box
    ap.add_argument("--eps", default="1,2,4,8")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.time()
    base = DpedSettings(n_teachers=args.teachers, epochs=args.epochs, max_vocab=args.max_vocab,
                        vocab_words_per_unit=50, threshold=args.teachers / 4, top_k=10)
    texts, labels = load_labeled_corpus(os.path.join(args.data, "corpus/20newsgroups-train.tab"), args.docs, seed=0)
    simlex = load_word_pairs(os.path.join(args.data, "wordsim/simlex999.txt"))
    ws353 = load_word_pairs(os.path.join(args.data, "wordsim/wordsim353.tsv"))
    words = public_words()
    index = {w: i for i, w in enumerate(words)}
    docs = encode(texts, words)
    counts = np.bincount(np.concatenate(docs), minlength=len(words))
    anchor = public_anchor(words, base.dim)
    shards = assign_shards([str(i) for i in range(len(texts))], base.n_teachers, base.shard_salt)
    for k, v in {"docs": len(texts), "tokens": int(counts.sum()), "teachers": base.n_teachers,
                 "teacher_epochs": base.epochs, "teacher_lr": base.lr, "dim": base.dim,
                 "adjacency": shards.adjacency}.items():
        print(f"{k}: {v}")
    for k, v in PAPER.items():
        print(f"{k}: {v}")
    bands: dict[str, list[float]] = {}

    def report(name: str, vocab: list[str], vecs: np.ndarray, reference: np.ndarray | None) -> None:
        for label, pairs in (("simlex", simlex), ("wordsim", ws353)):
            rho, n = word_similarity(vecs, vocab, pairs)
            print(f"{name}.{label}_spearman: {rho:.4f}")
            print(f"{name}.{label}_pairs: {n}")
        if reference is not None:
            vidx = np.array([index[w] for w in vocab], dtype=np.int64)
            cos = [c for c, _ in cosine_by_frequency_band(vecs, reference[vidx], counts[vidx], align=False)]
            bands[name] = cos
            for b, c in enumerate(cos):
                print(f"{name}.cosine_to_nonprivate_quintile{b + 1}_of5: {c:.4f}")
        print(f"{name}.released_words: {int(np.isfinite(vecs).all(1).sum())}")
        print(f"{name}.20ng_accuracy: {classification_accuracy(vecs, vocab, texts, labels, seed=0):.4f}")

    t = time.time()
    nonpriv = train_teacher(docs, len(words), base, seed=1)
    full = nonpriv.in_vectors.astype(np.float64)
    full[~nonpriv.trained] = np.nan
    print(f"time.nonprivate_s: {time.time() - t:.1f}")
    report("nonprivate", words, full, None)
    # Fig. 3 reference: the non-private vectors rotated into the public anchor frame (fitted on its
    # 2000 most frequent words), so DPED vectors are compared without fitting a rotation on them
    full = to_frame(full, anchor.astype(np.float64), counts)

    t = time.time()
    teachers = train_teachers(docs, shards.shard, len(words), base, seed=2)
    print(f"time.teachers_s: {time.time() - t:.1f}")

    # noiseless distillation over the top-M words by exact count: what sharding alone costs (NOT private)
    top = np.argsort(-counts, kind="stable")[: args.max_vocab]
    # negligible; the noise grid needs sigma >> 2^-52 |value|
    tiny = NoiseMultipliers(threshold=1e-4, hidden=1e-4, vote=1e-4)
    vecs, _ = release(teachers, top, base, tiny, make_rng(True, 3), seed=3, anchor=anchor)
    report("noiseless_distill", [words[i] for i in top], vecs, full)

    unit_counts = unit_word_counts([[x] for x in texts], words, base.vocab_words_per_unit)  # record-level units
    for eps in (float(e) for e in args.eps.split(",")):
        for variant in VARIANTS:
            t = time.time()
            s = base.model_copy(update={"epsilon": eps, "delta": 1e-5, "variant": variant})
            nm = calibrate(s, args.max_vocab)
            rng = make_rng(True, int(eps * 10))
            vocab = dp_select(unit_counts, words, nm.vocabulary, s.vocab_words_per_unit, s.vocab_threshold_sigmas,
                              s.max_vocab, rng)
            qids = np.array([index[w] for w in vocab], dtype=np.int64)
            vecs, agg = release(teachers, qids, s, nm, rng, seed=4, anchor=anchor)
            name = f"dped_eps{eps:g}_{variant}"
            ev = dped_event(s, nm, args.max_vocab)
            print(f"{name}.epsilon_pld: {epsilon_of(ev, s.delta):.4f}")
            print(f"{name}.epsilon_rdp: {epsilon_of(ev, s.delta, accountant='rdp'):.4f}")
            print(f"{name}.queries_charged: {args.max_vocab}")
            print(f"{name}.dp_vocab_size: {len(vocab)}")
            print(f"{name}.answered_fraction: {agg.answered.mean():.4f}")
            for k, v in sigmas(s, nm).items():
                if v is not None:
                    print(f"{name}.sigma_{k}: {v:.4g}")
            report(name, vocab, vecs, full)
            print(f"time.{name}_s: {time.time() - t:.1f}")
    _plot(bands)
    print(f"time.total_s: {time.time() - t0:.1f}")


def _plot(bands: dict[str, list[float]]) -> None:
    """Fig. 3: cosine to the non-private vectors per frequency quintile (rarest first)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs("benchmarks/out", exist_ok=True)
    fig, axes = plt.subplots(1, len(VARIANTS), figsize=(13, 3.8), sharey=True)
    for ax, variant in zip(axes, VARIANTS):
        for name, cos in bands.items():
            if name.endswith(variant) or name == "noiseless_distill":
                ax.plot(range(1, 6), cos, marker="o", label=name.replace(f"_{variant}", ""))
        ax.set_title(variant)
        ax.set_xlabel("frequency quintile (1 = rarest)")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("cosine to non-private (anchor frame)")
    fig.tight_layout()
    fig.savefig("benchmarks/out/dped_eval_fig3.png", dpi=110)
    print("plot: benchmarks/out/dped_eval_fig3.png")


if __name__ == "__main__":
    main()
