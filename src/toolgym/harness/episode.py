"""One harness episode: a fresh environment for the task, its endpoints, the command run against them, the score.

The harness decides how the agent works; toolgym decides what counts. Its exit status says only whether it ran:
a crash (non-zero exit, a signal) or a timeout is an infrastructure error with the stderr tail, never scored,
and so is an environment or policy failure at the endpoints. A harness that exits cleanly is scored on the
state it left, whatever it did: one that never called a tool is a scored failure. A limit the endpoint
enforced (max_turns, the model's context) makes the episode truncated, and it is scored too. The final answer
is the content of the last reply the policy gave.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolgym.agent.samples import build_samples
from toolgym.chat.render import PromptStyle, system_prompt
from toolgym.envs import Environment, make_env
from toolgym.harness.gateway import EpisodeUrls, Gateway
from toolgym.harness.policy_endpoint import MODEL_NAME
from toolgym.harness.process import ProcessOutcome, check_env_variables, run_command
from toolgym.harness.recording import Recording
from toolgym.harness.session import EpisodeSession
from toolgym.rollout.results import episode_to_row
from toolgym.rollout.worker import episode_seed
from toolgym.schema import Episode, Status, StopReason, Task, Timings, Verdict
from toolgym.verify.task import verify_task

ERROR_TAIL_CHARS = 600  # of stderr, in the error text; the row's `harness` field keeps a longer tail
# Set by toolgym for every episode; a task's env_variables may not replace them.
RESERVED_PREFIXES = ("OPENAI_", "TOOLGYM_", "LD_", "DYLD_")


@dataclass(frozen=True)
class HarnessCommand:
    """What every episode of a run runs: the command, its limits, and the environment it inherits."""

    command: str
    timeout_s: float = 600.0
    max_turns: int = 30
    seed: int | None = None
    base_env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    env_factory: Callable[[str], Environment] = make_env


@dataclass
class HarnessEpisode:
    """A finished episode and what its harness run left: the results row is `row(task)`."""

    episode: Episode
    record: dict[str, Any]
    prompt_style: PromptStyle

    def row(self, task: Task | None = None) -> dict[str, Any]:
        row = episode_to_row(self.episode, task)
        row["info"]["prompt_style"] = self.prompt_style
        row["harness"] = self.record
        return row


def episode_variables(task: Task, sample_index: int, urls: EpisodeUrls, system: str,
                      base_env: Mapping[str, str]) -> dict[str, str]:
    """The harness's process environment: what it inherits, the task's env_variables, then toolgym's own.

    A task variable that would replace an inherited one, or one of toolgym's, raises ValueError: a task is data
    and must not be able to redirect the harness (PATH, LD_PRELOAD, OPENAI_BASE_URL, …)."""
    check_env_variables(task.env_variables)
    for key in task.env_variables:
        if key in base_env or key.startswith(RESERVED_PREFIXES):
            raise ValueError(f"the task's env variable {key} would replace the harness's own {key}")
    prompt = task.user_scenario.opening_message if task.user_scenario and task.user_scenario.opening_message \
        else task.prompt
    return {
        **base_env, **task.env_variables,
        "OPENAI_BASE_URL": urls.openai_base_url, "OPENAI_API_KEY": urls.api_key, "OPENAI_MODEL": MODEL_NAME,
        "TOOLGYM_MCP_URL": urls.mcp_url, "TOOLGYM_TASK_PROMPT": prompt, "TOOLGYM_SYSTEM_PROMPT": system,
        "TOOLGYM_TASK_ID": task.id, "TOOLGYM_SAMPLE_INDEX": str(sample_index),
        "OPENAI_AGENTS_DISABLE_TRACING": "1",  # the Agents SDK would otherwise export traces to OpenAI
    }


def _with_tail(text: str, outcome: ProcessOutcome | None) -> str:
    tail = outcome.stderr_tail[-ERROR_TAIL_CHARS:] if outcome is not None else ""
    return f"{text}; stderr: {tail}" if tail else f"{text} (no stderr)"


def _failure(session: EpisodeSession, outcome: ProcessOutcome | None, timeout_s: float) -> str | None:
    """Why the episode is an infrastructure error (None: it is scored)."""
    if session.internal_error:
        return session.internal_error
    if session.env_error:
        return session.env_error
    if session.policy_error:
        return session.policy_error
    if outcome is None:
        return None
    if outcome.timed_out:
        return _with_tail(f"timeout: the harness was still running after {timeout_s:g}s (killed)", outcome)
    if outcome.exit_code != 0 and session.truncated is None:
        return _with_tail(f"harness error: the harness {outcome.describe()}", outcome)
    return None


def _record(command: str, outcome: ProcessOutcome | None, session: EpisodeSession, recording: Recording,
            ) -> dict[str, Any]:
    return {
        "command": command,
        "exit_code": outcome.exit_code if outcome else None,
        "timed_out": outcome.timed_out if outcome else False,
        "seconds": round(outcome.seconds, 3) if outcome else 0.0,
        "stdout_tail": outcome.stdout_tail if outcome else "",
        "stderr_tail": outcome.stderr_tail if outcome else "",
        "requests": len(recording.calls),
        "truncated_by": session.truncated,
        **recording.to_json(),
        "tool_uses": [use.to_json() for use in session.tool_uses],
    }


async def run_harness_episode(task: Task, sample_index: int, gateway: Gateway, harness: HarnessCommand,
                              ) -> HarnessEpisode:
    """Run the harness once on `task` and score what it left; never raises for what the harness, the policy,
    the environment or the verifier do (those are the row's status), only when cancelled."""
    endpoint = gateway.endpoint
    policy = endpoint.policy
    began = time.perf_counter()
    episode = Episode(task_id=task.id, env=task.env, split=task.split, sample_index=sample_index, policy=policy.name,
                      checkpoint=policy.checkpoint, sampling=endpoint.defaults.to_dict())
    recording = Recording(endpoint.renderer)
    env: Environment | None = None
    try:
        env = harness.env_factory(task.env)
        env.reset(task.env_variables)
    except Exception as exc:
        if env is not None:
            env.close()
        episode.status, episode.stop_reason = "error", "error"
        episode.error = f"env error: cannot make environment {task.env!r}: {type(exc).__name__}: {exc}"
        return HarnessEpisode(episode, {"command": harness.command, "requests": 0}, endpoint.prompt_style)
    seed = None if harness.seed is None else episode_seed(harness.seed, task.id, sample_index)
    session = EpisodeSession(task, sample_index, env, recording, harness.max_turns, seed=seed)
    tools = env.tool_specs("agent")
    urls = gateway.open(session)
    outcome: ProcessOutcome | None = None
    problem: str | None = None
    try:
        variables = episode_variables(task, sample_index, urls, system_prompt(
            env.policy, task.env_variables, tools, endpoint.prompt_style), harness.base_env)
        outcome = await run_command(harness.command, variables, harness.timeout_s, harness.cwd)
    except ValueError as exc:
        problem = f"harness error: {exc}"
    except OSError as exc:
        problem = f"harness error: cannot start the harness: {type(exc).__name__}: {exc}"
    finally:
        gateway.close(session)
    problem = problem or _failure(session, outcome, harness.timeout_s)
    calls = recording.calls
    episode.messages = list(recording.transcript)
    episode.tools = list(recording.tool_sets[calls[-1].tool_set]) if calls else tools
    episode.final_answer = recording.transcript[calls[-1].reply_at].content if calls else None
    episode.turns = len(calls)
    episode.tool_calls_by_tool = session.tool_counts()
    episode.tool_errors = session.tool_errors()
    episode.format_errors = sum(len(c.tool_call_errors) for c in calls)
    episode.token_turns = list(recording.token_turns)
    episode.samples = build_samples(episode.token_turns)
    verifier_s = 0.0
    status: Status = "ok"
    stop: StopReason = session.truncated or "answer"
    if problem is None:
        status = "truncated" if session.truncated else "ok"
        verify_began = time.perf_counter()
        try:
            episode.verdict = await asyncio.to_thread(verify_task, task, env, episode.final_answer)
        except asyncio.CancelledError:
            raise  # the verifier thread may still read the environment: it is left to close when done
        except Exception as exc:
            episode.verdict = Verdict.failure(f"verifier crashed: {type(exc).__name__}: {exc}")
        verifier_s = time.perf_counter() - verify_began
        if episode.verdict.error is not None:
            problem = episode.verdict.error
    if problem is not None:
        status, stop = "error", "error"
        episode.error = problem
    episode.status, episode.stop_reason = status, stop
    env.close()
    episode.timings = Timings(generation_s=session.generation_s, env_s=session.env_s, verifier_s=verifier_s,
                              total_s=time.perf_counter() - began)
    return HarnessEpisode(episode, _record(harness.command, outcome, session, recording), endpoint.prompt_style)
