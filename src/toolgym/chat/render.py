"""Prompts through the tokenizer's own chat template: first-turn ids and per-turn observation deltas.

Token-in/token-out: after the first turn the history is never rendered again. Each later prompt is
the previous prompt + the sampled ids + `observation_ids(new messages)`, so training sees exactly
what the sampler saw (docs/architecture.md, "token-in/token-out"), whatever the template does to old turns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, cast

from toolgym.schema import Message, Task, ToolSpec
from toolgym.schema.documents import read_json

PromptStyle = Literal["full", "compact"]
PROMPT_STYLES: tuple[PromptStyle, ...] = ("full", "compact")
MODEL_CONFIG_FILE = "toolgym.json"
DONE_TOOL_NAME = "done"

# ChatML (Qwen, the tiny model): a turn ends with <|im_end|>; <|endoftext|> ends a document.
CHATML_TURN_END = "<|im_end|>"
CHATML_STOP_STRINGS = ("<|im_end|>", "<|endoftext|>")

# The exact call format the templates render, so compact prompts teach what SFT rows show.
CALL_FORMAT = '<tool_call>\n{"name": "NAME", "arguments": {ARGS}}\n</tool_call>'

_DELTA_USER = "toolgym-delta-user"
_DELTA_MARKER = "toolgym-delta-assistant-7f3a"
_KNOWN_VARIABLES = ("CURRENT_DATE", "LOGGED_IN_USER", "LOGGED_IN_NAME")

MessageLike = Message | dict[str, Any]


class RenderError(RuntimeError):
    """The chat template cannot produce what the episode loop needs (a bug in the template or setup)."""


def read_model_config(model_dir: str | Path | None) -> dict[str, Any]:
    """`toolgym.json` beside a model's weights, or {} when there is none."""
    if model_dir is None or not str(model_dir):
        return {}
    path = Path(model_dir) / MODEL_CONFIG_FILE
    if not path.is_file():
        return {}
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def load_prompt_style(model_dir: str | Path | None) -> PromptStyle:
    """The prompt style a model was built for (`toolgym.json`), "full" for any other model."""
    style = read_model_config(model_dir).get("prompt_style", "full")
    if style not in PROMPT_STYLES:
        raise ValueError(
            f"{Path(str(model_dir)) / MODEL_CONFIG_FILE}: field 'prompt_style' must be one of "
            f"{', '.join(PROMPT_STYLES)}; got {style!r}"
        )
    return cast(PromptStyle, style)


def _weekday(date_text: str) -> str | None:
    try:
        return dt.date.fromisoformat(date_text[:10]).strftime("%A")
    except ValueError:
        return None


def runtime_context_lines(env_variables: dict[str, str], prompt_style: PromptStyle) -> list[str]:
    """The task's env_variables as prompt lines: only what the task provides, nothing invented."""
    lines: list[str] = []
    date = env_variables.get("CURRENT_DATE")
    user = env_variables.get("LOGGED_IN_USER")
    name = env_variables.get("LOGGED_IN_NAME")
    weekday = _weekday(date) if date else None
    who = f"{user} ({name})" if user and name else (user or name)
    if prompt_style == "compact":
        if date:
            lines.append(f"Today is {weekday}, {date}." if weekday else f"Today is {date}.")
        if who:
            lines.append(f"You act for {who}.")
    else:
        if date:
            lines.append(f"Current date: {date} ({weekday})" if weekday else f"Current date: {date}")
        if user:
            lines.append(f"Logged-in user: {who}")
        elif name:
            lines.append(f"Logged-in user name: {name}")
    for key, value in env_variables.items():
        if key not in _KNOWN_VARIABLES:
            lines.append(f"{key}: {value}")
    return lines


def system_prompt(
    policy_text: str, env_variables: dict[str, str], tools: Sequence[ToolSpec], prompt_style: PromptStyle
) -> str:
    """App policy + runtime context (+ compact style: one-line tool signatures and the call format)."""
    has_done = any(t.name == DONE_TOOL_NAME for t in tools)
    context = runtime_context_lines(env_variables, prompt_style)
    if prompt_style == "compact":
        # Everything that is the same for all tasks of an app comes first and the per-task context
        # (date, user) last, so batched rollouts and training share the longest possible prefix.
        parts = [policy_text.strip()]
        if tools:
            parts.append("Tools:")
            parts.extend(t.signature() for t in tools)
            parts.append("Call a tool with:\n" + CALL_FORMAT)
        parts.append(
            f"When done, call {DONE_TOOL_NAME} with your answer."
            if has_done
            else "When done, reply with the answer and no tool call."
        )
        parts.extend(context)
        return "\n".join(p for p in parts if p)
    sections = [policy_text.strip()]
    if context:
        sections.append("# Context\n" + "\n".join(context))
    sections.append(
        "Each reply either calls tools or, when the task is complete, "
        + (f"calls `{DONE_TOOL_NAME}` with the final answer." if has_done else "gives the final answer with no tool call.")
    )
    return "\n\n".join(s for s in sections if s)


def _as_dict(message: MessageLike) -> dict[str, Any]:
    return message.to_openai() if isinstance(message, Message) else dict(message)


class Renderer:
    """Renders one model family's prompts with the tokenizer's own chat template.

    `tokenizer` may be None for chat-mode policies: then only `initial_messages` is available.
    """

    def __init__(self, tokenizer: Any, prompt_style: PromptStyle = "full", enable_thinking: bool = False) -> None:
        if prompt_style not in PROMPT_STYLES:
            raise ValueError(f"prompt_style must be one of {', '.join(PROMPT_STYLES)}; got {prompt_style!r}")
        self.tokenizer = tokenizer
        self.prompt_style: PromptStyle = prompt_style
        self.enable_thinking = enable_thinking
        self.turn_end = CHATML_TURN_END
        self.stop_strings: list[str] = []
        self.stop_token_ids: list[int] = []
        self.turn_close_ids: list[int] = []
        if tokenizer is None:
            return
        if getattr(tokenizer, "chat_template", None) is None:
            raise RenderError(f"tokenizer {getattr(tokenizer, 'name_or_path', '?')!r} has no chat template")
        vocab = tokenizer.get_vocab()
        if CHATML_TURN_END in vocab:
            self.stop_strings = [s for s in CHATML_STOP_STRINGS if s in vocab]
        elif tokenizer.eos_token:
            self.turn_end = tokenizer.eos_token
            self.stop_strings = [tokenizer.eos_token]
        else:
            raise RenderError("tokenizer has neither <|im_end|> nor an eos token: cannot tell where a turn ends")
        self.stop_token_ids = [vocab[s] for s in self.stop_strings]
        self.turn_close_ids = self.encode(self.turn_end)

    # -- messages -------------------------------------------------------------------------------

    def initial_messages(self, task: Task, tools: Sequence[ToolSpec], policy_text: str) -> list[Message]:
        """System prompt (policy, runtime context, compact: tools + call format) and the user prompt."""
        opening = task.user_scenario.opening_message if task.user_scenario else None
        return [
            Message(role="system", content=system_prompt(policy_text, task.env_variables, tools, self.prompt_style)),
            Message(role="user", content=opening or task.prompt),
        ]

    def template_tools(self, tools: Sequence[ToolSpec] | None) -> list[dict[str, Any]] | None:
        """Full style hands the OpenAI schemas to the template; compact style already lists them."""
        if self.prompt_style == "compact" or not tools:
            return None
        return [t.to_openai() for t in tools]

    # -- tokens ---------------------------------------------------------------------------------

    def _require_tokenizer(self) -> Any:
        if self.tokenizer is None:
            raise RenderError("this Renderer has no tokenizer (chat mode): token ids cannot be rendered")
        return self.tokenizer

    def render_text(
        self, messages: Sequence[MessageLike], tools: Sequence[ToolSpec] | None, add_generation_prompt: bool
    ) -> str:
        """The template's text for `messages` (for the first turn, tests and SFT; never for history)."""
        tokenizer = self._require_tokenizer()
        return cast(
            str,
            tokenizer.apply_chat_template(
                [_as_dict(m) for m in messages],
                tools=self.template_tools(tools),
                add_generation_prompt=add_generation_prompt,
                tokenize=False,
                enable_thinking=self.enable_thinking,
            ),
        )

    def encode(self, text: str) -> list[int]:
        """Ids of rendered text; special tokens are already written out by the template."""
        return list(self._require_tokenizer()(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        """Text of sampled ids with every token kept (stop tokens included), for parsing."""
        return cast(str, self._require_tokenizer().decode(list(ids), skip_special_tokens=False))

    def prompt_ids(self, messages: Sequence[MessageLike], tools: Sequence[ToolSpec] | None) -> list[int]:
        """The first turn's prompt, with the generation prompt appended."""
        return self.encode(self.render_text(messages, tools, add_generation_prompt=True))

    def observation_text(self, new_messages: Sequence[MessageLike], tools: Sequence[ToolSpec] | None) -> str:
        """What the template writes after a closed assistant turn for `new_messages` + generation prompt.

        Rendered as a delta behind a dummy user/assistant pair: the text after the dummy assistant's
        turn end (so it starts with ChatML's newline after <|im_end|>). The dummy assistant carries
        calls matching the new tool messages, for templates that check call ids.
        """
        if not new_messages:
            raise RenderError("observation_ids needs at least one new message")
        new = [_as_dict(m) for m in new_messages]
        dummy_calls = [
            {
                "id": m.get("tool_call_id") or f"call_{i}",
                "type": "function",
                "function": {"name": m.get("name") or "tool", "arguments": "{}"},
            }
            for i, m in enumerate(new)
            if m.get("role") == "tool"
        ]
        dummy_assistant: dict[str, Any] = {"role": "assistant", "content": _DELTA_MARKER}
        if dummy_calls:
            dummy_assistant["tool_calls"] = dummy_calls
        text = self.render_text([{"role": "user", "content": _DELTA_USER}, dummy_assistant, *new], tools, True)
        marker_at = text.find(_DELTA_MARKER)
        if marker_at < 0:
            raise RenderError("the chat template dropped the assistant turn content; cannot render an observation delta")
        end_at = text.find(self.turn_end, marker_at + len(_DELTA_MARKER))
        if end_at < 0:
            raise RenderError(f"the chat template does not close assistant turns with {self.turn_end!r}")
        delta = text[end_at + len(self.turn_end) :]
        if not delta:
            raise RenderError("the chat template rendered nothing for the new messages")
        return delta

    def observation_ids(self, new_messages: Sequence[MessageLike], tools: Sequence[ToolSpec] | None) -> list[int]:
        """Ids to append after a finished assistant turn (its ids end with the stop token)."""
        return self.encode(self.observation_text(new_messages, tools))

    def ends_turn(self, completion_ids: Sequence[int]) -> bool:
        """Whether sampled ids already close the turn (else the loop appends `turn_close_ids`)."""
        return bool(completion_ids) and completion_ids[-1] in self.stop_token_ids
