"""Do the audit's negative controls behave on long, repetitive mail and on chat? (issue 45)

Builds documents the way the audit stage does (``ampl.documents``: tokens, a ``max_tokens`` window from a
quarter window before the first span, one embedding per distinct token with the real sentence encoder) and
audits the two controls (uniform replacement: must pass, below delta/2 with margin; identity: must fail)
plus, with ``--verbatim``, a release keeping that share of PERSON values verbatim and the rest uniform (a
leak the audit must still find), ``--reruns`` times with other seeds (other split, adversary
initialisation and triplet draw). Prints ``name: value`` lines: each rerun's ratios, their spread, and the
seconds of the adversary's training and of the posterior evaluation.

The documents come from ``tests.fixtures.realtext`` when it is importable (realistic e-mails with
headers, quoted replies, signatures and mailing-list footers; real chats), else from the small generator
below (mail whose list address, list name and URL recur in every message, senders drawn from a Zipf
prior, so the same value occurs hundreds of times). Distances: CluSanT's D_k as the stage's
``guarantee_distance`` when ``--dk`` (builds the configured sanitizer), else Euclidean. Each secret is
audited at the clusant eps of its type and tier, as the stage does (``--eps``: one bound for all).

``--clusant`` also audits the configured sanitizer's own release of the same documents (one draw per distinct
value, as the sanitize stage draws) and prints how many values it drew back verbatim against the mechanism's
expectation. ``--copy both`` audits every release twice on the same split and seed, with the released view's
copy component (issue 45) and without it (w = 0, the posterior before), for the ratio and seconds side by side.
``--unseen`` (default on, as the stage): only held-out secrets whose value no training document holds are
scored (``ampl.audit``, "unseen units"; a secret is its normalized value, as the stage's secret_id); ``off``:
every held-out secret (the audit before); ``both``: side by side. Each audit prints where its seconds went
(``_seconds_split``: the adversary's training, prediction, the scale's calibration, the copy component, the
posterior normalisers, the triplets and Eq. 5).

    .venv/bin/python benchmarks/export/ampl_controls.py [--docs 1300] [--reruns 3] [--conf conf/local.yaml]
        [--verbatim 0.4] [--kinds mail chat] [--dk] [--clusant] [--copy on|off|both] [--unseen on|off|both]
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import time
from unittest import mock

import numpy as np

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

FIRST = ["Anna", "Bernd", "Carla", "Dmitri", "Elif", "Femi", "Grace", "Hiro", "Ines", "Jonas", "Kavya", "Lars",
         "Maya", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sven", "Tomas", "Uma", "Viktor", "Wen", "Yusuf"]
LAST = ["Berger", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Hansen", "Ivanova", "Jensen", "Kowalski",
        "Larsen", "Moreau", "Novak", "Olsen", "Petrov", "Quist", "Rossi", "Schmidt", "Tanaka", "Weber"]
LISTS = [("rsync-users", "lists.samba.example.org"), ("gnucash-devel", "gnucash.example.org"),
         ("debian-user", "lists.debian.example.org")]
TOPICS = ["build fails on arm64", "backup window moved", "patch for the parser", "release candidate 2",
          "question about quotas", "mirror is out of date", "meeting notes", "translation update"]
WORDS = ("thanks for the quick reply I tried the patch and it works on my machine but the tests still fail when "
         "the cache is cold could you check the log attached and tell me whether the new option is needed").split()


def _mail(rng: np.random.Generator, people: list[tuple[str, str]], prior: np.ndarray):
    """(text, spans [(start, end, type)]) of one list message: headers, greeting, body, quoted reply,
    signature, list footer; the list's address, name and URL recur in every message of the list."""
    parts: list[tuple[str, str | None]] = []
    sender, other = (people[i] for i in rng.choice(len(people), size=2, replace=False, p=prior))
    name, domain = LISTS[int(rng.integers(len(LISTS)))]
    day = f"{int(rng.integers(1, 29))} Nov 2026 {int(rng.integers(0, 24)):02d}:{int(rng.integers(0, 60)):02d}"
    zone = ["+0100", "+0000", "-0500"][int(rng.integers(3))]
    body = " ".join(rng.choice(WORDS, size=int(rng.integers(12, 40))))
    weekday = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][int(rng.integers(7))]
    parts += [("From: ", None), (sender[0], "PERSON"), (" <", None), (sender[1], "EMAIL_ADDRESS"), (">\nTo: ", None),
              (f"{name}@{domain}", "EMAIL_ADDRESS"), (f"\nList-Id: <{name}.{domain}>\nList-Post: <mailto:", None),
              (f"{name}@{domain}", "EMAIL_ADDRESS"), (">\nDate: ", None),
              (weekday, "PERSON" if weekday == "Sun" else None),
              (", ", None), (day, "DATE_TIME"), (" ", None),
              (zone, "PHONE_NUMBER"), ("\nSubject: Re: [", None), (name, "ORGANIZATION"),
              (f"] {TOPICS[int(rng.integers(len(TOPICS)))]}\n\nHi ", None), (other[0].split()[0], "PERSON"),
              (f",\n\n{body}\n\nOn {day}, ", None), (other[0], "PERSON"), (" wrote:\n> ", None),
              (" ".join(rng.choice(WORDS, size=10)), None), ("\n\n-- \n", None), (sender[0], "PERSON"),
              ("\n_______________________________________________\n", None), (name, "ORGANIZATION"),
              (" mailing list\n", None), (f"{name}@{domain}", "EMAIL_ADDRESS"), ("\nhttps://", None),
              (f"{domain}/mailman/listinfo/{name}", "URL"), ("\n", None)]
    text, spans = "", []
    for piece, kind in parts:
        if kind is not None:  # detector-like: list headers name the list in context, "Sun" is a PERSON, "+0100" a phone
            spans.append((len(text), len(text) + len(piece), kind))
        text += piece
    return text, spans


def generated_mail(n: int, seed: int) -> list[tuple[str, list[tuple[int, int, str]]]]:
    rng = np.random.default_rng(seed)
    people = [(f"{f} {l}", f"{f.lower()}.{l.lower()}@example.{['com', 'org', 'net'][i % 3]}")
              for i, (f, l) in enumerate(zip(rng.permutation(FIRST * 2), rng.permutation(LAST * 3)))]
    prior = 1.0 / np.arange(1, len(people) + 1) ** 1.1
    return [_mail(rng, people, prior / prior.sum()) for _ in range(n)]


ENTITY_TYPES = {"PERSON": "PERSON", "EMAIL_ADDRESS": "EMAIL_ADDRESS", "PHONE_NUMBER": "PHONE_NUMBER", "URL": "URL",
                "STREET_ADDRESS": "LOCATION", "LOCATION": "LOCATION", "IP_ADDRESS": "IP_ADDRESS",
                "ORGANIZATION": "ORGANIZATION", "DATE": "DATE_TIME"}


def fixture_docs(kind: str, n: int, seed: int):
    """(text, spans) from tests.fixtures.realtext (its annotated values as a detector would type them, personal
    or not: list addresses, companies and dates are detected too), or None when it is not there."""
    try:
        from tests.fixtures import realtext
    except ImportError:
        return None
    documents, annotations = realtext.generate(n if kind == "mail" else 0, n if kind == "chat" else 0, seed)
    spans: dict[str, list] = {}
    for a in annotations:
        if a["type"] in ENTITY_TYPES:
            spans.setdefault(a["doc_id"], []).append((int(a["start"]), int(a["end"]), ENTITY_TYPES[a["type"]]))
    return [(d["text"], spans[d["doc_id"]]) for d in documents if d["kind"] == kind and d["doc_id"] in spans]


def secret_key(entity_type: str, raw: str) -> str:
    """The secret's id as the stage keys it: a hash of its normalized value (``pii.hashing``; type not hashed)."""
    from privtext.pii.hashing import normalize_value

    return hashlib.sha256(normalize_value(entity_type, raw).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def doc_tokens(corpus, max_tokens: int):
    from privtext.ampl.documents import Span, clean_spans, document_tokens

    docs = []
    for text, spans in corpus:
        spans = clean_spans([Span(s, e, secret_key(t, text[s:e]), "PII", t) for s, e, t in spans])
        docs.append(document_tokens(text, spans, [text[s.start:s.end] for s in spans], max_tokens))
    return docs


def clusant_docs(corpus, settings, max_tokens: int):
    """(documents, verbatim draws, the mechanism's expected verbatim draws): the corpus released by the configured
    sanitizer as the sanitize stage does (one draw per distinct value under a fixed benchmark draw key), and how
    many distinct values it drew back as themselves against the mechanism's own probability of that (an
    eps-metric-LDP draw may return its input: that leak is the mechanism's, and the audit may count it)."""
    from privtext.ampl.documents import Span, clean_spans, document_tokens
    from privtext.clusant.sanitizer import sanitize_documents
    from privtext.sanitizer_setup import build_sanitizer

    sanitizer, encode = build_sanitizer(settings)
    tier = settings.pii.tier_of
    texts = [text for text, _ in corpus]
    spans = [clean_spans([Span(s, e, secret_key(t, text[s:e]), tier(t), t) for s, e, t in found])
             for text, found in corpus]
    out = sanitize_documents(sanitizer, encode, None, texts, [[(s.start, s.end, s.entity_type, s.tier) for s in doc]
                                                              for doc in spans],
                             draw_key=hashlib.sha256(b"ampl_controls benchmark draw key").digest())
    docs = [document_tokens(text, doc, reps, max_tokens) for text, doc, reps in zip(texts, spans, out.replacements)]
    return docs, sum(out.same_as_input), sum(out.same_expected)


def timed(fn, spent: list[float]):
    """``fn``, adding its seconds to ``spent[0]``."""
    def run(*args, **kwargs):
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started
    return run


PARTS = ("training", "prediction", "scale_calibration", "copy_component", "posteriors", "triplets_eq5")


def verbatim_release(secrets, candidates, types, share: float, rng):
    """PERSON values kept verbatim with probability ``share``, everything else uniform (a partial leak)."""
    ids = np.where(secrets.mask, rng.integers(0, len(candidates), size=secrets.secret_ids.shape), -1)
    person = np.asarray([t == "PERSON" for t in types])
    keep = secrets.mask & person[np.maximum(secrets.secret_ids, 0)] & (rng.random(ids.shape) < share)
    ids = np.where(keep, secrets.secret_ids, ids)
    return secrets.release(ids, candidates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1300)
    parser.add_argument("--kinds", nargs="+", default=["mail"], choices=["mail", "chat"])
    parser.add_argument("--reruns", type=int, default=3)
    parser.add_argument("--conf", default="conf/local.yaml")
    parser.add_argument("--verbatim", type=float, default=0.0, help="also audit a release keeping this share of names")
    parser.add_argument("--dk", action="store_true", help="CluSanT's D_k as the distance (builds the sanitizer)")
    parser.add_argument("--clusant", action="store_true", help="also audit the configured sanitizer's own release")
    parser.add_argument("--copy", choices=["on", "off", "both"], default="on",
                        help="the released view's copy component; off: w = 0 (the posterior before issue 45's fix); "
                             "both: each audit twice, side by side")
    parser.add_argument("--unseen", choices=["on", "off", "both"], default="on",
                        help="score only held-out secrets no training document holds (the stage's rule); off: all")
    parser.add_argument("--eps", type=float, default=None,
                        help="one audited bound (default: each secret at the clusant eps of its type and tier)")
    args = parser.parse_args()
    import torch

    from privtext.ampl import adversary as adversary_module, audit as audit_module
    from privtext.ampl.audit import UnauditableError, audit_with_diagnostics, control_release, unit_labels
    from privtext.ampl.documents import embed_documents
    from privtext.ampl.sequences import split_rows
    from privtext.embed.encoder import encode_phrases
    from privtext.settings import load_settings

    settings = load_settings(args.conf)
    ampl = settings.ampl
    torch.set_num_threads(ampl.torch_threads or max(1, (os.cpu_count() or 2) // 2))
    print(f"load_before: {os.getloadavg()[0]:.2f}")
    for kind in args.kinds:
        corpus = fixture_docs(kind, args.docs, 0)
        source = "realtext" if corpus is not None else "generated"
        if corpus is None:
            if kind == "chat":
                print("chat: skipped (tests.fixtures.realtext not importable)")
                continue
            corpus = generated_mail(args.docs, 0)
        corpus = corpus[:ampl.max_documents]
        docs = doc_tokens(corpus, ampl.max_tokens)
        from privtext.clusant.surface_format import adjacency_group

        batch = embed_documents(docs, lambda p: encode_phrases(p, settings.embed), adjacency_group)
        tag = f"{kind}_{source}"
        clusant_release = None
        if args.clusant:  # the same documents and candidates, released by the sanitizer
            from privtext.ampl.sequences import ReleasedSequences

            released_docs, same, expected = clusant_docs(corpus, settings, ampl.max_tokens)
            released = embed_documents(released_docs, lambda p: encode_phrases(p, settings.embed), adjacency_group)
            # one value per secret_id in both batches, in the same first-seen order, so ids match
            assert released.candidate_values[:len(batch.candidate_values)] == batch.candidate_values
            clusant_release = ReleasedSequences(released.release.released, batch.release.mask,
                                                batch.release.original, batch.release.lengths)
            print(f"{tag}_clusant_verbatim_draws: {same} (the mechanism's expectation {expected:.1f})")
        eps = np.full(len(batch.candidates), args.eps) if args.eps else np.array(
            [settings.clusant.eps_for(t, settings.pii.tier_of(t)) for t in batch.candidate_types])
        distance = None
        if args.dk:
            from privtext.sanitizer_setup import build_sanitizer
            from privtext.stages.audit import guarantee_distance

            sanitizer, phrase_encode = build_sanitizer(settings)
            distance = guarantee_distance(batch, sanitizer, phrase_encode)
        print(f"{tag}_documents: {batch.release.n}")
        print(f"{tag}_sensitive_tokens: {int(batch.release.mask.sum())}")
        print(f"{tag}_candidates: {len(batch.candidates)}")
        ratios: dict[str, list[float]] = {}
        labels = unit_labels(batch.secrets.secret_ids, np.zeros(batch.release.n))  # one night, one draw epoch
        for seed in range(args.reruns):
            rng = np.random.default_rng(seed)
            train_rows, test_rows = split_rows(rng, batch.release.n, 0.2)
            truth = batch.secrets.take(test_rows).truth()
            units = tuple(labels[rows][labels[rows] >= 0] for rows in (train_rows, test_rows))
            releases = [(c, control_release(batch.secrets, batch.candidates, c, rng))
                        for c in ("control_uniform", "control_identity")]
            if args.verbatim:
                releases.append((f"verbatim{args.verbatim:g}", verbatim_release(
                    batch.secrets, batch.candidates, batch.candidate_types, args.verbatim, rng)))
            if clusant_release is not None:
                releases.append(("clusant", clusant_release))
            for name, release in releases:
                audit_seed = int(rng.integers(0, 2**31 - 1))
                variants = [(c, u) for c in (["on", "off"] if args.copy == "both" else [args.copy])
                            for u in (["on", "off"] if args.unseen == "both" else [args.unseen])]
                for copy, scored in variants:
                    label = name + (f"_copy_{copy}" if args.copy == "both" else "") + (
                        f"_unseen_{scored}" if args.unseen == "both" else "")
                    started = time.perf_counter()
                    spent = [0.0]  # seconds in the copy component's fit and evaluation setup
                    split = {part: [0.0] for part in PARTS}
                    fit = (lambda *a, **k: {}) if copy == "off" else timed(audit_module.fit_copy_weights, spent)
                    component = timed(audit_module.copy_component, spent)
                    patches = {(audit_module, "fit_copy_weights"): (fit, "copy_component"),
                               (audit_module, "copy_component"): (component, "copy_component"),
                               (audit_module, "train_shared"): (audit_module.train_shared, "training"),
                               (audit_module, "shared_scale"): (audit_module.shared_scale, "scale_calibration"),
                               (adversary_module.TrainedAdversary, "predict"): (
                                   adversary_module.TrainedAdversary.predict, "prediction"),
                               (audit_module, "posterior_of"): (audit_module.posterior_of, "posteriors"),
                               (audit_module, "true_secret_triplets"): (audit_module.true_secret_triplets,
                                                                        "triplets_eq5"),
                               (audit_module, "mpl"): (audit_module.mpl, "triplets_eq5")}
                    with contextlib.ExitStack() as stack:
                        for (owner, attr), (fn, part) in patches.items():
                            stack.enter_context(mock.patch.object(owner, attr, timed(fn, split[part])))
                        try:
                            result, diag = audit_with_diagnostics(
                                release.take(train_rows), release.take(test_rows), batch.candidates, truth,
                                adversary="transformer", eps=eps, settings=ampl,
                                groups=np.asarray(batch.candidate_groups, dtype=object), distance=distance,
                                rng=np.random.default_rng(audit_seed), units=units if scored == "on" else None)
                        except UnauditableError as error:
                            print(f"{tag}_seed{seed}_{label}_unauditable: {error}")
                            continue
                    seconds = time.perf_counter() - started
                    ratios.setdefault(label, []).append(result.violation_ratio)
                    train = sum(diag.posterior.epoch_seconds)
                    print(f"{tag}_seed{seed}_{label}_violation_ratio: {result.violation_ratio:.4f}")
                    print(f"{tag}_seed{seed}_{label}_unseen_secrets: {diag.unseen_secrets} (held-out positions "
                          f"scored {diag.scored_observations} of {int(release.take(test_rows).mask.sum())})")
                    print(f"{tag}_seed{seed}_{label}_passed: {int(result.passed)}")
                    by_type: dict[str, float] = {}
                    for group, w in diag.copy_weights.items():
                        by_type[str(group).split("|")[0]] = max(w, by_type.get(str(group).split("|")[0], 0.0))
                    print(f"{tag}_seed{seed}_{label}_copy_weight_max_by_type: "
                          + (", ".join(f"{t} {w:.3f}" for t, w in sorted(by_type.items()) if w > 0) or "none"))
                    print(f"{tag}_seed{seed}_{label}_seconds: {seconds:.1f} (training {train:.1f}, copy component "
                          f"{spent[0]:.1f})", flush=True)
                    # prediction inside training (validation) and inside the scale / posteriors is counted there too
                    print(f"{tag}_seed{seed}_{label}_seconds_split: "
                          + ", ".join(f"{part} {split[part][0]:.1f}" for part in PARTS), flush=True)
        for name, values in ratios.items():
            print(f"{tag}_{name}_ratio_min: {min(values):.4f}")
            print(f"{tag}_{name}_ratio_max: {max(values):.4f}")
    print(f"load_after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
