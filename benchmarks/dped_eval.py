"""DPED utility vs privacy on 20 Newsgroups (a seeded subset; see --docs), printing `name: value`.

Side by side in one run: non-private SGNS on the whole subset, noiseless distillation from the same
teachers (sharding cost only), and DPED at eps in {1, 2, 4, 8} (delta 1e-5), all evaluated on
SimLex-999, WordSim-353 (Spearman, covered pairs), cosine to the non-private vectors by frequency
quintile, and 20-class accuracy (averaged word vectors + logistic regression, 25% held out).
Teachers are trained once on the public word list (eps-independent); per eps the DP vocabulary is
selected, the teachers answer those queries, and the student is trained.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from privtext.dped.aggregation import NoiseMultipliers, calibrate, dped_event
from privtext.dped.dped import encode, release, train_teachers
from privtext.dped.evaluate import (classification_accuracy, cosine_by_frequency_band, load_labeled_corpus,
                                    load_word_pairs, word_similarity)
from privtext.dped.settings import DpedSettings
from privtext.dped.sharding import assign_shards
from privtext.dped.teacher import train_teacher
from privtext.dped.vocabulary import dp_select, public_anchor, public_words, unit_word_counts
from privtext.privacy.accounting import epsilon_of
from privtext.privacy.mechanisms import make_rng


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--teachers", type=int, default=20)
    ap.add_argument("--max-vocab", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.time()
    base = DpedSettings(n_teachers=args.teachers, epochs=args.epochs, batch_size=4096, max_vocab=args.max_vocab,
                        vocab_words_per_unit=50, threshold=args.teachers / 4, top_k=10)
    texts, labels = load_labeled_corpus(os.path.join(args.data, "corpus/20newsgroups-train.tab"), args.docs, seed=0)
    simlex = load_word_pairs(os.path.join(args.data, "wordsim/simlex999.txt"))
    ws353 = load_word_pairs(os.path.join(args.data, "wordsim/wordsim353.tsv"))
    words = public_words()
    docs = encode(texts, words)
    counts = np.bincount(np.concatenate(docs), minlength=len(words))
    anchor = public_anchor(words, base.dim)
    shards = assign_shards([str(i) for i in range(len(texts))], base.n_teachers, base.shard_salt)
    print(f"docs: {len(texts)}")
    print(f"tokens: {int(counts.sum())}")
    print(f"teachers: {base.n_teachers}")
    print(f"adjacency: {shards.adjacency}")

    def report(name: str, vocab: list[str], vecs: np.ndarray, reference: np.ndarray | None) -> None:
        for label, pairs in (("simlex", simlex), ("wordsim", ws353)):
            rho, n = word_similarity(vecs, vocab, pairs)
            print(f"{name}.{label}_spearman: {rho:.4f}")
            print(f"{name}.{label}_pairs: {n}")
        if reference is not None:
            vidx = np.array([words.index(w) for w in vocab])
            for b, (c, n) in enumerate(cosine_by_frequency_band(vecs, reference[vidx], counts[vidx])):
                print(f"{name}.cosine_to_nonprivate_band{b + 1}_of5: {c:.4f}")
        print(f"{name}.released_words: {int(np.isfinite(vecs).all(1).sum())}")
        print(f"{name}.20ng_accuracy: {classification_accuracy(vecs, vocab, texts, labels, seed=0):.4f}")

    t = time.time()
    nonpriv = train_teacher(docs, len(words), base, seed=1)
    full = nonpriv.in_vectors.astype(np.float64)
    full[~nonpriv.trained] = np.nan
    print(f"time.nonprivate_s: {time.time() - t:.1f}")
    report("nonprivate", words, full, None)
    report("public_minilm_anchor", words, np.where(counts[:, None] > 0, anchor, np.nan).astype(np.float64), None)

    t = time.time()
    teachers = train_teachers(docs, shards.shard, len(words), base, seed=2)
    print(f"time.teachers_s: {time.time() - t:.1f}")

    # noiseless distillation over the top-M words by exact count: what sharding alone costs (NOT private)
    top = np.argsort(-counts, kind="stable")[: args.max_vocab]
    tiny = NoiseMultipliers(threshold=1e-9, hidden=1e-9, vote=1e-9)
    vecs, _ = release(teachers, top, base, tiny, make_rng(True, 3), seed=3, anchor=anchor)
    report("noiseless_distill", [words[i] for i in top], vecs, full)

    unit_docs = [[x] for x in texts]  # record-level units
    unit_counts = unit_word_counts(unit_docs, words, base.vocab_words_per_unit)
    for eps in (1.0, 2.0, 4.0, 8.0):
        variants = ("combined", "output_only", "hidden_only") if eps == 8.0 else ("combined",)
        for variant in variants:
            t = time.time()
            s = base.model_copy(update={"epsilon": eps, "delta": 1e-5, "variant": variant})
            nm = calibrate(s, args.max_vocab)
            rng = make_rng(True, int(eps * 10))
            vocab = dp_select(unit_counts, words, nm.vocabulary, s.vocab_words_per_unit, s.vocab_threshold_sigmas,
                              s.max_vocab, rng)
            qids = np.array([words.index(w) for w in vocab], dtype=np.int64)
            vecs, agg = release(teachers, qids, s, nm, rng, seed=4, anchor=anchor)
            name = f"dped_eps{eps:g}" + ("" if variant == "combined" else f"_{variant}")
            ev = dped_event(s, nm, args.max_vocab)
            print(f"{name}.epsilon_pld: {epsilon_of(ev, s.delta):.4f}")
            print(f"{name}.epsilon_rdp: {epsilon_of(ev, s.delta, accountant='rdp'):.4f}")
            print(f"{name}.dp_vocab_size: {len(vocab)}")
            print(f"{name}.answered_fraction: {agg.answered.mean():.4f}")
            for k, v in vars(nm).items():
                if v is not None:
                    print(f"{name}.noise_multiplier_{k}: {v:.2f}")
            report(name, vocab, vecs, full)
            print(f"time.{name}_s: {time.time() - t:.1f}")
    print(f"time.total_s: {time.time() - t0:.1f}")


if __name__ == "__main__":
    main()
