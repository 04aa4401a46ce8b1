"""`toolgym tasks build | validate | import`."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console

from toolgym.dataset.build import BuildConfig, build_tasks, leakage
from toolgym.dataset.manifest import sha256_file, write_manifest
from toolgym.dataset.table import split_table
from toolgym.schema.jsonl import write_jsonl

app = typer.Typer(no_args_is_help=True)
console = Console()


@app.command("build")
def build(
    version: str = typer.Option("v0.2", help="Dataset version: v0.1 has no env_variables, v0.2 has them."),
    out: Path = typer.Option(Path("data/tasks"), help="Output folder for tasks.jsonl and manifest.json."),
    seed: int = typer.Option(7, help="Generator seed; the same seed gives a byte-identical tasks.jsonl."),
    apps: str = typer.Option("booking,code_host,mail,forum", help="Comma-separated apps."),
    tasks_per_family: int = typer.Option(90, help="Tasks drawn from each task family."),
    heldout_envs: str = typer.Option("mail", help="Comma-separated environments used only for evaluation."),
) -> None:
    """Generate tasks from every app's families, split them, check for leaks, write the dataset."""
    started = time.perf_counter()
    config = BuildConfig(
        version=version,
        seed=seed,
        apps=[a for a in apps.split(",") if a],
        tasks_per_family=tasks_per_family,
        heldout_envs=[e for e in heldout_envs.split(",") if e],
        with_env_variables=version != "v0.1",
    )
    tasks = build_tasks(config)
    problems = leakage(tasks)
    if problems:
        for problem in problems[:20]:
            console.print(f"[red]leak:[/red] {problem}")
        raise typer.Exit(1)
    path = out / "tasks.jsonl"
    write_jsonl(path, tasks)
    digest = sha256_file(path)
    from toolgym.envs import get_app

    write_manifest(
        out,
        "tasks",
        version=version,
        generator_seed=seed,
        build_config=config.__dict__,
        env_versions={name: get_app(name).version for name in config.apps},
        tasks_sha256=digest,
        counts={"total": len(tasks), "train": sum(not t.is_eval for t in tasks), "eval": sum(t.is_eval for t in tasks)},
        leakage_check="passed: no task id or prompt appears in both train and eval splits",
    )
    console.print(split_table(tasks, title=f"toolgym tasks {version}"))
    console.print(f"leakage check: no shared task ids or prompts between train and eval ({len(tasks)} tasks)")
    console.print(f"wrote {path} sha256={digest} in {time.perf_counter() - started:.1f}s")
