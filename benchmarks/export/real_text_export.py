"""What a published export of the real-text fixtures gives its reader (issue 44), read from the files the user gets.

Reads the originals with their labels and annotations (what ``python -m tests.fixtures.realtext`` wrote:
``documents/*.jsonl``, ``annotations.jsonl``) and the export ``privtext pipeline run nightly_sanitized_export``
published for them (the JSONL files under ``<publish.export_path>/sanitized_documents/<date>/``), joined by
``doc_id`` (mail only; the export's are keyed pseudonyms: ``_paired``). Prints ``name: value`` lines:
* the classifier gap, cross-validated over every document: for each task (``spam``: spam vs the rest of the mail;
  ``category``: the five mail categories) a ``--folds``-fold split by a seeded shuffle, ``--repeats`` times, each
  fold scored by the export's own classifier (``metrics.export_utility.downstream_accuracy``: word TF-IDF +
  logistic regression trained on the export vs on the originals of the other folds, both scored on the fold's
  originals), so every document is scored once a repeat: the accuracies, the gap in points (original minus export,
  over all scored documents), its standard error over the ``folds x repeats`` fold gaps (their standard deviation
  / sqrt(count); folds share training documents, so this is the usual, somewhat optimistic estimate), the folds
  where the export scored lower, and what one document is worth (100 / documents);
* ``char_similarity``: the mean ``difflib`` ratio of original and export per document (at most 20,000
  characters: difflib is quadratic), as ``real_text.py`` computes it on its own sanitizer run;
* ``verbatim_K``: annotated personal values (full names, first or last names alone, phones, e-mail addresses,
  personal URL parts) still readable at their own place in the exported document (``kept_at_position``: the
  original and the export aligned, the value's characters all inside one unchanged block, letter case aside, and
  no letter or digit glued to it there that the original did not have): what a reader of the export sees of
  them, a draw that spells the value again included (the published files cannot tell it from a value left);
  ``same_word_elsewhere_K``: not readable at their place, but the same text occurs as a word elsewhere in the
  exported document ("Will" or "Mark" in prose, a name the mail repeats): reported, not counted;
  ``found_verbatim_K``: either (the text search of earlier rounds, an upper bound of ``verbatim_K``).

    .venv/bin/python benchmarks/export/real_text_export.py --fixtures DIR --export EXPORT_DATE_DIR [--folds 10]
        [--no-gap]
"""
from __future__ import annotations

import argparse
import bisect
import difflib
import json
import math
import os
import random
import re
from collections import Counter, defaultdict
from pathlib import Path

KINDS = {"full_name": "full_names", "first_name": "first_or_last_names", "last_name": "first_or_last_names",
         "phone": "phones", "email": "emails"}


def _read(folder: Path) -> dict[str, dict]:
    rows = {}
    for path in sorted(folder.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["doc_id"]] = row
    return rows


def _paired(originals: dict[str, dict], exported: dict[str, dict]) -> dict[str, str]:
    """Original doc_id -> exported doc_id. The export publishes keyed pseudonyms (``doc_pseudonym``): with the
    run's key in the environment (``PRIVTEXT_HMAC_KEY``) they are recomputed; without it each exported document
    is paired with the original sharing most of its rare lines (lines of 8 characters or more, weighted by 1 / the
    number of originals holding them: the text outside the spans is the original's), the closest text (difflib's
    quick ratio) of the five best-voted breaking ties."""
    key = os.environ.get("PRIVTEXT_HMAC_KEY")
    if key:
        from privtext.pii.hashing import doc_pseudonym

        return {i: doc_pseudonym(key.encode(), i) for i in originals if doc_pseudonym(key.encode(), i) in exported}
    holders = defaultdict(set)
    for doc_id, row in originals.items():
        for line in _lines(row["text"]):
            holders[line].add(doc_id)
    pairs, taken = {}, set()
    for out_id, row in exported.items():
        votes = Counter()
        for line in _lines(_text(row)):
            for doc_id in holders.get(line, ()):
                votes[doc_id] += 1 / len(holders[line])
        candidates = [doc_id for doc_id, _ in votes.most_common(5) if doc_id not in taken]
        if candidates:  # the closest text of the best-voted originals
            best = max(candidates, key=lambda d: difflib.SequenceMatcher(
                None, originals[d]["text"], _text(row), autojunk=False).quick_ratio())
            pairs[best] = out_id
            taken.add(best)
    return pairs


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if len(line.strip()) >= 8}


def _text(row: dict) -> str:
    return row.get("sanitized_text", row.get("text", ""))


def gap_figures(texts: list[str], export: list[str], tasks: dict[str, list], folds: int, repeats: int,
                seed: int) -> None:
    from privtext.metrics.export_utility import downstream_accuracy

    print(f"real_text_export_one_document_points: {100 / len(texts):.3f}")
    for task, labels in tasks.items():
        gaps, weights, base_hits, export_hits, lower = [], [], 0.0, 0.0, 0
        for repeat in range(repeats):
            order = list(range(len(texts)))
            random.Random(seed * 1000 + repeat).shuffle(order)
            fold_of = {doc: k % folds for k, doc in enumerate(order)}
            for fold in range(folds):
                acc = downstream_accuracy(texts, export, labels, [fold_of[k] == fold for k in range(len(texts))],
                                          seed=seed)
                n = acc["test_documents"]
                base_hits += acc["original_train_accuracy"] * n
                export_hits += acc["sanitized_train_accuracy"] * n
                gaps.append(100 * acc["accuracy_gap"])
                weights.append(n)
                lower += acc["accuracy_gap"] > 0
        scored = sum(weights)
        mean = sum(g * w for g, w in zip(gaps, weights)) / scored
        sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / max(1, len(gaps) - 1))
        print(f"real_text_export_{task}_original_accuracy: {base_hits / scored:.4f}")
        print(f"real_text_export_{task}_export_accuracy: {export_hits / scored:.4f}")
        print(f"real_text_export_{task}_gap_points: {mean:.3f}")
        print(f"real_text_export_{task}_gap_se_points: {sd / math.sqrt(len(gaps)):.3f} ({len(gaps)} folds)")
        print(f"real_text_export_{task}_folds_export_lower: {lower} of {len(gaps)}")


def aligned_blocks(original: str, exported: str) -> list[tuple[int, int, int]]:
    """Blocks ``(i, j, size)``, sorted by ``i``, where ``original[i:i+size]`` is published unchanged as
    ``exported[j:j+size]`` (letter case aside): the lines aligned first (``difflib`` over the lists of lines: a
    mail's unchanged lines pair exactly, and a long digest stays cheap), then the characters of each run of lines
    that differ. Case is folded one character to one (``_fold``), so offsets stay those of the texts."""
    a, b = _fold(original), _fold(exported)
    lines_a, lines_b = a.splitlines(keepends=True), b.splitlines(keepends=True)
    starts_a, starts_b = _starts(lines_a), _starts(lines_b)
    blocks = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, lines_a, lines_b, autojunk=False).get_opcodes():
        ca, cb = starts_a[i1], starts_b[j1]
        if op == "equal":
            blocks.append((ca, cb, starts_a[i2] - ca))
        elif op == "replace":
            chars = difflib.SequenceMatcher(None, a[ca:starts_a[i2]], b[cb:starts_b[j2]], autojunk=False)
            blocks += [(ca + i, cb + j, n) for i, j, n in chars.get_matching_blocks() if n]
    return blocks


def _fold(text: str) -> str:
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _starts(lines: list[str]) -> list[int]:
    out = [0]
    for line in lines:
        out.append(out[-1] + len(line))
    return out


def kept_at_position(original: str, exported: str, blocks: list[tuple[int, int, int]], start: int,
                     end: int) -> bool:
    """Whether ``original[start:end]`` is readable at its own place in ``exported``: inside one block of
    ``aligned_blocks``, and each character touching it in the export either is no letter or digit or is the
    original's own neighbour (the block runs over it): "Ann" drawn as "Anne" is another name, not "Ann" kept."""
    k = bisect.bisect_right(blocks, (start, len(exported) + 1, 0)) - 1
    if k < 0 or start == end:
        return False
    i, j, size = blocks[k]
    if end > i + size:
        return False
    lo, hi = j + start - i, j + end - i
    before_ok = start > i or lo == 0 or not exported[lo - 1].isalnum()
    after_ok = end < i + size or hi == len(exported) or not exported[hi].isalnum()
    return before_ok and after_ok


def verbatim_counts(ids: list[str], texts: list[str], export: list[str], anns: list[dict]) -> dict[str, Counter]:
    """Per kind: ``total`` annotated personal values, ``kept`` at their place (``kept_at_position``),
    ``elsewhere`` (not at their place, but the same text is a word elsewhere in the export) and ``found`` (either)."""
    by_doc = defaultdict(list)
    for a in anns:
        by_doc[a["doc_id"]].append(a)
    counts: dict[str, Counter] = defaultdict(Counter)
    for doc_id, text, out in zip(ids, texts, export):
        mine = by_doc[doc_id]
        parts = [(a["start"], a["end"]) for a in mine if a["type"] == "URL_PART"]
        blocks = None
        for a in mine:
            kind = KINDS.get(a["kind"]) or ("urls_personal" if a["kind"] == "personal_url" else None)
            if not a["personal"] or kind is None:
                continue
            s, e = a["start"], a["end"]
            if kind == "urls_personal":  # its personal part is what must not be readable
                s, e = next(((ps, pe) for ps, pe in parts if a["start"] <= ps and pe <= a["end"]), (s, e))
            blocks = aligned_blocks(text, out) if blocks is None else blocks
            at_place = kept_at_position(text, out, blocks, s, e)
            as_word = re.search(rf"(?<!\w){re.escape(text[s:e])}(?!\w)", out) is not None
            counts[kind].update(total=1, kept=at_place, elsewhere=as_word and not at_place, found=as_word or at_place)
    return counts


def verbatim_figures(ids: list[str], texts: list[str], export: list[str], anns: list[dict]) -> None:
    for kind, c in sorted(verbatim_counts(ids, texts, export, anns).items()):
        n = c["total"]
        print(f"real_text_export_verbatim_{kind}: {c['kept'] / n:.4f} ({c['kept']}/{n})")
        print(f"real_text_export_same_word_elsewhere_{kind}: {c['elsewhere'] / n:.4f} ({c['elsewhere']}/{n}, "
              "not counted)")
        print(f"real_text_export_found_verbatim_{kind}: {c['found'] / n:.4f} ({c['found']}/{n})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixtures", type=Path, required=True, help="the fixtures folder (documents/ inside)")
    parser.add_argument("--export", type=Path, required=True, help="the published date's folder")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-gap", action="store_true", help="skip the classifier gap (verbatim and similarity only)")
    args = parser.parse_args()

    originals = {k: v for k, v in _read(args.fixtures / "documents").items() if v.get("kind", "mail") == "mail"}
    exported = _read(args.export)
    pairs = _paired(originals, exported)
    ids = sorted(pairs)
    print(f"real_text_export_documents: {len(ids)} (of {len(originals)} original mails, {len(exported)} exported)")
    if not ids:
        raise SystemExit("no document both in the fixtures and in the export")
    texts = [originals[i]["text"] for i in ids]
    export = [_text(exported[pairs[i]]) for i in ids]
    if not args.no_gap:
        gap_figures(texts, export, {"spam": ["spam" if originals[i]["label"] == "spam" else "ham" for i in ids],
                                    "category": [originals[i]["label"] for i in ids]}, args.folds, args.repeats,
                    args.seed)
    anns = [json.loads(line) for line in (args.fixtures / "annotations.jsonl").read_text().splitlines() if line]
    verbatim_figures(ids, texts, export, anns)
    ratios = [difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
              for a, b in zip(texts, export) if len(a) <= 20_000]
    print(f"real_text_export_char_similarity: {sum(ratios) / max(1, len(ratios)):.4f} ({len(ratios)} documents)")


if __name__ == "__main__":
    main()
