"""One prepared device check: toolgym's own engine, SFT, GRPO and launch paths on one CUDA GPU, in bf16.

    python bench/gpu_check.py --out "$OUT"                            # CUDA: Qwen3-0.6B / Qwen3-8B shapes
    python bench/gpu_check.py --device cpu --shape tiny --out /tmp/gc  # the same code paths, tiny shapes

Parts, in order (each timed; one that fails is recorded with its traceback and the next still runs):
  setup    a Qwen3-shaped model folder with random weights (built on the device, from a config) and the
           shipped default model's tokenizer; tasks of one app; SFT rows from oracle trajectories
  engine   HFPolicy (token in/out): a rollout of tasks × samples through the episode loop, then raw
           batched `generate_batch` at several batch sizes: generation tokens/s, beside the same workload
           through the engine's static-cache decode (compiled on CUDA), through plain eager `model.generate`,
           and the decode roofline of the shape (weights + KV read per step ÷ the card's memory bandwidth:
           `--bandwidth-gbs`, or the table `BANDWIDTH_GBS` by device name), each as a fraction of it
  sft      `run_sft` with LoRA, then full weights: step time, tokens/s, peak memory
  grpo     `run_grpo` (full weights, the in-process HF engine): rollout / update seconds, peak memory
  memfit   LoRA SFT steps (toolgym's LoRA, loss and optimizer) of a Qwen3-8B-shaped model built in bf16
           directly on the device, gradient checkpointing on, at long sequence lengths: peak memory
  launch   `accelerate launch --num_processes 1` of `toolgym train sft --lora` and `toolgym train grpo`

No network: models are built from configs (random weights); nothing is downloaded. Parts start only
while the budget (--budget-s) lasts; a watchdog writes the results and exits if a part runs far past
it. OUT/gpu_check.json is rewritten after every part; OUT/gpu_check.log has the log and the launched
commands' output. A random model rarely calls a tool, so episodes are mostly one turn of
max_new_tokens, and it never earns a reward: GRPO gets one that alternates over each task's samples
(in-process) or trains every episode for the KL term alone (launched), so that its update has work to do.
The run needs, beyond torch/transformers/peft/accelerate: pydantic, Faker, pyyaml, typer, rich, jinja2,
and starlette (`toolgym.cli.main` imports the servers' request guard).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
sys.path.insert(0, str(SRC))

DEFAULT_MODEL = SRC / "toolgym" / "model" / "default"
PARTS = ("engine", "sft", "grpo", "memfit", "launch")
RESULTS_FILE = "gpu_check.json"
LOG_FILE = "gpu_check.log"
WATCHDOG_GRACE_S = 45.0
GIB = 1024**3
STATIC_RESERVE_S = 60.0  # the engine's static decode (compiled on CUDA) starts only with this much budget left
# Memory bandwidth (GB/s) by device name: the first row whose words all appear in the name (upper-cased) wins.
BANDWIDTH_GBS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("H200",), 4800.0), (("H100", "PCIE"), 2000.0), (("H100", "NVL"), 3900.0), (("H100",), 3350.0),
    (("A100", "80GB", "PCIE"), 1935.0), (("A100", "80GB"), 2039.0), (("A100",), 1555.0), (("L40S",), 864.0),
    (("A10G",), 600.0), (("L4",), 300.0),
)


@dataclass(frozen=True)
class Shape:
    """Model shapes and workload sizes of one run (`full` for the GPU, `tiny` for a CPU smoke)."""

    policy: dict[str, Any]  # Qwen3Config fields of the model every part but memfit trains and samples
    big: dict[str, Any]  # Qwen3Config fields of memfit's model
    app: str
    tasks: int  # engine rollout: tasks × samples episodes
    samples: int
    max_new_tokens: int
    max_context_tokens: int
    generate_batches: tuple[int, ...]  # raw generate_batch sizes
    sft_tasks: int  # oracle trajectories turned into SFT rows
    sft_steps: int
    sft_batch_tokens: int
    grpo_steps: int
    grpo_tasks_per_step: int
    grpo_samples: int
    grpo_max_new_tokens: int
    memfit_seq_lens: tuple[int, ...]
    memfit_steps: int
    launch_steps: int
    full_sft_reserve_s: float  # full-weight SFT starts only with this much budget left


QWEN3_0_6B = {"vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
              "max_position_embeddings": 40960, "tie_word_embeddings": True}
QWEN3_8B = {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "max_position_embeddings": 40960, "tie_word_embeddings": False}
# The tiny vocabulary is still larger than the tokenizer's (4000), as Qwen3's is: sampled ids the tokenizer
# does not know must pass through the episode loop here too.
TINY_POLICY = {"vocab_size": 8192, "hidden_size": 64, "intermediate_size": 192, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
               "max_position_embeddings": 8192, "tie_word_embeddings": True}
TINY_BIG = {"vocab_size": 8192, "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
            "max_position_embeddings": 8192, "tie_word_embeddings": False}

SHAPES = {
    "full": Shape(policy=QWEN3_0_6B, big=QWEN3_8B, app="code_host", tasks=16, samples=4, max_new_tokens=256,
                  max_context_tokens=16384, generate_batches=(1, 16, 64), sft_tasks=48, sft_steps=6,
                  sft_batch_tokens=16384, grpo_steps=3, grpo_tasks_per_step=4, grpo_samples=4,
                  grpo_max_new_tokens=128, memfit_seq_lens=(4096, 16384), memfit_steps=2, launch_steps=3,
                  full_sft_reserve_s=300.0),
    "tiny": Shape(policy=TINY_POLICY, big=TINY_BIG, app="code_host", tasks=3, samples=2, max_new_tokens=12,
                  max_context_tokens=8192, generate_batches=(1, 4), sft_tasks=6, sft_steps=2,
                  sft_batch_tokens=4096, grpo_steps=2, grpo_tasks_per_step=2, grpo_samples=2,
                  grpo_max_new_tokens=8, memfit_seq_lens=(64, 128), memfit_steps=2, launch_steps=2,
                  full_sft_reserve_s=0.0),
}


class PartSkipped(Exception):
    """A part that did not start (no budget left, or what it needs failed earlier)."""


@dataclass
class PartResult:
    status: str = "pending"  # ok | failed | skipped | killed
    seconds: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None


class Check:
    """One run: arguments, budget, the results written after every part, and what the parts share."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.shape = SHAPES[args.shape]
        self.device = args.device
        self.cuda = args.device.startswith("cuda")
        self.precision = "bf16" if self.cuda else "fp32"  # bf16 on CPU is emulated on most machines
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="toolgym-gpu-check-"))
        self.work.mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()
        self.deadline = self.started + args.budget_s
        self.parts: dict[str, PartResult] = {}
        self.current: str | None = None
        self.child: subprocess.Popen[bytes] | None = None
        self.log_handle = open(self.out / LOG_FILE, "a", encoding="utf-8")  # noqa: SIM115 - open for the run
        self.lock = threading.Lock()
        self.info: dict[str, Any] = {}
        self.watchdog: threading.Timer | None = None
        self.policy_dir = self.work / "policy_model"
        self.tasks_path = self.work / "tasks.jsonl"
        self.sft_rows = self.work / "sft_rows.jsonl"

    # -- log, budget, results -----------------------------------------------------------------------

    def say(self, text: str) -> None:
        line = f"[{time.perf_counter() - self.started:7.1f}s] {text}"
        print(line, flush=True)
        with self.lock:
            self.log_handle.write(line + "\n")
            self.log_handle.flush()

    def remaining(self) -> float:
        return self.deadline - time.perf_counter()

    def part_metrics(self) -> dict[str, Any]:
        """The running part's metrics, filled as it goes: what it measured before failing is kept."""
        assert self.current is not None
        return self.parts[self.current].metrics

    def results(self) -> dict[str, Any]:
        return {
            "script": "bench/gpu_check.py",
            "args": vars(self.args),
            "shape": asdict(self.shape),
            "precision": self.precision,
            "env": self.info,
            "elapsed_s": round(time.perf_counter() - self.started, 1),
            "parts": {name: asdict(part) for name, part in self.parts.items()},
            "third_party_modules": third_party_modules(),
        }

    def write(self) -> None:
        with self.lock:
            text = json.dumps(self.results(), indent=2, default=str)
            (self.out / RESULTS_FILE).write_text(text + "\n", encoding="utf-8")

    def run_part(self, name: str, body: Callable[[], dict[str, Any]], needs: tuple[str, ...] = ()) -> None:
        part = self.parts.setdefault(name, PartResult())
        began = time.perf_counter()
        self.current = name
        try:
            missing = [n for n in needs if self.parts.get(n, PartResult()).status != "ok"]
            if missing:
                raise PartSkipped(f"needs {', '.join(missing)}, which did not succeed")
            if self.remaining() <= 0:
                raise PartSkipped(f"budget of {self.args.budget_s:.0f}s spent before it started")
            self.say(f"== {name} ({self.remaining():.0f}s of budget left)")
            part.metrics = body()
            part.status = "ok"
        except PartSkipped as exc:
            part.status, part.error = "skipped", str(exc)
        except BaseException as exc:  # a part's failure, even an OOM or a KeyboardInterrupt, is a result
            part.status, part.error = "failed", f"{type(exc).__name__}: {exc}"
            part.traceback = traceback.format_exc()
            with contextlib.suppress(Exception):
                part.metrics["memory_at_failure"] = memory(self.cuda)
            self.say(part.traceback)
            if isinstance(exc, KeyboardInterrupt):
                raise
        finally:
            part.seconds = round(time.perf_counter() - began, 2)
            self.current = None
            self.say(f"-- {name}: {part.status} in {part.seconds:.1f}s" + (f" ({part.error})" if part.error else ""))
            free_memory(self.cuda)
            self.write()

    def start_watchdog(self) -> None:
        """If a part runs far past the budget, write what is known, stop any child and exit."""

        def fire() -> None:
            if self.current is not None:
                part = self.parts.setdefault(self.current, PartResult())
                part.status, part.error = "killed", f"still running {WATCHDOG_GRACE_S:.0f}s after the budget ended"
            if self.child is not None and self.child.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(self.child.pid, 9)
            self.say(f"watchdog: budget + {WATCHDOG_GRACE_S:.0f}s passed during {self.current}; exiting")
            with contextlib.suppress(Exception):
                self.write()
                print(summary_table(self.results()), flush=True)
            os._exit(3)

        self.watchdog = threading.Timer(self.args.budget_s + WATCHDOG_GRACE_S, fire)
        self.watchdog.daemon = True
        self.watchdog.start()

    def close(self) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
        self.log_handle.close()


# -- helpers ------------------------------------------------------------------------------------------


def third_party_modules() -> list[str]:
    """Top-level modules imported from outside the standard library (and toolgym): what the run needs."""
    names = {name.split(".")[0] for name, module in list(sys.modules.items()) if module is not None}
    return sorted(n for n in names if n not in sys.stdlib_module_names and not n.startswith("_")
                  and n not in ("toolgym", "sitecustomize", "usercustomize"))


def free_memory(cuda: bool) -> None:
    gc.collect()
    if cuda:
        import torch

        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def reset_peak(cuda: bool) -> None:
    free_memory(cuda)
    if cuda:
        import torch

        torch.cuda.reset_peak_memory_stats()


def memory(cuda: bool) -> dict[str, Any]:
    """Peak device memory since the last `reset_peak` (CUDA), or the process's peak RSS (CPU, whole run)."""
    if cuda:
        import torch

        torch.cuda.synchronize()
        return {"peak_allocated_gib": round(torch.cuda.max_memory_allocated() / GIB, 2),
                "peak_reserved_gib": round(torch.cuda.max_memory_reserved() / GIB, 2),
                "allocated_now_gib": round(torch.cuda.memory_allocated() / GIB, 2)}
    import resource

    return {"process_peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2, 2)}


def sync(cuda: bool) -> None:
    if cuda:
        import torch

        torch.cuda.synchronize()


def step_seconds(rows: list[dict[str, Any]]) -> list[float]:
    """Per-step seconds from the cumulative `elapsed_s` of a trainer's metrics rows."""
    elapsed = [float(r["elapsed_s"]) for r in rows]
    return [round(b - a, 3) for a, b in zip([0.0, *elapsed[:-1]], elapsed, strict=True)]


def steady(values: list[float]) -> list[float]:
    """All but the first (warm-up) value, when there is more than one."""
    return values[1:] if len(values) > 1 else values


def qwen3_config(fields: dict[str, Any], eos_id: int, pad_id: int) -> Any:
    from transformers import Qwen3Config

    return Qwen3Config(**fields, rms_norm_eps=1e-6, bos_token_id=None, eos_token_id=eos_id, pad_token_id=pad_id,
                       rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0})


def build_on_device(config: Any, device: str, dtype: Any) -> Any:
    """Random init straight on the device (no slow CPU init of billions of parameters)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    parameter = next(model.parameters())
    if parameter.device.type != torch.device(device).type:  # a transformers that ignores the device context
        model.to(device)
    return model


def tail(text: str, chars: int = 4000) -> str:
    return text if len(text) <= chars else "…" + text[-chars:]


def alternating_reward(episode: Any) -> float:
    """1 for every other sample of a task: every group of a random model gets signal, so GRPO updates."""
    return float(episode.sample_index % 2)


@contextlib.contextmanager
def timed(into: dict[str, Any], key: str, cuda: bool) -> Iterator[None]:
    began = time.perf_counter()
    yield
    sync(cuda)
    into[key] = round(time.perf_counter() - began, 3)


def memory_bandwidth_gbs(device_name: str, override: float | None = None) -> float | None:
    """The card's memory bandwidth in GB/s: `override` if given, else the table's, else None (unknown)."""
    if override:
        return override
    name = device_name.upper()
    return next((gbs for words, gbs in BANDWIDTH_GBS if all(word in name for word in words)), None)


def decode_roofline(fields: dict[str, Any], parameters: int, rows: int, context_tokens: float, value_bytes: int,
                    bandwidth_gbs: float) -> dict[str, float]:
    """The fastest a memory-bound decode step can be: every weight the step reads (all but an untied input
    embedding, of which it gathers a few rows) and each row's keys and values over `context_tokens`
    (layers × K and V × kv heads × head dim), each read once, at the card's bandwidth."""
    weights = parameters - (0 if fields["tie_word_embeddings"] else fields["vocab_size"] * fields["hidden_size"])
    kv_per_token = fields["num_hidden_layers"] * 2 * fields["num_key_value_heads"] * fields["head_dim"]
    weight_bytes = weights * value_bytes
    kv_bytes = rows * context_tokens * kv_per_token * value_bytes
    step_s = (weight_bytes + kv_bytes) / (bandwidth_gbs * 1e9)
    return {"weight_bytes": weight_bytes, "kv_bytes": round(kv_bytes), "step_s": step_s,
            "tokens_per_s": rows / step_s}


def left_padded(prompts: list[list[int]], pad_id: int) -> tuple[Any, Any]:
    """(input_ids, attention_mask) of prompts left-padded to the longest, as `generate` takes them."""
    import torch

    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt):] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt):] = 1
    return ids, mask


def eager_generate_seconds(model: Any, prompts: list[list[int]], new_tokens: int, pad_id: int, device: str,
                           cuda: bool) -> float:
    """Seconds of plain `model.generate` (dynamic cache, the model's attention, sampled at T=1 with no
    top-k/top-p, exactly `new_tokens` a row) over the prompts, prefill included."""
    import torch
    from transformers import GenerationConfig

    ids, mask = left_padded(prompts, pad_id)
    config = GenerationConfig(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=new_tokens,
                              min_new_tokens=new_tokens, eos_token_id=None, pad_token_id=pad_id)
    sync(cuda)
    began = time.perf_counter()
    with torch.inference_mode():
        model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), generation_config=config)
    sync(cuda)
    return time.perf_counter() - began


def engine_seconds(policy: Any, prompts: list[list[int]], new_tokens: int, cuda: bool) -> tuple[float, int]:
    """(seconds, tokens) of one `generate_batch` over the prompts from a cold prefix cache (prefill included)."""
    from toolgym.policy.base import GenerationRequest, SamplingParams

    if policy.prefix_cache is not None:
        policy.prefix_cache.clear()  # prefill counted too, as on a first turn
    requests = [GenerationRequest(sampling=SamplingParams(temperature=1.0, max_new_tokens=new_tokens, seed=100 + i),
                                  prompt_ids=list(p)) for i, p in enumerate(prompts)]
    sync(cuda)
    began = time.perf_counter()
    generations = policy.generate_batch(requests)
    sync(cuda)
    return time.perf_counter() - began, sum(len(g.completion_ids) for g in generations)


def decode_rate(full: tuple[float, int], first: tuple[float, int], rows: int) -> float | None:
    """Decode tokens/s from a run of n tokens and one of 1 token (the prefill and first step taken out)."""
    seconds, tokens = full[0] - first[0], full[1] - rows
    return round(tokens / seconds, 1) if seconds > 0 and tokens > 0 else None


# -- setup --------------------------------------------------------------------------------------------


def part_setup(check: Check) -> dict[str, Any]:
    """The model folder, the tasks and the SFT rows every later part uses."""
    import torch
    from transformers import AutoTokenizer

    from toolgym.agent.limits import EpisodeLimits
    from toolgym.chat.render import MODEL_CONFIG_FILE, Renderer
    from toolgym.data.convert import convert_run
    from toolgym.dataset.build import BuildConfig, generate_app_tasks
    from toolgym.envs import get_app
    from toolgym.policy.oracle import OraclePolicy
    from toolgym.rollout.runner import run_rollout
    from toolgym.schema.jsonl import write_jsonl

    shape, metrics = check.shape, check.part_metrics()
    tokenizer = AutoTokenizer.from_pretrained(str(DEFAULT_MODEL), local_files_only=True)
    config = qwen3_config(shape.policy, tokenizer.eos_token_id, tokenizer.pad_token_id)
    with timed(metrics, "build_model_s", check.cuda):
        torch.manual_seed(0)
        model = build_on_device(config, check.device, torch.bfloat16 if check.cuda else torch.float32)
    metrics["policy_params_m"] = round(sum(p.numel() for p in model.parameters()) / 1e6, 1)
    with timed(metrics, "save_model_s", check.cuda):
        model.save_pretrained(check.policy_dir)
    del model
    for item in DEFAULT_MODEL.iterdir():  # tokenizer, chat template, generation config
        if item.is_file() and item.suffix != ".safetensors" and item.name not in ("config.json", "MODEL_CARD.md",
                                                                                   MODEL_CONFIG_FILE):
            shutil.copy2(item, check.policy_dir / item.name)
    settings = {"prompt_style": "compact", "context_length": shape.policy["max_position_embeddings"]}
    (check.policy_dir / MODEL_CONFIG_FILE).write_text(json.dumps(settings) + "\n", encoding="utf-8")

    with timed(metrics, "tasks_s", False):
        build = BuildConfig(seed=0, apps=[shape.app], tasks_per_family=12, heldout_envs=[], compositions=[],
                            heldout_task_fraction=0.0)
        tasks = [t.model_copy(update={"split": "train"}) for t in generate_app_tasks(get_app(shape.app), build)]
        write_jsonl(check.tasks_path, tasks)
    metrics["tasks"] = len(tasks)
    with timed(metrics, "oracle_rows_s", False):
        teacher = tasks[: shape.sft_tasks]
        summary = asyncio.run(run_rollout(teacher, OraclePolicy(), out_dir=check.work / "oracle", concurrency=8,
                                          limits=EpisodeLimits(max_turns=12),
                                          renderer=Renderer(None, prompt_style="compact")))
        report = convert_run(check.work / "oracle", check.sft_rows)
    metrics.update(oracle_episodes=summary.episodes, oracle_passed=summary.passed, sft_rows=report.rows_out)
    if report.rows_out < 1:
        raise RuntimeError(f"no SFT rows from {summary.episodes} oracle episodes ({summary.errors_by_cause})")
    return metrics


# -- engine -------------------------------------------------------------------------------------------


def part_engine(check: Check) -> dict[str, Any]:
    """HFPolicy: a rollout through the episode loop, then raw batched generation at several batch sizes."""
    from toolgym.agent.limits import EpisodeLimits
    from toolgym.policy.base import SamplingParams
    from toolgym.policy.hf import HFPolicy
    from toolgym.rollout.runner import run_rollout
    from toolgym.rollout.tasks import load_tasks

    shape, metrics = check.shape, check.part_metrics()
    reset_peak(check.cuda)
    episodes = shape.tasks * shape.samples
    with timed(metrics, "load_s", check.cuda):
        policy = HFPolicy(check.policy_dir, device=check.device, dtype="auto", max_batch_size=max(episodes, 1),
                          seed=0)
    metrics["dtype"] = str(next(policy.model.parameters()).dtype)
    _, tasks = load_tasks(check.tasks_path, split="train", limit=shape.tasks)
    sampling = SamplingParams(temperature=1.0, max_new_tokens=shape.max_new_tokens, seed=0)
    try:
        # Warm-up: the first forwards on a device pay for kernels and allocator growth.
        with timed(metrics, "warmup_s", check.cuda):
            asyncio.run(run_rollout(tasks[:1], policy, out_dir=check.work / "engine_warmup", concurrency=1,
                                    sampling=SamplingParams(temperature=1.0, max_new_tokens=4, seed=1),
                                    limits=EpisodeLimits(max_turns=1, max_context_tokens=shape.max_context_tokens)))
        calls_before = policy.generate_calls
        began = time.perf_counter()
        summary = asyncio.run(run_rollout(tasks, policy, out_dir=check.work / "engine_rollout",
                                          samples_per_task=shape.samples, concurrency=episodes, sampling=sampling,
                                          limits=EpisodeLimits(max_turns=2, timeout_s=600.0,
                                                               max_context_tokens=shape.max_context_tokens)))
        seconds = time.perf_counter() - began
        rows = [json.loads(line) for line in (check.work / "engine_rollout" / "results.jsonl").read_text().splitlines()]
        output = sum(r["token_usage"]["output_tokens"] for r in rows)
        batches = policy.batch_sizes[len(policy.batch_sizes) - (policy.generate_calls - calls_before):]
        prompts = [r["episode"]["token_turns"][0]["prompt_ids"] for r in rows if r["episode"]["token_turns"]]
        metrics["rollout"] = {
            "episodes": summary.episodes, "seconds": round(seconds, 2), "output_tokens": output,
            "tokens_per_s": round(output / seconds, 1),
            "prompt_tokens_mean": round(statistics.mean(len(p) for p in prompts), 1) if prompts else None,
            "turns_mean": round(statistics.mean(r["metrics"]["turns"] for r in rows), 2),
            "generate_calls": len(batches), "batch_size_mean": round(statistics.mean(batches), 1) if batches else 0,
            "truncated": summary.truncated, "passed": summary.passed,
        }
        if summary.error:
            raise RuntimeError(f"{summary.error} of {summary.episodes} episodes errored: {summary.errors_by_cause}; "
                               f"first: {next(r['error'] for r in rows if r['status'] == 'error')}")
        metrics["generate_batch"] = compare_decoders(check, policy, prompts)
    finally:
        asyncio.run(policy.close())
        del policy
    metrics.update(memory(check.cuda))
    return metrics


def compare_decoders(check: Check, policy: Any, prompts: list[list[int]]) -> list[dict[str, Any]]:
    """Per batch size: the engine's default decode, its static-cache decode (compiled on CUDA), eager
    `model.generate` on the same prompts and token count, and the shape's roofline, each rate also as a
    fraction of the roofline. Rates are end to end (prefill included) and decode only (a 1-token run subtracted)."""
    shape, cuda, new_tokens = check.shape, check.cuda, check.shape.max_new_tokens
    model = policy.model
    parameters = sum(p.numel() for p in model.parameters())
    value_bytes = next(model.parameters()).element_size()
    bandwidth = memory_bandwidth_gbs(check.info.get("device_name", ""), check.args.bandwidth_gbs)
    results = []
    for size in shape.generate_batches:
        batch = [prompts[i % len(prompts)] for i in range(size)]
        entry: dict[str, Any] = {"batch": size, "new_tokens": new_tokens,
                                 "prompt_tokens_mean": round(statistics.mean(len(p) for p in batch), 1)}
        if check.remaining() <= 0:
            entry["skipped"] = "budget spent"
            results.append(entry)
            continue
        policy.static_decode = policy.compile_decode = False
        first, full = engine_seconds(policy, batch, 1, cuda), engine_seconds(policy, batch, new_tokens, cuda)
        entry.update(seconds=round(full[0], 3), tokens=full[1], tokens_per_s=round(full[1] / full[0], 1),
                     decode_tokens_per_s=decode_rate(full, first, size),
                     shared_prefix_groups=policy.shared_prefix_groups)
        if check.args.static_decode and check.remaining() < STATIC_RESERVE_S:
            entry["static"] = {"skipped": f"{check.remaining():.0f}s of budget left, under {STATIC_RESERVE_S:.0f}s"}
        elif check.args.static_decode:
            try:  # a setting under trial: its failure is recorded here, the part goes on
                policy.static_decode, policy.compile_decode = True, cuda
                with timed(entry, "static_warmup_s", cuda):  # compiles the step for each cache shape on CUDA
                    engine_seconds(policy, batch, 1, cuda)
                    engine_seconds(policy, batch, new_tokens, cuda)
                first, full = engine_seconds(policy, batch, 1, cuda), engine_seconds(policy, batch, new_tokens, cuda)
                entry["static"] = {"compiled": cuda, "seconds": round(full[0], 3), "tokens": full[1],
                                   "tokens_per_s": round(full[1] / full[0], 1),
                                   "decode_tokens_per_s": decode_rate(full, first, size)}
            except Exception as exc:
                entry["static"] = {"error": f"{type(exc).__name__}: {exc}"[:1000]}
            finally:
                policy.static_decode = policy.compile_decode = False
        eager_generate_seconds(model, batch[:1], 2, policy.pad_token_id, check.device, cuda)  # warm-up
        first_s = eager_generate_seconds(model, batch, 1, policy.pad_token_id, check.device, cuda)
        full_s = eager_generate_seconds(model, batch, new_tokens, policy.pad_token_id, check.device, cuda)
        tokens = size * new_tokens
        entry["generate_eager"] = {"seconds": round(full_s, 3), "tokens": tokens,
                                   "tokens_per_s": round(tokens / full_s, 1),
                                   "decode_tokens_per_s": decode_rate((full_s, tokens), (first_s, size), size)}
        if bandwidth:
            context = entry["prompt_tokens_mean"] + (new_tokens - 1) / 2  # mean keys per row over the decode
            roofline = decode_roofline(shape.policy, parameters, size, context, value_bytes, bandwidth)
            entry["roofline"] = {"bandwidth_gbs": bandwidth, **{k: round(v, 6) for k, v in roofline.items()}}
            for where in (entry, entry.get("static", {}), entry["generate_eager"]):
                for key in ("tokens_per_s", "decode_tokens_per_s"):
                    if where.get(key):
                        where[f"{key}_of_roofline"] = round(where[key] / roofline["tokens_per_s"], 4)
        check.say(decoders_line(entry))
        results.append(entry)
    return results


def decoders_line(entry: dict[str, Any]) -> str:
    """One batch size's rates, each with its fraction of the roofline when there is one."""

    def rate(where: dict[str, Any]) -> str:
        if "error" in where:
            return f"failed ({where['error'][:120]})"
        if "skipped" in where:
            return f"skipped ({where['skipped']})"
        share = where.get("decode_tokens_per_s_of_roofline")
        return (f"{where.get('tokens_per_s')} tok/s, decode {where.get('decode_tokens_per_s')} tok/s"
                + (f" = {share:.1%} of roofline" if share is not None else ""))

    if "skipped" in entry:
        return f"batch {entry['batch']}: skipped ({entry['skipped']})"
    parts = [f"batch {entry['batch']}: engine {rate(entry)}"]
    if "static" in entry:
        parts.append(f"static{' compiled' if entry['static'].get('compiled') else ''} {rate(entry['static'])}")
    parts.append(f"eager generate {rate(entry['generate_eager'])}")
    if "roofline" in entry:
        parts.append(f"roofline {entry['roofline']['tokens_per_s']:.0f} tok/s "
                     f"({entry['roofline']['bandwidth_gbs']:.0f} GB/s)")
    return " · ".join(parts)


# -- SFT ----------------------------------------------------------------------------------------------


def sft_run(check: Check, mode: str) -> dict[str, Any]:
    from toolgym.train.metrics import read_metrics
    from toolgym.train.sft import SFTConfig, run_sft

    shape = check.shape
    out = check.work / f"sft_{mode}"
    reset_peak(check.cuda)
    config = SFTConfig(data=str(check.sft_rows), model=str(check.policy_dir), out=str(out),
                       max_steps=shape.sft_steps, lr=1e-4 if mode == "lora" else 1e-5, warmup_steps=0,
                       batch_tokens=shape.sft_batch_tokens, eval_fraction=0.0, save_every=10_000,
                       lora=mode == "lora", precision=check.precision, device=check.device,
                       threads=check.args.threads, seed=0)
    began = time.perf_counter()
    result = run_sft(config)
    wall = time.perf_counter() - began
    metrics = {"wall_s": round(wall, 2), "steps": result.steps, "train_samples": result.train_samples,
               "first_loss": result.first_loss, "last_loss": result.last_loss, **memory(check.cuda)}
    metrics.update(train_rows_metrics([r for r in read_metrics(out) if r.get("kind") == "train"]))
    return metrics


def train_rows_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Step seconds and tokens/s from an SFT run's metrics rows (the first step counted as warm-up)."""
    if not rows:
        return {"step_s": []}
    seconds = step_seconds(rows)
    tokens = [int(r["tokens"]) for r in rows]
    supervised = [int(r["supervised_tokens"]) for r in rows]
    steady_s = sum(steady(seconds))
    return {"step_s": seconds, "step_s_median": round(statistics.median(steady(seconds)), 3),
            "tokens_per_step": round(statistics.mean(tokens)),
            "tokens_per_s": round(sum(steady(tokens)) / steady_s, 1) if steady_s else None,
            "supervised_tokens_per_s": round(sum(steady(supervised)) / steady_s, 1) if steady_s else None}


def part_sft(check: Check) -> dict[str, Any]:
    """LoRA and full-weight SFT, in the order --sft-modes gives: the first run also pays for the new
    batch shapes' kernel warm-up, so swapping the order tells how much of a gap is order."""
    metrics = check.part_metrics()
    later = [p for p in check.args.parts.split(",") if p in PARTS[PARTS.index("sft") + 1:]]
    reserve = check.shape.full_sft_reserve_s if later else 0.0  # time is kept only for parts that will run
    for mode in check.args.sft_modes.split(","):
        if mode == "full" and check.remaining() < reserve:
            metrics["full"] = {"skipped": f"{check.remaining():.0f}s of budget left, under the "
                                          f"{reserve:.0f}s kept for {', '.join(later)}"}
        else:
            metrics[mode] = sft_run(check, mode)
    return metrics


# -- GRPO ---------------------------------------------------------------------------------------------


def grpo_settings(check: Check, out: Path, steps: int, *, lora: bool, kl_only: bool) -> dict[str, Any]:
    shape = check.shape
    settings: dict[str, Any] = {
        "tasks": str(check.tasks_path), "model": str(check.policy_dir), "out": str(out), "steps": steps,
        "tasks_per_step": shape.grpo_tasks_per_step, "samples_per_task": shape.grpo_samples, "seed": 0,
        "engine": {"device": check.device, "dtype": "float32", "max_batch_size": 64},
        "sampling": {"temperature": 1.0, "max_new_tokens": shape.grpo_max_new_tokens, "max_turns": 2,
                     "max_context_tokens": shape.max_context_tokens, "timeout_s": 600},
        "optim": {"lr": 1e-6, "precision": check.precision, "batch_tokens": shape.sft_batch_tokens},
        "lora": {"enabled": lora},
        "curriculum": {"enabled": False}, "eval": {"enabled": False}, "checkpoint": {"save_every": 10_000},
    }
    if check.args.threads:
        settings["threads"] = check.args.threads
    if kl_only:  # no reward signal from a random model: every episode trains for the KL term alone
        settings["loss"] = {"kl_coef": 0.01}
        settings["experimental"] = {"kl_quiet_episodes": shape.grpo_samples}
    return settings


def grpo_rows_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"steps": 0}
    keys = ("seconds_rollout", "seconds_update", "trained_tokens", "optimizer_steps", "episodes",
            "episodes_errored", "response_tokens_mean", "groups_with_signal")
    per_step = {k: [r.get(k) for r in rows] for k in keys}
    rollout_s = [float(s) for s in per_step["seconds_rollout"]]
    tokens = [float(r["response_tokens_mean"] or 0) * int(r["scored_episodes"]) for r in rows]
    return {"steps": len(rows), **per_step,
            "rollout_tokens_per_s": [round(t / s, 1) if s else None for t, s in zip(tokens, rollout_s, strict=True)]}


def part_grpo(check: Check) -> dict[str, Any]:
    """In-process GRPO on full weights: the trainer samples its own live weights through SharedModelPolicy."""
    from toolgym.train.grpo.config import grpo_config_from_dict
    from toolgym.train.grpo.trainer import run_grpo
    from toolgym.train.metrics import read_metrics

    out = check.work / "grpo_full"
    reset_peak(check.cuda)
    config = grpo_config_from_dict(grpo_settings(check, out, check.shape.grpo_steps, lora=False, kl_only=False))
    began = time.perf_counter()
    result = run_grpo(config, reward_fn=alternating_reward)
    metrics: dict[str, Any] = {"wall_s": round(time.perf_counter() - began, 2), "mode": "full weights",
                               "steps": result.steps, **memory(check.cuda)}
    metrics.update(grpo_rows_metrics([r for r in read_metrics(out) if r.get("kind") == "train"]))
    if not any(metrics.get("optimizer_steps") or []):
        raise RuntimeError(f"no optimizer step ran in {result.steps} GRPO steps: {metrics}")
    metrics["off_policy"] = grpo_off_policy(check)
    return metrics


def grpo_off_policy(check: Check) -> dict[str, Any]:
    """The same GRPO one step off policy: step t trains on episodes sampled from a weights snapshot during
    step t-1's update, with truncated importance weights; the rows record each episode batch's staleness."""
    from toolgym.train.grpo.config import grpo_config_from_dict
    from toolgym.train.grpo.trainer import run_grpo
    from toolgym.train.metrics import read_metrics

    if check.remaining() <= 0:
        return {"skipped": "budget spent"}
    out = check.work / "grpo_off_policy"
    reset_peak(check.cuda)
    settings = grpo_settings(check, out, check.shape.grpo_steps, lora=False, kl_only=False)
    settings["off_policy"] = {"enabled": True, "max_staleness": 1}
    settings["loss"] = {"mismatch": {"kind": "tis"}}
    began = time.perf_counter()
    result = run_grpo(grpo_config_from_dict(settings), reward_fn=alternating_reward)
    rows = [r for r in read_metrics(out) if r.get("kind") == "train"]
    metrics: dict[str, Any] = {"wall_s": round(time.perf_counter() - began, 2), "steps": result.steps,
                               **memory(check.cuda), **grpo_rows_metrics(rows),
                               "staleness": [r.get("staleness") for r in rows],
                               "policy_version": [r.get("policy_version") for r in rows]}
    if not any(metrics.get("optimizer_steps") or []):
        raise RuntimeError(f"no optimizer step ran in {result.steps} off-policy GRPO steps: {metrics}")
    return metrics


# -- memory fit of a large model ------------------------------------------------------------------------


def part_memfit(check: Check) -> dict[str, Any]:
    """LoRA SFT steps (toolgym's LoRA, loss, collate, optimizer) on a large model built in bf16 on the device."""
    import torch

    from toolgym.schema import TrainingSample
    from toolgym.train.batching import collate
    from toolgym.train.loss import nll_sum
    from toolgym.train.optim import build_optimizer
    from toolgym.train.runtime import Lora, apply_lora

    shape, metrics = check.shape, check.part_metrics()
    reset_peak(check.cuda)
    config = qwen3_config(shape.big, eos_id=2, pad_id=0)
    with timed(metrics, "build_s", check.cuda):
        torch.manual_seed(0)
        model = build_on_device(config, check.device, torch.bfloat16 if check.cuda else torch.float32)
    metrics["params_b"] = round(sum(p.numel() for p in model.parameters()) / 1e9, 3)
    metrics["weights"] = memory(check.cuda)
    # As toolgym's load_model does for --gradient-checkpointing with LoRA.
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()
    model = apply_lora(model, Lora(enabled=True))
    model.train()
    metrics["trainable_params_m"] = round(sum(p.numel() for p in model.parameters() if p.requires_grad) / 1e6, 1)
    optimizer = build_optimizer(model, 1e-4)
    generator = torch.Generator().manual_seed(0)
    metrics["runs"] = []
    try:
        for seq_len in shape.memfit_seq_lens:
            run: dict[str, Any] = {"seq_len": seq_len, "step_s": []}
            metrics["runs"].append(run)
            if check.remaining() <= 0:
                run["skipped"] = "budget spent"
                break
            reset_peak(check.cuda)
            try:
                for _ in range(shape.memfit_steps):
                    ids = torch.randint(3, config.vocab_size, (seq_len,), generator=generator).tolist()
                    half = seq_len // 2  # the second half trained, as an assistant reply after a long prompt
                    sample = TrainingSample(input_ids=ids, loss_mask=[0] * half + [1] * (seq_len - half),
                                            sampler_logprobs=[0.0] * seq_len)
                    batch = collate([sample], pad_id=0).to(check.device)
                    sync(check.cuda)
                    began = time.perf_counter()
                    with torch.autocast(device_type="cuda" if check.cuda else "cpu", dtype=torch.bfloat16,
                                        enabled=check.cuda):
                        nll = nll_sum(model, batch)
                    (nll / max(batch.supervised, 1)).backward()
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                    sync(check.cuda)
                    run["step_s"].append(round(time.perf_counter() - began, 3))
                    run["loss"] = round(float(nll) / max(batch.supervised, 1), 4)
                run["tokens_per_s"] = round(seq_len / statistics.mean(steady(run["step_s"])), 1)
                run.update(memory(check.cuda))
                check.say(f"memfit seq {seq_len}: {run}")
            except torch.OutOfMemoryError as exc:
                run["oom"] = str(exc).splitlines()[0]
                run.update(memory(check.cuda))
                check.say(f"memfit seq {seq_len}: out of memory")
                break
    finally:
        del model, optimizer
    if metrics["runs"] and "oom" in metrics["runs"][0]:
        raise RuntimeError(f"out of memory at the first sequence length: {metrics['runs'][0]}")
    return metrics


# -- accelerate launch ----------------------------------------------------------------------------------


def blocker_dir(check: Check) -> Path | None:
    """A sitecustomize that hides --block-imports in launched processes too (a smoke test's stand-in for a
    machine where those packages are not installed)."""
    if not check.args.block_imports:
        return None
    folder = check.work / "blocker"
    folder.mkdir(exist_ok=True)
    names = [n for n in check.args.block_imports.split(",") if n]
    (folder / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{n!r}] = None\n" for n in names), encoding="utf-8")
    return folder


def launch(check: Check, name: str, args: list[str], out: Path) -> dict[str, Any]:
    """`accelerate launch --num_processes 1 -m toolgym.cli.main ARGS` in a child process group."""
    command = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
               "--mixed_precision", "bf16" if check.precision == "bf16" else "no", "--dynamo_backend", "no",
               *([] if check.cuda else ["--cpu"]), "-m", "toolgym.cli.main", *args]
    env = dict(os.environ)
    paths = [str(p) for p in (blocker_dir(check), SRC) if p is not None]
    env["PYTHONPATH"] = os.pathsep.join([*paths, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    limit = max(check.remaining() + 20.0, 30.0)  # the watchdog still ends it at budget + grace
    check.say(f"launch {name}: {' '.join(command)} (limit {limit:.0f}s)")
    log_path = check.work / f"launch_{name}.log"
    began = time.perf_counter()
    with open(log_path, "wb") as log:
        check.child = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        try:
            code = check.child.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(check.child.pid, 9)
            check.child.wait()
            code = None
        finally:
            check.child = None
    seconds = time.perf_counter() - began
    output = log_path.read_text(encoding="utf-8", errors="replace")
    with check.lock:
        check.log_handle.write(f"---- output of launch {name} ----\n{output}\n---- end of {name} ----\n")
        check.log_handle.flush()
    from toolgym.train.metrics import read_metrics

    rows = [r for r in read_metrics(out) if r.get("kind") == "train"]
    result = {"exit_code": code, "wall_s": round(seconds, 2), "metrics_rows": len(rows)}
    if code != 0:
        result["output_tail"] = tail(output)
        reason = "timed out" if code is None else f"exit code {code}"
        raise RuntimeError(f"launched {name} {reason}; output tail:\n{tail(output, 1500)}")
    result["started_in"] = next((line.strip() for line in output.splitlines() if "precision" in line), None)
    return {**result, "rows": rows}


def part_launch(check: Check) -> dict[str, Any]:
    """Both train commands exactly as a user runs them, under accelerate launch on one process."""
    import yaml

    shape, metrics = check.shape, check.part_metrics()
    threads = ["--threads", str(check.args.threads)] if check.args.threads else []
    sft_out = check.work / "launch_sft"
    sft_args = ["train", "sft", "--data", str(check.sft_rows), "--model", str(check.policy_dir), "--out", str(sft_out),
                "--lora", "--max-steps", str(shape.launch_steps), "--batch-tokens", str(shape.sft_batch_tokens),
                "--eval-fraction", "0", "--save-every", "10000", "--warmup-ratio", "0",
                "--precision", check.precision, "--device", "cuda" if check.cuda else "cpu", "--no-progress", *threads]
    errors = []
    try:
        sft = launch(check, "sft", sft_args, sft_out)
        rows = sft.pop("rows")
        metrics["sft_lora"] = {**sft, **train_rows_metrics(rows)}
    except Exception as exc:
        metrics["sft_lora"] = {"error": f"{type(exc).__name__}: {exc}"}
        errors.append("sft")
    grpo_out = check.work / "launch_grpo"
    config_path = check.work / "launch_grpo.yaml"
    settings = grpo_settings(check, grpo_out, shape.launch_steps, lora=True, kl_only=True)
    config_path.write_text(yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
    try:
        grpo = launch(check, "grpo", ["train", "grpo", "--config", str(config_path), "--no-progress"], grpo_out)
        rows = grpo.pop("rows")
        metrics["grpo_lora"] = {**grpo, **grpo_rows_metrics(rows)}
    except Exception as exc:
        metrics["grpo_lora"] = {"error": f"{type(exc).__name__}: {exc}"}
        errors.append("grpo")
    if errors:
        raise RuntimeError(f"launched {', '.join(errors)} failed: "
                           + " | ".join(str(metrics[k].get("error"))[:600] for k in metrics if "error" in metrics[k]))
    return metrics


# -- summary ------------------------------------------------------------------------------------------


def headline(name: str, metrics: dict[str, Any]) -> str:
    """The few numbers of a part that matter at a glance."""

    def get(*path: Any) -> Any:
        value: Any = metrics
        for key in path:
            if isinstance(value, dict):
                value = value.get(key)
            elif isinstance(value, list) and isinstance(key, int) and -len(value) <= key < len(value):
                value = value[key]
            else:
                return None
        return value

    peak = "peak_allocated_gib" if "peak_allocated_gib" in json.dumps(metrics) else "process_peak_rss_gib"
    if name == "setup":
        return f"{get('policy_params_m')}M params; {get('tasks')} tasks; {get('sft_rows')} SFT rows"
    if name == "engine":
        batches = ", ".join(f"b{b['batch']} skipped" if "skipped" in b else f"b{b['batch']} {b['tokens_per_s']:.0f}"
                            + (f" (eager generate {b['generate_eager']['tokens_per_s']:.0f})"
                               if "generate_eager" in b else "")
                            + (f" [{b['decode_tokens_per_s_of_roofline']:.1%} of roofline]"
                               if b.get("decode_tokens_per_s_of_roofline") else "")
                            for b in get("generate_batch") or [])
        return (f"rollout {get('rollout', 'episodes')} ep {get('rollout', 'tokens_per_s')} tok/s; "
                f"generate tok/s {batches}; peak {get(peak)} GiB")
    if name == "sft":
        parts = []
        for mode in ("lora", "full"):
            if get(mode, "skipped"):
                parts.append(f"{mode} skipped")
            elif get(mode) is not None:
                parts.append(f"{mode} {get(mode, 'step_s_median')}s/step {get(mode, 'tokens_per_s')} tok/s "
                             f"peak {get(mode, peak)} GiB")
        return "; ".join(parts)
    if name == "grpo":
        return (f"rollout s {get('seconds_rollout')} update s {get('seconds_update')}; "
                f"peak {get(peak)} GiB; off-policy staleness {get('off_policy', 'staleness')} "
                f"update s {get('off_policy', 'seconds_update')}")
    if name == "memfit":
        runs = "; ".join(f"seq {r['seq_len']}: " + ("OOM" if "oom" in r else
                                                     f"{statistics.mean(steady(r['step_s'])) if r['step_s'] else 0:.2f}s/step "
                                                     f"peak {r.get(peak, r.get('process_peak_rss_gib'))} GiB")
                         for r in get("runs") or [])
        return f"{get('params_b')}B params; {runs}"
    if name == "launch":
        return (f"sft exit {get('sft_lora', 'exit_code')} {get('sft_lora', 'step_s_median')}s/step; "
                f"grpo exit {get('grpo_lora', 'exit_code')} rollout s {get('grpo_lora', 'seconds_rollout')}")
    return ""


def summary_table(results: dict[str, Any]) -> str:
    lines = [f"{'part':8} {'status':8} {'seconds':>8}  details", "-" * 100]
    for name, part in results["parts"].items():
        detail = part["error"] if part["status"] != "ok" else headline(name, part["metrics"])
        lines.append(f"{name:8} {part['status']:8} {part['seconds']:8.1f}  {str(detail)[:300]}")
    lines.append(f"total {results['elapsed_s']:.1f}s · {results['env'].get('device_name', '?')} · "
                 f"results in {results['args']['out']}/{RESULTS_FILE}")
    return "\n".join(lines)


def environment(check: Check) -> dict[str, Any]:
    import accelerate
    import peft
    import torch
    import transformers

    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                            "transformers": transformers.__version__, "peft": peft.__version__,
                            "accelerate": accelerate.__version__, "torch_cuda": torch.version.cuda,
                            "device": check.device, "host": platform.node()}
    if check.cuda:
        props = torch.cuda.get_device_properties(0)
        info.update(device_name=props.name, device_memory_gib=round(props.total_memory / GIB, 1),
                    bf16_supported=torch.cuda.is_bf16_supported(), device_count=torch.cuda.device_count())
    else:
        info["device_name"] = f"cpu ({os.cpu_count()} cores)"
    return info


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--shape", choices=sorted(SHAPES), default=None, help="full (default on cuda) or tiny")
    parser.add_argument("--out", default=os.environ.get("OUT") or "gpu_check_out", help="results folder ($OUT)")
    parser.add_argument("--work", default=None, help="scratch folder for models and runs (default: a temp dir)")
    parser.add_argument("--budget-s", type=float, default=450.0, help="no part starts after this many seconds")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--sft-modes", default="lora,full", help="SFT runs, in order: lora, full or both")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (CPU runs)")
    parser.add_argument("--block-imports", default="",
                        help="comma-separated modules to make unimportable here and in launched processes")
    parser.add_argument("--keep-work", action="store_true", help="keep the scratch folder")
    parser.add_argument("--bandwidth-gbs", type=float, default=None,
                        help="the device's memory bandwidth in GB/s for the decode roofline (default: by device "
                             "name from BANDWIDTH_GBS; none on CPU)")
    parser.add_argument("--no-static-decode", dest="static_decode", action="store_false",
                        help="skip the engine's static-cache decode (compiled on CUDA) in the engine part")
    args = parser.parse_args(argv)
    if args.shape is None:
        args.shape = "full" if args.device.startswith("cuda") else "tiny"
    unknown = [p for p in args.parts.split(",") if p and p not in PARTS]
    if unknown:
        parser.error(f"unknown parts {unknown}; choose from {', '.join(PARTS)}")
    if not set(args.sft_modes.split(",")) <= {"lora", "full"}:
        parser.error(f"--sft-modes takes lora and full; got {args.sft_modes!r}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for name in [n for n in args.block_imports.split(",") if n]:
        sys.modules[name] = None  # type: ignore[assignment]
    # No network there: nothing may try the hub (a lookup without network can hang until it times out).
    for name, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("HF_HUB_DISABLE_TELEMETRY", "1"),
                        ("TOKENIZERS_PARALLELISM", "false")):
        os.environ.setdefault(name, value)
    check = Check(args)
    check.start_watchdog()
    try:
        return run_check(check)
    finally:
        check.close()
        if not args.keep_work:
            shutil.rmtree(check.work, ignore_errors=True)


def run_check(check: Check) -> int:
    import torch

    args = check.args
    if args.threads:
        torch.set_num_threads(args.threads)
    if check.cuda and not torch.cuda.is_available():
        check.say("no CUDA device: run with --device cpu --shape tiny for the smoke version")
        return 2
    check.info = environment(check)
    check.say(f"gpu_check: {json.dumps(check.info)}; work in {check.work}")
    bodies: dict[str, tuple[Callable[[], dict[str, Any]], tuple[str, ...]]] = {
        "engine": (lambda: part_engine(check), ("setup",)),
        "sft": (lambda: part_sft(check), ("setup",)),
        "grpo": (lambda: part_grpo(check), ("setup",)),
        "memfit": (lambda: part_memfit(check), ()),
        "launch": (lambda: part_launch(check), ("setup",)),
    }
    chosen = [p for p in args.parts.split(",") if p]
    if any(bodies[p][1] for p in chosen):
        check.run_part("setup", lambda: part_setup(check))
    for name in chosen:
        body, needs = bodies[name]
        check.run_part(name, body, needs)
    results = check.results()
    check.write()
    table = summary_table(results)
    check.say("summary\n" + table)
    return 0 if all(p["status"] == "ok" for p in results["parts"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
