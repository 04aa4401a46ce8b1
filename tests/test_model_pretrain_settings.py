"""The pre-training recipe as settings: the shipped default's record round-trips, one seed decides both
streams, unknown keys are named, and `toolgym model pretrain-tiny | verify-default` read config files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from toolgym.cli.main import app
from toolgym.cli.model import PRETRAIN_TINY_SHORTCUTS, VERIFY_DEFAULT_SHORTCUTS
from toolgym.config import ConfigError, load_config
from toolgym.config.cli import shortcut_flags
from toolgym.config.model import PretrainTinyConfig, VerifyDefaultConfig
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR, read_pretrain_settings
from toolgym.model.pretrain.settings import TinyRecipe, TrainConfig

WIDE = {"COLUMNS": "300"}
# A shape that pre-trains in seconds (cf. test_model_pretrain_recipe.TOY); --steps and --set change it below.
TOY_YAML = """\
seed: 3
vocab_size: 600
tokenizer_episodes: 150
hidden_size: 32
layers: 1
heads: 2
kv_heads: 1
verify_steps: 2
planted_copy: false
train:
  steps: 50
  rows: 1
  warmup_steps: 2
  eval_episodes: 2
  bf16: false
"""


def test_the_shipped_default_recipe_loads_and_dumps_back_unchanged() -> None:
    stored = read_pretrain_settings(DEFAULT_MODEL_DIR)["recipe"]
    recipe = TinyRecipe.model_validate(stored)
    dumped = recipe.model_dump()
    assert dumped == stored
    assert list(dumped) == list(stored) and list(dumped["train"]) == list(stored["train"])  # toolgym.json order
    assert recipe == TinyRecipe()  # the defaults are the shipped model's recipe
    assert PretrainTinyConfig().model_dump() == stored


def test_train_seed_follows_the_recipe_seed_unless_given() -> None:
    assert TinyRecipe(seed=7).train.seed == 7
    assert TinyRecipe.model_validate({"seed": 7, "train": {"steps": 3}}).train.seed == 7
    assert TinyRecipe.model_validate({"seed": 7, "train": {"seed": 2}}).train.seed == 2
    shared = TrainConfig(steps=3)
    assert TinyRecipe(seed=5, train=shared).train.seed == 5
    assert shared.seed == 0  # the caller's section is not changed under it
    assert load_config(PretrainTinyConfig, None, [], {"seed": 4, "train.steps": 2}).train.seed == 4


def test_lr_schedule_warms_up_holds_and_decays() -> None:
    config = TrainConfig(steps=100, warmup_steps=10, lr=1.0, min_lr_ratio=0.1, decay_start=0.8)
    assert config.lr_at(0) == pytest.approx(0.1)
    assert config.lr_at(50) == 1.0
    assert config.lr_at(99) == pytest.approx(0.1, abs=0.01)


def test_an_unknown_or_bad_setting_is_named() -> None:
    with pytest.raises(ValidationError, match=r"train\.lrr"):
        TinyRecipe.model_validate({"train": {"lrr": 1e-3}})
    with pytest.raises(ConfigError, match=r"field train\.lrr: unknown setting; known: .*warmup_steps"):
        load_config(PretrainTinyConfig, None, ["train.lrr=1e-3"])
    with pytest.raises(ConfigError, match="hidden_size 256 is not divisible by heads 3"):
        load_config(PretrainTinyConfig, None, ["heads=3"])
    with pytest.raises(ConfigError, match=r"field pretokenizer: Input should be 'word_isolating' or 'qwen'"):
        load_config(PretrainTinyConfig, None, ["pretokenizer=bpe"])
    result = CliRunner().invoke(app, ["model", "pretrain-tiny", "unused", "--set", "train.lrr=1"], env=WIDE)
    assert result.exit_code == 2 and "train.lrr" in result.output


def test_the_settings_do_not_import_torch() -> None:
    """The command line reads them before deciding to train; torch takes seconds to import."""
    code = ("import sys, toolgym.config.model, toolgym.model.pretrain.settings; "
            "sys.exit(any(m.split('.')[0] in ('torch', 'transformers') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize(("command", "model", "shortcuts"), [
    ("pretrain-tiny", PretrainTinyConfig, PRETRAIN_TINY_SHORTCUTS),
    ("verify-default", VerifyDefaultConfig, VERIFY_DEFAULT_SHORTCUTS)])
def test_help_lists_the_config_flags(command: str, model: type, shortcuts: list) -> None:
    result = CliRunner().invoke(app, ["model", command, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    flags = shortcut_flags(model, shortcuts)
    assert flags == (["--seed", "--steps", "--threads"] if command == "pretrain-tiny" else ["--steps", "--tolerance"])
    for flag in ["--config", "--set", *flags]:
        assert flag in result.output, flag


def test_verify_names_a_stored_recipe_it_cannot_read(tmp_path: Path) -> None:
    pretrain = {"recipe": {"bogus": 1}, "reference_losses": [1.0], "tokenizer_sha256": "x"}
    (tmp_path / "toolgym.json").write_text(json.dumps({"prompt_style": "compact", "pretrain": pretrain}))
    result = CliRunner().invoke(app, ["model", "verify-default", str(tmp_path)], env=WIDE)
    assert result.exit_code == 2
    assert "pretrain.recipe.bogus: Extra inputs are not permitted" in result.output and "toolgym.json" in result.output


@pytest.fixture(scope="module")
def toy_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pretrain-cli")
    (folder / "recipe.yaml").write_text(TOY_YAML)
    out = folder / "model"
    result = CliRunner().invoke(app, ["model", "pretrain-tiny", str(out), "--config", str(folder / "recipe.yaml"),
                                      "--set", "train.lr=1e-3", "--steps", "2"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "2/2 steps" in result.output
    return out


def test_pretrain_command_records_the_file_flag_and_set_values(toy_model: Path) -> None:
    recipe = json.loads((toy_model / "toolgym.json").read_text())["pretrain"]["recipe"]
    assert list(recipe) == list(TinyRecipe.model_fields)
    assert (recipe["seed"], recipe["hidden_size"], recipe["vocab_size"], recipe["planted_copy"]) == (3, 32, 600, False)
    train = recipe["train"]
    assert (train["steps"], train["lr"], train["rows"], train["bf16"]) == (2, 1e-3, 1, False)  # flag, --set, file
    assert train["seed"] == 3  # followed the recipe's
    assert train["threads"] == TrainConfig().threads


def test_verify_command_reads_its_steps_flag(toy_model: Path) -> None:
    result = CliRunner().invoke(app, ["model", "verify-default", str(toy_model), "--steps", "1"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "1/1 steps" in result.output and "OK" in result.output and "step   1" not in result.output
    strict = CliRunner().invoke(app, ["model", "verify-default", str(toy_model), "--set", "tolerance=-1"], env=WIDE)
    assert strict.exit_code == 1 and "FAILED" in strict.output  # even an exact replay exceeds a negative tolerance
