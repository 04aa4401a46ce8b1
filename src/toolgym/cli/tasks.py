"""`toolgym tasks build | validate | import`.

Each reads its settings from `toolgym.config.tasks` (`--config FILE`, the shortcut flags below,
`--set KEY=VALUE`; docs/config-reference.md lists every setting).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.tasks import TasksBuildConfig, TasksImportConfig, TasksValidateConfig
from toolgym.dataset.table import split_table
from toolgym.schema.jsonl import write_jsonl
from toolgym.verify.isolation import TRUST_HELP, dataset_has_verifiers, verifier_refusal

app = typer.Typer(no_args_is_help=True)
console = Console()
BUILD_SHORTCUTS = ["version", "out", "seed", "apps", "tasks_per_family", "heldout_envs"]
# Flag names older than the config tree: the teacher section's fields keep their --teacher-… and --samples names.
VALIDATE_SHORTCUTS = ["out", "workers", ("teacher.url", "--teacher-url"), ("teacher.model", "--teacher-model"),
                      ("teacher.samples", "--samples"), ("teacher.concurrency", "--teacher-concurrency")]
IMPORT_SHORTCUTS = ["out", "format", "env", "write_tools", "splits"]


def _empty_apps_means_all(values: dict[str, Any]) -> None:
    if values.get("apps") == []:  # `--apps ""`: every registered app, the field's default
        del values["apps"]


@app.command("build")
@settings_command(TasksBuildConfig, BUILD_SHORTCUTS, prepare=_empty_apps_means_all)
def build(settings: TasksBuildConfig) -> None:
    """Generate tasks from every app's families, split them, check for leaks, write the dataset."""
    from toolgym.dataset.build import build_tasks, leakage
    from toolgym.dataset.manifest import sha256_file, write_manifest
    from toolgym.envs import get_app

    started = time.perf_counter()
    dataset = settings.build_config()
    tasks = build_tasks(dataset)
    problems = leakage(tasks)
    if problems:
        for problem in problems[:20]:
            console.print(f"[red]leak:[/red] {problem}")
        raise typer.Exit(1)
    out = Path(settings.out)
    path = out / "tasks.jsonl"
    write_jsonl(path, tasks)
    digest = sha256_file(path)
    write_manifest(
        out,
        "tasks",
        version=dataset.version,
        generator_seed=dataset.seed,
        build_config=dataset.model_dump(),
        env_versions={name: get_app(name).version for name in dataset.apps},
        tasks_sha256=digest,
        counts={"total": len(tasks), "train": sum(not t.is_eval for t in tasks), "eval": sum(t.is_eval for t in tasks)},
        leakage_check="passed: no task id or prompt appears in both train and eval splits",
    )
    console.print(split_table(tasks, title=f"toolgym tasks {dataset.version}"))
    console.print(f"leakage check: no shared task ids or prompts between train and eval ({len(tasks)} tasks)")
    console.print(f"wrote {path} sha256={digest} in {time.perf_counter() - started:.1f}s")


@app.command("validate")
@settings_command(TasksValidateConfig, VALIDATE_SHORTCUTS)
def validate(
    settings: TasksValidateConfig,
    dataset: Path = typer.Argument(..., help="A tasks.jsonl file or a dataset folder holding one."),
    trust_verifiers: bool = typer.Option(False, "--trust-verifiers", help=TRUST_HELP),
) -> None:
    """Replay every task's reference solution in a fresh env; keep the tasks that score reward 1.

    Rows that are not tasks are dropped by file and line; exits 1 when no task is kept."""
    from toolgym.dataset.manifest import tasks_file
    from toolgym.dataset.validate import write_validation
    from toolgym.rollout.teacher_check import validate_with_teacher
    if (settings.teacher.url is None) != (settings.teacher.model is None):
        raise usage_error("give both --teacher-url and --teacher-model, or neither")
    try:
        path = tasks_file(dataset)
    except FileNotFoundError as exc:
        raise usage_error(exc) from exc
    refused = verifier_refusal(dataset_has_verifiers(path), trust_verifiers)
    if refused:
        raise usage_error(refused)
    out_dir = Path(settings.out) if settings.out else path.parent / "validated"
    try:
        run = validate_with_teacher(path, workers=settings.workers, teacher=settings.teacher.teacher_config(),
                                    out_dir=out_dir)
        written = write_validation(run, out_dir)
    except (OSError, ValueError) as exc:
        raise usage_error(exc) from exc
    table = Table(title=f"validate {escape(str(path))}")
    for column in ("Environment", "Input", "Kept", "Dropped"):
        table.add_column(column, justify="left" if column == "Environment" else "right")
    by_env = run.by_env()
    for env_name, counts in by_env.items():
        table.add_row(escape(env_name), f"{counts['input']:,}", f"{counts['kept']:,}", f"{counts['dropped']:,}")
    totals = {k: sum(c[k] for c in by_env.values()) for k in ("input", "kept", "dropped")}
    table.add_row("[b]TOTAL[/b]", *(f"[b]{totals[k]:,}[/b]" for k in ("input", "kept", "dropped")))
    console.print(table)
    console.print("reasons: " + ", ".join(f"{reason} {count:,}" for reason, count in run.by_reason().items()))
    dropped = [r for r in run.reports if not r.kept]
    for report in dropped[:10]:
        console.print("  [yellow]dropped[/yellow] "
                      + escape(f"{path}:{report.line} {report.id or '?'}: {report.reason}: {report.detail[:200]}"))
    if len(dropped) > 10:
        console.print(escape(f"  ... {len(dropped) - 10:,} more in {written['report']}"))
    console.print(
        f"replayed {len(run.reports):,} tasks in {run.replay_seconds:.2f}s with {run.workers} worker(s): "
        f"{run.tasks_per_second:,.0f} tasks/s"
        + (f"; teacher check {run.teacher_seconds:.1f}s" if run.teacher else "")
    )
    console.print(escape(f"wrote {written['tasks']} ({totals['kept']:,} tasks), {written['report']}, {written['manifest']}"))
    if not totals["kept"]:
        what = "has no task rows" if not run.reports else "had every task dropped"
        console.print(f"[red]error:[/red] {escape(str(path))} {what}: no task kept")
        raise typer.Exit(1)


@app.command("import")
@settings_command(TasksImportConfig, IMPORT_SHORTCUTS)
def import_(
    settings: TasksImportConfig,
    file: Path = typer.Argument(..., help="Fleet records (a JSON array or JSONL), or a tau2-bench tasks.json."),
) -> None:
    """Import Fleet task records or tau2-bench tasks as toolgym tasks; bad records are reported by file:line
    and field, and (tau2) what could not be mapped is reported per task.

    Exits 1 when nothing was imported (an empty file, or every record rejected or skipped)."""
    if settings.out is None:
        raise usage_error("toolgym tasks import needs --out (or out in --config)")
    out = settings.out
    if settings.format == "fleet" and (settings.env or settings.write_tools or settings.splits):
        raise usage_error("--env, --write-tools and --splits are options of --format tau2")
    if not file.is_file():
        raise usage_error(f"{file}: no such file")
    if settings.format == "tau2":
        _import_tau2(file, out, settings.env, settings.write_tools, settings.splits)
        return
    from toolgym.dataset.fleet import import_fleet_file, write_import

    try:
        result = import_fleet_file(file)
        written = write_import(result, out)
    except OSError as exc:
        raise usage_error(exc) from exc
    _print_rejected(result.errors, written["errors"])
    console.print(f"imported {len(result.tasks):,} / rejected {len(result.errors):,} (records read: {result.records:,})")
    console.print(escape(f"wrote {written['tasks']}, {written['errors']}, {written['manifest']}"))
    if not result.tasks:
        what = "has no records" if not result.errors else "had every record rejected"
        console.print(f"[red]error:[/red] {escape(str(file))} {what}: no task imported")
        raise typer.Exit(1)


def _print_rejected(errors: list, errors_path: Path) -> None:  # type: ignore[type-arg]
    for error in errors[:20]:
        console.print(f"[red]rejected[/red] {escape(str(error))}")
    if len(errors) > 20:
        console.print(f"... {len(errors) - 20:,} more in {escape(str(errors_path))}")


def _import_tau2(file: Path, out: Path, env: str | None, write_tools: list[str] | None, splits: Path | None) -> None:
    """`tasks import --format tau2`: every task mapped, partly mapped, skipped or rejected, with the reasons."""
    from toolgym.dataset.tau2 import import_tau2_file, write_tau2_import

    try:
        result = import_tau2_file(file, env=env, write_tools=write_tools, splits_file=splits)
        written = write_tau2_import(result, out, write_tools)
    except (OSError, ValueError) as exc:
        raise usage_error(exc) from exc
    _print_rejected(result.errors, written["errors"])
    shown = 0
    for report in result.reports:
        counted = [u for u in report.unmapped if u.in_reward_basis]
        if report.status == "mapped" or shown >= 20:
            continue
        shown += 1
        reasons = "; ".join(f"{u.field}: {u.reason}" for u in counted[:3])
        console.print(escape(f"{report.status} tau2 task {report.tau2_id} ({file}:{report.line}): {reasons}"))
    counts = result.counts()
    console.print(f"tau2 tasks: {counts['records']:,} read: {counts['mapped']:,} mapped, {counts['partial']:,} "
                  f"partly mapped, {counts['skipped']:,} skipped, {counts['rejected']:,} rejected; "
                  f"imported {counts['imported']:,}")
    if counts["unmapped_by_reason"]:
        console.print("not mapped: " + ", ".join(f"{escape(k)} {v:,}" for k, v in counts["unmapped_by_reason"].items())
                      + f" (every one, per task, in {escape(str(written['manifest']))})")
    console.print(escape(f"wrote {written['tasks']}, {written['errors']}, {written['manifest']}"))
    if not result.tasks:
        console.print(f"[red]error:[/red] {escape(str(file))}: no task imported")
        raise typer.Exit(1)
