"""`toolgym harness run`: run an agent harness of your own on a task set into OUT/results.jsonl (resumable).

Its settings are `toolgym.config.harness.HarnessConfig`: `--config FILE`, the shortcut flags below and
`--set KEY=VALUE` (docs/config-reference.md lists every setting; docs/harness.md walks through the loop).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.harness import HarnessConfig
from toolgym.verify.isolation import TRUST_HELP

app = typer.Typer(no_args_is_help=True)
console = Console()
HARNESS_SHORTCUTS = ["tasks", "command", "policy", "out", "split", ("envs", "--env", "--envs"), "limit",
                     ("samples_per_task", "--samples", "--samples-per-task"), "concurrency",
                     ("timeout_s", "--timeout", "--timeout-s"), "temperature", "top_p", "top_k", "max_new_tokens",
                     "seed", "max_turns", "device", "max_batch_size", "tokenizer", "prompt_style", "model",
                     "retry_errors"]


@app.command("run")
@settings_command(HarnessConfig, HARNESS_SHORTCUTS)
def run(
    settings: HarnessConfig,
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    trust_verifiers: bool = typer.Option(False, "--trust-verifiers", help=TRUST_HELP),
) -> None:
    """Run the command once per (task, sample) against the episode's MCP and policy endpoints; score, record."""
    import os

    from toolgym.cli.runnable_tasks import load_runnable_tasks
    from toolgym.dataset.manifest import sha256_file
    from toolgym.harness.runner import HarnessError, run_harness
    from toolgym.policy.base import Policy
    from toolgym.policy.engines import build_policy
    from toolgym.rollout.runner import RolloutInterrupted, run_until_signalled

    spec = settings.policy_spec
    if settings.tasks is None or settings.command is None or spec is None or settings.out is None:
        raise usage_error("toolgym harness run needs --tasks, --command, --policy and --out "
                          "(or tasks, command, policy and out in --config)")
    policy, out = settings.policy, Path(settings.out)
    try:
        tasks_path, selected = load_runnable_tasks(Path(settings.tasks), split=settings.split, envs=settings.envs,
                                                   limit=settings.limit, trust_verifiers=trust_verifiers)
        style = settings.chat_prompt_style()
    except (FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    sampling = settings.to_params(seed=settings.seed)
    tokenizer = Path(settings.tokenizer) if settings.tokenizer else None

    def policy_factory() -> Policy:
        return build_policy(spec, device=settings.device, max_batch_size=settings.max_batch_size,
                            tokenizer_dir=tokenizer, api_key=os.environ.get("OPENAI_API_KEY"),
                            prompt_style=settings.prompt_style, default_prompt_style=style)

    console.print(f"harness: {len(selected)} task(s) × {settings.samples_per_task} sample(s) of "
                  f"{settings.command!r} with {policy} → {out}", markup=False, highlight=False)
    try:
        summary = run_until_signalled(run_harness(
            selected, policy_factory, command=settings.command, out_dir=out,
            samples_per_task=settings.samples_per_task, concurrency=settings.concurrency,
            timeout_s=settings.timeout_s, max_turns=settings.max_turns, sampling=sampling, prompt_style=style,
            tasks_sha256=sha256_file(tasks_path), tasks_path=tasks_path,
            config={"split": settings.split, "env": ",".join(settings.envs) if settings.envs else None,
                    "limit": settings.limit, "policy_spec": policy, "model": settings.model},
            retry_errors=settings.retry_errors, progress=progress, console=console,
        ))
    except (HarnessError, ValueError, FileNotFoundError) as exc:
        raise usage_error(exc) from exc
    except RolloutInterrupted as exc:
        console.print(f"{exc}: every finished episode is in {out / 'results.jsonl'}; "
                      "run the same command again to resume", markup=False, highlight=False)
        raise typer.Exit(exc.exit_code) from exc
    console.print(summary.render(), markup=False, highlight=False)
