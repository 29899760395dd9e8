"""The published-export verbatim measure of ``benchmarks/export/real_text_export.py`` (issue 44): an annotated value
counts when it is readable at its own place in the exported mail (the two texts aligned), not when the same word
occurs anywhere in it. Hand-made pairs and a property over generated Unicode; no Spark, no analyzer. Names are
made up."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from hypothesis import given, settings as hsettings, strategies as st

_PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "export" / "real_text_export.py"
_SPEC = importlib.util.spec_from_file_location("real_text_export", _PATH)
rte = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(rte)

ORIGINAL = ("From: Dora Quill <dq@example.com>\nSubject: the flat\n\nWill the landlord call back?\n\n"
            "Thanks,\nWill\n")


def kept(original: str, exported: str, value: str, occurrence: int = 0) -> bool:
    start = -1
    for _ in range(occurrence + 1):
        start = original.index(value, start + 1)
    return rte.kept_at_position(original, exported, rte.aligned_blocks(original, exported), start,
                                start + len(value))


def counts(original: str, exported: str, value: str, occurrence: int) -> dict:
    start = -1
    for _ in range(occurrence + 1):
        start = original.index(value, start + 1)
    ann = {"doc_id": "d", "start": start, "end": start + len(value), "type": "PERSON", "kind": "first_name",
           "personal": True}
    return dict(rte.verbatim_counts(["d"], [original], [exported], [ann])["first_or_last_names"])


def test_a_name_left_is_kept_at_its_place():
    exported = ORIGINAL.replace("Dora Quill", "Ruth Abernathy-Smith").replace("dq@", "ra@")
    assert kept(ORIGINAL, exported, "Will", occurrence=1)  # offsets shifted by the longer name before it
    assert counts(ORIGINAL, exported, "Will", 1) == {"total": 1, "kept": 1, "elsewhere": 0, "found": 1}


def test_a_name_replaced_by_another_is_not_kept():
    exported = ORIGINAL.replace("Thanks,\nWill", "Thanks,\nOwen")
    assert not kept(ORIGINAL, exported, "Will", occurrence=1)
    exported = ORIGINAL.replace("Dora Quill", "Nora Quilling")  # a draw that holds the name is another name
    assert not kept(ORIGINAL, exported, "Dora Quill")
    assert not kept(ORIGINAL, ORIGINAL.replace("Dora", "Doralee"), "Dora")


def test_a_name_drawn_again_reads_as_kept():
    # the published files cannot tell a draw that spells the name again from the name left: both are read
    exported = ORIGINAL.replace("Dora Quill", "Ruth Kemp").replace("Thanks,\nWill", "Thanks,\nWILL")
    assert kept(ORIGINAL, exported, "Will", occurrence=1)  # letter case aside
    assert not kept(ORIGINAL, exported, "Dora Quill")


def test_the_same_word_elsewhere_is_reported_not_counted():
    exported = ORIGINAL.replace("Thanks,\nWill", "Thanks,\nOwen")  # "Will the landlord" stays: prose
    assert counts(ORIGINAL, exported, "Will", 1) == {"total": 1, "kept": 0, "elsewhere": 1, "found": 1}
    assert counts(ORIGINAL, exported, "Will", 0) == {"total": 1, "kept": 1, "elsewhere": 0, "found": 1}
    # a name repeated in the mail: replaced at the annotated place, left at the other
    original = "Hi Rena,\n\nRena said the flat is free.\n"
    exported = "Hi Gwen,\n\nRena said the flat is free.\n"
    assert counts(original, exported, "Rena", 0) == {"total": 1, "kept": 0, "elsewhere": 1, "found": 1}


def test_a_long_document_aligns_by_lines():
    lines = [f"line {k}: nothing personal here\n" for k in range(2000)]
    original = "".join(lines[:1000]) + "signed Ivo Brandt\n" + "".join(lines[1000:])
    exported = "".join(lines[:1000]) + "signed Aldo Pereira\n" + "".join(lines[1000:])
    assert not kept(original, exported, "Ivo Brandt")
    assert kept(original, original, "Ivo Brandt")


@hsettings(max_examples=200, deadline=None)
@given(st.text(max_size=120), st.text(min_size=1, max_size=12), st.text(max_size=120), st.text(max_size=12))
def test_any_unicode_left_is_kept_and_a_value_without_its_letters_is_not(before, value, after, other):
    original = before + value + after
    start, end = len(before), len(before) + len(value)
    blocks = rte.aligned_blocks(original, original)
    assert rte.kept_at_position(original, original, blocks, start, end)
    letters = {c for c in rte._fold(value) if c.isalnum()}
    if letters and not letters & set(rte._fold(before + after)):
        # a replacement sharing none of the value's letters or digits leaves nothing of it readable (where the
        # text around holds them too, which copy was removed is undecidable: "00" -> "0")
        filler = "".join(c for c in other if rte._fold(c) not in letters)
        exported = before + filler + after
        assert not rte.kept_at_position(original, exported, rte.aligned_blocks(original, exported), start, end)
