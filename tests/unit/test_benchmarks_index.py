"""benchmarks/README.md indexes every benchmark script: each one has a row, each row names a script that exists,
and each row either links the docs section its figures feed (the link resolves) or says "listed only" (and
docs/benchmarks.md then lists it)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from unit.test_docs import LINK, anchors

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| `(benchmarks/[^`]+)` \| (.*?) \| (.*) \|$")


def index_problems(root: Path) -> list[str]:
    """What is wrong with root/benchmarks/README.md against the scripts under root/benchmarks/."""
    index = root / "benchmarks" / "README.md"
    scripts = {p.relative_to(root).as_posix() for p in (root / "benchmarks").rglob("*")
               if p.suffix in (".py", ".sh") and "__pycache__" not in p.parts}
    rows = {m.group(1): m.group(2) for line in index.read_text().splitlines() if (m := ROW.match(line))}
    problems = [f"{s}: not in benchmarks/README.md" for s in sorted(scripts - rows.keys())]
    problems += [f"{s}: in benchmarks/README.md, no such script" for s in sorted(rows.keys() - scripts)]
    listing = (root / "docs" / "benchmarks.md").read_text()
    for script, feeds in sorted(rows.items()):
        if feeds == "listed only":
            if f"`{script}`" not in listing:
                problems.append(f"{script}: 'listed only', but docs/benchmarks.md does not list it")
        elif not any(target.startswith("../docs/") for target in links_in(feeds)):
            problems.append(f"{script}: neither a docs link nor 'listed only'")
    for target in links_in(index.read_text()):
        path, _, anchor = target.partition("#")
        resolved = (index.parent / path).resolve()
        if not resolved.exists():
            problems.append(f"{target}: no such file")
        elif anchor and anchor not in anchors(resolved):
            problems.append(f"{target}: no heading '#{anchor}'")
    return problems


def links_in(text: str) -> list[str]:
    return [m.group(1) for m in LINK.finditer(text)]


def test_every_benchmark_script_is_indexed_and_every_entry_resolves():
    assert index_problems(ROOT) == []


def test_the_index_check_finds_a_missing_script_a_stale_row_and_a_broken_link(tmp_path):
    (tmp_path / "benchmarks" / "export").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "benchmarks.md", tmp_path / "docs" / "benchmarks.md")
    (tmp_path / "benchmarks" / "export" / "new.py").write_text("")
    (tmp_path / "benchmarks" / "export" / "listed.py").write_text("")
    (tmp_path / "benchmarks" / "README.md").write_text(
        "| `benchmarks/export/gone.py` | listed only | x |\n"
        "| `benchmarks/export/listed.py` | [a](../docs/benchmarks.md#no-such-heading) | x |\n")
    assert index_problems(tmp_path) == [
        "benchmarks/export/new.py: not in benchmarks/README.md",
        "benchmarks/export/gone.py: in benchmarks/README.md, no such script",
        "benchmarks/export/gone.py: 'listed only', but docs/benchmarks.md does not list it",
        "../docs/benchmarks.md#no-such-heading: no heading '#no-such-heading'",
    ]
