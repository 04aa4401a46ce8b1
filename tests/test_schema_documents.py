"""The one rule for reading a whole JSON, TOML or YAML file: each unusable file is a FileError naming it.

Real files on disk, each with one fault: the error names the file and, where the parser knows it, the
line and column; nesting far past the interpreter's stack is an error, never a RecursionError.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolgym.schema.documents import FileError, read_json, read_toml, read_yaml
from toolgym.schema.jsonl import MAX_DEPTH

READERS: dict[str, Callable[[Path], Any]] = {"json": read_json, "toml": read_toml, "yaml": read_yaml}
DEEP = 100_000  # far past the interpreter's recursion limit
# (file name, bytes, the error after "PATH: ")
FAULTS = [
    ("deep-array.json", b"[" * DEEP + b"]" * DEEP, f"invalid JSON: nested deeper than {MAX_DEPTH} levels"),
    ("deep-object.json", b'{"a":' * DEEP + b"1" + b"}" * DEEP, f"invalid JSON: nested deeper than {MAX_DEPTH} levels"),
    ("unclosed.json", b"[" * DEEP, f"invalid JSON: nested deeper than {MAX_DEPTH} levels"),
    ("just-too-deep.json", b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
     f"invalid JSON: nested deeper than {MAX_DEPTH} levels"),
    ("syntax.json", b'{\n  "server": "x",\n  oops\n}\n',
     "line 3 column 3: invalid JSON: Expecting property name enclosed in double quotes"),
    ("empty.json", b"", "line 1 column 1: invalid JSON: Expecting value"),
    ("latin1.json", b'{\n  "server": "caf\xe9"\n}\n', "line 2 column 17: invalid UTF-8: byte 0xe9"),
    ("surrogate.json", b'{"reset": {"tool": "\\ud800"}}',
     "field 'reset.tool': a lone surrogate escape (\\ud800-\\udfff) is not text"),
    ("big-int.json", b'{"n": ' + b"7" * 4301 + b"}", "invalid JSON: an integer has more than 4300 digits"),
    ("deep-array.toml", b"server = " + b"[" * DEEP + b"]" * DEEP,
     f"invalid TOML: nested deeper than {MAX_DEPTH} levels"),
    ("deep-table.toml", b"server = " + b"{a = " * DEEP + b"1" + b"}" * DEEP,
     f"invalid TOML: nested deeper than {MAX_DEPTH} levels"),
    ("just-too-deep.toml", b"server = " + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
     f"invalid TOML: nested deeper than {MAX_DEPTH} levels"),
    ("syntax.toml", b'server = "x"\ntimeout_s = = 3\n', "line 2 column 13: invalid TOML: Invalid value"),
    ("unclosed.toml", b"server = [\n", "invalid TOML: Invalid value at the end of the file"),
    ("latin1.toml", b'server = "x"\ncwd = "caf\xe9"\n', "line 2 column 11: invalid UTF-8: byte 0xe9"),
    ("big-int.toml", b"timeout_s = " + b"7" * 4301, "invalid TOML: Exceeds the limit (4300 digits) for integer "
     "string conversion"),
    ("deep.yaml", b"a: " + b"[" * DEEP + b"]" * DEEP, "invalid YAML: nested too deeply"),
    ("syntax.yaml", b"tasks: t\nseed: [1\n", "line 3 column 1: invalid YAML: expected ',' or ']', but got "
     "'<stream end>'"),
    ("latin1.yaml", b"tasks: t\nout: caf\xe9\n", "line 2 column 9: invalid UTF-8: byte 0xe9"),
]


@pytest.mark.parametrize(("name", "raw", "message"), FAULTS, ids=[name for name, _, _ in FAULTS])
def test_each_unusable_file_is_one_error_naming_the_file(tmp_path: Path, name: str, raw: bytes,
                                                         message: str) -> None:
    path = tmp_path / name
    path.write_bytes(raw)
    with pytest.raises(FileError) as raised:
        READERS[path.suffix[1:]](path)
    assert str(raised.value) == f"{path}: {message}"
    assert raised.value.path == str(path)
    assert isinstance(raised.value, ValueError)  # what callers that word their own file errors catch


def test_what_the_formats_allow_is_read(tmp_path: Path) -> None:
    within = tmp_path / "within.json"
    within.write_bytes(b"\xef\xbb\xbf" + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)  # a byte-order mark is dropped
    assert read_json(within) is not None
    text = tmp_path / "text.json"
    text.write_text('{"pair": "\\ud83d\\ude00", "brackets": "' + "[" * 500 + '"}', encoding="utf-8")
    assert read_json(text) == {"pair": "\U0001F600", "brackets": "[" * 500}
    toml = tmp_path / "profile.toml"
    toml.write_text('server = ["x"]\n[reset]\nreset_tool = "r"\n', encoding="utf-8")
    assert read_toml(toml) == {"server": ["x"], "reset": {"reset_tool": "r"}}
    yaml = tmp_path / "config.yaml"
    yaml.write_text("tasks: t\nloss:\n  clip: 0.2\n", encoding="utf-8")
    assert read_yaml(yaml) == ({"tasks": "t", "loss": {"clip": 0.2}},
                               {("tasks",): 1, ("loss",): 2, ("loss", "clip"): 3})


def test_a_missing_file_stays_an_os_error_for_the_caller_to_word(tmp_path: Path) -> None:
    for reader in READERS.values():
        with pytest.raises(FileNotFoundError):
            reader(tmp_path / "absent")
