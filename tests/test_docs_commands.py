"""Every `toolgym` command line written in the README and docs/ names commands, flags and `--set` keys that
exist: a renamed flag or setting must take its documentation with it."""

from __future__ import annotations

import re
import shlex
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel

from toolgym.cli.main import app
from toolgym.config.reference import COMMANDS

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_BREAKS = {"&&", "||", "|", ";"}


def code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines in fenced or indented code blocks, backslash continuations joined."""
    out: list[tuple[int, str]] = []
    lines = text.split("\n")
    fenced = False
    index = 0
    while index < len(lines):
        number, line = index + 1, lines[index]
        index += 1
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not (fenced or line.startswith("    ")):
            continue
        while line.rstrip().endswith("\\") and index < len(lines):
            line = line.rstrip()[:-1] + " " + lines[index].strip()
            index += 1
        out.append((number, line))
    return out


def toolgym_arguments(line: str) -> list[str] | None:
    """The arguments a line passes to toolgym (`toolgym …` or `… -m toolgym.cli.main …`), or None."""
    if not (line.strip().startswith("toolgym ") or "toolgym.cli.main" in line):
        return None
    tokens = shlex.split(line, comments=True)
    if tokens[:1] == ["toolgym"]:
        arguments = tokens[1:]
    elif "toolgym.cli.main" in tokens:
        arguments = tokens[tokens.index("toolgym.cli.main") + 1:]
    else:
        return None
    ends = [i for i, token in enumerate(arguments) if token in SHELL_BREAKS]
    return arguments[:ends[0]] if ends else arguments


def inline_commands(text: str) -> list[tuple[int, str]]:
    """(line number, command) of the `toolgym train sft`-like code spans in prose, `[--flag VALUE]` brackets
    dropped; a span with an ellipsis stands for any command and is passed over."""
    return [(text.count("\n", 0, match.start()) + 1, re.sub(r"[\[\]]", "", match.group(1)))
            for match in re.finditer(r"`(toolgym [^`…]+)`", text)]


def documented_commands() -> list[tuple[str, list[str]]]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for number, line in [*code_lines(text), *inline_commands(text)]:
            arguments = toolgym_arguments(line)
            if arguments is not None:
                found.append((f"{document.relative_to(REPO)}:{number}", arguments))
    return found


def _sections(annotation: Any) -> list[Any]:
    """The models (or dicts, which take any key) a field's annotation may hold."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _sections(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if annotation is dict or typing.get_origin(annotation) is dict:
        return [dict]
    return []


def key_is_a_setting(model: type[BaseModel], key: str) -> bool:
    """Whether a dotted `--set` key names a field (or its alias) of the model, through nested sections."""
    candidates: list[Any] = [model]
    for part in key.split("."):
        if dict in candidates:
            return True
        fields = [info for m in candidates for name, info in m.model_fields.items() if part in (name, info.alias)]
        if not fields:
            return False
        candidates = [section for info in fields for section in _sections(info.annotation)]
    return True


def resolve(arguments: list[str]) -> tuple[list[str], Any, list[str]]:
    """(the command path, its click command, the arguments left for it)."""
    command = typer.main.get_command(app)
    path: list[str] = []
    rest = list(arguments)
    while rest and rest[0] in (getattr(command, "commands", None) or {}):
        path.append(rest[0])
        command = command.commands[rest.pop(0)]
    return path, command, rest


def test_the_documents_show_commands() -> None:
    places = {place.split(":")[0] for place, _ in documented_commands()}
    assert {"README.md", "docs/launch.md", "docs/config-reference.md", "docs/third-party-mcp.md"} <= places


@pytest.mark.parametrize("place,arguments", documented_commands(), ids=lambda value: value if isinstance(value, str)
                         else None)
def test_a_documented_command_line_names_what_exists(place: str, arguments: list[str]) -> None:
    path, command, rest = resolve(arguments)
    assert path, f"{place}: `toolgym {' '.join(arguments)}` names no command"
    flags = {name for param in command.params for name in [*param.opts, *param.secondary_opts]} | {"--help"}
    models = dict(COMMANDS)
    model = models.get("toolgym " + " ".join(path))
    for index, token in enumerate(rest):
        if not token.startswith("--"):
            continue
        flag, _, inline = token.partition("=")
        assert flag in flags, f"{place}: `toolgym {' '.join(path)}` has no flag {flag}"
        if flag == "--set":
            key = (inline or rest[index + 1]).split("=", 1)[0]
            assert model is not None, f"{place}: `toolgym {' '.join(path)}` takes --set but has no settings model"
            assert key_is_a_setting(model, key), f"{place}: {key} is not a setting of `toolgym {' '.join(path)}`"


def test_a_misnamed_setting_or_flag_is_caught() -> None:
    """The checks above can fail: a key the tree lacks, and a flag the command lacks."""
    from toolgym.config.pipeline import PipelineConfig
    from toolgym.config.train import SFTConfig

    assert key_is_a_setting(SFTConfig, "lora.enabled")
    assert not key_is_a_setting(SFTConfig, "lora.enable")
    assert key_is_a_setting(PipelineConfig, "validate")  # a section known by its alias
    assert not key_is_a_setting(PipelineConfig, "grpo.settings.stepz")
    path, command, rest = resolve(["train", "sft", "--max-step", "3"])
    assert path == ["train", "sft"]
    assert "--max-step" not in {name for param in command.params for name in param.opts}
    assert rest[0] == "--max-step"
