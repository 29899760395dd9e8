"""The import contract: dependencies point down (commands -> stages -> ledger/settings -> platform and
algorithms; algorithms import nothing above them), stages do not import each other, no import cycles.

Read from the source with ``ast`` (every runtime import, also inside functions; imports under
``if TYPE_CHECKING:`` are annotations only and do not count)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3] / "libs" / "privtext"
ALGORITHMS = {"ampl", "clusant", "dped", "embed", "generate", "metrics", "pii", "privacy", "secpe"}
# import nothing of privtext
LEAVES = {"privtext.strict", "privtext.worker_cache", "privtext.sample_data", "privtext.torch_scope", "privtext.errors"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST):
    """Every node except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(path: Path) -> set[str]:
    """The privtext modules ``path`` imports at run time (``from a import b`` counts ``a.b`` if a module)."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names if _is_module(f"{base}.{a.name}")}
    return {m for m in found if m == "privtext" or m.startswith("privtext.")}


def _is_module(name: str) -> bool:
    path = ROOT.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


GRAPH = {module_name(p): imports_of(p) for p in ROOT.rglob("*.py")}


def area(mod: str) -> str:
    parts = mod.split(".")
    return "privtext" if len(parts) == 1 else parts[1]


def allowed(src: str, dst: str) -> bool:
    a, b = area(src), area(dst)
    if dst in LEAVES or a == b and a not in ("stages",):
        return True
    if a in ALGORITHMS:
        return b in ALGORITHMS
    if a == "platform" or src in LEAVES:
        return False
    if a == "settings":
        return dst.endswith(".settings") and b in ALGORITHMS or b == "platform"
    if a == "ledger":
        return b in ("platform", "privacy", "settings")
    if a == "publishing":  # the publish stage's parts (gate checks, export files, manifest): below the stages
        return b in ALGORITHMS or b == "platform"
    if a == "stages":  # a stage imports no other stage; the runner and the package see them all
        return b != "stages" or src in ("privtext.stages", "privtext.stages.runner") or dst == "privtext.stages"
    return True  # commands, cli, pipelines, report: the top


def test_dependencies_point_down():
    wrong = sorted((src, dst) for src, dsts in GRAPH.items() for dst in dsts if not allowed(src, dst))
    assert wrong == []
    assert all(GRAPH[leaf] == set() for leaf in LEAVES)


def test_no_import_cycles():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(GRAPH.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == []


@pytest.mark.parametrize("src,dst,ok", [
    ("privtext.pii.detect", "privtext.platform.config", False),  # an algorithm reaching up
    ("privtext.platform.lakehouse", "privtext.pii.settings", False),  # the platform reaching an algorithm
    ("privtext.stages.evaluate", "privtext.stages.synthesize", False),  # stage to stage
    ("privtext.platform.ledger_like", "privtext.privacy.budget", False),
    ("privtext.stages.runner", "privtext.stages.sanitize", True),
    ("privtext.clusant.vocabulary", "privtext.pii.gazetteers", True),
    ("privtext.settings", "privtext.pii.settings", True),
    ("privtext.settings", "privtext.pii.detect", False),
    ("privtext.publishing.gate", "privtext.stages.publish", False),  # a stage's part reaching up to the stage
    ("privtext.publishing.manifest", "privtext.clusant.masking", True),
])
def test_the_rules_catch_what_they_name(src, dst, ok):
    assert allowed(src, dst) is ok


def test_only_publish_takes_the_published_zone_writer():
    """``zones.publisher`` (the zone check, then ``Lakehouse.as_publisher``) is the one way to write
    ``published``; only the publish stage calls it."""
    callers = {name: {n.func.attr
                      for n in ast.walk(ast.parse((ROOT.parent / (name.replace(".", "/") + ".py")).read_text()))
                      if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                      and n.func.attr in ("publisher", "as_publisher")}
               for name in GRAPH if (ROOT.parent / (name.replace(".", "/") + ".py")).exists()}
    assert {name: found for name, found in callers.items() if found} == {
        "privtext.stages.publish": {"publisher"}, "privtext.platform.zones": {"as_publisher"}}
