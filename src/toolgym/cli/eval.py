"""`toolgym eval`: trials + greedy rollouts with per-env / per-split pass@k tables; `sweep`, `show`, `leakage`."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import typer
from rich.console import Console

from toolgym.policy.spec import SPEC_HELP
from toolgym.rollout.tasks import SPLIT_CHOICES
from toolgym.verify.isolation import TRUST_HELP, tasks_have_verifiers, verifier_refusal

app = typer.Typer(
    invoke_without_command=True,
    help="Evaluate a policy: pass@k / pass^k per environment and split, trials, greedy pass@1.",
)
console = Console()


def parse_ks(text: str) -> list[int]:
    """'1,3,4' → [1, 3, 4]; a clear error for anything else."""
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError as exc:
        raise typer.BadParameter(f"--k {text!r}: write comma-separated integers, e.g. 1,3,4") from exc
    if not ks or ks[0] < 1:
        raise typer.BadParameter(f"--k {text!r}: every k must be ≥ 1")
    return ks


def _fail(message: str) -> typer.Exit:
    console.print(f"[red]error:[/red] {message}")
    return typer.Exit(2)


@app.callback(invoke_without_command=True)
def evaluate(
    ctx: typer.Context,
    tasks: Path | None = typer.Option(None, "--tasks", help="Dataset folder (with tasks.jsonl) or a tasks.jsonl file."),
    policy: str | None = typer.Option(None, "--policy", help=SPEC_HELP),
    out: Path | None = typer.Option(None, "--out", help="Eval folder: trial-<t>/, greedy/, eval.json, eval.md."),
    samples: int = typer.Option(1, "--samples", min=1, help="Samples per task in each trial (n per trial)."),
    trials: int = typer.Option(1, "--trials", min=0, help="Independent sampled trials (each its own rollout sub-run "
                               "and seed); 0: the greedy pass only."),
    k: str = typer.Option("1", "--k", help="Comma-separated k values for pass@k and pass^k (needs n ≥ k)."),
    split: str | None = typer.Option(None, "--split", help=f"One of {', '.join(SPLIT_CHOICES)} (default: every split)."),
    env: str | None = typer.Option(None, "--env", help="Comma-separated environments to keep."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Keep only the first N selected tasks."),
    temperature: float = typer.Option(1.0, "--temperature", min=0.0, help="Sampling temperature of the trials."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0),
    top_k: int = typer.Option(0, "--top-k", min=0, help="0 = off."),
    max_new_tokens: int = typer.Option(512, "--max-new-tokens", min=1),
    seed: int = typer.Option(0, "--seed", help="Trial t samples with seed + t - 1."),
    greedy: bool = typer.Option(True, "--greedy/--no-greedy", help="Also run one temperature-0 sample per task."),
    concurrency: int = typer.Option(8, "--concurrency", min=1),
    max_turns: int = typer.Option(20, "--max-turns", min=1),
    max_context_tokens: int = typer.Option(4096, "--max-context-tokens", min=1),
    timeout: float = typer.Option(120.0, "--timeout", min=0.1, help="Wall clock per episode, seconds."),
    done_tool: bool = typer.Option(False, "--done-tool"),
    device: str = typer.Option("cpu", "--device", help="hf policies: torch device."),
    max_batch_size: int = typer.Option(32, "--max-batch-size", min=1, help="hf policies: rows per generate call."),
    tokenizer: Path | None = typer.Option(None, "--tokenizer", help="openai token mode: local tokenizer folder."),
    prompt_style: str | None = typer.Option(None, "--prompt-style", help="openai chat mode: compact | full."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    trust_verifiers: bool = typer.Option(False, "--trust-verifiers", help=TRUST_HELP),
) -> None:
    """Run T trials × N samples of every task (and a greedy pass), then print the tables."""
    if ctx.invoked_subcommand is not None:
        return
    if tasks is None or policy is None or out is None:
        console.print(ctx.get_help())
        raise _fail("toolgym eval needs --tasks, --policy and --out (or a command: sweep, show, leakage)")
    from toolgym.dataset.manifest import sha256_file
    from toolgym.eval.evaluate import EvalConfig, run_eval
    from toolgym.eval.tables import summary_tables
    from toolgym.policy.spec import make_policy
    from toolgym.rollout.runner import RolloutError
    from toolgym.rollout.tasks import load_tasks

    try:
        tasks_path, selected = load_tasks(tasks, split=split, envs=[e for e in (env or "").split(",") if e] or None,
                                          limit=limit)
        config = EvalConfig(
            samples_per_task=samples, trials=trials, ks=parse_ks(k), temperature=temperature, top_p=top_p,
            top_k=top_k, max_new_tokens=max_new_tokens, seed=seed, greedy=greedy, concurrency=concurrency,
            max_turns=max_turns, max_context_tokens=max_context_tokens, timeout_s=timeout, done_tool=done_tool,
        )
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    if not selected:
        raise _fail(f"no tasks in {tasks_path} match split={split} env={env}")
    refused = verifier_refusal(tasks_have_verifiers(selected), trust_verifiers)
    if refused:
        raise _fail(refused)
    for warning in config.warnings():
        console.print(f"[yellow]warning:[/yellow] {warning}")
    hf_kwargs = {"max_batch_size": max_batch_size} if policy.startswith("hf:") else {}

    def policy_factory():  # type: ignore[no-untyped-def]
        return make_policy(policy, device=device, tokenizer_dir=tokenizer, api_key=os.environ.get("OPENAI_API_KEY"),
                           prompt_style=prompt_style, **hf_kwargs)

    console.print(f"eval: {len(selected)} task(s) × {samples} sample(s) × {trials} trial(s)"
                  f"{' + greedy' if greedy else ''} with {policy} → {out}")
    try:
        result = asyncio.run(run_eval(selected, policy_factory, out_dir=out, config=config, tasks_path=tasks_path,
                                      tasks_sha256=sha256_file(tasks_path), progress=progress, console=console))
    except (RolloutError, ValueError, FileNotFoundError) as exc:
        raise _fail(str(exc)) from exc
    for table in summary_tables(result.summary):
        console.print(table.to_rich())
    console.print(f"wrote {out / 'eval.md'} and {out / 'eval.json'} in {result.seconds:.1f}s")


@app.command("show")
def show(
    run_dir: Path = typer.Argument(..., help="A rollout folder (results.jsonl) or an eval folder (trial-<t>/)."),
    k: str = typer.Option("1", "--k", help="Comma-separated k values."),
) -> None:
    """Print the per-env / per-split tables of runs already on disk."""
    from toolgym.eval.records import load_run
    from toolgym.eval.summary import summarize
    from toolgym.eval.tables import summary_tables

    try:
        summary = summarize(load_run(run_dir), parse_ks(k))
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    for table in summary_tables(summary):
        console.print(table.to_rich())


@app.command("sweep")
def sweep_command(
    run_dir: Path = typer.Argument(..., help="A training run folder (evals/step-<N>/, checkpoint-<N>/)."),
    k: int = typer.Option(1, "--k", min=1, help="The k of pass@k in the tables."),
    tasks: Path | None = typer.Option(None, "--tasks", help="Evaluate checkpoints that have no eval yet on these tasks."),
    split: str | None = typer.Option("eval", "--split", help=f"Tasks to evaluate on: {', '.join(SPLIT_CHOICES)}."),
    limit: int | None = typer.Option(None, "--limit", min=1),
    samples: int = typer.Option(1, "--samples", min=1),
    trials: int = typer.Option(1, "--trials", min=1),
    temperature: float = typer.Option(1.0, "--temperature", min=0.0),
    max_new_tokens: int = typer.Option(512, "--max-new-tokens", min=1),
    seed: int = typer.Option(0, "--seed"),
    base_model: Path | None = typer.Option(None, "--base-model", help="Base of LoRA checkpoints; evaluated as step 0."),
    device: str = typer.Option("cpu", "--device"),
    max_turns: int = typer.Option(20, "--max-turns", min=1),
    concurrency: int = typer.Option(8, "--concurrency", min=1),
    trust_verifiers: bool = typer.Option(False, "--trust-verifiers", help=TRUST_HELP),
) -> None:
    """Evaluate a run's checkpoints (or read its evals) and print Checkpoint 0 vs Best pass@k per env."""
    from toolgym.eval.evaluate import EvalConfig
    from toolgym.eval.sweep import evaluate_missing, sweep, sweep_tables
    from toolgym.eval.tables import TextTable
    from toolgym.rollout.tasks import load_tasks

    if not run_dir.is_dir():
        raise _fail(f"{run_dir}: no such run folder")
    try:
        if tasks is not None:
            tasks_path, selected = load_tasks(tasks, split=split, limit=limit)
            refused = verifier_refusal(tasks_have_verifiers(selected), trust_verifiers)
            if refused:
                raise _fail(refused)
            config = EvalConfig(samples_per_task=samples, trials=trials, ks=[k], temperature=temperature,
                                max_new_tokens=max_new_tokens, seed=seed, greedy=False, max_turns=max_turns,
                                concurrency=concurrency)
            done = asyncio.run(evaluate_missing(run_dir, selected, config, base_model=base_model, device=device,
                                                tasks_path=tasks_path, console=console))
            console.print(f"sweep: evaluated {len(done)} checkpoint(s)" + (f": steps {done}" if done else ""))
        result = sweep(run_dir, k=k)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    tables: list[TextTable] = sweep_tables(result)
    for table in tables:
        console.print(table.to_rich())
    (run_dir / "sweep.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    (run_dir / "sweep.md").write_text(f"# Checkpoint sweep: {run_dir}\n\n" + "\n".join(t.to_markdown() for t in tables))
    console.print(f"wrote {run_dir / 'sweep.md'} and {run_dir / 'sweep.json'}")


@app.command("leakage")
def leakage_command(
    train: list[Path] = typer.Option(..., "--train", help="Training data: tasks.jsonl (train split), SFT rows, results."),
    tasks: Path = typer.Option(..., "--tasks", help="Eval tasks: a dataset (held-out splits) or a results file."),
) -> None:
    """Fail (exit 1) when an eval task's id or normalized prompt appears in the training data."""
    from toolgym.eval.leakage import check_files

    try:
        report = check_files(train, tasks)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    for overlap in report.overlaps[:50]:
        console.print(f"[red]leak:[/red] {overlap.describe()}")
    if len(report.overlaps) > 50:
        console.print(f"… and {len(report.overlaps) - 50} more")
    console.print(report.headline())
    if not report.clean:
        raise typer.Exit(1)
