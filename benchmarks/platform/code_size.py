"""Modules over N lines and functions over M lines (issue 50's size check), from the source with ``ast``.

A module's size is its number of lines; a function's (methods and nested functions included, named by their
qualified name) runs from its ``def`` line to its last line, docstring and comments inside included. Prints
``name: value`` lines, largest first, then the counts:

    .venv/bin/python benchmarks/platform/code_size.py [--modules 400] [--functions 60] [PATH ...]   # default: libs

At a commit: ``git archive COMMIT libs | tar -x -C DIR`` and ``--root DIR``.
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, lines) of every function under tree."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            yield name, node.end_lineno - node.lineno + 1
            yield from functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["libs"])
    parser.add_argument("--modules", type=int, default=400)
    parser.add_argument("--functions", type=int, default=60)
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree the paths are in (default: this checkout)")
    args = parser.parse_args()
    root = args.root.resolve()
    files = sorted(f for p in args.paths for f in ((root / p).rglob("*.py") if (root / p).is_dir() else [root / p]))
    big_modules, big_functions = [], []
    for path in files:
        text = path.read_text()
        rel = path.relative_to(root).as_posix()
        if len(text.splitlines()) > args.modules:
            big_modules.append((len(text.splitlines()), rel))
        for name, lines in functions(ast.parse(text)):
            if lines > args.functions:
                big_functions.append((lines, f"{rel}:{name}"))
    for lines, rel in sorted(big_modules, reverse=True):
        print(f"module_lines {rel}: {lines}")
    for lines, name in sorted(big_functions, reverse=True):
        print(f"function_lines {name}: {lines}")
    print(f"modules_over_{args.modules}: {len(big_modules)}")
    print(f"functions_over_{args.functions}: {len(big_functions)}")


if __name__ == "__main__":
    main()
