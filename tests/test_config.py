"""The config tree: YAML errors by file, line and field; dotted overrides; settings from earlier shapes; the
generated reference; shortcut flags derived from the tree."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from toolgym.cli.eval import EVAL_SHORTCUTS, SWEEP_SHORTCUTS
from toolgym.cli.main import app
from toolgym.cli.pipeline import PIPELINE_SHORTCUTS
from toolgym.cli.rollout import ROLLOUT_SHORTCUTS
from toolgym.cli.train import RFT_SHORTCUTS, SFT_SHORTCUTS
from toolgym.cli.train_grpo import GRPO_SHORTCUTS
from toolgym.config import ConfigError, load_config
from toolgym.config.cli import shortcut_flags
from toolgym.config.evaluation import EvalConfig, EvalRunConfig, RolloutConfig, SweepConfig
from toolgym.config.grpo import GRPOConfig, fingerprint_of_recorded
from toolgym.config.pipeline import PipelineConfig
from toolgym.config.reference import COMMANDS, render
from toolgym.config.train import RFTConfig, SFTConfig
from toolgym.train.sft import _config_for_resume, recorded_resume_config

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_reference_is_the_generated_one() -> None:
    assert (ROOT / "docs" / "config-reference.md").read_text() == render(), \
        "regenerate: python -m toolgym.config.reference > docs/config-reference.md"


@pytest.mark.parametrize(("command", "model", "shortcuts"), [
    (["train", "sft"], SFTConfig, SFT_SHORTCUTS), (["train", "rft"], RFTConfig, RFT_SHORTCUTS),
    (["train", "grpo"], GRPOConfig, GRPO_SHORTCUTS), (["eval"], EvalRunConfig, EVAL_SHORTCUTS),
    (["eval", "sweep"], SweepConfig, SWEEP_SHORTCUTS), (["rollout"], RolloutConfig, ROLLOUT_SHORTCUTS),
    (["pipeline"], PipelineConfig, PIPELINE_SHORTCUTS)])
def test_help_lists_the_shortcut_flags_derived_from_the_tree(command: list[str], model: type, shortcuts: list) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    file_flag = [] if command == ["pipeline"] else ["--config"]  # the pipeline takes its file as an argument
    for flag in [*file_flag, "--set", *shortcut_flags(model, shortcuts)]:
        assert flag in result.output, flag
    assert "Peak learning rate." in CliRunner().invoke(app, ["train", "sft", "--help"],
                                                        env={"COLUMNS": "300"}).output  # help = field doc


def _leaf_commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    subs = getattr(group, "commands", None)
    if not subs:
        return [(" ".join(path), group)]
    own = [(" ".join(path), group)] if path and group.invoke_without_command else []  # `toolgym eval` runs too
    return own + [c for name, sub in subs.items() for c in _leaf_commands(sub, (*path, name))]


def test_every_command_reads_the_config_tree_and_is_in_the_reference() -> None:
    documented = {name.removeprefix("toolgym ") for name, _ in COMMANDS}
    commands = _leaf_commands(typer.main.get_command(app))
    assert len(commands) >= 20
    for name, command in commands:
        params = {p.name for p in command.params}
        assert {"config", "overrides"} <= params, f"{name}: no --config/--set"
        assert name in documented, f"{name}: not in docs/config-reference.md"
    assert documented == {name for name, _ in commands}


def test_eval_and_rollout_keep_their_older_flag_names() -> None:
    """Scripts and the README use these names; the config tree must not rename them."""
    kept = {"eval": ["--samples", "--k", "--timeout", "--env", "--no-greedy", "--no-progress", "--trust-verifiers"],
            "rollout": ["--samples-per-task", "--timeout", "--env", "--env-mcp", "--max-format-errors",
                        "--user-simulator", "--retry-errors", "--no-progress", "--trust-verifiers"]}
    for command, flags in kept.items():
        output = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "300"}).output
        for flag in [*flags, "--tasks", "--policy", "--out", "--split", "--prompt-style", "--max-turns"]:
            assert re.search(rf"(?<![\w-]){flag}(?![\w-])", output), (command, flag)


def test_grpo_periodic_eval_is_an_eval_config_that_follows_the_run() -> None:
    grpo = GRPOConfig.model_validate({"tasks": "t", "model": "m", "out": "o", "seed": 5,
                                      "sampling": {"max_new_tokens": 160, "max_turns": 6, "temperature": 0.6},
                                      "eval": {"max_turns": 3, "temperature": 0.8}})
    assert isinstance(grpo.eval, EvalConfig)
    run = grpo.eval_config()
    assert (run.max_new_tokens, run.max_turns, run.seed, run.temperature, run.top_p) == (160, 3, 5, 0.8, 1.0)
    assert (run.concurrency, run.greedy, run.ks) == (EvalConfig().concurrency, True, [1])
    quiet = GRPOConfig.model_validate({"tasks": "t", "model": "m", "out": "o", "seed": 5,
                                       "sampling": {"max_new_tokens": 160, "max_turns": 6, "temperature": 0.6}})
    assert quiet.fingerprint() == grpo.fingerprint()  # eval settings never decide the trained weights


def test_eval_settings_come_from_a_file_flags_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text("tasks: t\npolicy: oracle\nout: o\ntrials: 3\nks: [1, 4]\ntimeout_s: 30\n")
    config = load_config(EvalRunConfig, path, ["greedy=false"], {"samples_per_task": 4, "envs": ["mail"]})
    assert (config.trials, config.ks, config.timeout_s, config.samples_per_task) == (3, [1, 4], 30.0, 4)
    assert not config.greedy and config.envs == ["mail"]
    with pytest.raises(ConfigError, match="unknown split 'dev'"):
        load_config(RolloutConfig, None, [], {"split": "dev"})


def test_pipeline_help_offers_set() -> None:
    assert "--set" in CliRunner().invoke(app, ["pipeline", "--help"], env={"COLUMNS": "300"}).output


def test_file_then_shortcuts_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "sft.yaml"
    path.write_text("data: d\nmodel: m\nout: o\nlr: 1.0e-3\nlora:\n  rank: 8\n")
    config = load_config(SFTConfig, path, ["lora.enabled=true", "max_steps=7", "report_to=[tensorboard]"],
                         {"lr": 3e-4, "epochs": 2})
    assert (config.lr, config.epochs, config.max_steps) == (3e-4, 2, 7)
    assert config.lora.enabled and config.lora.rank == 8 and config.report_to == ["tensorboard"]
    assert load_config(SFTConfig, path, ["lr=3e-4"]).lr == 3e-4  # YAML reads 3e-4 as text: the model makes it a float


def test_bad_settings_name_the_file_field_and_line(tmp_path: Path) -> None:
    path = tmp_path / "sft.yaml"
    path.write_text("data: d\nmodel: m\nout: o\nlora:\n  rnk: 8\n")
    with pytest.raises(ConfigError, match=r"sft.yaml: field lora.rnk: unknown setting; known: .*rank.* \(line 5\)"):
        load_config(SFTConfig, path)
    path.write_text("data: d\nmodel: m\nout: o\nepochs: 0\n")
    with pytest.raises(ConfigError, match=r"field epochs: .*\(line 4\)\n.*sft.yaml \(with command-line settings\): field lr: "):
        load_config(SFTConfig, path, ["lr=-1"])
    with pytest.raises(ConfigError, match=r"--set 'lr': write KEY=VALUE"):
        load_config(SFTConfig, path, ["lr"])
    with pytest.raises(ConfigError, match=r"settings: field data: Field required"):
        load_config(SFTConfig)


def test_settings_from_earlier_shapes_still_load() -> None:
    sft = SFTConfig.model_validate({"data": "d", "model": "m", "out": "o", "lora": True, "lora_rank": 8,
                                    "target_modules": ["q_proj"]})
    assert sft.lora.enabled and sft.lora.rank == 8 and sft.lora.target_modules == ["q_proj"]
    grpo = GRPOConfig.model_validate({"tasks": "t", "model": "m", "out": "o",
                                      "advantage": {"positive_only": True, "solved_anchor": 0.5},
                                      "loss": {"ratio_level": "sequence", "kl_coef": 0.1, "kl_quiet_episodes": 2},
                                      "optim": {"optimizer": "sgd", "momentum": 0.9}})
    experimental = grpo.experimental
    assert grpo.loss.objective == "sequence"
    assert (experimental.positive_only, experimental.solved_anchor, experimental.kl_quiet_episodes,
            experimental.optimizer, experimental.momentum) == (True, 0.5, 2, "sgd", 0.9)
    assert "Did not gain held-out tasks" in type(experimental).model_fields["positive_only"].description


def test_recorded_configs_of_earlier_runs_keep_their_resume_identity() -> None:
    """A manifest written before the config tree (a full dump, older names) judges a resume by today's rule."""
    old_grpo = {"tasks": "t", "model": "m", "out": "o", "seed": 0, "threads": 2,
                "loss": {"clip_low": 0.2, "ratio_level": "token", "kl_quiet_episodes": 0, "aggregation": "token_mean"},
                "advantage": {"baseline": "group_mean", "positive_only": False}, "optim": {"optimizer": "adamw"},
                "checkpoint": {"save_every": 3}}
    assert fingerprint_of_recorded(old_grpo) == GRPOConfig(tasks="t", model="m", out="elsewhere").fingerprint()
    changed = {**old_grpo, "optim": {"lr": 1e-5}}
    assert fingerprint_of_recorded(changed) != GRPOConfig(tasks="t", model="m", out="o").fingerprint()
    old_sft = {"data": "d", "model": "m", "out": "o", "lr": 1e-4, "lora": False, "lora_rank": 32, "lora_alpha": 64,
               "lora_dropout": 0.05, "merge": False, "save_every": 5}
    assert recorded_resume_config(old_sft) == _config_for_resume(SFTConfig(data="d", model="m", out="x"))


def test_one_shared_default_for_the_episode_limits() -> None:
    rft = RFTConfig(tasks="t", model="m", out="o")
    grpo = GRPOConfig(tasks="t", model="m", out="o")
    assert rft.max_turns == EvalConfig().max_turns == grpo.sampling.max_turns == 20
    assert rft.max_new_tokens == EvalConfig().max_new_tokens == grpo.sampling.max_new_tokens == 512
