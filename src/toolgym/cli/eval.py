"""`toolgym eval`: trials + greedy rollouts with per-env / per-split pass@k tables; `sweep`, `show`, `leakage`."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.evaluation import EvalRunConfig, EvalShowConfig, LeakageConfig, SweepConfig
from toolgym.verify.isolation import TRUST_HELP, tasks_have_verifiers, verifier_refusal

app = typer.Typer(
    invoke_without_command=True,
    help="Evaluate a policy: pass@k / pass^k per environment and split, trials, greedy pass@1.",
)
console = Console()
# Flag names older than the config tree stay beside the fields' own: --samples, --k, --env, --timeout.
EVAL_SHORTCUTS = ["tasks", "policy", "out", ("samples_per_task", "--samples", "--samples-per-task"), "trials",
                  ("ks", "--k", "--ks"), "split", ("envs", "--env", "--envs"), "limit", "temperature", "top_p", "top_k",
                  "max_new_tokens", "seed", "greedy", "concurrency", "max_turns", "max_context_tokens",
                  ("timeout_s", "--timeout", "--timeout-s"), "done_tool", "max_format_errors", "device",
                  "max_batch_size", "tokenizer", "prompt_style", "ray", "ray_workers"]
SWEEP_SHORTCUTS = ["tasks", "split", ("envs", "--env", "--envs"), "limit", ("samples_per_task", "--samples",
                   "--samples-per-task"), "trials", ("ks", "--k", "--ks"), "temperature", "max_new_tokens", "seed",
                   "base_model", "device", "max_turns", "concurrency"]


def _ks_in_order(values: dict[str, Any]) -> None:
    if "ks" in values:
        values["ks"] = sorted(set(values["ks"]))  # --k 4,1,4 reads as 1,4


@app.callback(invoke_without_command=True)
@settings_command(EvalRunConfig, EVAL_SHORTCUTS, prepare=_ks_in_order)
def evaluate(
    ctx: typer.Context, settings: EvalRunConfig,
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    trust_verifiers: bool = typer.Option(False, "--trust-verifiers", help=TRUST_HELP),
) -> None:
    """Run T trials × N samples of every task (and a greedy pass), then print the tables."""
    if ctx.invoked_subcommand is not None:
        return
    from toolgym.cli.runnable_tasks import load_runnable_tasks
    from toolgym.dataset.manifest import sha256_file
    from toolgym.eval.evaluate import EvalConfig, run_eval
    from toolgym.eval.tables import summary_tables
    from toolgym.policy.base import Policy
    from toolgym.policy.engines import build_policy
    from toolgym.rollout.runner import RolloutError

    spec = settings.policy_spec
    if settings.tasks is None or spec is None or settings.out is None:
        console.print(ctx.get_help())
        raise usage_error("toolgym eval needs --tasks, --policy and --out (or a command: sweep, show, leakage)")
    policy, out = settings.policy, Path(settings.out)
    eval_config = settings.part(EvalConfig)
    try:
        tasks_path, selected = load_runnable_tasks(Path(settings.tasks), split=settings.split, envs=settings.envs,
                                                   limit=settings.limit, trust_verifiers=trust_verifiers)
    except (FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    for warning in eval_config.warnings():
        console.print(f"[yellow]warning:[/yellow] {warning}")
    tokenizer = Path(settings.tokenizer) if settings.tokenizer else None

    def policy_factory() -> Policy:
        return build_policy(spec, device=settings.device, max_batch_size=settings.max_batch_size,
                            tokenizer_dir=tokenizer, api_key=os.environ.get("OPENAI_API_KEY"),
                            prompt_style=settings.prompt_style)

    console.print(f"eval: {len(selected)} task(s) × {eval_config.samples_per_task} sample(s) × "
                  f"{eval_config.trials} trial(s){' + greedy' if eval_config.greedy else ''} with {policy}"
                  f"{f' on Ray ({settings.ray}, {settings.ray_workers} workers)' if settings.ray else ''} → {out}")
    try:
        result = asyncio.run(run_eval(selected, policy_factory, out_dir=out, config=eval_config, tasks_path=tasks_path,
                                      tasks_sha256=sha256_file(tasks_path), progress=progress, console=console,
                                      ray=settings.ray_settings))
    except (RolloutError, ValueError, FileNotFoundError) as exc:
        raise usage_error(exc) from exc
    for table in summary_tables(result.summary):
        console.print(table.to_rich())
    console.print(f"wrote {out / 'eval.md'} and {out / 'eval.json'} in {result.seconds:.1f}s")


@app.command("show")
@settings_command(EvalShowConfig, [("ks", "--k", "--ks")])
def show(
    settings: EvalShowConfig,
    run_dir: Path = typer.Argument(..., help="A rollout folder (results.jsonl) or an eval folder (trial-<t>/)."),
) -> None:
    """Print the per-env / per-split tables of runs already on disk."""
    from toolgym.eval.records import load_run
    from toolgym.eval.summary import summarize
    from toolgym.eval.tables import summary_tables
    try:
        summary = summarize(load_run(run_dir), settings.ks)
    except (FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    for table in summary_tables(summary):
        console.print(table.to_rich())


@app.command("sweep")
@settings_command(SweepConfig, SWEEP_SHORTCUTS)
def sweep_command(
    settings: SweepConfig,
    run_dir: Path = typer.Argument(..., help="A training run folder (evals/step-<N>/, checkpoint-<N>/)."),
    trust_verifiers: bool = typer.Option(False, "--trust-verifiers", help=TRUST_HELP),
) -> None:
    """Evaluate a run's checkpoints (or read its evals) and print Checkpoint 0 vs Best pass@k per env."""
    from toolgym.eval.evaluate import EvalConfig
    from toolgym.eval.sweep import evaluate_missing, sweep, sweep_tables
    from toolgym.eval.tables import TextTable
    from toolgym.rollout.tasks import load_tasks

    if not run_dir.is_dir():
        raise usage_error(f"{run_dir}: no such run folder")
    k = settings.ks[0]
    try:
        if settings.tasks is not None:
            tasks_path, selected = load_tasks(Path(settings.tasks), split=settings.split, envs=settings.envs,
                                              limit=settings.limit)
            refused = verifier_refusal(tasks_have_verifiers(selected), trust_verifiers)
            if refused:
                raise usage_error(refused)
            eval_config = settings.part(EvalConfig)
            done = asyncio.run(evaluate_missing(run_dir, selected, eval_config, base_model=settings.base_model,
                                                device=settings.device, engine=settings.engine,
                                                tasks_path=tasks_path, console=console))
            console.print(f"sweep: evaluated {len(done)} checkpoint(s)" + (f": steps {done}" if done else ""))
        result = sweep(run_dir, k=k)
    except (FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    tables: list[TextTable] = sweep_tables(result)
    for table in tables:
        console.print(table.to_rich())
    (run_dir / "sweep.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    (run_dir / "sweep.md").write_text(f"# Checkpoint sweep: {run_dir}\n\n" + "\n".join(t.to_markdown() for t in tables))
    console.print(f"wrote {run_dir / 'sweep.md'} and {run_dir / 'sweep.json'}")


@app.command("leakage")
@settings_command(LeakageConfig, ["train", "tasks"])
def leakage_command(settings: LeakageConfig) -> None:
    """Fail (exit 1) when an eval task's id or normalized prompt appears in the training data."""
    from toolgym.eval.leakage import check_files
    assert settings.tasks is not None  # the config refuses a check without eval tasks
    try:
        report = check_files(settings.train, settings.tasks)
    except (FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    for overlap in report.overlaps[:50]:
        console.print(f"[red]leak:[/red] {overlap.describe()}")
    if len(report.overlaps) > 50:
        console.print(f"… and {len(report.overlaps) - 50} more")
    console.print(report.headline())
    if not report.clean:
        raise typer.Exit(1)
