"""The configuration reference (``docs/configuration.md``), generated from the settings models.

Every key of ``privtext.settings.Settings`` (sections, nested sections, leaves) with its type, its default
as ``conf/base.yaml`` sets it, and the comment on its line in ``base.yaml`` (else on the field's line in its
model). The page's hand-written part ends at ``MARKER``; everything after it is ``render()``'s output, so
the reference cannot drift from the models: ``python -m privtext.config_reference --write`` rewrites it,
and a unit test checks it is current.
"""
from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import types
import typing
from pathlib import Path

import yaml
from pydantic import BaseModel

from privtext.platform.config import PROJECT_ROOT
from privtext.settings import Settings

MARKER = "<!-- generated below by `python -m privtext.config_reference --write`: do not edit by hand -->"
PAGE = PROJECT_ROOT / "docs" / "configuration.md"
BASE = PROJECT_ROOT / "conf" / "base.yaml"
_WIDTH = 70  # longest default shown whole; longer ones are cut with " ..." (base.yaml has them whole)


def base_comments(text: str) -> dict[str, str]:
    """``dotted.key -> comment`` of a block-style YAML mapping: the comment lines right above a nested key
    (above a top-level section they describe the file or a group of sections), then the comment at the end
    of its line."""
    comments: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    above: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            above.append(line.lstrip()[1:].strip())
            continue
        match = re.match(r"^(\s*)([A-Za-z_][\w.-]*):(.*)$", line)
        if not match:
            above = []
            continue
        indent, key, rest = len(match.group(1)), match.group(2), match.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key))
        inline = re.search(r"\s#\s?(.*)$", rest)
        note = " ".join((above if indent else []) + ([inline.group(1).strip()] if inline else []))
        if note:
            comments[".".join(k for _, k in stack)] = note
        above = []
    return comments


def model_comments(model: type[BaseModel]) -> dict[str, str]:
    """``field -> comment`` of the comment at the end of each field's line in the model's source."""
    out = {}
    for line in inspect.getsource(model).splitlines():
        match = re.match(r"^\s+(\w+)\s*:[^#]*#\s?(.*)$", line)
        if match and match.group(1) in model.model_fields:
            out[match.group(1)] = match.group(2).strip()
    return out


def _type_name(annotation) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is type(None):
        return "null"
    return getattr(annotation, "__name__", str(annotation))


def _shown(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    text = text if len(text) <= _WIDTH else text[:_WIDTH].rstrip() + " ..."
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def _rows(model: type[BaseModel], values: dict, prefix: str, comments: dict[str, str]) -> list[str]:
    rows = []
    in_source = model_comments(model)
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = field.annotation
        note = (comments.get(key) or in_source.get(name, "")).replace("|", "\\|")
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows.append(f"| **`{key}`** | section | | {note} |")
            rows += _rows(annotation, values[name], f"{key}.", comments)
            continue
        rows.append(f"| `{key}` | {_type_name(annotation)} | {_shown(values[name])} | {note} |")
    return rows


def render(base: Path = BASE) -> str:
    """The generated part of the page: one row per key of ``Settings`` with its base.yaml default."""
    text = base.read_text()
    values = Settings.model_validate(yaml.safe_load(text)).model_dump(mode="json")
    lines = [MARKER, "", "## Every key", "",
             "Generated from the settings models (`libs/privtext/**/settings.py`, `platform/config.py`) and "
             "`conf/base.yaml`: each key, its type, its default there and the comment on its line (else the "
             "comment on the field's line in its model). Long defaults are cut; `conf/base.yaml` has them whole.", "",
             "| key | type | default | note |", "|---|---|---|---|"]
    lines += _rows(Settings, values, "", base_comments(text))
    return "\n".join(lines) + "\n"


def current_page(page: Path = PAGE) -> tuple[str, str]:
    """The page's hand-written part (up to the marker) and its generated part (from the marker on)."""
    text = page.read_text()
    at = text.find(MARKER)
    return (text, "") if at < 0 else (text[:at], text[at:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite the generated part of {PAGE.name}")
    args = parser.parse_args(argv)
    if not args.write:
        sys.stdout.write(render())
        return 0
    written, _ = current_page()
    PAGE.write_text(written.rstrip() + "\n\n" + render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
