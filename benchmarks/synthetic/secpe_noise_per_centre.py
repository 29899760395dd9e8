"""SecPE's noise per public centre on 20 Newsgroups, without generation: how private the corpus gets with
random-word secrets, the sigma SecretNoise (and Aug-PE) calibrate, and the K that keeps centres above noise.

Data: ``corpus/20newsgroups-train.tab`` of ``benchmarks/platform/public_data.py`` (11,293 posts;
``--data movie_reviews``:
the 10,605 review sentences), the training split of ``secpe.holdout_fraction`` 0.2 (the stage's hash rule, recomputed
here). Secrets: SecPE Sec. 4.2's random
words (``privtext.pii.secrets.select_random_words`` at the 0.2 quantile, ``--n-words`` of them): a post is
private when it holds one. ``--all-private``: every post left without one gets its rarest word as a secret
too (``cover_words``; what ``secpe_vs_augpe.py --all-private`` does), so no post is public and D_pub is the
generator's round-0 pool of ``--pool`` (N_syn L) samples: n_k ~ pool / K in place of N_pub / K below. Per
``--n-words``: the private share, the secret groups, then per r/p (p 1e-4, T ``--rounds``, 2 releases per round) SecPE's
sigma and expected sampled records
(``secret_clustering.group_secret_noise``) and Aug-PE's sigma (``aug_pe.augpe_secret_sigma``: largest
records per secret). A centre of n_k public posts is released with noise (2R / n_k) N(0, sigma^2 I_d)
(Eq. 7): its norm is about 2 R sigma sqrt(d) / n_k (how far the released centre lies from the true one),
and along any one direction its sd is 2 R sigma / n_k: that moves the vote, a centre's choice of its
nearest candidate (the dot product with c1 - c2, |c1 - c2| ~ 1, shifts by that sd). With K centres over
N_pub public posts (n_k ~ N_pub / K; R = 1, unit-norm embeddings, d 384), ``k_max_sd_X`` is the largest K
whose per-direction sd stays <= X, for X 0.05 and 0.1 (cosine gaps between close candidates).

Prints ``name: value`` lines. Usage: python benchmarks/synthetic/secpe_noise_per_centre.py [--n-words 50 700 5000]
    [--r-over-p 2 10 50] [--rounds 5] [--dim 384] [--data newsgroups | movie_reviews] [--all-private --pool 360]
"""
from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from privtext.pii.secrets import doc_frequencies, select_random_words, word_set
from privtext.secpe.aug_pe import augpe_secret_sigma
from privtext.secpe.secret_clustering import group_secret_noise

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))  # public_data
import public_data

DATA = public_data.DATA_DIR / "corpus" / "20newsgroups-train.tab"
MOVIES = public_data.DATA_DIR / "reviews" / "movie_snippets.tsv"
P = 1e-4
SD_TARGETS = (0.05, 0.1)


def corpus_posts(path: Path, fraction: float = 0.2) -> list[tuple[str, str, bool]]:
    """(label, text, held out) of every post; held out by ``platform.spark.held_out``'s rule on doc ids ``n<line>``,
    or ``m<id>`` for the movie reviews (label: score > 0), as ``secpe_vs_augpe.write_corpus`` names them."""
    if path == MOVIES:
        rows = [line.split("\t", 2) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
        posts = [(f"m{r[0]}", str(float(r[1]) > 0).lower(), r[2]) for r in rows if len(r) == 3]
    else:
        lines = path.read_text(encoding="utf-8").splitlines()[3:]
        posts = [(f"n{i}", *line.split("\t", 1)) for i, line in enumerate(lines) if "\t" in line]
    share = lambda d: int(hashlib.sha256(f"privtext-holdout:{d}".encode()).hexdigest()[:13], 16) / 16**13  # noqa: E731
    return [(label, text, share(doc_id) < fraction) for doc_id, label, text in posts]


def random_word_secrets(texts: list[str], freq: dict, n_words: int,
                        all_private: bool = False) -> tuple[list[tuple[int, ...]], list[str]]:
    """Each text's secret ids (sorted) among SecPE Sec. 4.2's random words: the ``n_words`` words nearest the
    0.2 quantile of ``freq`` (document frequencies), plus ``cover_words`` when ``all_private``; and the
    words, in id order."""
    sets = [word_set(t) for t in texts]
    chosen = set(select_random_words(freq, 0.2, n_words))
    if all_private:
        chosen |= cover_words(sets, freq, chosen)
    index = {w: i for i, w in enumerate(sorted(chosen))}
    return [tuple(sorted(index[w] for w in s if w in index)) for s in sets], sorted(chosen)


def calibrate(secrets: list[tuple[int, ...]], n_secrets: int, ratio: float, rounds: int):
    """SecretNoise on the private texts grouped by secret set (T ``rounds``, 2 releases per round) and Aug-PE's
    sigma (largest texts per secret): (group keys, ``GroupNoise``, Aug-PE sigma)."""
    groups = Counter(s for s in secrets if s)
    keys, sizes = list(groups), np.array(list(groups.values()), dtype=np.int64)
    per_secret = Counter(i for key, size in groups.items() for i in key for _ in range(size))
    noise = group_secret_noise([list(k) for k in keys], sizes, n_secrets, P, P * ratio, rounds)
    return keys, noise, augpe_secret_sigma(P, P * ratio, rounds, max(per_secret.values(), default=1))


def cover_words(sets: list[set[str]], freq: dict[str, int], chosen: set[str], min_chars: int = 3) -> set[str]:
    """Words to add to the secret words ``chosen`` so that every document holds one: each document still
    without one (in order) adds its rarest word (fewest documents; >= ``min_chars`` letters, ties
    alphabetical), which may cover later documents too. A document without such a word stays public."""
    extra: set[str] = set()
    for words in sets:
        eligible = [w for w in words if len(w) >= min_chars]
        if eligible and not words & chosen and not words & extra:
            extra.add(min(eligible, key=lambda w: (freq[w], w)))
    return extra


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-words", type=int, nargs="+", default=[50, 700, 5000])
    ap.add_argument("--r-over-p", type=float, nargs="+", default=[2.0, 10.0, 50.0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--data", choices=["newsgroups", "movie_reviews"], default="newsgroups")
    ap.add_argument("--all-private", action="store_true", help="cover every post with a secret (cover_words)")
    ap.add_argument("--pool", type=int, default=360, help="--all-private: D_pub = N_syn L generated samples")
    args = ap.parse_args()
    posts = [text for _, text, held in corpus_posts(MOVIES if args.data == "movie_reviews" else DATA) if not held]
    freq = doc_frequencies(posts)
    print(f"training_posts: {len(posts)}\nvocabulary: {len(freq)}\nrounds: {args.rounds}\ndim: {args.dim}")
    for n_words in args.n_words:
        secrets, chosen = random_word_secrets(posts, freq, n_words, args.all_private)
        n_public = sum(1 for s in secrets if not s)
        per_secret = Counter(i for s in secrets for i in s)
        tag = f"words{n_words}"
        print(f"{tag}_doc_freq_of_chosen: {min(freq[w] for w in chosen)}-{max(freq[w] for w in chosen)}")
        print(f"{tag}_private_share: {1 - n_public / len(posts):.3f}\n{tag}_public_posts: {n_public}\n"
              f"{tag}_secret_groups: {len(set(secrets) - {()})}\n"
              f"{tag}_max_posts_per_secret: {max(per_secret.values(), default=0)}")
        for ratio in args.r_over_p:
            started = time.perf_counter()
            _, noise, augpe = calibrate(secrets, len(chosen), ratio, args.rounds)
            d_pub = args.pool if args.all_private else n_public  # generated samples or public posts
            sd_per_k = 2 * noise.sigma / max(d_pub, 1)  # per-direction sd of a centre's noise, x K
            name = f"{tag}_rp{ratio:g}"
            print(f"{name}_secpe_sigma: {noise.sigma:.3f}\n{name}_expected_sampled: {noise.expected_sampled:.0f}\n"
                  f"{name}_augpe_sigma: {augpe:.1f}\n"
                  f"{name}_centre_noise_sd_at_k: " + ", ".join(
                      f"K {k} {sd_per_k * k:.3f}" for k in ((2, 6, 10, 20, 40) if args.all_private
                                                           else (10, 40, 100, 200, 1000))) + "\n"
                  f"{name}_centre_noise_norm_at_k40: {sd_per_k * 40 * math.sqrt(args.dim):.2f}\n" + "".join(
                      f"{name}_k_max_sd_{x:g}: {int(x / sd_per_k) if sd_per_k > 0 else d_pub}\n" for x in SD_TARGETS)
                  + f"{name}_seconds: {time.perf_counter() - started:.1f}")


if __name__ == "__main__":
    main()
