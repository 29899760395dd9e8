"""The linter is part of the suite: ``ruff check`` with pyproject.toml's ``[tool.ruff]`` (pyflakes, isort,
bugbear, lines <= 120) finds nothing in the project (docs/development.md, "Lint")."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *args],
                          cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120)


def test_ruff_finds_nothing_in_the_project():
    result = _ruff()
    assert result.returncode == 0, f"ruff check (fix these, or run it yourself):\n{result.stdout}{result.stderr}"


def test_the_project_config_reports_each_rule_family():
    """A negative control: the same command, on a planted file, reports an unused import, unsorted imports, a
    closure over a loop variable and a long line, so a passing project is not an empty rule set."""
    planted = ("import sys\nimport os\n\nfns = []\nfor i in range(3):\n    fns.append(lambda: i)\n"
               f"x = {'1 + ' * 60}1\n")
    result = _ruff("--stdin-filename", "libs/privtext/planted.py", "-", stdin=planted)
    codes = {line.split(" ")[1] for line in result.stdout.splitlines() if line.startswith("libs/privtext/planted.py:")}
    assert {"F401", "I001", "B023", "E501"} <= codes, result.stdout + result.stderr
