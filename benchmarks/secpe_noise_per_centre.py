"""SecPE's noise per public centre on 20 Newsgroups, without generation: how private the corpus gets with
random-word secrets, the sigma SecretNoise (and Aug-PE) calibrate, and the K that keeps centres above noise.

Data: ``../shared/data/corpus/20newsgroups-train.tab`` (11,293 posts), the training split of
``secpe.holdout_fraction`` 0.2 (the stage's hash rule, recomputed here). Secrets: SecPE Sec. 4.2's random
words (``privtext.pii.secrets.select_random_words`` at the 0.2 quantile, ``--n-words`` of them): a post is
private when it holds one. Per ``--n-words``: the private share, the secret groups, then per r/p (p 1e-4,
T ``--rounds``, 2 releases per round) SecPE's sigma and expected sampled records
(``secret_clustering.group_secret_noise``) and Aug-PE's sigma (``aug_pe.augpe_secret_sigma``: largest
records per secret). A centre of n_k public posts is released with noise (2R / n_k) N(0, sigma^2 I_d)
(Eq. 7): its norm is about 2 R sigma sqrt(d) / n_k (how far the released centre lies from the true one),
and along any one direction its sd is 2 R sigma / n_k: that moves the vote, a centre's choice of its
nearest candidate (the dot product with c1 - c2, |c1 - c2| ~ 1, shifts by that sd). With K centres over
N_pub public posts (n_k ~ N_pub / K; R = 1, unit-norm embeddings, d 384), ``k_max_sd_X`` is the largest K
whose per-direction sd stays <= X, for X 0.05 and 0.1 (cosine gaps between close candidates).

Prints ``name: value`` lines. Usage: python benchmarks/secpe_noise_per_centre.py [--n-words 50 700 5000]
    [--r-over-p 2 10 50] [--rounds 5] [--dim 384]
"""
from __future__ import annotations

import argparse
import hashlib
import math
import time
from collections import Counter
from pathlib import Path

import numpy as np

from privtext.pii.secrets import doc_frequencies, select_random_words, word_set
from privtext.secpe.aug_pe import augpe_secret_sigma
from privtext.secpe.secret_clustering import group_secret_noise

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus" / "20newsgroups-train.tab"
P = 1e-4
SD_TARGETS = (0.05, 0.1)


def newsgroups_posts(path: Path, fraction: float = 0.2) -> list[tuple[str, str, bool]]:
    """(label, text, held out) of every post; held out by ``platform.spark.held_out``'s rule on doc ids ``n<line>``."""
    lines = path.read_text(encoding="utf-8").splitlines()[3:]
    posts = [(f"n{i}", *line.split("\t", 1)) for i, line in enumerate(lines) if "\t" in line]
    share = lambda d: int(hashlib.sha256(f"privtext-holdout:{d}".encode()).hexdigest()[:13], 16) / 16**13  # noqa: E731
    return [(label, text, share(doc_id) < fraction) for doc_id, label, text in posts]


def random_word_secrets(texts: list[str], freq: dict, n_words: int) -> tuple[list[tuple[int, ...]], list[str]]:
    """Each text's secret ids (sorted) among SecPE Sec. 4.2's random words: the ``n_words`` words nearest the
    0.2 quantile of ``freq`` (document frequencies); and the words, in id order."""
    chosen = sorted(select_random_words(freq, 0.2, n_words))
    index = {w: i for i, w in enumerate(chosen)}
    return [tuple(sorted(index[w] for w in word_set(t) if w in index)) for t in texts], chosen


def calibrate(secrets: list[tuple[int, ...]], n_secrets: int, ratio: float, rounds: int):
    """SecretNoise on the private texts grouped by secret set (T ``rounds``, 2 releases per round) and Aug-PE's
    sigma (largest texts per secret): (group keys, ``GroupNoise``, Aug-PE sigma)."""
    groups = Counter(s for s in secrets if s)
    keys, sizes = list(groups), np.array(list(groups.values()), dtype=np.int64)
    per_secret = Counter(i for key, size in groups.items() for i in key for _ in range(size))
    noise = group_secret_noise([list(k) for k in keys], sizes, n_secrets, P, P * ratio, rounds)
    return keys, noise, augpe_secret_sigma(P, P * ratio, rounds, max(per_secret.values(), default=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-words", type=int, nargs="+", default=[50, 700, 5000])
    ap.add_argument("--r-over-p", type=float, nargs="+", default=[2.0, 10.0, 50.0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args()
    posts = [text for _, text, held in newsgroups_posts(DATA) if not held]
    freq = doc_frequencies(posts)
    print(f"training_posts: {len(posts)}\nvocabulary: {len(freq)}\nrounds: {args.rounds}\ndim: {args.dim}")
    for n_words in args.n_words:
        secrets, chosen = random_word_secrets(posts, freq, n_words)
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
            sd_per_k = 2 * noise.sigma / max(n_public, 1)  # per-direction sd of a centre's noise, x K
            name = f"{tag}_rp{ratio:g}"
            print(f"{name}_secpe_sigma: {noise.sigma:.3f}\n{name}_expected_sampled: {noise.expected_sampled:.0f}\n"
                  f"{name}_augpe_sigma: {augpe:.1f}\n"
                  f"{name}_centre_noise_sd_at_k: " + ", ".join(
                      f"K {k} {sd_per_k * k:.3f}" for k in (10, 40, 100, 200, 1000)) + "\n"
                  f"{name}_centre_noise_norm_at_k40: {sd_per_k * 40 * math.sqrt(args.dim):.2f}\n" + "".join(
                      f"{name}_k_max_sd_{x:g}: {int(x / sd_per_k) if sd_per_k > 0 else n_public}\n" for x in SD_TARGETS)
                  + f"{name}_seconds: {time.perf_counter() - started:.1f}")


if __name__ == "__main__":
    main()
