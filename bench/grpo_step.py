"""Seconds per GRPO step, toolgym vs TRL's GRPOTrainer(environment_factory=...), in the same run.

One step = 8 train tasks × 8 episodes of multi-turn tool use, the same tiny Qwen3 model and tokenizer
(with Qwen3's chat template, which TRL's tool parser knows), the same prompts (toolgym's "full" style:
tool schemas rendered by the template), the same sampling (temperature 1), no KL, one optimizer step.
Both sides use the same number of torch threads and fp32. The first step of each side is warm-up and
is not counted. The same episode semantics too: TRL's tool loop ends an episode at the first turn
without a parseable tool call, so toolgym runs with `max_format_errors: 1` (`--max-format-errors 0`
measures toolgym's default instead, where a malformed call gets feedback and another turn).

    python bench/grpo_step.py                       # builds and caches the bench model first (~minutes)
    python bench/grpo_step.py --steps 3 --threads 2 --out /tmp/grpo_step.json
    python bench/grpo_step.py --suite code_host     # a real app: ~2,700-token prompts

The model: `init_tiny` (128 hidden, 4 layers, 8K context) briefly SFT'd on oracle trajectories of the
suite's tasks, so that it writes tool calls and episodes are multi-turn. The script reports turns, tool
calls and tokens per episode for both sides: a ratio means something only when they are similar.
TRL is a bench-only extra (`pip install trl`); it is never imported by toolgym itself.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TASKS_PER_STEP = 8
SAMPLES_PER_TASK = 8
MAX_TURNS = 4
MAX_NEW_TOKENS = 128  # per turn (toolgym); TRL's budget is for the whole completion, see below
CACHE = Path(os.environ.get("TOOLGYM_BENCH_CACHE", Path(tempfile.gettempdir()) / "toolgym-bench")) / "grpo_step"
TESTS = Path(__file__).resolve().parent.parent / "tests"
CODE_HOST_FAMILIES = ("pull_request_status", "close_with_comment", "comment_on_issue", "assign_oldest_issue")


# -- the two suites: a notes app (short prompts) and code_host (a real app, ~2,700-token prompts) ---------


@dataclass
class Suite:
    """Where the bench's episodes run: an environment factory, the 8 step tasks, the SFT teacher tasks."""

    name: str
    env_name: str
    env_factory: Callable[[str], Any]
    step_tasks: Callable[[], list[Any]]
    teacher_tasks: Callable[[], list[Any]]
    sft_steps: int
    sft_batch_tokens: int


@functools.cache
def _notes_app() -> Any:
    """The example notes app (toolgym.envs.examples.toy) without its deliberately crashing tool."""
    from toolgym.envs.examples.toy import ToyApp, add_note, complete_note, list_my_notes

    class NotesApp(ToyApp):
        tools = [list_my_notes, add_note, complete_note]

    return NotesApp()


def _notes_env_factory(name: str) -> Any:
    from toolgym.envs import Environment

    if name != "toy":
        raise KeyError(f"the notes suite has only the 'toy' environment, not {name!r}")
    return Environment([_notes_app()])


def _notes_tasks(copies: int) -> list[Any]:
    """The tests' three notes tasks (list; add; list then complete), each asked `copies` ways."""
    sys.path.insert(0, str(TESTS))
    from test_rollout_support import toy_tasks

    wordings = ["", " Please.", " Thanks!", " Quickly, please.", " I need this now.", " Can you do that?",
                " Go ahead.", " Cheers."]
    tasks = []
    for index in range(copies):
        wording = wordings[index % len(wordings)] + (f" ({index})" if index >= len(wordings) else "")
        tasks += [t.model_copy(update={"id": f"{t.id}/{index}", "prompt": t.prompt + wording}) for t in toy_tasks()]
    return tasks


def _code_host_tasks(per_family: int, seed: int) -> list[Any]:
    from toolgym.dataset.build import BuildConfig, generate_app_tasks
    from toolgym.dataset.replay import replay_task
    from toolgym.envs import get_app

    config = BuildConfig(seed=seed, apps=["code_host"], tasks_per_family=per_family, heldout_envs=[],
                         compositions=[], heldout_task_fraction=0.0)
    tasks = [t for t in generate_app_tasks(get_app("code_host"), config) if t.family in CODE_HOST_FAMILIES]
    return [t.model_copy(update={"split": "train"}) for t in tasks if replay_task(t).kept]


def _code_host_step_tasks() -> list[Any]:
    tasks = _code_host_tasks(6, seed=11)
    chosen: list[Any] = []
    for family in CODE_HOST_FAMILIES:
        chosen += [t for t in tasks if t.family == family][:2]
    return chosen[:TASKS_PER_STEP]


def suite(name: str) -> Suite:
    from toolgym.envs import make_env

    if name == "notes":
        return Suite("notes", "toy", _notes_env_factory, lambda: _notes_tasks(3)[:TASKS_PER_STEP],
                     lambda: _notes_tasks(24), sft_steps=150, sft_batch_tokens=4096)
    return Suite("code_host", "code_host", make_env, _code_host_step_tasks, lambda: _code_host_tasks(40, seed=3),
                 sft_steps=60, sft_batch_tokens=12288)


def prepare_model(bench: Suite, threads: int) -> Path:
    """init_tiny + Qwen3's template + a short SFT on oracle episodes of the suite (cached: built once)."""
    cache = CACHE / bench.name
    final = cache / "model"
    if (final / "config.json").is_file():
        return final
    from transformers import AutoTokenizer
    from trl.chat_template_utils import qwen3_chat_template

    from toolgym.chat.render import Renderer
    from toolgym.data.convert import convert_run
    from toolgym.model.tiny import init_tiny
    from toolgym.policy.oracle import OraclePolicy
    from toolgym.rollout.runner import run_rollout
    from toolgym.train.sft import SFTConfig, run_sft

    cache.mkdir(parents=True, exist_ok=True)
    base = init_tiny(cache / "base", hidden_size=128, layers=4, heads=4, kv_heads=2, seed=0, prompt_style="full",
                     context_length=8192)
    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    tokenizer.chat_template = qwen3_chat_template
    tokenizer.save_pretrained(str(base))
    asyncio.run(run_rollout(bench.teacher_tasks(), OraclePolicy(), out_dir=cache / "oracle", concurrency=8,
                            max_turns=MAX_TURNS, renderer=Renderer(None, prompt_style="full"),
                            env_factory=bench.env_factory))
    convert_run(cache / "oracle", cache / "oracle_rows.jsonl")
    run_sft(SFTConfig(data=str(cache / "oracle_rows.jsonl"), model=str(base), out=str(cache / "sft"),
                      max_steps=bench.sft_steps, lr=3e-3, warmup_steps=5, batch_tokens=bench.sft_batch_tokens,
                      eval_fraction=0.0, save_every=10_000, precision="auto", threads=threads))
    os.replace(cache / "sft" / "final", final)
    return final


# -- toolgym ----------------------------------------------------------------------------------------------


def run_toolgym(bench: Suite, model: Path, tasks: list[Any], steps: int, threads: int, work: Path,
                max_format_errors: int | None) -> dict[str, Any]:
    from toolgym.schema.jsonl import write_jsonl
    from toolgym.train.grpo.config import grpo_config_from_dict
    from toolgym.train.grpo.trainer import run_grpo

    write_jsonl(work / "tasks.jsonl", tasks)
    config = grpo_config_from_dict({
        "tasks": str(work / "tasks.jsonl"), "model": str(model), "out": str(work / "toolgym"), "steps": steps,
        "tasks_per_step": TASKS_PER_STEP, "samples_per_task": SAMPLES_PER_TASK, "threads": threads,
        # TRL has no per-episode clock: give toolgym's one hour, so a loaded machine truncates nothing.
        "sampling": {"temperature": 1.0, "max_new_tokens": MAX_NEW_TOKENS, "max_turns": MAX_TURNS,
                     "max_context_tokens": 8192, "timeout_s": 3600, "max_format_errors": max_format_errors},
        "optim": {"lr": 1e-5, "precision": "fp32", "batch_tokens": 8 * 4096},
        "curriculum": {"enabled": False}, "eval": {"enabled": False}, "checkpoint": {"save_every": 10_000},
    })
    run_grpo(config, env_factory=bench.env_factory)
    rows = [json.loads(line) for line in (work / "toolgym" / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r.get("kind") == "train"]
    return {
        "step_seconds": [r["seconds_rollout"] + r["seconds_update"] for r in rows],
        "rollout_seconds": [r["seconds_rollout"] for r in rows],
        "update_seconds": [r["seconds_update"] for r in rows],
        "turns_per_episode": [r["turns_mean"] for r in rows],
        "tool_calls_per_episode": [r["tool_calls_per_episode"] for r in rows],
        "completion_tokens_per_episode": [r["response_tokens_mean"] for r in rows],
        "success_rate": [r["success_rate"] for r in rows],
        "groups_with_signal": [r["groups_with_signal"] for r in rows],
        "format_errors_per_episode": [r["format_errors_per_episode"] for r in rows],
        "max_format_errors": max_format_errors,
    }


# -- TRL --------------------------------------------------------------------------------------------------

_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "list", "object": "dict"}


def _tool_method(spec: Any) -> Any:
    """A method with typed parameters and a Google docstring, as TRL's environment_factory requires."""
    properties: dict[str, Any] = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    ordered = sorted(properties, key=lambda name: name not in required)  # required parameters first
    params = ["self"]
    for name in ordered:
        annotation = _TYPES.get(properties[name].get("type"), "str")
        # `X = None`, not `X | None = None`, and no return annotation: transformers' get_json_schema then gives
        # exactly the schema toolgym renders (no "nullable", no "return"), so both sides see the same prompt.
        params.append(f"{name}: {annotation}" if name in required else f"{name}: {annotation} = None")
    doc = " ".join((spec.description or spec.name).split())
    if ordered:
        doc += "\n\n    Args:\n" + "\n".join(
            f"        {n}: {' '.join(str(properties[n].get('description') or n).split())}" for n in ordered) + "\n    "
    arguments = ", ".join(f"{n!r}: {n}" for n in ordered)
    source = (f"def {spec.name}({', '.join(params)}):\n"
              f'    """{doc}"""\n'
              f"    return self._call({spec.name!r}, {{{arguments}}})\n")
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # the tool's own schema, as a plain Python signature
    return namespace[spec.name]


def trl_environment_class(bench: Suite) -> type:
    from toolgym.schema import Task

    probe = bench.env_factory(bench.env_name)
    methods = {spec.name: _tool_method(spec) for spec in probe.tool_specs("agent")}
    probe.close()

    class ToolgymAppEnv:
        """One app environment per rollout: reset to the task, tools call the app, verify at the end."""

        def __init__(self) -> None:
            self.env = bench.env_factory(bench.env_name)
            self.task: Task | None = None

        def reset(self, **example: Any) -> None:
            self.task = Task.model_validate_json(example["task"])
            self.env.reset(self.task.env_variables)

        def _call(self, name: str, arguments: dict[str, Any]) -> str:
            result = self.env.call_tool(name, {k: v for k, v in arguments.items() if v is not None})
            return result.content

    for name, method in methods.items():
        setattr(ToolgymAppEnv, name, method)
    return ToolgymAppEnv


def task_reward(completions: list[list[dict[str, Any]]], environments: list[Any], **_: Any) -> list[float]:
    """The task's verifier on the episode's final environment state and last plain answer."""
    from toolgym.verify.task import verify_task

    rewards = []
    for completion, environment in zip(completions, environments, strict=True):
        answers = [m.get("content") for m in completion if m.get("role") == "assistant" and not m.get("tool_calls")]
        answer = answers[-1] if answers else None
        rewards.append(float(verify_task(environment.task, environment.env, answer).reward))
    return rewards


def run_trl(bench: Suite, model: Path, tasks: list[Any], steps: int, threads: int, work: Path) -> dict[str, Any]:
    import torch
    from accelerate.state import AcceleratorState
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from toolgym.chat.render import Renderer

    AcceleratorState._reset_state()  # the toolgym side ran in this process first; TRL makes its own Accelerator
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(str(model), local_files_only=True)
    renderer = Renderer(tokenizer, prompt_style="full")
    env = bench.env_factory(bench.env_name)
    environment = trl_environment_class(bench)
    specs = env.tool_specs("agent")
    trl_tools = [getattr(environment, spec.name) for spec in specs]  # what TRL renders: the environment's methods
    rows, same_prompts = [], 0
    for task in tasks:
        messages = renderer.initial_messages(task, specs, env.policy)
        prompt = [{"role": m.role, "content": m.content} for m in messages]
        rows.append({"prompt": prompt, "task": task.model_dump_json()})
        trl_text = tokenizer.apply_chat_template(prompt, tools=trl_tools, tokenize=False, add_generation_prompt=True,
                                                 enable_thinking=False)
        same_prompts += trl_text == renderer.render_text(messages, specs, True)
    env.close()
    tokenizer.padding_side = "left"
    policy = AutoModelForCausalLM.from_pretrained(str(model), dtype=torch.float32, local_files_only=True)
    # TRL's budget covers every turn of an episode (tool results included): toolgym's turns × per-turn cap.
    args = GRPOConfig(
        output_dir=str(work / "trl"), max_steps=steps, per_device_train_batch_size=SAMPLES_PER_TASK,
        gradient_accumulation_steps=TASKS_PER_STEP, num_generations=SAMPLES_PER_TASK,
        max_completion_length=MAX_TURNS * MAX_NEW_TOKENS + 1024, max_tool_calling_iterations=MAX_TURNS - 1,
        temperature=1.0, learning_rate=1e-5, beta=0.0, num_iterations=1, logging_steps=1, save_strategy="no",
        report_to=[], use_cpu=True, bf16=False, seed=0, dataloader_num_workers=0, shuffle_dataset=False,
        chat_template_kwargs={"enable_thinking": False},
    )
    step_times: list[float] = []

    class StepClock(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.began = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            step_times.append(time.perf_counter() - self.began)

    trainer = GRPOTrainer(model=policy, reward_funcs=[task_reward], args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                          environment_factory=environment, callbacks=[StepClock()])
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry or "reward" in entry]

    def series(*keys: str) -> list[Any]:
        for key in keys:
            values = [entry[key] for entry in logs if key in entry]
            if values:
                return values
        return []

    return {
        "step_seconds": step_times,
        "completion_tokens_per_episode": series("completions/mean_length"),
        # TRL decodes a batch until its longest completion ends: the longest one sets the step's time
        "longest_completion_tokens": series("completions/max_length"),
        "tool_calls_per_episode": series("tools/call_frequency", "tools/calls_per_completion"),
        "success_rate": series("reward", "rewards/task_reward/mean"),
        "log_keys": sorted({k for entry in logs for k in entry}),
        "prompts_identical_to_toolgym": f"{same_prompts}/{len(tasks)}",
    }


# -- main -------------------------------------------------------------------------------------------------


def _measured(seconds: list[float]) -> float:
    """Median over steps after the first (warm-up)."""
    counted = seconds[1:] if len(seconds) > 1 else seconds
    return statistics.median(counted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps per side (the first is warm-up)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, default=None, help="model folder (default: build the bench model)")
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON here")
    parser.add_argument("--only", choices=["toolgym", "trl"], default=None)
    parser.add_argument("--max-format-errors", type=int, default=1,
                        help="toolgym ends an episode after this many malformed tool calls; 1 (default) is TRL's "
                             "semantics: its tool loop ends an episode at the first turn without a parseable call. "
                             "0: toolgym's own default, answer each malformed call with feedback and go on")
    parser.add_argument("--suite", choices=["notes", "code_host"], default="notes",
                        help="notes: a 3-tool app, short prompts; code_host: a real app, ~2,700-token prompts")
    args = parser.parse_args()
    try:
        import trl
    except ImportError:
        sys.exit("TRL is not installed: `pip install trl` (a bench-only extra; check torch stays the CPU build)")
    import inspect

    if "environment_factory" not in inspect.signature(trl.GRPOTrainer.__init__).parameters:
        sys.exit(f"TRL {trl.__version__} has no GRPOTrainer(environment_factory=...): this bench needs TRL ≥ 1.x")
    import torch

    torch.set_num_threads(args.threads)
    bench = suite(args.suite)
    model = args.model or prepare_model(bench, args.threads)
    tasks = bench.step_tasks()
    results: dict[str, Any] = {"suite": bench.name, "trl_version": trl.__version__, "torch": torch.__version__,
                               "threads": args.threads, "tasks": [t.id for t in tasks], "steps": args.steps,
                               "model": str(model)}
    with tempfile.TemporaryDirectory(prefix="toolgym-bench-grpo-") as tmp:
        work = Path(tmp)
        if args.only in (None, "toolgym"):
            results["toolgym"] = run_toolgym(bench, model, tasks, args.steps, args.threads, work,
                                             args.max_format_errors or None)
        if args.only in (None, "trl"):
            results["trl"] = run_trl(bench, model, tasks, args.steps, args.threads, work)
    lines = [f"GRPO step: {TASKS_PER_STEP} tasks × {SAMPLES_PER_TASK} episodes, ≤ {MAX_TURNS} turns, suite "
             f"{bench.name}, {args.threads} threads, TRL {trl.__version__}, torch {torch.__version__}; toolgym "
             + (f"ends an episode after {args.max_format_errors} malformed call(s)" if args.max_format_errors
                else "answers malformed calls with feedback (more turns than TRL)")]
    for side in ("toolgym", "trl"):
        if side in results:
            numbers = results[side]
            results[side]["seconds_per_step"] = _measured(numbers["step_seconds"])
            lines.append(f"  {side:<8} {results[side]['seconds_per_step']:8.1f} s/step (steps: "
                         + ", ".join(f"{s:.1f}" for s in numbers["step_seconds"]) + ") · completion tokens/episode "
                         + ", ".join(f"{v:.0f}" for v in numbers["completion_tokens_per_episode"])
                         + " · tool calls/episode " + ", ".join(f"{v:.2f}" for v in numbers["tool_calls_per_episode"]))
            if numbers.get("longest_completion_tokens"):
                lines.append("           longest completion per step: "
                             + ", ".join(f"{float(v):.0f}" for v in numbers["longest_completion_tokens"]))
            if "prompts_identical_to_toolgym" in numbers:
                lines.append(f"           prompts rendered as toolgym renders them: {numbers['prompts_identical_to_toolgym']}")
    if "toolgym" in results and "trl" in results:
        ratio = results["toolgym"]["seconds_per_step"] / results["trl"]["seconds_per_step"]
        results["ratio_toolgym_over_trl"] = ratio
        lines.append(f"  ratio toolgym / TRL = {ratio:.2f}× (target ≤ 0.5×)")
        tokens = {side: _measured(results[side]["completion_tokens_per_episode"]) for side in ("toolgym", "trl")}
        if tokens["toolgym"] and tokens["trl"]:
            per_token = ratio * tokens["trl"] / tokens["toolgym"]
            results["ratio_per_completion_token"] = per_token
            lines.append(f"  per completion token: {per_token:.2f}× (toolgym {tokens['toolgym']:.0f}, "
                         f"TRL {tokens['trl']:.0f} tokens/episode)")
    print("\n".join(lines))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
