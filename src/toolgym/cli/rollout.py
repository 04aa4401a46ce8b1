"""`toolgym rollout`: run a policy on a task set into RUN_DIR/results.jsonl (resumable).

Its settings are `toolgym.config.evaluation.RolloutConfig`: `--config FILE`, the shortcut flags below and
`--set KEY=VALUE` (docs/config-reference.md lists every setting).
"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.evaluation import RolloutConfig
from toolgym.policy.base import Policy
from toolgym.verify.isolation import TRUST_HELP

console = Console()
# Flag names older than the config tree stay: `--env` (envs) and `--timeout` (timeout_s).
ROLLOUT_SHORTCUTS = ["tasks", "policy", "out", "split", ("envs", "--env", "--envs"), "limit", "samples_per_task",
                     "concurrency", "temperature", "top_p", "top_k", "max_new_tokens", "seed", "max_turns",
                     "max_context_tokens", "max_format_errors", ("timeout_s", "--timeout", "--timeout-s"), "done_tool",
                     "user_simulator", "device", "max_batch_size", "tokenizer", "prompt_style", "env_mcp",
                     "retry_errors", "ray", "ray_workers", "model"]


@settings_command(RolloutConfig, ROLLOUT_SHORTCUTS)
def rollout(
    settings: RolloutConfig,
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    trust_verifiers: bool = typer.Option(False, "--trust-verifiers", help=TRUST_HELP),
) -> None:
    """Run episodes of every selected task; one durable row per (task, sample) in results.jsonl."""
    from toolgym.agent.users import ScriptedUserSimulator  # heavy (agent, envs): load on use
    from toolgym.cli.runnable_tasks import load_runnable_tasks
    from toolgym.dataset.manifest import sha256_file
    from toolgym.policy.engines import build_policy
    from toolgym.rollout.runner import RolloutError, RolloutInterrupted, run_rollout, run_until_signalled
    spec = settings.policy_spec
    if settings.tasks is None or spec is None or settings.out is None:
        raise usage_error("toolgym rollout needs --tasks, --policy and --out (or tasks, policy and out in --config)")
    policy, out = settings.policy, Path(settings.out)
    env = ",".join(settings.envs) if settings.envs else None  # as the manifest has always recorded it
    try:
        tasks_path, selected = load_runnable_tasks(Path(settings.tasks), split=settings.split, envs=settings.envs,
                                                   limit=settings.limit, trust_verifiers=trust_verifiers)
    except (FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    try:
        model_style = settings.model_prompt_style()
    except ValueError as exc:
        raise usage_error(f"--model: {exc}") from exc
    simulator = ScriptedUserSimulator() if settings.user_simulator == "scripted" else None
    env_factory = None
    if settings.env_mcp:
        from toolgym.envs.mcp import remote_env_factory
        from toolgym.http_guard import resolve_api_key

        try:
            # A keyed `toolgym serve env` takes the same $TOOLGYM_API_KEY the server reads.
            key = resolve_api_key(None)
            env_factory = remote_env_factory(settings.env_mcp,
                                             headers={"Authorization": f"Bearer {key}"} if key else None)
        except ValueError as exc:
            raise usage_error(f"--env-mcp: {exc}") from exc
    sampling = settings.to_params(seed=settings.seed)
    tokenizer = Path(settings.tokenizer) if settings.tokenizer else None

    def policy_factory() -> Policy:
        return build_policy(spec, device=settings.device, max_batch_size=settings.max_batch_size,
                            tokenizer_dir=tokenizer, api_key=os.environ.get("OPENAI_API_KEY"),
                            prompt_style=settings.prompt_style, default_prompt_style=model_style)

    where = f" on Ray ({settings.ray}, {settings.ray_workers} workers)" if settings.ray else ""
    console.print(f"rollout: {len(selected)} task(s) × {settings.samples_per_task} sample(s) with {policy}{where} → {out}")
    try:
        summary = run_until_signalled(
            run_rollout(
                selected, policy_factory, out_dir=out, samples_per_task=settings.samples_per_task,
                concurrency=settings.concurrency, sampling=sampling, limits=settings, user_simulator=simulator,
                tasks_sha256=sha256_file(tasks_path), tasks_path=tasks_path,
                config={"split": settings.split, "env": env, "limit": settings.limit, "policy_spec": policy,
                        "env_mcp": settings.env_mcp, "model": settings.model},
                **({"env_factory": env_factory} if env_factory is not None else {}),
                retry_errors=settings.retry_errors, progress=progress, console=console, ray=settings.ray_settings,
            )
        )
    except (RolloutError, ValueError, FileNotFoundError) as exc:
        raise usage_error(exc) from exc
    except RolloutInterrupted as exc:
        console.print(f"{exc}: every finished episode is in {out / 'results.jsonl'}; "
                      "run the same command again to resume")
        raise typer.Exit(exc.exit_code) from exc
    console.print(summary.render())
