"""Rejection-sampling fine-tuning: sample K episodes per train task, keep the good ones, SFT on them.

Selection per task (the tau2 RL pipeline's rule): every episode with reward ≥ `min_reward`; when a
task has none, its single best episode by partial_score if that is ≥ `min_partial`. Infrastructure
errors are never kept and never count as attempts that failed. The kept episodes keep the sampler's
own token ids (token-mode rollout), so SFT trains on exactly what the model produced.
Under `accelerate launch --num_processes N` the sampling and selection run on the main process
alone (the other ranks wait), then every rank takes part in the fine-tune.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolgym.config.train import RFTConfig
from toolgym.data.convert import ConvertOptions, ConvertReport, convert_rows, write_sidecar_manifest
from toolgym.data.rows import iter_lines
from toolgym.data.validate import RowChecker
from toolgym.dataset.manifest import sha256_file, write_manifest
from toolgym.schema import Task
from toolgym.schema.jsonl import JsonlError, write_jsonl
from toolgym.train.distributed import is_main_process, run_on_main
from toolgym.train.runtime import resolve_device
from toolgym.train.sft import SFTConfig, SFTResult, run_sft

__all__ = ["RFTConfig", "RFTError", "RFTResult", "run_rft", "select_episodes", "selected_sft_rows"]

ROLLOUT_DIR = "rollout"
ROWS_FILE = "rft_rows.jsonl"
SFT_DIR = "sft"
REASON_REWARD = "reward"
REASON_PARTIAL = "best_partial"
REASON_REPLAY = "replay"


class RFTError(RuntimeError):
    """Nothing to train on, or the rollout could not run."""


def sample_tasks(tasks: list[Task], limit: int | None, seed: int) -> list[Task]:
    """`limit` tasks drawn with the run's seed, in dataset order: the first N of a dataset are one family."""
    if limit is None or limit >= len(tasks):
        return tasks
    chosen = set(random.Random(f"toolgym-rft/{seed}").sample(range(len(tasks)), limit))
    return [t for i, t in enumerate(tasks) if i in chosen]


@dataclass
class SelectionReport:
    """What the filter kept: rows by reason and by env, and the tasks it kept nothing of."""

    tasks: int = 0
    episodes: int = 0
    errors: int = 0
    kept: Counter[str] = field(default_factory=Counter)
    kept_by_env: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    tasks_by_env: Counter[str] = field(default_factory=Counter)
    tasks_without_kept: Counter[str] = field(default_factory=Counter)  # by env

    def render(self) -> str:
        lines = [f"sampled {self.episodes} episodes of {self.tasks} tasks ({self.errors} infrastructure errors, not kept)",
                 "kept rows: " + (", ".join(f"{reason} {count}" for reason, count in sorted(self.kept.items())) or "none")]
        for env in sorted(self.tasks_by_env):
            kept = self.kept_by_env.get(env, Counter())
            lines.append(f"  {env}: tasks {self.tasks_by_env[env]} · kept {REASON_REWARD} {kept.get(REASON_REWARD, 0)}, "
                         f"{REASON_PARTIAL} {kept.get(REASON_PARTIAL, 0)} · tasks with nothing kept "
                         f"{self.tasks_without_kept.get(env, 0)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "episodes": self.episodes, "errors": self.errors, "kept": dict(self.kept),
                "kept_by_env": {k: dict(v) for k, v in self.kept_by_env.items()},
                "tasks_by_env": dict(self.tasks_by_env), "tasks_without_kept": dict(self.tasks_without_kept)}


def select_episodes(rows: list[tuple[int, dict[str, Any]]], *, min_reward: float = 1.0, min_partial: float = 0.6
                    ) -> tuple[list[tuple[int, dict[str, Any], str]], SelectionReport]:
    """(line, row, reason) of the kept episodes, in input order, and the report."""
    report = SelectionReport()
    by_task: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for line, row in rows:
        report.episodes += 1
        by_task[str(row.get("task_id"))].append((line, row))
    kept: list[tuple[int, dict[str, Any], str]] = []
    for episodes in by_task.values():
        env = str(episodes[0][1].get("env"))
        report.tasks += 1
        report.tasks_by_env[env] += 1
        scored = [(line, row) for line, row in episodes if row.get("status") != "error"]
        report.errors += len(episodes) - len(scored)
        winners = [(line, row) for line, row in scored if (row.get("reward") or 0.0) >= min_reward]
        if winners:
            chosen = [(line, row, REASON_REWARD) for line, row in winners]
        else:
            partial = [(line, row) for line, row in scored if row.get("partial_score") is not None]
            best = max(partial, key=lambda item: (item[1]["partial_score"], -int(item[1].get("sample_index", 0))),
                       default=None)
            chosen = [(best[0], best[1], REASON_PARTIAL)] if best and best[1]["partial_score"] >= min_partial else []
        if not chosen:
            report.tasks_without_kept[env] += 1
        for item in chosen:
            report.kept[item[2]] += 1
            report.kept_by_env[env][item[2]] += 1
        kept.extend(chosen)
    kept.sort(key=lambda item: item[0])
    return kept, report


def selected_sft_rows(results_file: str | Path, *, min_reward: float, min_partial: float,
                      options: ConvertOptions) -> tuple[list[dict[str, Any]], SelectionReport, ConvertReport]:
    """Select a run's episodes and convert them; each SFT row says why it was kept (`rft_reason`)."""
    rows = []
    checker = RowChecker()  # the rows `data validate` accepts, so a hand-edited file is named, not a traceback
    for line, row in iter_lines(results_file):
        check = checker.check(row, line)
        if not check.valid:
            raise RFTError(check.problems[0].located(str(results_file), line))
        rows.append((line, row))
    kept, selection = select_episodes(rows, min_reward=min_reward, min_partial=min_partial)
    reasons = {line: reason for line, _, reason in kept}
    sft_rows, conversion = convert_rows([(line, row) for line, row, _ in kept], options, str(results_file))
    for row in sft_rows:
        row["rft_reason"] = reasons[row["source"]["line"]]
    return sft_rows, selection, conversion


def replay_rows(path: str | Path, count: int, seed: int) -> list[dict[str, Any]]:
    """`count` rows of an SFT rows file drawn with the seed (all of them when it has fewer), marked as replay."""
    rows = []
    for _line, row in iter_lines(path):
        if isinstance(row, JsonlError):
            raise RFTError(f"replay: {row}")
        rows.append(row)
    if not rows:
        raise RFTError(f"replay: {path} has no rows")
    chosen = rows if count >= len(rows) else random.Random(f"toolgym-rft-replay/{seed}").sample(rows, count)
    return [{**row, "rft_reason": REASON_REPLAY} for row in chosen]


@dataclass
class RFTResult:
    out_dir: str
    rollout: dict[str, Any]
    selection: SelectionReport
    conversion: ConvertReport
    rows_file: str
    sft: SFTResult | None

    def render(self) -> str:
        parts = [self.selection.render(), self.conversion.render(), f"rows: {self.rows_file}"]
        if self.sft is not None:
            parts.append(self.sft.render())
        return "\n".join(parts)


def run_rft(config: RFTConfig, *, console: Any | None = None, progress: bool = False,
            policy: Any | None = None, env_factory: Callable[[str], Any] | None = None) -> RFTResult:
    """Rollout (resumable) → select → convert → SFT (resumable), all under `config.out`.

    `policy` (a Policy or a factory) replaces the sampling policy the spec names; `env_factory` the
    registered environments (tests, custom apps). The model trained is always `config.model`.
    """
    out = Path(config.out)
    if config.sft.threads:
        import torch

        torch.set_num_threads(config.sft.threads)
    rows_file = out / ROWS_FILE
    sft_config = SFTConfig.model_validate({"seed": config.seed, "device": config.device,
                                           **config.sft.model_dump(exclude_unset=True),
                                           "data": str(rows_file), "model": config.model, "out": str(out / SFT_DIR)})
    result = run_on_main(lambda: _sample_and_select(config, console=console, progress=progress, policy=policy,
                                                    env_factory=env_factory),
                         resolve_device(sft_config.device))
    result.sft = run_sft(sft_config, console=console, progress=progress)
    if is_main_process():
        write_manifest(out, "rft", status="complete", config=config.model_dump(mode="json"), rollout=result.rollout,
                       selection=result.selection.to_dict(), conversion=result.conversion.to_dict(),
                       sft=json.loads(json.dumps(asdict(result.sft), default=str)))
    return result


def _sample_and_select(config: RFTConfig, *, console: Any | None, progress: bool, policy: Any | None,
                       env_factory: Callable[[str], Any] | None) -> RFTResult:
    """Rollout (resumable) → select → convert, writing OUT/rft_rows.jsonl; raises when nothing is kept."""
    from toolgym.envs import make_env
    from toolgym.policy.engines import build_policy
    from toolgym.policy.spec import HFSpec
    from toolgym.rollout.runner import run_rollout
    from toolgym.rollout.tasks import load_tasks

    out = Path(config.out)
    tasks_path, tasks = load_tasks(config.tasks, split=config.split, envs=config.envs)
    if not tasks:
        raise RFTError(f"no tasks in {tasks_path} match split={config.split} envs={config.envs}")
    tasks = sample_tasks(tasks, config.limit, config.seed)
    sampling = config.to_params(seed=config.seed)
    spec = config.policy_spec or HFSpec(model=config.model)

    def policy_factory() -> Any:
        return build_policy(spec, device=config.device, max_batch_size=config.max_batch_size,
                            tokenizer_dir=config.model)

    run_config = {"split": config.split, "envs": config.envs, "limit": config.limit, "stage": "rft"}
    if config.harness is not None:  # the same rows, each episode played by the agent harness
        from toolgym.chat.render import load_prompt_style
        from toolgym.harness.runner import run_harness

        summary = asyncio.run(run_harness(
            tasks, policy if policy is not None else policy_factory, command=config.harness, out_dir=out / ROLLOUT_DIR,
            samples_per_task=config.samples_per_task, concurrency=config.concurrency, timeout_s=config.timeout_s,
            max_turns=config.max_turns, sampling=sampling, prompt_style=load_prompt_style(config.model),
            tasks_sha256=sha256_file(tasks_path),
            tasks_path=tasks_path, config=run_config, progress=progress, console=console,
            env_factory=env_factory or make_env))
    else:
        summary = asyncio.run(run_rollout(
            tasks, policy if policy is not None else policy_factory, out_dir=out / ROLLOUT_DIR,
            env_factory=env_factory or make_env, samples_per_task=config.samples_per_task,
            concurrency=config.concurrency, sampling=sampling, limits=config, tasks_sha256=sha256_file(tasks_path),
            tasks_path=tasks_path, config=run_config, progress=progress, console=console,
        ))
    if console is not None:
        console.print(summary.render())
    options = ConvertOptions(dedupe=config.dedupe, train_malformed_turns=config.train_malformed_turns)
    results_file = out / ROLLOUT_DIR / "results.jsonl"
    rows, selection, conversion = selected_sft_rows(results_file, min_reward=config.min_reward,
                                                    min_partial=config.min_partial, options=options)
    if rows and config.replay and config.replay_ratio > 0:
        rows = rows + replay_rows(config.replay, round(config.replay_ratio * len(rows)), config.seed)
    rows_file = out / ROWS_FILE
    write_jsonl(rows_file, rows)
    write_sidecar_manifest(rows_file, "rft_rows", source=str(results_file), selection=selection.to_dict(),
                           conversion=conversion.to_dict(), min_reward=config.min_reward, min_partial=config.min_partial,
                           replay=config.replay, replayed=sum(r.get("rft_reason") == REASON_REPLAY for r in rows))
    result = RFTResult(str(out), summary.to_dict(), selection, conversion, str(rows_file), None)
    if console is not None:
        console.print(selection.render())
        console.print(conversion.render())
    if not rows:
        write_manifest(out, "rft", status="nothing_kept", config=config.model_dump(mode="json"), selection=selection.to_dict())
        raise RFTError(f"no episode met the thresholds (reward ≥ {config.min_reward:g}, or best partial_score ≥ "
                       f"{config.min_partial:g}); nothing to train on. Results: {results_file}")
    return result
