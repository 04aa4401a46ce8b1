"""toolgym in TRL: SFTTrainer trains on toolgym rows with toolgym's masks, GRPOTrainer runs toolgym tasks.

Both trainers run on the shipped tiny model, loaded from its folder (nothing from a hub), on the CPU.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from test_integrations_support import MODEL_DIR, app_tasks, oracle_rows, tiny_tokenizer
from toolgym.agent.episode import DONE_TOOL
from toolgym.chat.render import Renderer, load_prompt_style
from toolgym.data.context import ContextCheck
from toolgym.envs import make_env
from toolgym.integrations.trl import (
    FINISHED,
    EnvironmentFactory,
    environment_factory,
    grpo_rows,
    prepare_tokenizer,
    sft_rows,
)
from toolgym.train.sft_data import load_examples

trl = pytest.importorskip("trl", reason="TRL is an optional extra: pip install 'toolgym[bench]'")
datasets = pytest.importorskip("datasets", reason="TRL's datasets package is missing")

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state()  # each trainer makes its own Accelerator


def _model() -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(str(MODEL_DIR), dtype=torch.float32, local_files_only=True)


# -- SFT ---------------------------------------------------------------------------------------------------


def _sft_trainer(dataset: Any, out: Path) -> Any:
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(output_dir=str(out), max_steps=2, per_device_train_batch_size=2, learning_rate=1e-4,
                     assistant_only_loss=True, max_length=None, logging_steps=1, save_strategy="no", report_to=[],
                     use_cpu=True, bf16=False, seed=0, dataloader_num_workers=0)
    return SFTTrainer(model=_model(), args=args, train_dataset=dataset, processing_class=tiny_tokenizer())


def _trl_samples(trainer: Any) -> list[tuple[list[int], list[int]]]:
    """TRL's tokenized rows: ids, and 1 where the label is trained (not -100)."""
    out = []
    for example in trainer.train_dataset:
        labels = example.get("labels")
        mask = [int(x != -100) for x in labels] if labels is not None else list(example["assistant_masks"])
        out.append((list(example["input_ids"]), mask))
    return out


@pytest.mark.parametrize("style", ["compact", "full"])
def test_sft_trainer_trains_on_toolgyms_masks(tmp_path: Path, style: str) -> None:
    path, _ = oracle_rows(tmp_path, app_tasks(), style)
    examples, _ = load_examples(path, Renderer(tiny_tokenizer(), prompt_style=style))  # type: ignore[arg-type]
    trainer = _sft_trainer(datasets.Dataset.from_list(sft_rows(path)), tmp_path / "trl")
    theirs = _trl_samples(trainer)
    assert len(theirs) == len(examples)
    for (ids, mask), example in zip(theirs, examples, strict=True):
        (ours,) = example.samples
        n = len(ours.input_ids)
        assert ids[:n] == ours.input_ids and mask[:n] == ours.loss_mask, example.group
        assert not any(mask[n:])  # only the template's closing newline follows, untrained
    if style == "compact":  # the shipped model's style; full-style rows are ~4k tokens, masks are enough there
        result = trainer.train()
        assert trainer.state.global_step == 2 and result.training_loss > 0


def test_context_check_counts_the_ids_sft_trainer_tokenizes(tmp_path: Path) -> None:
    """What `data convert --model` measures is what SFTTrainer trains on, row for row, past the context too."""
    _, rows = oracle_rows(tmp_path, app_tasks("code_host", 3), "full")
    trainer = _sft_trainer(datasets.Dataset.from_list(sft_rows(rows)), tmp_path / "trl")
    check = ContextCheck("default")
    theirs = [len(ids) for ids, _ in _trl_samples(trainer)]
    assert theirs == [len(check.token_ids(row)) for row in rows]
    assert max(theirs) > check.context  # full-style code_host rows: longer than the shipped model's context


def test_sft_trainer_reads_compact_rows_straight_from_the_jsonl(tmp_path: Path) -> None:
    """The shipped model's style needs no adapter: each row's chat_template_kwargs keep the schemas out."""
    path, _ = oracle_rows(tmp_path, app_tasks()[:2], "compact")
    examples, _ = load_examples(path, Renderer(tiny_tokenizer(), prompt_style="compact"))
    dataset = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache"))
    theirs = _trl_samples(_sft_trainer(dataset.select_columns(["messages", "tools", "chat_template_kwargs"]),
                                       tmp_path / "trl"))
    for (ids, mask), example in zip(theirs, examples, strict=True):
        (ours,) = example.samples
        assert (ids[: len(ours.input_ids)], mask[: len(ours.loss_mask)]) == (ours.input_ids, ours.loss_mask)


# -- GRPO --------------------------------------------------------------------------------------------------


def test_environment_replays_a_reference_solution_to_reward_one() -> None:
    """The methods TRL calls are the app's tools: the oracle's calls through them, then done, pass the task."""
    tasks = app_tasks()[:3]
    factory = environment_factory(tasks)
    assert isinstance(factory, EnvironmentFactory)
    env = factory()
    for task in tasks:
        env.reset(task_id=task.id, prompt=[])
        for call in task.reference_solution:
            assert not getattr(env, call.name)(**call.arguments).startswith("Error:")
        env.done(answer=task.expected_answer or "Done.")
        first = getattr(env, task.reference_solution[0].name)
        assert first(**task.reference_solution[0].arguments) == FINISHED  # nothing runs after done
        assert env.get_reward() == 1.0
    env.reset(task_id=tasks[0].id)
    assert getattr(env, tasks[0].reference_solution[0].name)(nonsense=1).startswith("Error:")  # toolgym's error
    assert env.get_reward() == 0.0


def test_environment_refuses_what_trl_cannot_score() -> None:
    with pytest.raises(ValueError, match="done tool"):
        environment_factory([t for t in app_tasks() if t.expected_answer][:1], done_tool=False)
    with pytest.raises(KeyError):
        environment_factory(app_tasks()[:1])().reset(task_id="no-such-task")


def test_grpo_trainer_runs_two_steps_on_toolgym_tasks(tmp_path: Path) -> None:
    from trl import GRPOConfig, GRPOTrainer

    tasks = app_tasks()[:2]
    style = load_prompt_style(MODEL_DIR)
    tokenizer = prepare_tokenizer(tiny_tokenizer(), style)
    rows = grpo_rows(tasks, style)
    factory = environment_factory(tasks)
    # TRL renders the environment's methods as the tools: the prompt must be the one toolgym's rollouts use
    env, probe = make_env(tasks[0].env), factory()
    specs = [*env.tool_specs("agent"), DONE_TOOL]
    renderer = Renderer(tiny_tokenizer(), prompt_style=style)
    for task, row in zip(tasks, rows, strict=True):
        theirs = tokenizer.apply_chat_template(row["prompt"], tools=[getattr(probe, s.name) for s in specs],
                                               add_generation_prompt=True, tokenize=True, return_dict=True,
                                               enable_thinking=False)["input_ids"]
        assert theirs == renderer.prompt_ids(renderer.initial_messages(task, specs, env.policy), specs)
    env.close()
    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), max_steps=2, per_device_train_batch_size=2, num_generations=2,
        max_completion_length=48, max_tool_calling_iterations=2, temperature=1.0, learning_rate=1e-5, beta=0.0,
        logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, bf16=False, seed=0,
        dataloader_num_workers=0, chat_template_kwargs={"enable_thinking": False},
    )
    trainer = GRPOTrainer(model=_model(), args=args, train_dataset=datasets.Dataset.from_list(rows),
                          processing_class=tokenizer, environment_factory=factory)
    trainer.train()
    assert trainer.state.global_step == 2
    reward_key = f"rewards/{type(probe).__name__}/mean"
    logged = [entry[reward_key] for entry in trainer.state.log_history if reward_key in entry]
    assert len(logged) == 2 and all(0.0 <= value <= 1.0 for value in logged)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
