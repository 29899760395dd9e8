"""Width and digit-system folding for detection, with offsets mapped back to the original text.

Pattern recognizers are written for ASCII: a full-width SSN ("５３６－２２－８７５６"), an e-mail in
full-width letters or an SSN in Devanagari digits ("५३६-२२-८७५६") matches none of them, and would be
published as written. ``fold`` gives the detector a text in which every character is replaced by its
NFKC form (full-width and other compatibility forms become their plain letters, digits and
punctuation) and every Unicode decimal digit (category Nd, any script) by its ASCII digit, together
with the map back: folded character ``i`` comes from original characters ``[orig_start[i],
orig_end[i])``. Characters are folded one by one (no composition across characters), so the folded
text is the concatenation of the characters' folds and every folded span maps back to the original
characters that produced it (``to_original``), widened to whole characters where a fold expanded one
character into several ("ﬁ" -> "fi"). ASCII text folds to itself with no map (the common case costs
one ``str.isascii``).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def fold_char(char: str) -> str:
    """NFKC of one character, its decimal digits (any script) as ASCII digits."""
    folded = unicodedata.normalize("NFKC", char)
    if folded.isascii():
        return folded
    return "".join(str(unicodedata.decimal(c)) if unicodedata.category(c) == "Nd" else c for c in folded)


@dataclass(frozen=True)
class Folded:
    """A folded text and its map to the original (``None``: identical, offsets unchanged)."""

    text: str
    orig_start: list[int] | None = None
    orig_end: list[int] | None = None

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """The original ``[start, end)`` of the folded ``[start, end)`` (``start < end``), covering every
        original character that produced a folded character of it."""
        if self.orig_start is None:
            return start, end
        return self.orig_start[start], self.orig_end[end - 1]


def fold(text: str) -> Folded:
    """``text`` folded (NFKC per character, every decimal digit as ASCII) with its offset map."""
    if text.isascii() or not _NON_ASCII.search(text):
        return Folded(text)
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    changed = False
    last = 0
    for m in _NON_ASCII.finditer(text):
        i = m.start()
        if i > last:  # an ASCII run maps one to one
            pieces.append(text[last:i])
            starts.extend(range(last, i))
            ends.extend(range(last + 1, i + 1))
        char = text[i]
        folded = fold_char(char)  # never empty: NFKC maps no single character to nothing
        changed |= folded != char
        pieces.append(folded)
        starts.extend([i] * len(folded))
        ends.extend([i + 1] * len(folded))
        last = i + 1
    if not changed:
        return Folded(text)
    pieces.append(text[last:])
    starts.extend(range(last, len(text)))
    ends.extend(range(last + 1, len(text) + 1))
    return Folded("".join(pieces), starts, ends)
