"""An imperfect teacher: the reference solution, played with the mistakes real API teachers make.

Teachers are imperfect, and the SFT → RFT → GRPO pipeline exists because of it: SFT imitates the
teacher's mistakes too, RFT keeps only what succeeded, GRPO reinforces the right side of a choice.
Each episode draws at most one mistake kind from the configured rates (seeded by the teacher's seed,
the task id and the sample index, so a rerun plays the same episodes):

- `premature_done`: stops before the final write and answers as if it were done;
- `wrong_choice`: picks another candidate that an earlier lookup returned (and uses it throughout);
- `skipped_lookup`: skips a lookup and guesses the argument that lookup would have given;
- `wrong_format`: writes an argument of a write call in another format (a date as MM/DD/YYYY, an id
  as "#12").

A mistake is only played where it changes the outcome: each candidate is replayed in a fresh
environment and kept only if the task's own verifier then fails, so the configured rate of a kind
is the rate at which the teacher fails that way on the tasks where the kind applies. Where the drawn
kind does not apply, the episode is played without a mistake. The kind is recorded on every
generation (`Generation.teacher_mistake`) and from there in the episode's row.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolgym.envs import EnvError, make_env
from toolgym.policy.base import Generation, GenerationRequest, Policy, PolicyError
from toolgym.policy.oracle import FALLBACK_ANSWER, hermes_text
from toolgym.schema import Message, Task, ToolCall
from toolgym.verify import verify_task

MistakeKind = Literal["premature_done", "wrong_choice", "skipped_lookup", "wrong_format"]
MISTAKE_KINDS: tuple[str, ...] = get_args(MistakeKind)
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


class TeacherMistakes(BaseModel):
    """How often the imperfect teacher makes each mistake: a probability per episode, summing to ≤ 1."""

    model_config = ConfigDict(extra="forbid")

    rates: dict[MistakeKind, float] = Field(default_factory=dict)
    seed: int = 0

    @model_validator(mode="after")
    def _rates_are_probabilities(self) -> TeacherMistakes:
        for kind, rate in self.rates.items():
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"rates.{kind}: {rate} is not a probability in [0, 1]")
        if sum(self.rates.values()) > 1.0 + 1e-9:
            raise ValueError(f"rates sum to {sum(self.rates.values()):g}; an episode makes at most one mistake (≤ 1)")
        return self

    @classmethod
    def parse_spec(cls, text: str) -> TeacherMistakes:
        """`premature_done=0.2,wrong_choice=0.1[,seed=3]`, the form the `imperfect:` policy spec takes."""
        rates: dict[str, float] = {}
        seed = 0
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            if not sep:
                raise ValueError(f"imperfect teacher: {part!r} is not KIND=RATE (kinds: {', '.join(MISTAKE_KINDS)})")
            try:
                if key == "seed":
                    seed = int(value)
                else:
                    rates[key] = float(value)
            except ValueError:
                raise ValueError(f"imperfect teacher: {part!r}: {value!r} is not a number") from None
            if key != "seed" and key not in MISTAKE_KINDS:
                raise ValueError(f"imperfect teacher: unknown mistake {key!r}; use {', '.join(MISTAKE_KINDS)}")
        return cls.model_validate({"rates": rates, "seed": seed})


@dataclass(frozen=True)
class PlayedMistake:
    """The calls a teacher makes instead of the reference solution, and the mistake they contain."""

    kind: str
    calls: tuple[ToolCall, ...]


def _scalar_values(value: Any) -> list[Any]:
    """Every str/int leaf of a JSON value (bools excluded: they are flags, not ids)."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _scalar_values(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _scalar_values(v)]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return []
    return [value]


def _candidate_lists(value: Any) -> list[list[dict[str, Any]]]:
    """Lists of records anywhere in a JSON value: where a lookup returns candidates to choose from."""
    found: list[list[dict[str, Any]]] = []
    if isinstance(value, list):
        records = [v for v in value if isinstance(v, dict)]
        if len(records) >= 2:
            found.append(records)
        for v in value:
            found.extend(_candidate_lists(v))
    elif isinstance(value, dict):
        for v in value.values():
            found.extend(_candidate_lists(v))
    return found


def _parse(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return None


def _substitute(calls: list[ToolCall], start: int, old: Any, new: Any) -> list[ToolCall]:
    """Calls from `start` on use `new` wherever the reference used `old` (a wrong entity is used throughout)."""
    changed = list(calls)
    for index in range(start, len(calls)):
        arguments = {k: (new if v == old and type(v) is type(old) else v) for k, v in calls[index].arguments.items()}
        changed[index] = ToolCall(name=calls[index].name, arguments=arguments, id=calls[index].id)
    return changed


def _guess(value: Any) -> Any:
    """What a teacher that skipped the lookup writes instead: the next id, or the value cut short."""
    if isinstance(value, int):
        return value + 1
    words = value.split()
    return " ".join(words[:-1]) if len(words) > 1 else value[: max(1, len(value) // 2)]


def _reformat(value: Any) -> Any | None:
    """The same value in another format, or None where no plausible other format exists."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"#{value}"
    if isinstance(value, str) and (match := _DATE.match(value)):
        year, month, day = match.groups()
        return f"{month}/{day}/{year}"
    return None


class _Replay:
    """The reference solution played once in a fresh environment: results, write indices, verdicts."""

    def __init__(self, task: Task) -> None:
        self.task = task
        env = make_env(task.env)
        try:
            env.reset(task.env_variables)
            self.agent_only = not env.tool_specs("user")
            self.results: list[Any] = []
            self.writes: list[int] = []
            changes = env.diff()
            for index, call in enumerate(task.reference_solution):
                self.results.append(_parse(env.call_tool(call.name, call.arguments).content))
                now = env.diff()
                if now != changes:
                    self.writes.append(index)
                changes = now
        finally:
            env.close()

    def fails(self, calls: list[ToolCall]) -> bool:
        """Whether playing `calls` then the expected answer fails the task's verifier (not errors it)."""
        env = make_env(self.task.env)
        try:
            env.reset(self.task.env_variables)
            for call in calls:
                env.call_tool(call.name, call.arguments)
            verdict = verify_task(self.task, env, self.task.expected_answer)
        except EnvError:
            return False
        finally:
            env.close()
        return verdict.error is None and not verdict.passed


def _premature_done(replay: _Replay, reference: list[ToolCall]) -> list[list[ToolCall]]:
    return [reference[: replay.writes[-1]]] if replay.writes else []


def _wrong_choice(replay: _Replay, reference: list[ToolCall]) -> list[list[ToolCall]]:
    options: list[list[ToolCall]] = []
    for later, call in enumerate(reference):
        for value in call.arguments.values():
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                continue
            for result in replay.results[:later]:
                for records in _candidate_lists(result):
                    keys = [k for r in records for k, v in r.items() if v == value and type(v) is type(value)]
                    if not keys:
                        continue
                    others = [r.get(keys[0]) for r in records]
                    for other in dict.fromkeys(o for o in others if o != value and type(o) is type(value)):
                        options.append(_substitute(reference, later, value, other))
    return options


def _skipped_lookup(replay: _Replay, reference: list[ToolCall]) -> list[list[ToolCall]]:
    options: list[list[ToolCall]] = []
    prompt = replay.task.prompt
    for lookup, result in enumerate(replay.results):
        if lookup in replay.writes:
            continue
        returned = set(map(repr, _scalar_values(result)))
        for later in range(lookup + 1, len(reference)):
            for value in reference[later].arguments.values():
                if isinstance(value, bool) or not isinstance(value, (str, int)) or repr(value) not in returned:
                    continue
                if str(value) in prompt:
                    continue  # the request names it: nothing to guess
                rest = _substitute(reference, later, value, _guess(value))
                options.append(rest[:lookup] + rest[lookup + 1:])
    return options


def _wrong_format(replay: _Replay, reference: list[ToolCall]) -> list[list[ToolCall]]:
    options: list[list[ToolCall]] = []
    for write in reversed(replay.writes):
        call = reference[write]
        for key, value in call.arguments.items():
            other = _reformat(value)
            if other is not None:
                changed = list(reference)
                changed[write] = ToolCall(name=call.name, arguments={**call.arguments, key: other}, id=call.id)
                options.append(changed)
    return options


_CANDIDATES = {
    "premature_done": _premature_done,
    "wrong_choice": _wrong_choice,
    "skipped_lookup": _skipped_lookup,
    "wrong_format": _wrong_format,
}


def mistake_options(task: Task) -> dict[str, list[list[ToolCall]]]:
    """For each mistake kind, the call sequences that make it and fail the task (empty: does not apply)."""
    reference = list(task.reference_solution)
    replay = _Replay(task)
    if not replay.agent_only:
        return {kind: [] for kind in MISTAKE_KINDS}  # dual control: the instructing oracle's turns are not replayed here
    options: dict[str, list[list[ToolCall]]] = {}
    for kind in MISTAKE_KINDS:
        seen: set[str] = set()
        kept: list[list[ToolCall]] = []
        for calls in _CANDIDATES[kind](replay, reference):
            key = json.dumps([[c.name, c.arguments] for c in calls], sort_keys=True, default=str)
            if key not in seen and len(kept) < 8:
                seen.add(key)
                if replay.fails(calls):
                    kept.append(calls)
        options[kind] = kept
    return options


class ImperfectTeacherPolicy(Policy):
    """Plays each episode's drawn mistake, or the plain reference solution through `perfect`."""

    name = "imperfect-teacher"
    checkpoint = None
    tokenizer = None

    def __init__(self, mistakes: TeacherMistakes, perfect: Policy) -> None:
        self.mistakes = mistakes
        self.perfect = perfect
        self.prompt_style = getattr(perfect, "prompt_style", None)
        self._options: dict[str, dict[str, list[list[ToolCall]]]] = {}

    def draw(self, task: Task, sample_index: int) -> PlayedMistake | None:
        """The episode's mistake: one uniform draw against the cumulative rates, then one of its variants."""
        digest = hashlib.sha256(f"{self.mistakes.seed}\0{task.id}\0{sample_index}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        u = rng.random()
        chosen: str | None = None
        for kind in MISTAKE_KINDS:
            u -= self.mistakes.rates.get(kind, 0.0)  # type: ignore[call-overload]
            if u < 0:
                chosen = kind
                break
        if chosen is None:
            return None
        if task.id not in self._options:
            self._options[task.id] = mistake_options(task)
        variants = self._options[task.id][chosen]
        return PlayedMistake(chosen, tuple(rng.choice(variants))) if variants else None

    async def generate(self, request: GenerationRequest) -> Generation:
        task = request.task
        if task is None or request.messages is None:
            raise PolicyError("the imperfect teacher needs the task and the chat messages of the request")
        mistake = self.draw(task, request.sample_index)
        if mistake is None:
            return await self.perfect.generate(request)
        made = sum(len(m.get("tool_calls") or []) for m in request.messages if m.get("role") == "assistant")
        if made < len(mistake.calls):
            reference = mistake.calls[made]
            call = ToolCall(name=reference.name, arguments=dict(reference.arguments), id=f"call_{made}")
            return Generation(text=hermes_text(call), message=Message(role="assistant", content="", tool_calls=[call]),
                              teacher_mistake=mistake.kind)
        answer = task.expected_answer or FALLBACK_ANSWER
        return Generation(text=answer, message=Message(role="assistant", content=answer), teacher_mistake=mistake.kind)

    async def close(self) -> None:
        await self.perfect.close()
