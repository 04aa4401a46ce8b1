"""The numbers of one GRPO step's metrics row, and the monitors that read them (tool-call collapse, steps
whose every episode errored)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from toolgym.algorithms.advantages import Group, GroupStats
from toolgym.config.grpo import MonitorSettings
from toolgym.schema import Episode, Task
from toolgym.train.grpo.result import GRPOError


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rollout_metrics(episodes: list[Episode], groups_stats: GroupStats, rewards: list[float]) -> dict[str, Any]:
    """The step's episode statistics (errored episodes counted, never averaged in)."""
    scored = [e for e in episodes if e.status != "error"]
    passes = sum(e.succeeded for e in scored)
    tool_calls = [sum(e.tool_calls_by_tool.values()) for e in scored]
    return {
        "episodes": len(episodes),
        "episodes_errored": groups_stats.episodes_errored,
        "episodes_truncated": sum(e.status == "truncated" for e in scored),
        "scored_episodes": len(scored),
        "successes": passes,
        "success_rate": passes / len(scored) if scored else None,
        "reward_mean": _mean(rewards),
        "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else (0.0 if rewards else None),
        "task_reward_mean": _mean([e.reward for e in scored]),
        "partial_score_mean": _mean([e.partial_score for e in scored]),
        "groups": groups_stats.groups,
        "groups_with_signal": groups_stats.groups_with_signal,
        "groups_too_small": groups_stats.groups_too_small,
        "groups_zero_variance": groups_stats.groups_zero_variance,
        "groups_anchored": groups_stats.groups_anchored,
        "tool_calls_per_episode": _mean([float(n) for n in tool_calls]),
        "format_errors_per_episode": _mean([float(e.format_errors) for e in scored]),
        "tool_errors_per_episode": _mean([float(e.tool_errors) for e in scored]),
        "turns_mean": _mean([float(e.turns) for e in scored]),
        "response_tokens_mean": _mean([float(sum(len(t.completion_ids) for t in e.token_turns)) for e in scored]),
        # mean -log p of the sampled tokens: a Monte Carlo estimate of the sampling entropy, every step
        "sampled_token_nll": _mean([-lp for e in scored for t in e.token_turns for lp in t.logprobs]),
        "errors_by_cause": groups_stats.errors_by_cause,
        "error_examples": groups_stats.error_examples,
    }


def family_counts(groups: list[Group], tasks_by_id: dict[str, Task]) -> dict[str, dict[str, int]]:
    """Per task family (env/family): scored episodes, successes and groups with signal this step.

    A choice two families share can swing as a whole (one family's successes rise as the other's
    fall); the step totals hide that, these counts show it.
    """
    counts: dict[str, dict[str, int]] = {}
    for group in groups:
        task = tasks_by_id.get(group.task_id)
        name = f"{group.env}/{task.family}" if task is not None and task.family else group.env
        row = counts.setdefault(name, {"episodes": 0, "successes": 0, "groups_with_signal": 0})
        row["episodes"] += len(group.episodes)
        row["successes"] += sum(e.succeeded for e in group.episodes)
        row["groups_with_signal"] += int(group.has_signal)
    return dict(sorted(counts.items()))


def check_all_errored(row: dict[str, Any], state: dict[str, Any], monitor: MonitorSettings,
                      say: Callable[[str], None]) -> None:
    """A step whose every episode errored trains nothing: say why at once, and stop when it keeps happening."""
    if not row["episodes"] or row["episodes_errored"] < row["episodes"]:
        state["all_error_steps"] = 0
        return
    state["all_error_steps"] = int(state.get("all_error_steps", 0)) + 1
    causes = "; ".join(row["error_examples"].values())
    say(f"[red]step {row['step']}: all {row['episodes']} episodes errored[/red]: {causes}")
    if state["all_error_steps"] >= monitor.max_all_error_steps:
        raise GRPOError(f"{state['all_error_steps']} steps in a row where every episode errored "
                        f"(through step {row['step']}): {causes}")


def check_collapse(row: dict[str, Any], state: dict[str, Any], monitor: MonitorSettings,
                   say: Callable[[str], None]) -> bool:
    """Agents can learn to stop calling tools (turn collapse): warn when the rate falls well below its start."""
    rate = row.get("tool_calls_per_episode")
    if rate is None:
        return False
    baseline: list[float] = state.setdefault("tool_call_baseline", [])
    if len(baseline) < monitor.baseline_steps:
        baseline.append(float(rate))
        return False
    reference = sum(baseline) / len(baseline)
    collapsed = reference > 0 and rate < monitor.collapse_fraction * reference
    if collapsed:
        say(f"[yellow]warning:[/yellow] step {row['step']}: tool calls per episode {rate:.2f} fell below "
            f"{monitor.collapse_fraction:.0%} of the first steps' {reference:.2f} (tool-call collapse?)")
    return collapsed
