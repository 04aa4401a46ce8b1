"""docs/architecture.md states the import layers a newcomer must respect; they must be the ones CI enforces."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def contract_layers() -> list[str]:
    """The layers of the import-linter contract in pyproject.toml, without the `toolgym.` prefix."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [layer.removeprefix("toolgym.") for layer in contract["layers"]]


def documented_layers() -> list[str]:
    """The arrow chain under the architecture document's Layers heading."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text[text.index("## Layers"):]
    chain = re.search(r"`(cli →[^`]*)`", section, re.S)
    assert chain, "docs/architecture.md: no `cli → …` chain under ## Layers"
    return [name.strip() for name in chain.group(1).split("→")]


def documented_packages() -> set[str]:
    """The packages named in the first column of the Layers table."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text[text.index("## Layers"):text.index("## Decisions")]
    return {name for cell in re.findall(r"^\| (`[^|]*`) \|", section, re.M) for name in re.findall(r"`(\w+)`", cell)}


def test_the_documented_chain_is_the_enforced_contract() -> None:
    assert documented_layers() == contract_layers()


def test_every_layer_has_a_row_saying_what_it_owns() -> None:
    assert documented_packages() == set(contract_layers())
