"""CluSanT's (k, eps) trade-off on the real public vocabularies, from the mechanism's exact probabilities.

For each entity type and (k, eps): the guarantee (metric-LDP eps for D_k, and the pure-LDP eps across
all inputs, which is what a value's protection across clusters comes down to), the expected phrase
similarity E[cos(f(x), f(M(x)))] over held-out inputs (Faker values of another seed), the share of
outputs equal to the input (vocabulary inputs), and the probability that the output stays in the
input's cluster. Uniform replacement is the zero-leakage reference. Prints ``name: value`` lines and
writes ``benchmarks/out/clusant_tradeoff.md``.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from privtext.clusant.clustering import cluster_vocabulary
from privtext.clusant.mechanism import clusant
from privtext.clusant.sanitizer import build_vocabularies
from privtext.clusant.vocabulary import _faker_candidates
from privtext.embed.encoder import encode_phrases
from privtext.settings import load_settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _row(mech, vocab_inputs, held_out, held_emb) -> dict:
    probs_v = np.exp(mech.log_probabilities(mech.vocab[vocab_inputs]))
    probs_h = np.exp(mech.log_probabilities(held_emb))
    cos_h = held_emb @ mech.vocab.T
    same_cluster = mech.labels[vocab_inputs][:, None] == mech.labels[None, :]
    return {
        "pure_ldp_eps": mech.ldp_epsilon(),
        "similarity": float((probs_h * cos_h).sum(axis=1).mean()),
        "equal_to_input": float(probs_v[np.arange(len(vocab_inputs)), vocab_inputs].mean()),
        "stays_in_cluster": float((probs_v * same_cluster).sum(axis=1).mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--types", nargs="+", default=["PERSON", "LOCATION", "ORGANIZATION"])
    parser.add_argument("--k", nargs="+", type=float, default=[1.0, 2.0, 4.0, 16.0])
    parser.add_argument("--eps", nargs="+", type=float, default=[1.0, 2.0, 4.0, 8.0])
    parser.add_argument("--inputs", type=int, default=200)
    args = parser.parse_args()
    settings = load_settings("conf/local.yaml")
    cfg = settings.clusant.model_copy(update={"entity_types": tuple(args.types)})
    encode = lambda p: encode_phrases(p, settings.embed)
    vocabularies = build_vocabularies(cfg, encode, settings.embed.model)
    lines = ["| type | k | eps | pure-LDP eps | similarity | equal to input | stays in cluster |",
             "|---|---|---|---|---|---|---|"]
    for entity_type in args.types:
        phrases, emb = vocabularies[entity_type]
        labels = cluster_vocabulary(emb, cfg.clustering, cfg.n_clusters,
                                    np.random.default_rng([cfg.vocabulary.seed, len(phrases)]))
        rng = np.random.default_rng(1)
        vocab_inputs = rng.choice(len(phrases), size=min(args.inputs, len(phrases)), replace=False)
        held = [h for h in dict.fromkeys(_faker_candidates(entity_type, args.inputs, ("en_US",), 12345))
                if h not in set(phrases)][: args.inputs]
        held_emb = encode(held).astype(np.float64) if held else emb[vocab_inputs]
        uniform = float((held_emb @ emb.T).mean())
        print(f"{entity_type}_uniform_similarity: {uniform:.4f}")
        lines.append(f"| {entity_type} | uniform | - | 0 | {uniform:.3f} | {1 / len(phrases):.4f} | - |")
        for k in args.k:
            for eps in args.eps:
                row = _row(clusant(emb, labels, eps, k), vocab_inputs, held, held_emb)
                tag = f"{entity_type}_k{k:g}_eps{eps:g}"
                for key, value in row.items():
                    print(f"{tag}_{key}: {value:.4f}")
                lines.append(f"| {entity_type} | {k:g} | {eps:g} | {row['pure_ldp_eps']:.1f} | "
                             f"{row['similarity']:.3f} | "
                             f"{row['equal_to_input']:.3f} | {row['stays_in_cluster']:.3f} |")
    out = Path("benchmarks/out")
    out.mkdir(parents=True, exist_ok=True)
    (out / "clusant_tradeoff.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
