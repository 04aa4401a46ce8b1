"""`toolgym data convert`: a rollout's results.jsonl → SFT rows `{messages, tools, …provenance}`.

Every input line is accounted for: converted, or skipped with a reason. A row `data validate` flags
(the same RowChecker decides) is skipped as `invalid: <reason>` and listed by file, line and field; a
duplicate (task_id, sample_index) is converted once. Rows keep their provenance
(task_id, env, split, sample_index, reward, partial_score, status, policy, checkpoint, source line)
and, for token-mode runs, the sampler's exact `token_samples`, so SFT trains on the ids the policy
produced instead of re-rendering them.

Malformed calls: the token-mode loop answers one with a `tool` message that has no `tool_call_id`
(the call never got an id). Convert rewrites that feedback as a `user` message (what chat mode
sends; valid OpenAI chat for any trainer) and marks the malformed assistant turn `"weight": 0`,
dropping its ids from the token samples' loss mask: the model keeps the turn and the feedback as
context (it learns to recover) but is never trained to write a malformed call. With
`train_malformed_turns=True` those turns are trained like any other. The last turn of an episode
stopped by the token budget (`max_tokens` / `context`) is cut off mid-turn and is not trained either.

Each row says the `prompt_style` its conversation was rendered in and the `chat_template_kwargs` that make
another trainer's `apply_chat_template` produce toolgym's tokens (TRL's SFTTrainer reads them per row):
compact style lists the tools in the system prompt, so the template must not render them again (`tools: null`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from toolgym.agent.samples import build_samples
from toolgym.chat.render import CALL_FORMAT, PROMPT_STYLES, PromptStyle
from toolgym.config.data import ConvertOptions as ConvertOptions
from toolgym.data.rows import WEIGHT_FIELD, ResultsRow, canonical_json, is_format_feedback, iter_lines
from toolgym.data.validate import Problem, RowChecker, check_messages
from toolgym.rollout.results import RESULTS_FILE
from toolgym.schema import Episode, TrainingSample
from toolgym.schema.jsonl import jsonl_in, write_jsonl

if TYPE_CHECKING:
    from toolgym.data.context import ContextCheck, ContextReport

PROVENANCE_FIELDS = ("task_id", "env", "split", "sample_index", "reward", "partial_score", "status", "stop_reason",
                     "policy", "checkpoint")
INVALID_KEPT = 20  # invalid rows listed by line in a report (all are counted)


@dataclass
class ConvertReport:
    """rows_in = episodes_converted + sum(skipped): every input line is accounted for."""

    source: str = ""
    rows_in: int = 0
    episodes_converted: int = 0
    rows_out: int = 0
    rows_with_tool_calls: int = 0
    rows_with_token_samples: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    duplicate_turns: int = 0  # turn mode with dedupe: identical turn rows dropped (input rows still converted)
    feedback_rewritten: int = 0  # format-error feedback tool messages turned into user messages
    turns_not_trained: int = 0  # assistant turns marked weight 0 (malformed call, or cut off)
    by_env: Counter[str] = field(default_factory=Counter)
    valid_rows: int = 0  # rows `data validate` accepts (converted or skipped by a filter)
    invalid: list[tuple[int, Problem]] = field(default_factory=list)  # the first INVALID_KEPT, by line
    context: ContextReport | None = None  # the rows out against a model's context, when given one

    @property
    def accounted(self) -> bool:
        return self.rows_in == self.episodes_converted + sum(self.skipped.values())

    @property
    def invalid_rows(self) -> int:
        return sum(count for reason, count in self.skipped.items() if reason.startswith("invalid: "))

    def render(self) -> str:
        lines = [
            f"rows in {self.rows_in} · episodes converted {self.episodes_converted} · rows out {self.rows_out} "
            f"· rows with tool calls {self.rows_with_tool_calls} · rows with token samples {self.rows_with_token_samples}",
            f"skipped {sum(self.skipped.values())}" + (":" if self.skipped else ""),
        ]
        lines += [f"  {reason}: {count}" for reason, count in self.skipped.most_common()]
        if self.duplicate_turns:
            lines.append(f"duplicate turn rows dropped: {self.duplicate_turns}")
        if self.feedback_rewritten or self.turns_not_trained:
            lines.append(f"format-error feedback rewritten as user messages: {self.feedback_rewritten}; "
                         f"assistant turns kept as context, not trained (malformed or cut off): {self.turns_not_trained}")
        if self.by_env:
            lines.append("rows out by env: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_env.items())))
        for line, problem in self.invalid:
            lines.append(f"  invalid row {problem.located(self.source, line)}")
        if self.invalid_rows > len(self.invalid):
            lines.append(f"  ... {self.invalid_rows - len(self.invalid)} more invalid rows (`toolgym data validate` lists them)")
        if self.context is not None:
            lines.append(self.context.render())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "rows_in": self.rows_in, "episodes_converted": self.episodes_converted,
            "rows_out": self.rows_out, "rows_with_tool_calls": self.rows_with_tool_calls,
            "rows_with_token_samples": self.rows_with_token_samples, "skipped": dict(self.skipped),
            "duplicate_turns": self.duplicate_turns, "feedback_rewritten": self.feedback_rewritten,
            "turns_not_trained": self.turns_not_trained, "by_env": dict(self.by_env),
            "valid_rows": self.valid_rows,
            "invalid": [{"line": line, "reason": p.reason, "field": p.field, "detail": p.detail} for line, p in self.invalid],
            "context": self.context.to_dict() if self.context else None,
        }


def results_path(run: str | Path) -> Path:
    """A run folder (holding results.jsonl) or a results file itself."""
    return jsonl_in(run, RESULTS_FILE, "rollout folder")


CUT_OFF_STOPS = ("max_tokens", "context")


def sft_messages(episode: Episode, train_malformed_turns: bool) -> tuple[list[dict[str, Any]], list[bool], int]:
    """(OpenAI messages, trained flag per assistant message, feedback messages rewritten).

    Not trained (weight 0, kept as context): a turn that wrote a malformed call, and the last turn of an
    episode the token budget cut off mid-turn (the model never finished it).
    """
    messages = [m.to_openai() for m in episode.messages]
    rewritten = 0
    last_assistant: int | None = None
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            last_assistant = index
        elif is_format_feedback(message):
            if message["role"] == "tool":
                messages[index] = {"role": "user", "content": message["content"]}
                rewritten += 1
            if last_assistant is not None and not train_malformed_turns:
                messages[last_assistant][WEIGHT_FIELD] = 0
    if episode.stop_reason in CUT_OFF_STOPS and messages and messages[-1]["role"] == "assistant":
        messages[-1][WEIGHT_FIELD] = 0
    trained = [m.get(WEIGHT_FIELD, 1) != 0 for m in messages if m["role"] == "assistant"]
    return messages, trained, rewritten


def _samples(samples: list[TrainingSample]) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json") for s in samples]


def _provenance(row: dict[str, Any], parsed: ResultsRow, source: str, line: int) -> dict[str, Any]:
    out = {name: row.get(name) for name in PROVENANCE_FIELDS}
    out["stop_reason"] = row.get("stop_condition", row.get("stop_reason"))
    family = (parsed.info or {}).get("family")
    if family:
        out["family"] = family
    out["source"] = {"file": source, "line": line}
    return out


def rendered_prompt_style(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                          info: dict[str, Any] | None = None) -> PromptStyle:
    """The prompt style a conversation was rendered in (the rollout's `info.prompt_style` when it says so).

    Compact writes the call format (and with no tools, a "When done, ..." line) into the system prompt;
    full leaves both to the template. Trainers must know which, or they render the tools twice.
    """
    said = (info or {}).get("prompt_style")
    if said == "compact":
        return "compact"
    if said == "full":
        return "full"
    first = messages[0] if messages else {}
    system = first.get("content") if first.get("role") == "system" else None
    if not isinstance(system, str):
        return "full"
    if tools:
        return "compact" if CALL_FORMAT in system else "full"
    return "compact" if any(line.startswith("When done, ") for line in system.splitlines()) else "full"


def template_kwargs(prompt_style: PromptStyle) -> dict[str, Any]:
    """Keyword arguments of `apply_chat_template` that reproduce toolgym's rendering of a row (thinking off;
    compact: no tool schemas, they are already in the system prompt)."""
    return {"tools": None, "enable_thinking": False} if prompt_style == "compact" else {"enable_thinking": False}


def trainer_row(row: dict[str, Any]) -> dict[str, Any]:
    """An SFT row as TRL's SFTTrainer takes it: `messages` as written (`weight` kept), `tools` as a JSON string
    in the full prompt style (Arrow would merge different tools' schemas into one struct) and None in the
    compact one (the system prompt lists them), thinking off.

    TRL tokenizes it as `apply_chat_template(messages, tools=json.loads(tools), **chat_template_kwargs)`.
    """
    messages = row["messages"]
    tools = row.get("tools") or []
    style = row.get("prompt_style") or rendered_prompt_style(messages, tools)
    if style not in PROMPT_STYLES:
        raise ValueError(f"row {row.get('task_id')!r}: prompt_style must be one of {', '.join(PROMPT_STYLES)}")
    return {
        "messages": [dict(m) for m in messages],
        "tools": json.dumps(tools, ensure_ascii=False) if tools and style == "full" else None,
        "chat_template_kwargs": {"enable_thinking": False},
    }


def episode_row(parsed: ResultsRow) -> dict[str, Any]:
    """The conversation `convert` writes for a results row in episode mode (`messages`, `tools`,
    `prompt_style`), whatever its filters would decide: what `data validate` measures against a context."""
    messages, _, _ = sft_messages(parsed.to_episode(), train_malformed_turns=False)
    tools = [t.to_openai() for t in parsed.episode.tools]
    return {"messages": messages, "tools": tools, "prompt_style": rendered_prompt_style(messages, tools, parsed.info),
            "task_id": parsed.task_id}


def _has_calls(messages: list[dict[str, Any]]) -> bool:
    """Whether a trained assistant turn of the row calls a tool."""
    return any(m.get("role") == "assistant" and m.get(WEIGHT_FIELD, 1) != 0 and m.get("tool_calls") for m in messages)


class _Converter:
    def __init__(self, options: ConvertOptions, source: str) -> None:
        self.options = options
        self.report = ConvertReport(source=source)
        self.seen: set[str] = set()
        self.out: list[dict[str, Any]] = []
        self.checker = RowChecker()

    def skip(self, reason: str) -> None:
        self.report.skipped[reason] += 1

    def emit(self, row: dict[str, Any]) -> bool:
        if self.options.dedupe:
            key = canonical_json({"messages": row["messages"], "tools": row["tools"]})
            if key in self.seen:
                return False
            self.seen.add(key)
        self.out.append(row)
        self.report.rows_out += 1
        self.report.rows_with_tool_calls += _has_calls(row["messages"])
        self.report.rows_with_token_samples += bool(row.get("token_samples"))
        self.report.by_env[str(row.get("env"))] += 1
        return True

    def invalid(self, line: int, problem: Problem) -> None:
        self.skip(f"invalid: {problem.reason}")
        if len(self.report.invalid) < INVALID_KEPT:
            self.report.invalid.append((line, problem))

    def add(self, line: int, row: Any) -> None:
        self.report.rows_in += 1
        options = self.options
        check = self.checker.check(row, line)
        if check.kind == "sft" and check.valid:
            self.skip("not a toolgym results row (an SFT row)")
            return
        parsed = check.results
        if parsed is None:
            self.invalid(line, check.problems[0])  # not valid results, so check_row named a problem
            return
        self.report.valid_rows += 1
        if parsed.status == "error":
            self.skip("status error (infrastructure failure: no reward)")
            return
        if parsed.status not in options.statuses:
            self.skip(f"status {parsed.status} not selected")
            return
        if options.min_reward is not None and (parsed.reward is None or parsed.reward < options.min_reward):
            self.skip(f"reward below {options.min_reward:g}")
            return
        try:
            episode = parsed.to_episode()
        except ValidationError as exc:  # validate checked token_samples; kept so a gap skips, never crashes
            self.invalid(line, Problem("token samples inconsistent", str(exc.errors()[0].get("msg")), "token_samples"))
            return
        messages, trained, rewritten = sft_messages(episode, options.train_malformed_turns)
        tools = [t.to_openai() for t in episode.tools]
        problems, _ = check_messages(messages, tools, feedback_tool_messages=False, need_assistant=False)
        if problems:
            self.skip(f"invalid: {problems[0].reason}")
            return
        if not any(trained):
            reason = ("no assistant turn" if not trained
                      else "no trainable turn (every assistant turn was malformed or cut off)")
            self.skip(reason)
            return
        turns = episode.token_turns
        aligned = bool(turns) and len(turns) == len(trained)
        base = _provenance(row, parsed, self.report.source, line)
        base["prompt_style"] = rendered_prompt_style(messages, tools, parsed.info)
        base["chat_template_kwargs"] = template_kwargs(base["prompt_style"])
        if options.row_mode == "episode":
            out: dict[str, Any] = {"messages": messages, "tools": tools, **base}
            if aligned:
                out["token_samples"] = _samples(build_samples([t for t, keep in zip(turns, trained, strict=True) if keep]))
            elif episode.samples and all(trained):
                out["token_samples"] = _samples(episode.samples)
            if not self.emit(out):
                self.skip("duplicate")
                return
        else:
            assistant_at = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
            for turn, (index, keep) in enumerate(zip(assistant_at, trained, strict=True)):
                if not keep:
                    continue
                history = [{**m, WEIGHT_FIELD: 0} if m["role"] == "assistant" else m for m in messages[:index]]
                out = {"messages": [*history, messages[index]], "tools": tools, **base, "turn": turn}
                if aligned:
                    out["token_samples"] = _samples(build_samples([turns[turn]]))
                if not self.emit(out):
                    self.report.duplicate_turns += 1
        self.report.episodes_converted += 1
        self.report.feedback_rewritten += rewritten
        self.report.turns_not_trained += sum(not t for t in trained)


def convert_rows(rows: Iterable[tuple[int, Any]], options: ConvertOptions | None = None,
                 source: str = "") -> tuple[list[dict[str, Any]], ConvertReport]:
    """SFT rows from (line, results row) pairs, and the report accounting for every input row.

    Rows come out in (task id, sample index) order, not in the order concurrent episodes finished: SFT's
    shuffle is seeded, so the same episodes must give the same file for a run to be reproducible.
    """
    converter = _Converter(options or ConvertOptions(), source)
    for line, row in rows:
        converter.add(line, row)
    ordered = sorted(converter.out, key=lambda r: (str(r.get("task_id", "")), int(r.get("sample_index") or 0)))
    return ordered, converter.report


def write_sidecar_manifest(out_file: Path, kind: str, **fields: Any) -> Path:
    """`<file>.manifest.json` beside an output file (a folder's manifest.json may belong to someone else)."""
    import toolgym
    from toolgym.dataset.manifest import git_commit

    path = out_file.with_name(out_file.name + ".manifest.json")
    body = {"kind": kind, "toolgym_version": toolgym.__version__, "git_commit": git_commit(), **fields}
    path.write_text(json.dumps(body, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return path


def convert_run(run: str | Path, out_file: str | Path, options: ConvertOptions | None = None,
                context: ContextCheck | None = None) -> ConvertReport:
    """Convert a run's results.jsonl into `out_file` (JSONL) and a `<out_file>.manifest.json` beside it; with
    `context`, the report also measures the rows written against that model's context."""
    from toolgym.dataset.manifest import sha256_file

    source = results_path(run)
    options = options or ConvertOptions()
    rows, report = convert_rows(iter_lines(source), options, str(source))
    if context is not None:
        report.context = context.measure(rows)
    out_path = Path(out_file)
    write_jsonl(out_path, rows)
    write_sidecar_manifest(out_path, "sft_rows", source=str(source), source_sha256=sha256_file(source),
                           rows_sha256=sha256_file(out_path), options=options.model_dump(), report=report.to_dict())
    return report
