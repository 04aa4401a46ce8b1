"""The episode loop: agent ↔ environment (↔ simulated user), token-in/token-out, then verification.

Token mode keeps every turn's exact prompt ids, sampled ids and log-probs; each later prompt is
the previous prompt + sampled ids + the rendered observation, never a re-render of the history.
Infrastructure failures (env, policy, user simulator, verifier) end the episode with
`status="error"` and no reward; limits end it as "truncated" with the reason named, never
silently.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from toolgym.agent.limits import EpisodeLimits
from toolgym.agent.samples import build_samples
from toolgym.agent.user import MARKER_OF, UserSimulator, UserTermination, bind_user_simulator
from toolgym.chat.parse import ParseResult, ToolCallParser, get_parser, screen_calls
from toolgym.chat.render import DONE_TOOL_NAME, Renderer, load_prompt_style
from toolgym.envs import EnvError, Environment
from toolgym.policy.base import Generation, GenerationRequest, Policy, SamplingParams
from toolgym.schema import Episode, Message, Status, StopReason, Task, TokenTurn, ToolCall, ToolSpec, Verdict
from toolgym.verify.progress import ProgressError, ProgressTracker, verifier_each_turn
from toolgym.verify.task import verify_task

DONE_TOOL = ToolSpec(
    name=DONE_TOOL_NAME,
    description="Finish the task and give the final answer to the user.",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "The final answer for the user."}},
        "required": ["answer"],
    },
)


MAX_FEEDBACK_ERRORS = 5  # a turn with thousands of broken tags gets a short answer, not thousands of lines


def format_feedback(errors: list[str]) -> str:
    """What the model reads after a malformed turn: the first few problems, and the format to use."""
    lines = ["Error: your tool call could not be read."] + [f"- {e}" for e in errors[:MAX_FEEDBACK_ERRORS]]
    if len(errors) > MAX_FEEDBACK_ERRORS:
        lines.append(f"- ... and {len(errors) - MAX_FEEDBACK_ERRORS} more")
    lines.append('Call tools as <tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>')
    return "\n".join(lines)


def answer_text(value: Any) -> str:
    """The done tool's answer as text; whatever the model put there, this does not raise."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):  # too deep, or an int past the digit limit
        return ""


class _EpisodeRun:
    """The mutable state of one episode; `run` drives it to an Episode."""

    def __init__(
        self,
        task: Task,
        env: Environment,
        policy: Policy,
        sampling: SamplingParams,
        *,
        sample_index: int,
        renderer: Renderer | None,
        parser: ToolCallParser | None,
        limits: EpisodeLimits,
        user_simulator: UserSimulator | None,
    ) -> None:
        self.task = task
        self.env = env
        self.policy = policy
        self.sampling = sampling
        self.token_mode = policy.tokenizer is not None
        if renderer is None:
            style = load_prompt_style(getattr(policy.tokenizer, "name_or_path", None)) if self.token_mode else "full"
            renderer = Renderer(policy.tokenizer, prompt_style=style)
        self.renderer = renderer
        self.parser = parser if parser is not None else get_parser("hermes")
        self.max_turns = limits.max_turns
        self.max_format_errors = limits.max_format_errors
        # A model's own context (tokenizer.model_max_length, set by init_tiny) caps the budget, so a
        # long episode stops with "context" instead of a policy error.
        max_context_tokens = limits.max_context_tokens
        model_limit = getattr(policy.tokenizer, "model_max_length", None)
        if isinstance(model_limit, int) and 0 < model_limit < 10**8:
            max_context_tokens = min(max_context_tokens, model_limit)
        self.max_context_tokens = max_context_tokens
        self.done_tool = limits.done_tool
        self.progress = ProgressTracker(task) if limits.turn_progress else None
        self.user_simulator = user_simulator if task.user_scenario is not None else None
        self.tools: list[ToolSpec] = env.tool_specs("agent") + ([DONE_TOOL] if limits.done_tool else [])
        self.started = time.perf_counter()
        self.deadline = self.started + limits.timeout_s
        self.counts: Counter[str] = Counter()
        self.episode = Episode(
            task_id=task.id,
            env=task.env,
            split=task.split,
            sample_index=sample_index,
            tools=self.tools,
            policy=policy.name,
            checkpoint=policy.checkpoint,
            sampling=sampling.to_dict(),
            user_simulator=(
                getattr(self.user_simulator, "name", type(self.user_simulator).__name__)
                if self.user_simulator is not None
                else None
            ),
        )

    # -- bookkeeping ----------------------------------------------------------------------------

    def _stop(self, status: Status, stop_reason: StopReason, error: str | None = None) -> None:
        self.episode.status = status
        self.episode.stop_reason = stop_reason
        self.episode.error = error

    def _fail(self, error: str) -> None:
        self._stop("error", "error", error)

    def _remaining(self) -> float:
        return self.deadline - time.perf_counter()

    # -- one turn -------------------------------------------------------------------------------

    async def _generate(self, turn: int, prompt_ids: list[int] | None, max_new_tokens: int) -> Generation | None:
        """Await the policy within the episode's wall clock; None when the episode has stopped."""
        stop = list(dict.fromkeys([*self.sampling.stop, *(self.renderer.stop_strings if self.token_mode else [])]))
        request = GenerationRequest(
            sampling=replace(self.sampling, max_new_tokens=max_new_tokens, stop=stop),
            prompt_ids=list(prompt_ids) if prompt_ids is not None else None,
            messages=[m.to_openai() for m in self.episode.messages],
            tools=[t.to_openai() for t in self.tools],
            task=self.task,
            turn=turn,
            sample_index=self.episode.sample_index,
        )
        began = time.perf_counter()
        try:
            return await asyncio.wait_for(self.policy.generate(request), timeout=max(self._remaining(), 0.0))
        except TimeoutError as exc:
            if self._remaining() <= 0:
                self._stop("truncated", "timeout")
            else:
                self._fail(f"policy error: {type(exc).__name__}: {exc}")
            return None
        except Exception as exc:  # PolicyError or any bug in a policy: infrastructure, not a reward
            self._fail(f"policy error: {type(exc).__name__}: {exc}")
            return None
        finally:
            self.episode.timings.generation_s += time.perf_counter() - began

    def _parse(self, turn: int, generation: Generation, prompt_ids: list[int] | None) -> ParseResult | None:
        """Record the turn (token mode: ids and log-probs) and parse it; None on a policy contract break."""
        if self.token_mode:
            ids, logprobs = list(generation.completion_ids), list(generation.logprobs)
            if not ids:
                self._fail("policy error: token-mode policy returned no completion ids")
                return None
            if len(logprobs) != len(ids):
                self._fail(f"policy error: {len(logprobs)} logprobs for {len(ids)} completion ids")
                return None
            self.episode.token_turns.append(
                TokenTurn(
                    prompt_ids=list(prompt_ids or []),
                    completion_ids=ids,
                    logprobs=logprobs,
                    finish_reason=generation.finish_reason,
                )
            )
            parsed = self.parser.parse(self.renderer.decode(ids))
        elif generation.message is not None and generation.message.tool_calls:
            message = generation.message
            # A server's tool parser is not ours: its calls meet the same rules (finite numbers, valid
            # Unicode, bounded nesting), so an unsafe one is the model's format error, not a crash later.
            calls, errors = screen_calls(list(message.tool_calls or []))
            parsed = ParseResult(
                content=message.content or "", tool_calls=calls, errors=errors,
                reasoning=message.reasoning_content,
            )
        else:
            # A server without a tool parser hands back raw text: parse it like token mode does.
            text = generation.message.content if generation.message is not None else generation.text
            parsed = self.parser.parse(text or "")
            if generation.message is not None and generation.message.reasoning_content:
                parsed.reasoning = generation.message.reasoning_content
        parsed.tool_calls = [
            c if c.id else c.model_copy(update={"id": f"call_{turn}_{i}"}) for i, c in enumerate(parsed.tool_calls)
        ]
        return parsed

    def _call_tools(self, calls: list[ToolCall]) -> tuple[list[Message], bool]:
        """Run the calls in order; (tool messages, episode over). The done tool ends the episode."""
        results: list[Message] = []
        for call in calls:
            self.counts[call.name] += 1
            if self.done_tool and call.name == DONE_TOOL_NAME:
                self.episode.final_answer = answer_text(call.arguments.get("answer"))
                self._stop("ok", "done_tool")
                return results, True
            began = time.perf_counter()
            try:
                # A bad call (unknown tool, bad arguments, a tool failing on its input) is a tool error
                # result: the model's fault, shown to it and scored. Only EnvError, the environment
                # itself breaking, ends the episode as infrastructure (see envs/environment.py).
                result = self.env.call_tool(call.name, call.arguments)
            except EnvError as exc:
                self._fail(f"env error: {exc}")
                return results, True
            except Exception as exc:  # an environment that broke its contract: still infrastructure
                self._fail(f"env error: tool {call.name!r} raised {type(exc).__name__}: {exc}")
                return results, True
            finally:
                self.episode.timings.env_s += time.perf_counter() - began
            if result.is_error:
                self.episode.tool_errors += 1
            results.append(Message(role="tool", content=result.content, tool_call_id=call.id, name=call.name))
        return results, False

    async def _user_reply(self) -> tuple[str, UserTermination | None] | None:
        assert self.user_simulator is not None
        try:
            return await asyncio.wait_for(
                self.user_simulator.respond(list(self.episode.messages)), timeout=max(self._remaining(), 0.0)
            )
        except TimeoutError as exc:
            if self._remaining() <= 0:
                self._stop("truncated", "timeout")
            else:
                self._fail(f"user simulator error: {type(exc).__name__}: {exc}")
        except Exception as exc:
            self._fail(f"user simulator error: {type(exc).__name__}: {exc}")
        return None

    # -- the loop -------------------------------------------------------------------------------

    async def _score_progress(self) -> bool:
        """Score the state the turns so far left (turn_progress); False when it could not be scored."""
        if self.progress is None:
            return True
        began = time.perf_counter()
        turn = self.episode.turns
        try:
            if verifier_each_turn(self.task):  # a sandboxed process: keep the event loop free meanwhile
                await asyncio.to_thread(self.progress.score, turn, self.env)
            else:  # SQL over the episode's own small database
                self.progress.score(turn, self.env)
        except ProgressError as exc:
            self._fail(f"verifier error: progress after turn {turn}: {exc}")
            return False
        finally:
            self.episode.timings.verifier_s += time.perf_counter() - began
        return True

    def _finish_progress(self) -> None:
        """Record progress and flips, the last turn scored by the verdict itself."""
        if self.progress is None or self.episode.verdict is None or self.episode.status == "error":
            return
        try:
            self.episode.progress, self.episode.check_flips = self.progress.finish(self.episode.turns,
                                                                                   self.episode.verdict)
        except ProgressError as exc:
            self._fail(f"verifier error: progress: {exc}")

    async def run(self) -> Episode:
        try:
            await self._loop()
        except Exception as exc:  # a bug here must not crash the batch: count it as infrastructure
            self._fail(f"episode loop error: {type(exc).__name__}: {exc}")
        if self.episode.status != "error":
            await self._verify()
            self._finish_progress()
        episode = self.episode
        episode.tool_calls_by_tool = dict(self.counts)
        episode.samples = build_samples(episode.token_turns)
        episode.timings.total_s = time.perf_counter() - self.started
        return episode

    async def _verify(self) -> None:
        began = time.perf_counter()
        try:
            # Python verifiers run a sandboxed subprocess: keep the event loop free meanwhile.
            verdict = await asyncio.to_thread(verify_task, self.task, self.env, self.episode.final_answer)
        except Exception as exc:
            verdict = Verdict.failure(f"verifier crashed: {type(exc).__name__}: {exc}")
        self.episode.timings.verifier_s += time.perf_counter() - began
        self.episode.verdict = verdict
        if verdict.error is not None:
            self.episode.status = "error"
            self.episode.error = verdict.error

    async def _loop(self) -> None:
        episode, renderer = self.episode, self.renderer
        try:
            self.env.reset(self.task.env_variables)
        except Exception as exc:
            self._fail(f"env error: reset failed: {type(exc).__name__}: {exc}")
            return
        if self.user_simulator is not None:
            try:  # dual control: a simulator that acts on the device gets this episode's task and env
                self.user_simulator = bind_user_simulator(self.user_simulator, self.task, self.env)
            except Exception as exc:
                self._fail(f"user simulator error: {type(exc).__name__}: {exc}")
                return
        episode.messages = renderer.initial_messages(self.task, self.tools, self.env.policy)
        prompt_ids = renderer.prompt_ids(episode.messages, self.tools) if self.token_mode else None
        for turn in range(self.max_turns):
            if not await self._score_progress():  # the state the previous turn left (turn 0: the seed)
                return
            if self._remaining() <= 0:
                self._stop("truncated", "timeout")
                return
            max_new_tokens = self.sampling.max_new_tokens
            if prompt_ids is not None:
                room = self.max_context_tokens - len(prompt_ids)
                if room <= 0:
                    self._stop("truncated", "context")
                    return
                max_new_tokens = min(max_new_tokens, room)
            generation = await self._generate(turn, prompt_ids, max_new_tokens)
            if generation is None:
                return
            if generation.teacher_mistake is not None:
                episode.teacher_mistake = generation.teacher_mistake
            parsed = self._parse(turn, generation, prompt_ids)
            if parsed is None:
                return
            episode.turns += 1
            episode.messages.append(
                Message(
                    role="assistant",
                    content=parsed.content,
                    tool_calls=parsed.tool_calls or None,
                    reasoning_content=parsed.reasoning,
                )
            )
            if not parsed.tool_calls and generation.finish_reason == "length":
                # Cut off with nothing to run: name the limit that cut it.
                cut_by_budget = max_new_tokens < self.sampling.max_new_tokens
                self._stop("truncated", "context" if cut_by_budget else "max_tokens")
                return
            new_messages, over = self._call_tools(parsed.tool_calls)
            episode.messages.extend(new_messages)
            if over:
                return
            if parsed.errors:
                episode.format_errors += len(parsed.errors)
                # Token mode: a tool-response turn, like any result. Chat mode: a user message, since
                # OpenAI servers reject tool messages that answer no tool call.
                role = "tool" if self.token_mode else "user"
                feedback = Message(role=role, content=format_feedback(parsed.errors))
                new_messages.append(feedback)
                episode.messages.append(feedback)
                if self.max_format_errors is not None and episode.format_errors >= self.max_format_errors:
                    self._stop("truncated", "format_errors")
                    return
            if not new_messages:  # an answer: no call and nothing malformed
                if self.user_simulator is None:
                    episode.final_answer = parsed.content
                    self._stop("ok", "answer")
                    return
                reply = await self._user_reply()
                if reply is None:
                    return
                text, termination = reply
                user_message = Message(role="user", content=text)
                if termination is not None:
                    if text:
                        episode.messages.append(user_message)
                    episode.final_answer = parsed.content
                    episode.user_termination = MARKER_OF.get(termination, termination)
                    self._stop("ok", termination)
                    return
                new_messages = [user_message]
                episode.messages.append(user_message)
            if prompt_ids is not None:
                completion_ids = episode.token_turns[-1].completion_ids
                closing = [] if renderer.ends_turn(completion_ids) else renderer.turn_close_ids
                prompt_ids = [
                    *prompt_ids, *completion_ids, *closing, *renderer.observation_ids(new_messages, self.tools)
                ]
        self._stop("truncated", "max_turns")


async def run_episode(
    task: Task,
    env: Environment,
    policy: Policy,
    sampling: SamplingParams,
    *,
    sample_index: int = 0,
    renderer: Renderer | None = None,
    parser: ToolCallParser | None = None,
    limits: EpisodeLimits | None = None,
    user_simulator: UserSimulator | None = None,
) -> Episode:
    """Run one episode of `task` in `env` (reset here with the task's env_variables) and verify it.

    `limits` (None: the defaults) may be any config that holds them (EvalConfig, RolloutConfig, ...).
    Token mode: every turn's prompt + generation fits `limits.max_context_tokens` (capped by the
    tokenizer's `model_max_length`): a turn gets at most the room left, and an episode that runs
    out of room stops with stop_reason "context". Chat mode leaves context limits to the server.
    Never raises for a broken env, policy, simulator or verifier: those give `status="error"`.
    The caller owns `env` (it is left open, in its final state, for inspection).
    `limits.max_format_errors` ends the episode once that many malformed tool calls were answered with
    feedback (None: never; 1: the first malformed call ends it, as TRL's tool loop does).
    """
    run = _EpisodeRun(
        task, env, policy, sampling, sample_index=sample_index, renderer=renderer, parser=parser,
        limits=limits if limits is not None else EpisodeLimits(), user_simulator=user_simulator,
    )
    return await run.run()
