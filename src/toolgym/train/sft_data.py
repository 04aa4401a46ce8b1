"""SFT rows → training samples whose loss mask is 1 exactly on what the assistant produces.

Rows with `token_samples` (token-mode rollouts) are used as they are: the sampler's exact ids and
masks. Rows without them (teacher trajectories) are rendered through the model's own chat template
and prompt style, and turned into the same TokenTurns a token-mode rollout records, so the masks
come from the one masking rule in `toolgym.agent.samples.build_samples` (no second copy here):

- an assistant turn's ids are the template's text for it after its generation prompt, up to and
  including the turn's end token (`<|im_end|>`): content, tool calls and the stop token are trained;
  the role header `<|im_start|>assistant\\n` (and a template's empty `<think></think>` generation
  prefix) belong to the prompt and are not;
- `render_mode="rollout"` (default) builds later prompts exactly like the episode loop: previous
  prompt + assistant ids + `Renderer.observation_ids(new messages)`. History is never re-rendered,
  so one conversation is one sample, identical to what the model sees in toolgym's own rollouts;
- `render_mode="template"` renders every turn's prompt from the full history, as a server that
  re-renders each request does (vLLM chat completions). Where the template rewrites history (Qwen3
  drops earlier `<think>` blocks) the prompt no longer extends the previous sample and
  `build_samples` starts a new one, so no token is trained in a form the model never saw.

Assistant messages with `"weight": 0` stay in the context and are not trained.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolgym.agent.samples import build_samples
from toolgym.chat.render import Renderer, RenderError
from toolgym.data.rows import WEIGHT_FIELD, iter_lines, row_kind
from toolgym.data.validate import check_sft_row
from toolgym.schema import Message, TokenTurn, ToolSpec, TrainingSample
from toolgym.schema.jsonl import JsonlError

RenderMode = Literal["rollout", "template"]
RENDER_MODES: tuple[RenderMode, ...] = ("rollout", "template")
TokenSampleUse = Literal["auto", "always", "never"]
TOKEN_SAMPLE_USES: tuple[TokenSampleUse, ...] = ("auto", "always", "never")


class SFTDataError(ValueError):
    """A row that cannot become training samples; the message names file, line and message index."""


def _normalized(messages: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[bool]]:
    """Messages as the rollout writes them (tool-call arguments re-encoded the same way) + trained flags."""
    out: list[dict[str, Any]] = []
    trained: list[bool] = []
    for index, message in enumerate(messages):
        try:
            out.append(Message.from_openai(message).to_openai())
        except (KeyError, TypeError, ValueError) as exc:
            raise SFTDataError(f"messages[{index}]: {exc}") from exc
        trained.append(message.get("role") == "assistant" and message.get(WEIGHT_FIELD, 1) != 0)
    return out, trained


def assistant_text(renderer: Renderer, history: Sequence[dict[str, Any]], message: dict[str, Any],
                   tools: Sequence[ToolSpec] | None) -> str:
    """What the template writes for `message` after `history`'s generation prompt, through the turn end."""
    prompt = renderer.render_text(history, tools, add_generation_prompt=True)
    full = renderer.render_text([*history, message], tools, add_generation_prompt=False)
    if not full.startswith(prompt):
        raise SFTDataError(
            "the chat template does not render this assistant turn after its own generation prompt "
            "(does the message carry reasoning_content while thinking is off?)"
        )
    text = full[len(prompt):]
    end = text.rfind(renderer.turn_end)
    if end < 0:
        raise SFTDataError(f"the chat template does not close the assistant turn with {renderer.turn_end!r}")
    return text[: end + len(renderer.turn_end)]


def _next_assistant(messages: Sequence[dict[str, Any]], after: int) -> int | None:
    return next((i for i in range(after + 1, len(messages)) if messages[i]["role"] == "assistant"), None)


def conversation_turns(renderer: Renderer, messages: Sequence[dict[str, Any]], tools: Sequence[ToolSpec] | None,
                       trained: Sequence[bool], render_mode: RenderMode = "rollout") -> list[TokenTurn]:
    """One TokenTurn per trained assistant message, with the prompt the model sees before it."""
    if render_mode not in RENDER_MODES:
        raise ValueError(f"render mode must be one of {', '.join(RENDER_MODES)}; got {render_mode!r}")
    index = _next_assistant(messages, -1)
    if index is None:
        raise SFTDataError("no assistant message")
    if index == 0:
        raise SFTDataError("messages[0] is an assistant message: there is no prompt before it")
    turns: list[TokenTurn] = []
    prompt = renderer.prompt_ids(messages[:index], tools)
    while index is not None:
        if render_mode == "template":
            prompt = renderer.prompt_ids(messages[:index], tools)
        try:
            completion = renderer.encode(assistant_text(renderer, messages[:index], messages[index], tools))
        except SFTDataError as exc:
            raise SFTDataError(f"messages[{index}]: {exc}") from exc
        if trained[index]:
            turns.append(TokenTurn(prompt_ids=list(prompt), completion_ids=completion, logprobs=[0.0] * len(completion)))
        following = _next_assistant(messages, index)
        if following is None:
            break
        if render_mode == "rollout":
            new = messages[index + 1 : following]
            if not new:
                raise SFTDataError(f"messages[{index}] and messages[{following}] are consecutive assistant messages; "
                                   "the episode loop never writes that (use render mode 'template')")
            closing = [] if renderer.ends_turn(completion) else renderer.turn_close_ids
            try:
                prompt = [*prompt, *completion, *closing, *renderer.observation_ids(new, tools)]
            except RenderError as exc:
                raise SFTDataError(f"messages[{index + 1}:{following}]: {exc}") from exc
        index = following
    return turns


def messages_to_samples(renderer: Renderer | Any, messages: Sequence[dict[str, Any]],
                        tools: Sequence[dict[str, Any] | ToolSpec] | None = None, *,
                        render_mode: RenderMode = "rollout") -> list[TrainingSample]:
    """Assistant-masked samples of one conversation (OpenAI message dicts, optional `weight` 0/1).

    `renderer` is the model's Renderer (its prompt style decides whether tools go to the template);
    a bare tokenizer is rendered in the full style.
    """
    if not isinstance(renderer, Renderer):
        renderer = Renderer(renderer, prompt_style="full")
    specs = [t if isinstance(t, ToolSpec) else ToolSpec.from_openai(t) for t in tools or []]
    normalized, trained = _normalized(messages)
    return build_samples(conversation_turns(renderer, normalized, specs or None, trained, render_mode))


def tools_missing_from_prompt(renderer: Renderer, messages: Sequence[dict[str, Any]],
                              tools: Sequence[ToolSpec]) -> list[str]:
    """Compact style shows tools only in the system prompt: the tools a row's system prompt does not list.

    A row rolled out in the full style (tools in the template) trained on a compact-style model would
    teach it to call tools it was never shown.
    """
    if renderer.prompt_style == "full" or not tools:
        return []
    system = messages[0].get("content") or "" if messages and messages[0].get("role") == "system" else ""
    return [t.name for t in tools if t.signature() not in system]


def token_samples_mismatch(tokenizer: Any, samples: Sequence[TrainingSample],
                           messages: Sequence[dict[str, Any]]) -> str | None:
    """Why a row's token samples were not made with this tokenizer, or None when they were.

    Ids must be inside the vocabulary and the first sample must decode to text holding the row's
    first system/user message: ids from another tokenizer decode to other text.
    """
    vocabulary = len(tokenizer)
    for sample in samples:
        if sample.input_ids and max(sample.input_ids) >= vocabulary:
            return f"token id {max(sample.input_ids)} is outside this tokenizer's vocabulary ({vocabulary})"
    if not samples:
        return "no token samples"
    anchor = next((m.get("content") for m in messages if m.get("role") in ("system", "user") and m.get("content")), None)
    if anchor:
        text = tokenizer.decode(samples[0].input_ids, skip_special_tokens=False)
        if anchor[:200] not in text:
            return "the token samples do not decode to the row's prompt with this tokenizer"
    return None


@dataclass
class SFTExample:
    """The samples of one row; `group` keeps a task's rows on one side of the train/eval split."""

    line: int
    group: str
    samples: list[TrainingSample]
    source: Literal["token_samples", "rendered"]


@dataclass
class DataReport:
    path: str
    rows: int = 0
    from_token_samples: int = 0
    rendered: int = 0
    token_samples_not_used: Counter[str] = field(default_factory=Counter)
    samples: int = 0
    too_long: int = 0  # samples dropped: longer than max_length
    tokens: int = 0
    trained_tokens: int = 0

    def render(self) -> str:
        lines = [f"{self.path}: {self.rows} rows → {self.samples} samples ({self.tokens:,} tokens, "
                 f"{self.trained_tokens:,} trained); token samples used {self.from_token_samples}, "
                 f"rendered with the chat template {self.rendered}"]
        for reason, count in self.token_samples_not_used.items():
            lines.append(f"  token samples not used ({reason}): {count}")
        if self.too_long:
            lines.append(f"  samples longer than max_length dropped: {self.too_long}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "rows": self.rows, "from_token_samples": self.from_token_samples,
                "rendered": self.rendered, "token_samples_not_used": dict(self.token_samples_not_used),
                "samples": self.samples, "too_long": self.too_long, "tokens": self.tokens,
                "trained_tokens": self.trained_tokens}


def row_samples(row: dict[str, Any], renderer: Renderer, *, render_mode: RenderMode = "rollout",
                token_samples: TokenSampleUse = "auto", report: DataReport | None = None
                ) -> tuple[list[TrainingSample], Literal["token_samples", "rendered"]]:
    """Samples of one SFT row: its token samples when they fit this tokenizer (auto), else rendered."""
    messages = row["messages"]
    if token_samples != "never" and row.get("token_samples"):
        samples = [TrainingSample.model_validate(s) for s in row["token_samples"]]
        mismatch = token_samples_mismatch(renderer.tokenizer, samples, messages)
        if mismatch is None:
            return samples, "token_samples"
        if token_samples == "always":
            raise SFTDataError(f"token_samples: {mismatch}")
        if report is not None:
            key = "ids outside this tokenizer's vocabulary" if "vocabulary" in mismatch else mismatch
            report.token_samples_not_used[key] += 1
    specs = [ToolSpec.from_openai(t) for t in row.get("tools") or []]
    missing = tools_missing_from_prompt(renderer, messages, specs)
    if missing:
        raise SFTDataError(
            f"the model uses the compact prompt style (tools are listed in the system prompt, not rendered by "
            f"the template) but this row's system prompt does not list {', '.join(missing[:5])}"
            f"{' …' if len(missing) > 5 else ''}; roll the teacher out in the model's prompt style: "
            "`toolgym rollout --policy oracle --prompt-style compact ...`"
        )
    return messages_to_samples(renderer, messages, specs, render_mode=render_mode), "rendered"


def load_examples(path: str | Path, renderer: Renderer, *, render_mode: RenderMode = "rollout",
                  token_samples: TokenSampleUse = "auto", max_length: int | None = None
                  ) -> tuple[list[SFTExample], DataReport]:
    """Every row of an SFT file as samples; the first bad row raises SFTDataError naming file:line."""
    if token_samples not in TOKEN_SAMPLE_USES:
        raise ValueError(f"token_samples must be one of {', '.join(TOKEN_SAMPLE_USES)}; got {token_samples!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such SFT file")
    report = DataReport(path=str(path))
    examples: list[SFTExample] = []
    for line, row in iter_lines(path):
        if isinstance(row, JsonlError):
            raise SFTDataError(str(row))
        if row_kind(row) == "results":
            raise SFTDataError(f"{path}:{line}: this is a results row; run `toolgym data convert` first")
        check = check_sft_row(row, line)
        if not check.valid:
            problem = check.problems[0]
            raise SFTDataError(f"{path}:{line}: {problem.reason}: {problem.detail}")
        try:
            samples, source = row_samples(row, renderer, render_mode=render_mode, token_samples=token_samples,
                                          report=report)
        except SFTDataError as exc:
            raise SFTDataError(f"{path}:{line}: {exc}") from exc
        report.rows += 1
        report.from_token_samples += source == "token_samples"
        report.rendered += source == "rendered"
        kept = []
        for sample in samples:
            if max_length is not None and len(sample.input_ids) > max_length:
                report.too_long += 1
                continue
            if not any(sample.loss_mask[1:]):
                continue
            kept.append(sample)
            report.samples += 1
            report.tokens += len(sample.input_ids)
            report.trained_tokens += sum(sample.loss_mask[1:])
        if kept:
            examples.append(SFTExample(line=line, group=str(row.get("task_id") or f"line:{line}"), samples=kept,
                                       source=source))
    return examples, report
