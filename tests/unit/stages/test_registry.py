"""The stage registry (``privtext.stages.STAGES``, ``TARGETS``) against the stage modules and the runner: every
stage module is registered, declares every table it imports, takes the ``--target`` values the registry says,
and the runner asks for the HMAC key exactly where the registry says."""
from __future__ import annotations

import ast
import contextlib
from pathlib import Path

import pytest

from privtext.platform import tables
from privtext.settings import load_settings
from privtext.stages import STAGES, TARGETS, runner

STAGE_DIR = Path(runner.__file__).parent


def imported_tables(stage: str) -> set[str]:
    """The table specs the module imports from ``privtext.platform.tables`` (module level or inside functions)."""
    tree = ast.parse((STAGE_DIR / f"{stage}.py").read_text())
    return {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and node.module == "privtext.platform.tables" for a in node.names
            if isinstance(getattr(tables, a.name, None), type(tables.DOCUMENTS))}


def test_every_stage_module_is_registered_and_the_registry_names_no_other():
    modules = {p.stem for p in STAGE_DIR.glob("*.py")} - {"__init__", "runner"}
    assert modules == set(STAGES)
    for name, stage in STAGES.items():
        assert stage.name == name and callable(runner.stage_module(name).run)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_a_stage_declares_every_table_it_imports(stage):
    declared = {spec.name for spec in (*STAGES[stage].reads, *STAGES[stage].writes)}
    imported = {getattr(tables, name).name for name in imported_tables(stage)}
    assert imported and imported <= declared


@pytest.mark.parametrize("stage", ["audit", "publish"])
def test_the_target_option_takes_the_registered_targets(stage):
    action = next(a for a in runner.stage_parser(stage)._actions if a.dest == "target")
    assert sorted(action.choices) == sorted(STAGES[stage].targets) and set(STAGES[stage].targets) <= set(TARGETS)
    assert action.default in STAGES[stage].targets
    assert STAGES["audit"].targets == ("sanitized_documents",)  # the one target the leakage audit gates


class KeyAsked(Exception):
    pass


class PastTheKey(Exception):
    pass


# what each run needs, written out: the stages that key what they read, and publish for pseudonymised doc_ids
KEYED = {("ingest", None), ("detect_pii", None), ("synthesize", None), ("train_dped", None),
         ("publish", "sanitized_documents")}


@pytest.mark.parametrize("stage,target", [(s, None) for s in sorted(STAGES)]
                         + [("publish", t) for t in TARGETS] + [("audit", "sanitized_documents")])
def test_the_runner_asks_for_the_hmac_key_where_the_registry_says(monkeypatch, tmp_path, stage, target):
    def key(*args):
        raise KeyAsked

    def context(*args, **kwargs):
        raise PastTheKey

    monkeypatch.setattr(runner, "load_hmac_key", key)
    monkeypatch.setattr(runner, "stage_lease", lambda *a: contextlib.nullcontext())
    monkeypatch.setattr(runner.RunContext, "create", context)
    settings = load_settings(None, environ={}, overrides={"lakehouse": {"root": str(tmp_path)}})
    options = {} if target is None else {"target": target}
    with pytest.raises((KeyAsked, PastTheKey)) as stopped:
        runner.run_stage(stage, settings, date="2026-01-15", **options)
    keyed = (stage, None) in KEYED or (stage, target or "sanitized_documents") in KEYED  # publish's default
    assert stopped.type is (KeyAsked if keyed else PastTheKey)
