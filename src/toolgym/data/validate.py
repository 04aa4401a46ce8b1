"""`toolgym data validate`: check results.jsonl rows and SFT rows before anything trains on them.

The checks are BenchFlow's (allowed roles, system only at index 0, every tool message answers a
tool call, at least one assistant message, tool calls need tools) plus: call arguments are JSON
objects, and token samples are consistent (and, in results rows, equal to what the episode's token
turns build). Every problem is a countable reason plus a detail naming the message and field.

Results rows may hold the token-mode loop's format-error feedback: a `tool` message with no
`tool_call_id` (the malformed call had no id). That is valid in a results row (noted, not an
error); in an SFT row it is invalid, since convert rewrites it as a `user` message.

`RowChecker` is the one definition of a valid row: `data convert` runs it too and skips exactly the rows
it flags, duplicate (task_id, sample_index) keys included, so what validate passes is what convert reads.
"""

from __future__ import annotations

import reprlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from toolgym.data.rows import (
    ALLOWED_ROLES,
    ROW_RULES,
    WEIGHT_FIELD,
    ResultsRow,
    is_format_feedback,
    is_trained,
    iter_lines,
    results_messages,
    row_kind,
)
from toolgym.schema.jsonl import NON_FINITE, BadJson, JsonlError, field_path, json_type, loads

if TYPE_CHECKING:
    from toolgym.data.context import ContextCheck, ContextReport

EXAMPLES_KEPT = 20
FIELD_ERRORS_KEPT = 5  # a row with many bad fields reports its first few
NON_FINITE_TEXT = frozenset(NON_FINITE.values())  # how rows store a non-finite logprob; pydantic reads them


@dataclass(frozen=True)
class Problem:
    """`reason` is what reports count; `detail` says where (message index, field) and what; `field` is
    set when the fault is one field of the row, so a report can say `file:line: field 'x': ...`."""

    reason: str
    detail: str
    field: str | None = None

    def located(self, path: str, line: int) -> str:
        if self.field:
            return f"{path}:{line}: field '{self.field}': {self.detail}"
        if self.detail.startswith(self.reason):  # a read error's message already opens with its reason
            return f"{path}:{line}: {self.detail}"
        return f"{path}:{line}: {self.reason}: {self.detail}"


@dataclass
class RowCheck:
    line: int
    kind: str
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    status: str | None = None
    task_id: str | None = None
    results: ResultsRow | None = None  # the parsed row, when it is a results row whose fields are valid

    @property
    def valid(self) -> bool:
        return not self.problems


def _arguments_problem(arguments: Any, where: str) -> Problem | None:
    if isinstance(arguments, dict):
        return None
    if isinstance(arguments, str):
        try:
            parsed = loads(arguments) if arguments.strip() else {}
        except BadJson as exc:
            return Problem("tool call arguments are not JSON", f"{where}.function.arguments: {exc.message}")
        if isinstance(parsed, dict):
            return None
        return Problem("tool call arguments are not a JSON object",
                       f"{where}.function.arguments: got a JSON {type(parsed).__name__}")
    return Problem("tool call arguments are not a JSON object",
                   f"{where}.function.arguments: got {type(arguments).__name__}")


def _tool_names(tools: Any, problems: list[Problem]) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        problems.append(Problem("tools is not a list", f"tools: got {type(tools).__name__}"))
        return set()
    names: set[str] = set()
    for index, tool in enumerate(tools):
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            problems.append(Problem("malformed tool schema", f"tools[{index}]: needs {{type: function, function: {{name, …}}}}"))
            continue
        names.add(name)
    return names


def _check_calls(message: dict[str, Any], where: str, tool_names: set[str], has_tools: bool,
                 problems: list[Problem], notes: list[Problem]) -> list[str]:
    """Problems of one assistant message's tool calls; returns the call ids it issues."""
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        problems.append(Problem("malformed tool call", f"{where}.tool_calls: expected a list"))
        return []
    if calls and not has_tools:
        problems.append(Problem("tool calls without tools", f"{where}: calls a tool but the row lists no tools"))
    ids: list[str] = []
    for index, call in enumerate(calls):
        at = f"{where}.tool_calls[{index}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            problems.append(Problem("malformed tool call", f"{at}: needs {{id, type: function, function: {{name, arguments}}}}"))
            continue
        if call.get("type", "function") != "function":
            problems.append(Problem("malformed tool call", f"{at}.type: expected 'function', got {call.get('type')!r}"))
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            problems.append(Problem("tool call without id", f"{at}.id: missing; tool messages answer calls by id"))
        else:
            ids.append(call_id)
        problem = _arguments_problem(function.get("arguments", {}), at)
        if problem:
            problems.append(problem)
        if has_tools and function["name"] not in tool_names:
            notes.append(Problem("call to a tool not in tools", f"{at}: {function['name']!r}"))
    return ids


def check_messages(messages: Any, tools: Any, *, feedback_tool_messages: bool,
                   need_assistant: bool = True) -> tuple[list[Problem], list[Problem]]:
    """(problems, notes) of one conversation in OpenAI form.

    `feedback_tool_messages`: a tool message without a call id that carries the loop's format-error
    feedback is noted, not a problem (results rows of token-mode runs).
    """
    problems: list[Problem] = []
    notes: list[Problem] = []
    if not isinstance(messages, list):
        return [Problem("messages is not a list", f"messages: got {type(messages).__name__}")], notes
    tool_names = _tool_names(tools, problems)
    has_tools = bool(tools) and isinstance(tools, list)
    open_ids: set[str] = set()
    answered: set[str] = set()
    assistants = trained = 0
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            problems.append(Problem("message is not an object", f"{where}: got {type(message).__name__}"))
            continue
        role = message.get("role")
        if role not in ALLOWED_ROLES:
            problems.append(Problem("unknown role", f"{where}.role: {role!r} (allowed: {', '.join(ALLOWED_ROLES)})"))
            continue
        if role == "system" and index != 0:
            problems.append(Problem("system message not at index 0", f"{where}: a system message at index {index}"))
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            problems.append(Problem("content is not text", f"{where}.content: got {type(content).__name__}"))
        elif content is None and role in ("system", "user", "tool"):
            problems.append(Problem("content is not text", f"{where}.content: a {role} message needs text"))
        if WEIGHT_FIELD in message and (role != "assistant" or message[WEIGHT_FIELD] not in (0, 1)):
            problems.append(Problem("bad weight", f"{where}.weight: only assistant messages take weight 0 or 1"))
        if role == "assistant":
            assistants += 1
            trained += is_trained(message)
            open_ids.update(_check_calls(message, where, tool_names, has_tools, problems, notes))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id is not None and not isinstance(call_id, str):
                problems.append(Problem("malformed tool_call_id", f"{where}.tool_call_id: got {type(call_id).__name__}"))
            elif not call_id:
                if feedback_tool_messages and is_format_feedback(message):
                    notes.append(Problem("format-error feedback (tool message without tool_call_id)", where))
                else:
                    problems.append(Problem("tool message without tool_call_id", f"{where}: answers no tool call"))
            elif call_id in answered or call_id not in open_ids:
                what = "answers a call already answered" if call_id in answered else "answers no earlier tool call"
                problems.append(Problem("tool message answers an unknown tool_call_id", f"{where}.tool_call_id {call_id!r}: {what}"))
            else:
                open_ids.discard(call_id)
                answered.add(call_id)
        elif is_format_feedback(message):
            notes.append(Problem("format-error feedback (user message)", where))
    if need_assistant and assistants == 0:
        problems.append(Problem("no assistant message", "messages: nothing for the model to learn"))
    elif need_assistant and trained == 0:
        problems.append(Problem("no trained assistant message", "messages: every assistant message has weight 0"))
    return problems, notes


def check_token_samples(samples: Any, where: str = "token_samples") -> list[Problem]:
    """Each sample: equal-length input_ids / loss_mask / sampler_logprobs, ids ≥ 0, mask in {0, 1}."""
    reason = "token samples inconsistent"
    if not isinstance(samples, list):
        return [Problem(reason, f"{where}: expected a list, got {type(samples).__name__}")]
    problems: list[Problem] = []
    trained = 0
    for index, sample in enumerate(samples):
        at = f"{where}[{index}]"
        if not isinstance(sample, dict):
            problems.append(Problem(reason, f"{at}: expected an object"))
            continue
        ids, mask, logprobs = sample.get("input_ids"), sample.get("loss_mask"), sample.get("sampler_logprobs")
        if not all(isinstance(v, list) for v in (ids, mask, logprobs)):
            problems.append(Problem(reason, f"{at}: needs input_ids, loss_mask and sampler_logprobs lists"))
            continue
        assert isinstance(ids, list) and isinstance(mask, list) and isinstance(logprobs, list)
        if not len(ids) == len(mask) == len(logprobs):
            problems.append(Problem(reason, f"{at}: input_ids ({len(ids)}), loss_mask ({len(mask)}) and "
                                            f"sampler_logprobs ({len(logprobs)}) differ in length"))
            continue
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
            problems.append(Problem(reason, f"{at}.input_ids: ids must be non-negative integers"))
        if not all(m in (0, 1) for m in mask):
            problems.append(Problem(reason, f"{at}.loss_mask: values must be 0 or 1"))
        if not all((isinstance(p, int | float) and not isinstance(p, bool)) or (isinstance(p, str) and p in NON_FINITE_TEXT) for p in logprobs):
            problems.append(Problem(reason, f"{at}.sampler_logprobs: values must be numbers"))
        if mask and mask[0] == 1:
            problems.append(Problem(reason, f"{at}.loss_mask: the first token has no context to be predicted from"))
        trained += sum(1 for m in mask if m == 1)
    if samples and trained == 0 and not problems:
        problems.append(Problem(reason, f"{where}: no token has loss_mask 1"))
    return problems


def field_problems(exc: ValidationError) -> list[Problem]:
    """One Problem per pydantic error (the first few), each naming its field; reasons group by field
    with list indices dropped, so `episode.messages[3].role` counts as `episode.messages.role`."""
    problems = []
    for error in exc.errors()[:FIELD_ERRORS_KEPT]:
        loc = tuple(error.get("loc", ()))
        where = field_path(loc)
        kind = field_path(p for p in loc if not isinstance(p, int)) or "row"
        rule = ROW_RULES.get(error["type"])
        reason = rule or (f"missing field '{kind}'" if error["type"] == "missing" else f"bad field '{kind}'")
        detail = str(error.get("msg", "invalid value"))
        if not rule and error["type"] != "missing" and "input" in error:
            value = error["input"]
            shown = reprlib.repr(value) if value is None or isinstance(value, str | int | float) else json_type(value)
            detail += f", got {shown}"
        problems.append(Problem(reason, detail, where or None))
    return problems


def _check_results_tokens(parsed: ResultsRow, problems: list[Problem]) -> None:
    """The row's token_samples must be exactly what its episode's token turns build."""
    from toolgym.agent.samples import build_samples

    episode = parsed.episode
    if not episode.token_turns:
        return
    assistants = sum(1 for m in episode.messages if m.role == "assistant")
    if len(episode.token_turns) != assistants:
        problems.append(Problem("token turns do not match assistant turns",
                                f"episode: {len(episode.token_turns)} token turns for {assistants} assistant messages"))
    built = [s.model_dump(mode="json") for s in build_samples(episode.token_turns)]
    if built != parsed.token_samples:
        problems.append(Problem("token samples differ from the episode's token turns",
                                "token_samples: not what build_samples(episode.token_turns) gives"))


def check_results_row(row: dict[str, Any], line: int) -> RowCheck:
    """Fields and types first (ResultsRow: episode, reward against status, ...), then the conversation
    and token samples; `check.results` holds the parsed row when its fields are valid."""
    check = RowCheck(line=line, kind="results", status=_label(row.get("status")), task_id=_label(row.get("task_id")))
    try:
        parsed = ResultsRow.model_validate(row)
    except ValidationError as exc:
        check.problems += field_problems(exc)
        return check
    problems, notes = check_messages(results_messages(row), parsed.tool_defs, feedback_tool_messages=True,
                                     need_assistant=parsed.status != "error")
    check.problems += problems
    check.notes += notes
    check.problems += check_token_samples(parsed.token_samples)
    if not check.problems:
        _check_results_tokens(parsed, check.problems)
    if not check.problems:
        check.results = parsed
    return check


def _label(value: Any) -> str | None:
    """A status or task id fit for a report's counts, whatever type the row gave it."""
    return None if value is None else value if isinstance(value, str) else reprlib.repr(value)


def check_sft_row(row: dict[str, Any], line: int) -> RowCheck:
    check = RowCheck(line=line, kind="sft", status=_label(row.get("status")), task_id=_label(row.get("task_id")))
    problems, notes = check_messages(row.get("messages"), row.get("tools"), feedback_tool_messages=False)
    check.problems += problems
    check.notes += notes
    if row.get("token_samples") is not None:
        check.problems += check_token_samples(row["token_samples"])
    return check


def check_row(row: Any, line: int) -> RowCheck:
    """One row on its own (a line's JsonlError included); RowChecker adds the checks across rows."""
    if isinstance(row, JsonlError):
        return RowCheck(line=line, kind="unknown", problems=[Problem(row.reason, row.message, row.field)])
    kind = row_kind(row)
    if kind == "results":
        return check_results_row(row, line)
    if kind == "sft":
        return check_sft_row(row, line)
    return RowCheck(line=line, kind="unknown",
                    problems=[Problem("not a results or SFT row", "needs 'messages' (SFT) or 'episode'/'completion' (results)")])


class RowChecker:
    """Checks a file's rows in order: each row on its own, and a results row whose (task_id,
    sample_index) an earlier valid row already has is a duplicate (a rollout writes each key once)."""

    def __init__(self) -> None:
        self.first_line: dict[tuple[str, int], int] = {}

    def check(self, row: Any, line: int) -> RowCheck:
        check = check_row(row, line)
        if check.results is None:
            return check
        key = check.results.key
        if key in self.first_line:
            check.problems.append(Problem("duplicate (task_id, sample_index)",
                                          f"task {reprlib.repr(key[0])} sample {key[1]} is already on line "
                                          f"{self.first_line[key]}"))
            check.results = None
        else:
            self.first_line[key] = line
        return check


@dataclass
class ValidationReport:
    """Counts over one file: every line is valid or invalid, with its reasons."""

    path: str
    rows: int = 0
    valid: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)  # invalid rows, once per reason per row
    notes: Counter[str] = field(default_factory=Counter)  # rows with a note, once per note per row
    examples: list[tuple[int, Problem]] = field(default_factory=list)
    context: ContextReport | None = None  # the valid rows against a model's context, when given one

    @property
    def invalid(self) -> int:
        return self.rows - self.valid

    def add(self, check: RowCheck) -> None:
        self.rows += 1
        self.kinds[check.kind] += 1
        if check.status is not None:
            self.statuses[str(check.status)] += 1
        for reason in dict.fromkeys(p.reason for p in check.notes):
            self.notes[reason] += 1
        if check.valid:
            self.valid += 1
            return
        for reason in dict.fromkeys(p.reason for p in check.problems):
            self.reasons[reason] += 1
        if len(self.examples) < EXAMPLES_KEPT:
            self.examples.append((check.line, check.problems[0]))

    def render(self) -> str:
        lines = [f"{self.path}: {self.rows} rows ({', '.join(f'{k} {v}' for k, v in sorted(self.kinds.items()))})",
                 f"valid {self.valid} · invalid {self.invalid}"]
        if self.statuses:
            lines.append("status: " + ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items()))
                         + (" (error rows are infrastructure failures: valid, never trained on)"
                            if self.statuses.get("error") else ""))
        for reason, count in self.reasons.most_common():
            lines.append(f"  invalid: {reason}: {count}")
        for reason, count in self.notes.most_common():
            lines.append(f"  note: {reason}: {count}")
        for line, problem in self.examples[:10]:
            lines.append(f"  {problem.located(self.path, line)}")
        if self.context is not None:
            lines.append(self.context.render())
        if not self.valid:
            lines.append(f"no valid rows in {self.path}" + (" (the file is empty)" if not self.rows else ""))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "rows": self.rows, "valid": self.valid, "invalid": self.invalid,
                "kinds": dict(self.kinds), "statuses": dict(self.statuses), "reasons": dict(self.reasons),
                "notes": dict(self.notes), "context": self.context.to_dict() if self.context else None}


def validate_file(path: str | Path, context: ContextCheck | None = None) -> ValidationReport:
    """Check every line of a results.jsonl or SFT file; unreadable lines count as invalid. With `context`, also
    measure the valid rows against that model's context."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    report = ValidationReport(path=str(path), context=context.report() if context else None)
    checker = RowChecker()
    for line, row in iter_lines(path):
        check = checker.check(row, line)
        report.add(check)
        if context is not None and report.context is not None:
            context.add_checked(report.context, row, check)
    return report
