"""toolgym in TRL: SFT rows for `SFTTrainer`, and task sets as `GRPOTrainer(environment_factory=...)`.

SFT: `sft_rows(rows)` turns `toolgym data convert` rows into rows SFTTrainer renders to exactly toolgym's
tokens: tool schemas go to the template only in the full prompt style (as a JSON string, so Arrow does not
merge the schemas of different tools into one struct), thinking is off, and assistant messages keep their
`weight`, which the shipped template's `{% generation %}` markers honour (`weight: 0` is context only).

GRPO: `environment_factory(tasks)` gives one factory per environment (a dict when the tasks span several;
rows then name theirs in `environment`). An instance's `reset(**row)` starts the row's task on a fresh copy
of the seed, its public methods are the app's agent tools (signatures and Google docstrings built from the
tool schemas, so TRL renders and calls them), and `get_reward()` is toolgym's verdict on the final state, or
None (ignored by TRL, never a 0) when the environment or the verifier broke. `grpo_rows(tasks)` gives the
prompts toolgym's own rollouts use; `prepare_tokenizer` makes TRL render them (compact style: no schemas in
the template) and parse the calls toolgym's templates write.

TRL is an optional extra (`toolgym[bench]`); this module imports it only inside `prepare_tokenizer`.
"""

from __future__ import annotations

import functools
import inspect
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from toolgym.agent.episode import DONE_TOOL, answer_text
from toolgym.chat.render import DONE_TOOL_NAME, PROMPT_STYLES, PromptStyle, Renderer
from toolgym.data.convert import trainer_row
from toolgym.data.rows import iter_lines
from toolgym.envs import EnvError, Environment
from toolgym.envs.registry import make_env
from toolgym.schema import AnswerContains, Task, ToolSpec, Verdict
from toolgym.schema.jsonl import JsonlError
from toolgym.verify.task import verify_task

RewardField = Literal["reward", "partial_score"]
EnvFactory = Callable[[str], Environment]

# A template prefix that hides tool schemas from the template: compact prompts already list the tools in the
# system prompt, and TRL always hands its tools to `apply_chat_template`.
COMPACT_TEMPLATE_PREFIX = "{%- set tools = none %}\n"

# How transformers' `parse_response` reads a reply in toolgym's call format (ChatML, Hermes-style
# <tool_call> JSON blocks, no think blocks), for templates TRL does not recognise, like the shipped one.
RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}

FINISHED = "Error: the task is already finished (done was called); no further tool call runs."


# -- SFT rows ----------------------------------------------------------------------------------------------


def sft_rows(rows: Iterable[dict[str, Any]] | str | Path) -> list[dict[str, Any]]:
    """Rows of `toolgym data convert` (or the path of its JSONL) as SFTTrainer rows.

    `messages` as written (OpenAI dicts, `weight` kept), `tools` as a JSON string in the full prompt style
    and None in the compact one, `chat_template_kwargs` as toolgym renders (thinking off). Pass them to
    `datasets.Dataset.from_list`; with `assistant_only_loss=True` and a template with generation markers,
    the masks equal toolgym's (`toolgym.train.sft_data`).
    """
    if isinstance(rows, str | Path):
        rows = _read_rows(Path(rows))
    return [trainer_row(row) for row in rows]


def _read_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for _, row in iter_lines(path):
        if isinstance(row, JsonlError):
            raise ValueError(str(row))
        rows.append(row)
    return rows


# -- the tokenizer -----------------------------------------------------------------------------------------


def prepare_tokenizer(tokenizer: Any, prompt_style: PromptStyle) -> Any:
    """Make TRL render toolgym's prompts and parse its tool calls with this tokenizer (changed in place).

    Sets a response parser when the tokenizer has none: TRL's own for templates it knows (Qwen3, ...),
    else toolgym's call format. Compact style: the template stops rendering tool schemas.
    """
    if prompt_style not in PROMPT_STYLES:
        raise ValueError(f"prompt_style must be one of {', '.join(PROMPT_STYLES)}; got {prompt_style!r}")
    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        from trl.chat_template_utils import add_response_schema

        try:
            add_response_schema(tokenizer)
        except ValueError:  # a template TRL does not know, e.g. the shipped tiny model's
            tokenizer.response_template = RESPONSE_TEMPLATE
    template = tokenizer.chat_template
    if prompt_style == "compact" and isinstance(template, str) and not template.startswith(COMPACT_TEMPLATE_PREFIX):
        tokenizer.chat_template = COMPACT_TEMPLATE_PREFIX + template
    return tokenizer


# -- tools as typed methods --------------------------------------------------------------------------------

_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                               "object": dict}


def _type_hint(schema: dict[str, Any]) -> Any:
    """The Python hint whose JSON schema (transformers' `get_json_schema`) is closest to `schema`."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(type(v) in (str, int, float, bool) for v in enum):
        return Literal[tuple(enum)]
    choices = schema.get("anyOf")
    if isinstance(choices, list) and choices and all(isinstance(c, dict) for c in choices):
        return functools.reduce(operator.or_, [_type_hint(c) for c in choices])
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    items = schema.get("items")
    if kind == "array" and isinstance(items, dict) and items:
        return list[_type_hint(items)]  # type: ignore[misc]
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def tool_method(spec: ToolSpec) -> Callable[..., str]:
    """A method named after the tool, with its parameters as typed keyword arguments and a Google docstring.

    TRL renders a tool's schema from exactly these (transformers' `get_json_schema`) and calls it with the
    parsed arguments; unknown ones still reach the tool, which answers with toolgym's own readable error.
    """
    properties: dict[str, Any] = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required") or [])
    names = list(properties)  # keyword-only, so the schema's own order (required or not) is kept
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for name in names:
        hint = _type_hint(properties[name])
        annotations[name] = hint
        default = inspect.Parameter.empty if name in required else None
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
    doc = _one_line(spec.description or spec.name)
    if names:
        doc += "\n\nArgs:\n" + "\n".join(
            f"    {name}: {_one_line(properties[name].get('description') or name)}" for name in names)
    tool_name = spec.name

    def method(self: ToolgymEnvironment, **arguments: Any) -> str:
        return self._call_tool(tool_name, arguments)

    method.__name__ = method.__qualname__ = tool_name
    method.__doc__ = doc
    method.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    return method


# -- the environment ---------------------------------------------------------------------------------------


class ToolgymEnvironment:
    """One toolgym environment per instance (TRL pools and resets them); subclasses add the tool methods.

    State is kept in underscore attributes: TRL offers every public method of the class as a tool.
    """

    _env_name: ClassVar[str] = ""
    _env_factory: ClassVar[EnvFactory] = staticmethod(make_env)
    _done_tool: ClassVar[bool] = True

    def __init__(self, tasks: Mapping[str, Task] | None = None, reward: RewardField = "reward") -> None:
        self._env = type(self)._env_factory(self._env_name)
        self._tasks = dict(tasks or {})
        self._reward_field: RewardField = reward
        self._task: Task | None = None
        self._final_answer: str | None = None
        self._finished = False
        self._infra_error: str | None = None
        self._verdict: Verdict | None = None

    def reset(self, **row: Any) -> None:
        """Start the row's task (its `task_id`, or a `task` JSON) on a fresh copy of the seed."""
        task = self._task_of(row)
        if task.env != self._env.name:
            raise ValueError(f"task {task.id!r} runs in {task.env!r}, not in this {self._env.name!r} environment")
        self._env.reset(task.env_variables)
        self._task, self._final_answer, self._finished = task, None, False
        self._infra_error, self._verdict = None, None

    def _task_of(self, row: Mapping[str, Any]) -> Task:
        given = row.get("task")
        if isinstance(given, str) and given:
            return Task.model_validate_json(given)
        if isinstance(given, dict):
            return Task.model_validate(given)
        task_id = row.get("task_id")
        if task_id not in self._tasks:
            raise KeyError(f"row names task {task_id!r}, which this environment factory was not given")
        return self._tasks[task_id]

    def _call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        if self._task is None:
            raise RuntimeError("reset() the environment to a task before calling its tools")
        if self._finished:
            return FINISHED
        # Parameters the model left out arrive as None (the signature's default): the tool's own default applies.
        given = {k: v for k, v in arguments.items() if v is not None}
        if name == DONE_TOOL_NAME and self._done_tool:
            self._final_answer, self._finished = answer_text(given.get("answer")), True
            return "Done."
        try:
            return self._env.call_tool(name, given).content
        except EnvError as exc:  # infrastructure, not the model: the episode gets no reward at all
            self._infra_error = str(exc)
            raise

    def get_reward(self) -> float | None:
        """toolgym's verdict on the final state (and the `done` answer); None when it cannot be trusted."""
        if self._task is None or self._infra_error is not None:
            return None
        self._verdict = verify_task(self._task, self._env, self._final_answer)
        if self._verdict.error is not None:
            return None
        return float(getattr(self._verdict, self._reward_field))


@functools.cache
def environment_class(env_name: str, done_tool: bool = True, env_factory: EnvFactory = make_env
                      ) -> type[ToolgymEnvironment]:
    """The ToolgymEnvironment subclass of one environment ("mail" or "mail+drive"), its tools as methods."""
    probe = env_factory(env_name)
    try:
        specs = probe.tool_specs("agent")
    finally:
        probe.close()
    if done_tool:
        specs = [*specs, DONE_TOOL]
    namespace: dict[str, Any] = {}
    for spec in specs:
        if spec.name.startswith("_") or hasattr(ToolgymEnvironment, spec.name) or spec.name in namespace:
            raise ValueError(f"tool {spec.name!r} of {env_name!r} cannot be a method of a TRL environment")
        namespace[spec.name] = tool_method(spec)
    namespace.update(_env_name=env_name, _env_factory=staticmethod(env_factory), _done_tool=done_tool,
                     __module__=__name__, __doc__=f"toolgym environment {env_name!r} for TRL's environment_factory.")
    return type("Toolgym_" + re.sub(r"\W", "_", env_name), (ToolgymEnvironment,), namespace)


@dataclass(eq=False)
class EnvironmentFactory:
    """What TRL calls to make an environment instance: picklable (tasks travel by value, the class is
    rebuilt on first use in a new process)."""

    env_name: str
    tasks: tuple[Task, ...] = ()
    done_tool: bool = True
    reward: RewardField = "reward"
    env_factory: EnvFactory = field(default=make_env)

    def __call__(self) -> ToolgymEnvironment:
        cls = environment_class(self.env_name, self.done_tool, self.env_factory)
        return cls({t.id: t for t in self.tasks}, reward=self.reward)


def _check_tasks(tasks: Sequence[Task], done_tool: bool) -> list[str]:
    """The tasks' environment names, first-seen order; refuses what TRL's tool loop cannot run or score."""
    if not tasks:
        raise ValueError("no tasks")
    for task in tasks:
        if task.user_scenario is not None:
            raise ValueError(f"task {task.id!r} needs a simulated user; TRL's tool loop has none")
        needs_answer = task.expected_answer is not None or any(isinstance(c, AnswerContains) for c in task.checks)
        if needs_answer and not done_tool:
            raise ValueError(f"task {task.id!r} checks the final answer, which get_reward() only sees through the "
                             "done tool: use done_tool=True")
    return list(dict.fromkeys(t.env for t in tasks))


def environment_factory(tasks: Sequence[Task], *, done_tool: bool = True, reward: RewardField = "reward",
                        env_factory: EnvFactory = make_env) -> EnvironmentFactory | dict[str, EnvironmentFactory]:
    """TRL's `environment_factory` for a task set: one factory, or one per environment name when the tasks
    span several (then `grpo_rows` names each row's in `environment`, as TRL's multi-environment mode reads)."""
    envs = _check_tasks(tasks, done_tool)
    factories = {
        name: EnvironmentFactory(name, tuple(t for t in tasks if t.env == name), done_tool, reward, env_factory)
        for name in envs
    }
    return factories[envs[0]] if len(envs) == 1 else factories


def grpo_rows(tasks: Sequence[Task], prompt_style: PromptStyle, *, done_tool: bool = True,
              env_factory: EnvFactory = make_env) -> list[dict[str, Any]]:
    """GRPOTrainer rows: `prompt` (toolgym's system and user messages in `prompt_style`), `task_id`, and
    `environment` when the tasks span several environments."""
    envs = _check_tasks(tasks, done_tool)
    renderer = Renderer(None, prompt_style=prompt_style)
    built = {name: env_factory(name) for name in envs}
    try:
        rows = []
        for task in tasks:
            env = built[task.env]
            tools = env.tool_specs("agent") + ([DONE_TOOL] if done_tool else [])
            messages = renderer.initial_messages(task, tools, env.policy)
            row: dict[str, Any] = {"prompt": [{"role": m.role, "content": m.content} for m in messages],
                                   "task_id": task.id}
            if len(envs) > 1:
                row["environment"] = task.env
            rows.append(row)
        return rows
    finally:
        for env in built.values():
            env.close()
