"""The README and docs/ stay usable: every relative link and #anchor resolves, the README stays a short
product page, and the configuration reference is the one the settings models generate."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from privtext import config_reference

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation other than '-' and '_' dropped, spaces to '-'."""
    out, seen = set(), {}
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        match = None if in_code else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # links in code blocks are code
    return [m.group(1) for m in LINK.finditer(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):  # http(s), mailto: not checked (no network in the tests)
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading '#{anchor}' in {resolved.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_checker_finds_a_broken_link_and_anchor(tmp_path):
    page = tmp_path / "a.md"
    (tmp_path / "b.md").write_text("# Title: the `one` (x)\n## Title: the `one` (x)\n")
    page.write_text("[ok](b.md#title-the-one-x) [dup](b.md#title-the-one-x-1) [gone](c.md) [bad](b.md#nope)\n"
                    "```\n[in code](nowhere.md)\n```\n")
    assert links(page) == ["b.md#title-the-one-x", "b.md#title-the-one-x-1", "c.md", "b.md#nope"]
    assert anchors(tmp_path / "b.md") == {"title-the-one-x", "title-the-one-x-1"}


def test_the_readme_is_a_short_product_page_linking_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(ROOT / "README.md")}
    unlinked = [str(p.relative_to(ROOT)) for p in PAGES[1:] if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


def test_the_configuration_reference_is_current():
    _, generated = config_reference.current_page()
    assert generated == config_reference.render(), \
        "docs/configuration.md is out of date: run `python -m privtext.config_reference --write`"


def test_the_configuration_reference_lists_every_key_with_its_base_yaml_comment():
    rendered = config_reference.render()
    for key in ("run.deterministic", "lakehouse.object_store.commit", "pii.detector.seed", "secpe.r_over_p",
                "privacy.budgets", "publish.min_canary_recall"):
        assert f"`{key}`" in rendered, key
    row = next(line for line in rendered.splitlines() if line.startswith("| `spark.partitions_per_slot`"))
    assert row == ("| `spark.partitions_per_slot` | int | `2` | per-document stages (detect_pii, embed, sanitize) "
                   "run in task slots x this many partitions |")


def test_base_comments_follow_the_nesting(tmp_path):
    text = ("# file\na:\n  b: 1   # one\n  c:\n    # above d,\n    # two lines\n    d: x  # two\n  # not e's\n"
            "e: 3 # three\n- f: 4\ng: 5\n")
    assert config_reference.base_comments(text) == {"a.b": "one", "a.c.d": "above d, two lines two", "e": "three"}
