"""`toolgym rollout`: run a policy on a task set into RUN_DIR/results.jsonl (resumable)."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from toolgym.dataset.manifest import sha256_file
from toolgym.policy.base import SamplingParams
from toolgym.policy.spec import SPEC_HELP, make_policy
from toolgym.rollout.tasks import SPLIT_CHOICES, load_tasks
from toolgym.verify.isolation import TRUST_HELP, tasks_have_verifiers, verifier_refusal

console = Console()
USER_SIMULATORS = ("scripted", "none")


def rollout(
    tasks: Path = typer.Option(..., "--tasks", help="Dataset folder (with tasks.jsonl) or a tasks.jsonl file."),
    policy: str = typer.Option(..., "--policy", help=SPEC_HELP),
    out: Path = typer.Option(..., "--out", help="Run folder: results.jsonl + manifest.json; re-run to resume."),
    split: str | None = typer.Option(None, "--split", help=f"One of {', '.join(SPLIT_CHOICES)} (eval = all held-out)."),
    env: str | None = typer.Option(None, "--env", help="Comma-separated environments to keep."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Keep only the first N selected tasks."),
    samples_per_task: int = typer.Option(1, "--samples-per-task", min=1, help="Episodes per task (K)."),
    concurrency: int = typer.Option(8, "--concurrency", min=1, help="Episodes in flight at once."),
    temperature: float = typer.Option(1.0, "--temperature", min=0.0, help="0 = greedy."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0),
    top_k: int = typer.Option(0, "--top-k", min=0, help="0 = off."),
    max_new_tokens: int = typer.Option(512, "--max-new-tokens", min=1, help="Per-turn generation budget."),
    seed: int | None = typer.Option(None, "--seed", help="Run seed; each episode samples with a seed derived from it."),
    max_turns: int = typer.Option(20, "--max-turns", min=1),
    max_context_tokens: int = typer.Option(4096, "--max-context-tokens", min=1),
    max_format_errors: int | None = typer.Option(
        None, "--max-format-errors", min=1, help="end an episode after this many malformed tool calls"),
    timeout: float = typer.Option(120.0, "--timeout", min=0.1, help="Wall clock per episode, seconds."),
    done_tool: bool = typer.Option(False, "--done-tool", help="Give the agent a `done(answer)` tool."),
    user_simulator: str = typer.Option(
        "scripted", "--user-simulator", help="Dual-control tasks: scripted (deterministic customer) | none."
    ),
    device: str = typer.Option("cpu", "--device", help="hf policies: torch device."),
    max_batch_size: int = typer.Option(32, "--max-batch-size", min=1, help="hf policies: rows per generate call."),
    tokenizer: Path | None = typer.Option(None, "--tokenizer", help="openai token mode: local tokenizer folder."),
    prompt_style: str | None = typer.Option(
        None, "--prompt-style", help="openai chat mode: compact | full system prompt (default: MODEL's toolgym.json)."
    ),
    env_mcp: list[str] | None = typer.Option(
        None, "--env-mcp",
        help="Run envs over MCP: [ENV=]TARGET with TARGET stdio | http(s)://…/mcp | stdio:COMMAND ARGS (repeatable).",
    ),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="Run error rows of a previous run again."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    trust_verifiers: bool = typer.Option(False, "--trust-verifiers", help=TRUST_HELP),
) -> None:
    """Run episodes of every selected task; one durable row per (task, sample) in results.jsonl."""
    from toolgym.agent.users import ScriptedUserSimulator  # heavy (agent, envs): load on use
    from toolgym.rollout.runner import RolloutError, RolloutInterrupted, run_rollout, run_until_signalled

    try:
        tasks_path, selected = load_tasks(
            tasks, split=split, envs=[e for e in (env or "").split(",") if e] or None, limit=limit
        )
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if not selected:
        console.print(f"[red]error:[/red] no tasks in {tasks_path} match split={split} env={env}")
        raise typer.Exit(2)
    refused = verifier_refusal(tasks_have_verifiers(selected), trust_verifiers)
    if refused:
        console.print(f"[red]error:[/red] {refused}")
        raise typer.Exit(2)
    if user_simulator not in USER_SIMULATORS:
        console.print(f"[red]error:[/red] --user-simulator must be one of {', '.join(USER_SIMULATORS)}")
        raise typer.Exit(2)
    simulator = ScriptedUserSimulator() if user_simulator == "scripted" else None
    env_factory = None
    if env_mcp:
        from toolgym.envs.mcp import remote_env_factory
        from toolgym.http_guard import resolve_api_key

        try:
            # A keyed `toolgym serve env` takes the same $TOOLGYM_API_KEY the server reads.
            key = resolve_api_key(None)
            env_factory = remote_env_factory(env_mcp, headers={"Authorization": f"Bearer {key}"} if key else None)
        except ValueError as exc:
            console.print(f"[red]error:[/red] --env-mcp: {exc}")
            raise typer.Exit(2) from exc
    sampling = SamplingParams(
        temperature=temperature, top_p=top_p, top_k=top_k, max_new_tokens=max_new_tokens, seed=seed
    )
    hf_kwargs = {"max_batch_size": max_batch_size} if policy.startswith("hf:") else {}

    def policy_factory():  # type: ignore[no-untyped-def]
        return make_policy(policy, device=device, tokenizer_dir=tokenizer, api_key=os.environ.get("OPENAI_API_KEY"),
                           prompt_style=prompt_style, **hf_kwargs)

    console.print(f"rollout: {len(selected)} task(s) × {samples_per_task} sample(s) with {policy} → {out}")
    try:
        summary = run_until_signalled(
            run_rollout(
                selected, policy_factory, out_dir=out, samples_per_task=samples_per_task, concurrency=concurrency,
                sampling=sampling, max_turns=max_turns, max_context_tokens=max_context_tokens, timeout_s=timeout,
                max_format_errors=max_format_errors,
                done_tool=done_tool, user_simulator=simulator, tasks_sha256=sha256_file(tasks_path),
                tasks_path=tasks_path,
                config={"split": split, "env": env, "limit": limit, "policy_spec": policy, "env_mcp": env_mcp},
                **({"env_factory": env_factory} if env_factory is not None else {}),
                retry_errors=retry_errors, progress=progress, console=console,
            )
        )
    except (RolloutError, ValueError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    except RolloutInterrupted as exc:
        console.print(f"{exc}: every finished episode is in {out / 'results.jsonl'}; "
                      "run the same command again to resume")
        raise typer.Exit(exc.exit_code) from exc
    console.print(summary.render())
