"""Detection and the sanitized export on real text: the shared fixtures ``tests/fixtures/realtext`` (generated
e-mails with every personal value annotated, real chats from ``chitchat-dataset`` with planted names).

Detection is the ``detect_pii`` stage's (``pii.detect.get_analyzer`` + ``detect_many``, ``conf/base.yaml``), the
export the ``sanitize`` stage's algorithm (``clusant.sanitizer.merge_spans`` + ``sanitize_documents`` with the
settings' sanitizer, ``sanitizer_setup.build_sanitizer``). Prints ``name: value`` lines, per corpus (``mail``,
``chat``):
* ``precision_T``: detected spans of type T overlapping an annotation of that type (or of a compatible one:
  an address line typed LOCATION, a date's parts typed DATE_TIME) / detected spans of type T; in chat only the
  planted names are annotated, so a correct detection of what a volunteer wrote counts as a false one there;
* ``recall_T`` (every letter and digit of the annotated value inside detected spans of any type) and
  ``typed_recall_T`` (overlapped by a span of its own type); ``undetected_K`` per kind of ``verbatim_K``: no
  letter or digit of the value inside a span (what ``--no-export`` can say of the verbatim share: every
  detected span is replaced, so ``verbatim_K`` is this plus the draws that spell a value again);
* ``other_type_share_K`` for the non-entity tokens (K: dates, time zones, weekdays, months, punctuation,
  versions, file names, a chat's bare numbers and interjections, ...): the share overlapped by a span of another
  type (any type but DATE_TIME for a date and its parts, but AGE or DATE_TIME for a bare number, any type at all
  for the rest), and ``other_types_K`` which types; ``other_type_share_must_show``: dates, time zones, weekdays,
  months and punctuation together;
* ``date_header_still_date``: ``Date:`` header lines whose value still parses as an RFC 2822 date after the
  export (``email.utils``), and ``date_header_same_layout``: ... in the same layout (letters, digits, zone);
* ``verbatim_K`` after the export, per kind (full names, first or last names alone, chat speakers, phones,
  e-mails, URLs with a personal part, street lines, city lines, IPs): the share left readable, i.e. with no
  letter or digit replaced (for a URL: of its personal part), or replaced by a draw that spells it again;
  ``partly_K``: some letter or digit left;
* ``format_kept_share`` (what the stage reports) and independent checks of it: IPv4 replaced by IPv4
  (``ipaddress``), dates replaced by a date (``dateutil``);
* utility: ``spam_gap`` (spam vs the rest of the mail, TF-IDF + logistic regression trained on the export vs the
  originals, scored on the originals: ``metrics.export_utility.downstream_accuracy``), ``category_gap`` (five
  mail categories), ``prompt_gap`` (chat prompts), ``char_similarity`` (mean ``difflib`` ratio, original vs
  exported, over documents with spans of at most 20,000 characters) and what costs it per span type
  (``char_loss_T``, see ``char_loss_figures``), ``semantic_similarity`` (mean cosine of
  ``embed.model`` sentence embeddings, the ``sanitize`` stage's similarity, over at most ``--similarity-docs`` documents
  with spans).
``--pairs N`` also prints N before/after pairs per replaced type and for Date: lines (``pair_T: before -> after``;
the fixtures are generated or public text, nothing private).

    .venv/bin/python benchmarks/export/real_text.py [--mail 400] [--chat 200] [--seed 1] [--pairs 15]
    .venv/bin/python benchmarks/export/real_text.py --fixtures DIR        # what python -m tests.fixtures.realtext wrote
"""
from __future__ import annotations

import argparse
import difflib
import email.utils
import ipaddress
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.fixtures.realtext

DATE_PARTS = {"DATE", "TIME", "WEEKDAY", "MONTH", "TIME_ZONE"}
COMPATIBLE = {"PERSON": {"PERSON"}, "EMAIL_ADDRESS": {"EMAIL_ADDRESS"}, "PHONE_NUMBER": {"PHONE_NUMBER"},
              "URL": {"URL"}, "IP_ADDRESS": {"IP_ADDRESS"}, "ORGANIZATION": {"ORGANIZATION"},
              "STREET_ADDRESS": {"STREET_ADDRESS", "LOCATION"}, "LOCATION": {"LOCATION", "STREET_ADDRESS"},
              "ZIP_CODE": {"LOCATION", "STREET_ADDRESS"}, "DATE_TIME": DATE_PARTS}
MUST_SHOW = {"DATE", "TIME_ZONE", "WEEKDAY", "MONTH", "PUNCT"}
NEGATIVE = ("DATE", "TIME", "TIME_ZONE", "WEEKDAY", "MONTH", "PUNCT", "VERSION", "FILENAME", "WORD", "LAUGHTER",
            "QUOTE", "NUMBER")
# a negative token may be typed these and still be right: a date's parts a date; a bare number an age or a year
ALLOWED = {**{k: {"DATE_TIME"} for k in DATE_PARTS}, "NUMBER": {"AGE", "DATE_TIME"}}
VERBATIM_KINDS = {"full_name": "full_names", "first_name": "first_or_last_names", "last_name": "first_or_last_names",
                  "speaker": "chat_speakers", "phone": "phones", "email": "emails", "personal_url": "urls_personal",
                  "street": "street_lines", "city_line": "city_lines", "ip": "ips"}
DATE_LINE = re.compile(r"(?m)^Date: (.*)$")


def _share(hit: int, total: int) -> str:
    return f"{hit / total:.4f} ({hit}/{total})" if total else "n/a (0)"


def _alnum(text: str, start: int, end: int) -> list[int]:
    return [i for i in range(start, end) if text[i].isalnum()]


def _layout(value: str) -> str:
    return re.sub(r"[A-Za-z]+", "A", re.sub(r"\d+", "9", value))


def _is_date(value: str) -> bool:
    import warnings

    from dateutil import parser

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zone names dateutil does not know (EDT, CEST) are no error here
            parser.parse(value, fuzzy=False)
    except (ValueError, OverflowError):
        return False
    return True


def detection_figures(name: str, docs, anns, found) -> None:
    """Per-type precision and recall, and the non-entity tokens typed as something else."""
    by_doc = defaultdict(list)
    for a in anns:
        by_doc[a["doc_id"]].append(a)
    detected, correct = Counter(), Counter()
    recall, typed, total = Counter(), Counter(), Counter()
    other, seen, other_types = Counter(), Counter(), defaultdict(Counter)
    uncovered, kinds = Counter(), Counter()
    for doc, spans in zip(docs, found):
        text, mine = doc["text"], by_doc[doc["doc_id"]]
        covered = bytearray(len(text))
        for s in spans:
            covered[s.start:s.end] = b"\x01" * (s.end - s.start)
            detected[s.entity_type] += 1
            ok = COMPATIBLE.get(s.entity_type, {s.entity_type})
            correct[s.entity_type] += any(a["type"] in ok and a["start"] < s.end and s.start < a["end"] for a in mine)
        for a in mine:
            hits = [s for s in spans if s.start < a["end"] and a["start"] < s.end]
            if a["personal"] and a["type"] != "URL_PART":
                total[a["type"]] += 1
                kind = VERBATIM_KINDS.get(a["kind"])
                if kind:
                    kinds[kind] += 1
                    uncovered[kind] += not any(covered[i] for i in _alnum(text, a["start"], a["end"]))
                recall[a["type"]] += all(covered[i] for i in _alnum(text, a["start"], a["end"]))
                typed[a["type"]] += any(s.entity_type in COMPATIBLE.get(a["type"], {a["type"]}) or
                                        a["type"] in COMPATIBLE.get(s.entity_type, ()) for s in hits)
            elif a["type"] in NEGATIVE:
                seen[a["type"]] += 1
                wrong = {s.entity_type for s in hits} - ALLOWED.get(a["type"], set())
                other[a["type"]] += bool(wrong)
                other_types[a["type"]].update(wrong)
    for t in sorted(detected):
        print(f"real_text_{name}_precision_{t}: {_share(correct[t], detected[t])}")
    for t in sorted(total):
        print(f"real_text_{name}_recall_{t}: {_share(recall[t], total[t])}")
        print(f"real_text_{name}_typed_recall_{t}: {_share(typed[t], total[t])}")
    for t in sorted(seen):
        print(f"real_text_{name}_other_type_share_{t}: {_share(other[t], seen[t])}")
        if other_types[t]:
            print(f"real_text_{name}_other_types_{t}: "
                  + ", ".join(f"{k} {v}" for k, v in other_types[t].most_common()))
    for k in sorted(kinds):
        print(f"real_text_{name}_undetected_{k}: {_share(uncovered[k], kinds[k])}")
    print(f"real_text_{name}_other_type_share_must_show: "
          f"{_share(sum(other[t] for t in MUST_SHOW), sum(seen[t] for t in MUST_SHOW))}")


def export_figures(name: str, docs, anns, merged, out, pairs: int, seed: int) -> None:
    """Verbatim shares per kind, Date: lines, format checks and before/after pairs, on the export."""
    import random

    from privtext.clusant.surface_format import format_kept

    by_doc = defaultdict(list)
    for a in anns:
        by_doc[a["doc_id"]].append(a)
    verbatim, partly, total = Counter(), Counter(), Counter()
    kept, replaced, ipv4, ipv4_kept, dates, dates_kept = Counter(), Counter(), 0, 0, 0, 0
    examples = defaultdict(list)
    header_total = header_date = header_layout = 0
    for doc, spans, text_out, reps in zip(docs, merged, out.texts, out.replacements):
        text, mine = doc["text"], by_doc[doc["doc_id"]]
        owner = [-1] * len(text)
        for k, (s, e, _, _) in enumerate(spans):
            owner[s:e] = [k] * (e - s)
        parts = {(a["start"], a["end"]): a for a in mine if a["type"] == "URL_PART"}
        for a in mine:
            kind = VERBATIM_KINDS.get(a["kind"])
            if not a["personal"] or kind is None:
                continue
            s, e = a["start"], a["end"]
            if a["kind"] == "personal_url":  # its personal part is what must not be readable
                s, e = next(((ps, pe) for ps, pe in parts if s <= ps and pe <= e), (s, e))
            value = text[s:e].casefold()
            chars = _alnum(text, s, e)
            left = [i for i in chars if owner[i] < 0]
            redrawn = any(owner[i] >= 0 and value in reps[owner[i]].casefold() for i in chars[:1])
            total[kind] += 1
            verbatim[kind] += len(left) == len(chars) or redrawn
            partly[kind] += bool(left) or redrawn
        for (s, e, t, _), r in zip(spans, reps):
            before = text[s:e]
            replaced[t] += 1
            kept[t] += format_kept(t, before, r)
            if t == "IP_ADDRESS" and _ipv4(before):
                ipv4 += 1
                ipv4_kept += _ipv4(r)
            if t == "DATE_TIME" and _is_date(before):
                dates += 1
                dates_kept += _is_date(r)
            examples[t].append((before, r))
        for before, after in zip(DATE_LINE.findall(text), DATE_LINE.findall(text_out)):
            header_total += 1
            header_date += email.utils.parsedate_tz(after) is not None
            header_layout += _layout(before) == _layout(after)
            examples["date_header_line"].append((before, after))
    for kind in sorted(total):
        print(f"real_text_{name}_verbatim_{kind}: {_share(verbatim[kind], total[kind])}")
        print(f"real_text_{name}_partly_{kind}: {_share(partly[kind], total[kind])}")
    print(f"real_text_{name}_date_header_still_date: {_share(header_date, header_total)}")
    print(f"real_text_{name}_date_header_same_layout: {_share(header_layout, header_total)}")
    print(f"real_text_{name}_format_kept_share: {_share(sum(kept.values()), sum(replaced.values()))}")
    for t in sorted(replaced):
        print(f"real_text_{name}_format_kept_{t}: {_share(kept[t], replaced[t])}")
    print(f"real_text_{name}_ipv4_stays_ipv4: {_share(ipv4_kept, ipv4)}")
    print(f"real_text_{name}_date_stays_date: {_share(dates_kept, dates)}")
    rng = random.Random(seed)
    for t in sorted(examples) if pairs else ():
        for before, after in rng.sample(examples[t], min(pairs, len(examples[t]))):
            print(f"pair_{name}_{t}: {before!r} -> {after!r}")


def _ipv4(value: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(value.strip()), ipaddress.IPv4Address)
    except ValueError:
        return False


def char_loss_figures(name: str, texts, merged, out, personal=None) -> None:
    """What costs the character similarity, per span type: each replaced span loses len(before) + len(after)
    - 2 * (characters ``difflib`` matches between them) of the document's len(original) + len(export); the
    mean over the documents of that share (the char_similarity's documents) sums, over the types, to about
    1 - char_similarity (``char_loss_total``; the difference is difflib matching across span edges).
    ``char_loss_false`` (and ``char_loss_false_T`` per type): the part of it spent on spans that overlap no
    personal annotation (``personal``: per document, its annotated personal values' (start, end)), what a
    detector without false spans would keep."""
    loss: Counter = Counter()
    false: Counter = Counter()
    docs = 0
    for k, (text, spans, text_out, reps) in enumerate(zip(texts, merged, out.texts, out.replacements)):
        if not spans or len(text) > 20_000:
            continue
        docs += 1
        for (s, e, t, _), after in zip(spans, reps):
            same = sum(b.size for b in difflib.SequenceMatcher(None, text[s:e], after, autojunk=False)
                       .get_matching_blocks())
            part = (e - s + len(after) - 2 * same) / (len(text) + len(text_out))
            loss[t] += part
            if personal is not None and not any(a < e and s < b for a, b in personal[k]):
                false[t] += part
    for t, v in loss.most_common():
        print(f"real_text_{name}_char_loss_{t}: {v / max(1, docs):.4f}")
    print(f"real_text_{name}_char_loss_total: {sum(loss.values()) / max(1, docs):.4f}")
    if personal is not None:
        print(f"real_text_{name}_char_loss_false: {sum(false.values()) / max(1, docs):.4f}")
        for t, v in false.most_common():
            print(f"real_text_{name}_char_loss_false_{t}: {v / max(1, docs):.4f}")


def utility_figures(name: str, docs, anns, out, merged, seed: int, settings, similarity_docs: int) -> None:
    import numpy as np

    from privtext.embed.encoder import encode_texts
    from privtext.metrics.export_utility import TEST_FRACTION, downstream_accuracy, is_test

    texts = [d["text"] for d in docs]
    test = [is_test(d["doc_id"], TEST_FRACTION) for d in docs]
    tasks = {"prompt": [d["label"] for d in docs]} if name == "chat" else {
        "spam": ["spam" if d["label"] == "spam" else "ham" for d in docs], "category": [d["label"] for d in docs]}
    for task, labels in tasks.items():
        acc = downstream_accuracy(texts, out.texts, labels, test, seed)
        print(f"real_text_{name}_{task}_original_accuracy: {acc['original_train_accuracy']:.4f}")
        print(f"real_text_{name}_{task}_export_accuracy: {acc['sanitized_train_accuracy']:.4f}")
        print(f"real_text_{name}_{task}_gap_points: {100 * acc['accuracy_gap']:.2f}")
        print(f"real_text_{name}_{task}_majority_accuracy: {acc['majority_label_accuracy']:.4f}")
    ratios = [difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
              for a, b, m in zip(texts, out.texts, merged) if m and len(a) <= 20_000]  # difflib is quadratic
    print(f"real_text_{name}_char_similarity: {sum(ratios) / max(1, len(ratios)):.4f} ({len(ratios)} documents)")
    by_doc = defaultdict(list)
    for a in anns:
        if a["personal"]:
            by_doc[a["doc_id"]].append((a["start"], a["end"]))
    char_loss_figures(name, texts, merged, out, [by_doc[d["doc_id"]] for d in docs])
    with_spans = [i for i, m in enumerate(merged) if m][:similarity_docs]
    a = encode_texts([texts[i] for i in with_spans], settings.embed).astype(np.float64)
    b = encode_texts([out.texts[i] for i in with_spans], settings.embed).astype(np.float64)
    print(f"real_text_{name}_semantic_similarity: {float((a * b).sum(axis=1).mean()):.4f} "
          f"({len(with_spans)} documents)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mail", type=int, default=400)
    parser.add_argument("--chat", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--long-digest-chars", type=int, default=0, help="add one digest of this many characters")
    parser.add_argument("--fixtures", type=Path, help="read what python -m tests.fixtures.realtext wrote instead")
    parser.add_argument("--pairs", type=int, default=0, help="print this many before/after pairs per type")
    parser.add_argument("--no-export", action="store_true", help="detection figures only")
    parser.add_argument("--similarity-docs", type=int, default=300, help="documents for the semantic similarity")
    args = parser.parse_args()

    import numpy as np

    from privtext.clusant.sanitizer import merge_spans, sanitize_documents
    from privtext.pii.detect import detect_many, get_analyzer
    from privtext.settings import load_settings
    from tests.fixtures import realtext

    docs, anns = (realtext.load(args.fixtures) if args.fixtures else
                  realtext.generate(args.mail, args.chat, args.seed, long_digest_chars=args.long_digest_chars))
    settings = load_settings(None, environ={}, overrides={"clusant": {"cache_dir": str(ROOT / "cache" / "clusant")}})
    analyzer = get_analyzer(settings.pii)
    print(f"real_text_seed: {args.seed}")
    if not args.no_export:
        from privtext.sanitizer_setup import build_sanitizer

        sanitizer, encode = build_sanitizer(settings)
    for name in ("mail", "chat"):
        part = [d for d in docs if d["kind"] == name]
        if not part:
            continue
        texts = [d["text"] for d in part]
        started = time.perf_counter()
        found = detect_many(analyzer, texts, settings.pii)
        seconds = time.perf_counter() - started
        chars = sum(map(len, texts))
        print(f"real_text_{name}_documents: {len(part)}")
        print(f"real_text_{name}_characters: {chars}")
        print(f"real_text_{name}_detect_seconds_per_1000_chars: {1000 * seconds / max(1, chars):.4f}")
        detection_figures(name, part, anns, found)
        if args.no_export:
            continue
        merged = [merge_spans([(s.start, s.end, s.entity_type, s.tier, s.score) for s in spans], len(t))
                  for t, spans in zip(texts, found)]
        out = sanitize_documents(sanitizer, encode, np.random.default_rng(args.seed), texts, merged)
        export_figures(name, part, anns, merged, out, args.pairs, args.seed)
        utility_figures(name, part, anns, out, merged, args.seed, settings, args.similarity_docs)


if __name__ == "__main__":
    main()
