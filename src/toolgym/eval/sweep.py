"""Checkpoint sweeps: pass@k of every evaluated step, and the seed's three tables.

On-disk layout read under RUN_DIR (what a GRPO run writes; `toolgym eval sweep` fills gaps):

    RUN_DIR/evals/step-<N>/                  the eval of the policy after N updates (N = 0: before any)
        results.jsonl                        toolgym results rows (`episode_to_row`), `split` and `env`
                                             set on every row; or, for several trials,
        trial-<t>/results.jsonl              one folder per trial, and optionally
        greedy/results.jsonl                 a temperature-0 pass
        manifest.json                        optional: {"step": N, "checkpoint": "...", ...}
    RUN_DIR/checkpoints/checkpoint-<N>/      a model folder (config.json + weights) or a LoRA adapter
    RUN_DIR/checkpoint-<N>/                  (adapter_config.json; base from --base-model, the run's
                                             manifest.json "base_model", or adapter_config's
                                             base_model_name_or_path) — both places are read

`<N>` is a plain integer (leading zeros allowed). A checkpoint without an eval folder is evaluated
into evals/step-<N>/ (with `toolgym eval`'s trial layout) when tasks are given; step 0 can be the
base model. "Checkpoint 0" in the tables is the smallest evaluated step, labelled if it is not 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from toolgym.eval.evaluate import EvalConfig, run_eval
from toolgym.eval.records import EpisodeRecord, RunRecords, is_run_folder, load_run
from toolgym.eval.stats import Comparison
from toolgym.eval.summary import SPLIT_GROUPS, CellStats, Estimate, EvalSummary, summarize
from toolgym.eval.tables import TextTable, format_estimate
from toolgym.eval.traces import diff_runs
from toolgym.policy.base import Policy
from toolgym.policy.engines import build_policy, model_spec
from toolgym.schema import Task
from toolgym.schema.documents import read_json

EVALS_DIR = "evals"
CHECKPOINTS_DIR = "checkpoints"
_STEP = re.compile(r"^(?:step|checkpoint)-(\d+)$")


def _step_of(path: Path) -> int | None:
    match = _STEP.match(path.name)
    return int(match.group(1)) if match else None


def find_evals(run_dir: str | Path) -> dict[int, Path]:
    """step → eval run folder under RUN_DIR/evals/."""
    root = Path(run_dir) / EVALS_DIR
    found: dict[int, Path] = {}
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        step = _step_of(path)
        if step is None or not path.is_dir() or not is_run_folder(path):
            continue
        if step in found:
            raise ValueError(f"{root}: two eval folders for step {step}: {found[step].name} and {path.name}")
        found[step] = path
    return found


def find_checkpoints(run_dir: str | Path) -> dict[int, Path]:
    """step → checkpoint folder (model or LoRA adapter) under RUN_DIR/checkpoints/ or RUN_DIR/."""
    found: dict[int, Path] = {}
    for root in (Path(run_dir) / CHECKPOINTS_DIR, Path(run_dir)):
        for path in sorted(root.glob("checkpoint-*")) if root.is_dir() else []:
            step = _step_of(path)
            if step is None or step in found:
                continue
            if (path / "config.json").is_file() or (path / "adapter_config.json").is_file():
                found[step] = path
    return found


def base_model_of(run_dir: Path, adapter: Path, override: str | Path | None) -> Path:
    """The base a LoRA checkpoint applies to: explicit, the run's manifest, or the adapter's config."""
    if override is not None:
        return Path(override)
    manifest = run_dir / "manifest.json"
    if manifest.is_file():
        base = read_json(manifest).get("base_model")
        if base:
            return Path(base)
    config = read_json(adapter / "adapter_config.json")
    base = config.get("base_model_name_or_path")
    if base and Path(base).is_dir():
        return Path(base)
    raise ValueError(f"{adapter}: a LoRA checkpoint, but its base model is unknown; pass --base-model")


PolicyMaker = Callable[[Path, Path | None], Policy]  # (model dir, LoRA adapter or None) → policy


def engine_policy_maker(engine: str, device: str) -> PolicyMaker:
    """Checkpoints as policies of a registered engine that loads a model folder (hf, vllm, …)."""

    def make(model: Path, lora: Path | None) -> Policy:
        return build_policy(model_spec(engine, model, lora), device=device)

    return make


async def evaluate_missing(
    run_dir: str | Path,
    tasks: list[Task],
    config: EvalConfig,
    *,
    base_model: str | Path | None = None,
    device: str = "cpu",
    engine: str = "hf",
    policy_maker: PolicyMaker | None = None,
    tasks_path: str | Path | None = None,
    console: Console | None = None,
    progress: bool = False,
) -> list[int]:
    """Evaluate every checkpoint (and the base model as step 0) that has no eval folder yet, on `engine`."""
    run = Path(run_dir)
    make = policy_maker or engine_policy_maker(engine, device)
    evals = find_evals(run)
    todo: dict[int, tuple[Path, Path | None]] = {}
    for step, checkpoint in find_checkpoints(run).items():
        if step in evals:
            continue
        if (checkpoint / "adapter_config.json").is_file() and not (checkpoint / "config.json").is_file():
            todo[step] = (base_model_of(run, checkpoint, base_model), checkpoint)
        else:
            todo[step] = (checkpoint, None)
    if 0 not in evals and 0 not in todo and base_model is not None:
        todo[0] = (Path(base_model), None)
    for step in sorted(todo):
        model, lora = todo[step]
        if console is not None:
            console.print(f"sweep: evaluating step {step} ({model}{f' + LoRA {lora}' if lora else ''})")
        await run_eval(
            tasks, lambda m=model, a=lora: make(m, a), out_dir=run / EVALS_DIR / f"step-{step}", config=config,
            tasks_path=tasks_path, console=console, progress=progress, name=f"step {step}",
        )
    return sorted(todo)


@dataclass
class SweepRow:
    env: str
    first: Estimate
    best: Estimate
    best_step: int
    first_cell: CellStats
    best_cell: CellStats
    paired: Comparison | None = None  # best step against the first, on the episodes both scored


@dataclass
class SweepResult:
    run_dir: Path
    k: int
    steps: list[int]
    summaries: dict[int, EvalSummary]
    tables: dict[str, list[SweepRow]] = field(default_factory=dict)  # split → env rows (+ "All environments")

    @property
    def first_step(self) -> int:
        return self.steps[0]

    def curve(self, split: str) -> list[tuple[int, Estimate]]:
        """pass@k of all environments of a split at every step (for plots)."""
        points = []
        for step in self.steps:
            group = self.summaries[step].group(split)
            if group is not None:
                points.append((step, group.total.pass_at[self.k]))
        return points

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_dir": str(self.run_dir), "k": self.k, "steps": self.steps,
            "tables": {split: [{"env": r.env, "checkpoint_0": r.first.to_dict(), "best": r.best.to_dict(),
                                "best_step": r.best_step} for r in rows] for split, rows in self.tables.items()},
        }


def _cells(summary: EvalSummary, split: str) -> dict[str, CellStats]:
    group = summary.group(split)
    if group is None:
        return {}
    cells = {c.label: c for c in group.rows}
    cells["All environments"] = group.total
    return cells


def _only(run: RunRecords, split: str, env: str | None) -> RunRecords:
    def keep(record: EpisodeRecord) -> bool:
        return record.split == split and (env is None or record.env == env)

    return RunRecords(run.name, run.root, [r for r in run.sampled if keep(r)], [r for r in run.greedy if keep(r)],
                      run.manifest)


def sweep(run_dir: str | Path, k: int = 1) -> SweepResult:
    """Read every evals/step-<N>/ folder and build, per split and env, checkpoint 0 vs the best step."""
    run = Path(run_dir)
    evals = find_evals(run)
    if not evals:
        raise FileNotFoundError(
            f"{run}: no {EVALS_DIR}/step-<N>/ folders with results (give --tasks to evaluate its checkpoints)"
        )
    steps = sorted(evals)
    runs = {s: load_run(evals[s], name=f"step {s}") for s in steps}
    summaries = {s: summarize(runs[s], [k]) for s in steps}
    result = SweepResult(run_dir=run, k=k, steps=steps, summaries=summaries)
    first = steps[0]
    for split, _ in SPLIT_GROUPS:
        per_step = {s: _cells(summaries[s], split) for s in steps}
        envs = sorted({e for cells in per_step.values() for e in cells if e != "All environments"})
        if not envs:
            continue
        rows: list[SweepRow] = []
        for env in [*envs, "All environments"]:
            present = [(s, per_step[s][env]) for s in steps if env in per_step[s]]
            if not present or env not in per_step[first]:
                continue
            available = [(s, c) for s, c in present if c.pass_at[k].available]
            best_step, best_cell = (max(available, key=lambda sc: (sc[1].pass_at[k].value, -sc[0]))
                                    if available else present[0])
            first_cell = per_step[first][env]
            paired = None
            if best_step != first:
                scope = None if env == "All environments" else env
                diff = diff_runs(_only(runs[first], split, scope), _only(runs[best_step], split, scope))
                paired = diff.paired_test
            rows.append(SweepRow(env, first_cell.pass_at[k], best_cell.pass_at[k], best_step, first_cell, best_cell,
                                 paired))
        if len(envs) == 1:
            rows = rows[:1]
        result.tables[split] = rows
    return result


def sweep_tables(result: SweepResult) -> list[TextTable]:
    """The seed's tables: Environment | Checkpoint 0 pass@k | Best pass@k | Best step (+ the test)."""
    k = result.k
    first_label = "Checkpoint 0" if result.first_step == 0 else f"Checkpoint 0 (step {result.first_step})"
    tables = []
    titles = dict(SPLIT_GROUPS)
    for split, rows in result.tables.items():
        table = TextTable(
            title=titles[split],
            header=["Environment", f"{first_label} pass@{k}", f"Best pass@{k}", "Best Step", "p (best vs 0)"],
        )
        for row in rows:
            p = f"{row.paired.p_value:.3g}" if row.paired is not None else "—"
            table.rows.append([row.env, format_estimate(row.first), format_estimate(row.best), str(row.best_step), p])
            if row.env == "All environments":
                table.emphasis.add(len(table.rows) - 1)
        tables.append(table)
    if tables:
        tables[-1].notes = [
            f"pass@{k}: expected tasks solved / tasks (unbiased estimator averaged over tasks), with the Wilson "
            "95% interval in brackets; errored episodes are excluded from every denominator.",
            f"Steps evaluated: {', '.join(map(str, result.steps))}. Best = the step with the highest pass@{k} "
            "(earliest on ties); a maximum over several noisy evaluations favours luck, so read it with its p.",
            "p (best vs 0): paired over the episodes both steps scored — McNemar with one outcome per task, "
            "else a Wilcoxon signed-rank test over tasks (the same tasks are not independent samples).",
        ]
    return tables
