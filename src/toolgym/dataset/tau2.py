"""Import tau2-bench tasks (a domain's `tasks.json`) as toolgym Tasks.

What maps, per task:
- `evaluation_criteria.actions` → the reference solution (replayed by the oracle) and one
  `tool_called` check per distinct action (`compare_args` picks the arguments compared);
- `communicate_info` → an `answer_contains` check, and the expected answer;
- the user scenario (persona; instructions: reason for call, known and unknown info, task
  instructions) → the user simulator's `UserScenario`; the reason for call opens the conversation;
- `reward_basis` DB (the final database equals the gold one): the server exposes no database, so
  with `write_tools` it becomes "every gold write was made" (the action checks) plus a
  `tool_not_called` check for each write tool the gold actions never use; without them it is
  reported unmapped.
What cannot be mapped - `nl_assertions` (an LLM judge), `env_assertions`, user-side actions, an
`initial_state` - is listed per task with the reason and whether it counts in tau2's reward: a task
is `mapped` when everything in its reward basis mapped, `partial` when something did not, and
`skipped` (not written) when no check at all could be built or its start state cannot be set up.
A malformed record is an error naming the file, line, task index, id and field; the rest import.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from toolgym.dataset.fleet import RecordError, Reject, TaskImport, iter_records, write_imported
from toolgym.schema import AnswerContains, Task, ToolCall, ToolCalled, ToolNotCalled, UserScenario
from toolgym.schema.checks import Check
from toolgym.schema.documents import read_json
from toolgym.schema.jsonl import field_path
from toolgym.schema.task import Split

ENV_VERSION = "tau2"
SPLIT_FILE = "split_tasks.json"  # tau2 keeps a domain's splits beside its tasks.json
SPLITS: dict[str, Split] = {"train": "train", "test": "heldout_tasks"}
Status = Literal["mapped", "partial", "skipped"]
_NAME = re.compile(r"^(?:You are|Your name is)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)+)\.?$")
_FACT = re.compile(r"^(?:(?:Your|You|The)\s+)?([A-Za-z][\w' ]*?)\s*(?:\bis:?|:)\s+'?([^'\s]+?)'?\.?$")


@dataclass
class Unmapped:
    """One part of a task's evaluation criteria that has no toolgym check."""

    field: str
    reason: str
    in_reward_basis: bool


@dataclass
class TaskReport:
    """How one tau2 task was imported."""

    tau2_id: str
    index: int
    line: int
    status: Status
    task_id: str | None = None
    checks: int = 0
    unmapped: list[Unmapped] = field(default_factory=list)


@dataclass
class Tau2Import(TaskImport):
    """A tau2 import: also how each task was mapped, and the split file it read."""

    reports: list[TaskReport] = field(default_factory=list)
    splits_file: Path | None = None

    def counts(self) -> dict[str, Any]:
        statuses = Counter(r.status for r in self.reports)
        reasons = Counter(u.reason.split(":")[0] for r in self.reports for u in r.unmapped)
        return {
            "records": self.records,
            "imported": len(self.tasks),
            "mapped": statuses["mapped"],
            "partial": statuses["partial"],
            "skipped": statuses["skipped"],
            "rejected": len(self.errors),
            "unmapped_by_reason": dict(sorted(reasons.items())),
            "by_split": dict(sorted(Counter(t.split for t in self.tasks).items())),
        }


# ------------------------------------------------------------------------------------------
#  Reading fields
# ------------------------------------------------------------------------------------------


def _object(value: Any, where: str, required: bool = True) -> dict[str, Any] | None:
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise Reject(f"must be an object, got {type(value).__name__}", where)
    return value


def _string(value: Any, where: str, required: bool = False) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip() and not required):
        if required:
            raise Reject("missing", where)
        return None
    if not isinstance(value, str) or not value.strip():
        raise Reject(f"must be a non-empty string, got {type(value).__name__} {json.dumps(value)[:60]}", where)
    return value.strip()


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Reject(f"must be a list, got {type(value).__name__}", where)
    return value


def known_facts(text: str | None) -> dict[str, str]:
    """'You are Emma Kim. Your user id is emma_kim_9957.' → {'name|your name|full name': …, 'user id': …}.

    Only sentences that plainly state one fact become facts; the whole text stays in the scenario's
    instructions either way, so nothing is lost for a model-played user.
    """
    facts: dict[str, str] = {}
    for line in (text or "").splitlines():
        for sentence in re.split(r"(?<=\.)\s+(?=[A-Z])", line.strip()):
            sentence = sentence.strip()
            if not sentence:
                continue
            name = _NAME.match(sentence)
            if name:
                facts["name|your name|full name"] = name.group(1)
                continue
            fact = _FACT.match(sentence)
            if fact and len(fact.group(1).split()) <= 4:
                facts[" ".join(fact.group(1).lower().split())] = fact.group(2)
    return facts


def _scenario(record: dict[str, Any]) -> tuple[UserScenario, str]:
    """The user scenario and the opening message (the reason for the call)."""
    scenario = _object(record.get("user_scenario"), "user_scenario")
    assert scenario is not None
    persona = _string(scenario.get("persona"), "user_scenario.persona") or ""
    instructions = scenario.get("instructions")
    if isinstance(instructions, str):
        text = _string(instructions, "user_scenario.instructions", required=True) or ""
        return UserScenario(persona=persona, instructions=text), text
    structured = _object(instructions, "user_scenario.instructions")
    assert structured is not None
    where = "user_scenario.instructions."
    reason = _string(structured.get("reason_for_call"), where + "reason_for_call", required=True) or ""
    known = _string(structured.get("known_info"), where + "known_info")
    unknown = _string(structured.get("unknown_info"), where + "unknown_info")
    steps = _string(structured.get("task_instructions"), where + "task_instructions")
    parts = [f"Reason for call: {reason}"]
    parts += [f"Known info: {known}"] if known else []
    parts += [f"Unknown info: {unknown}"] if unknown else []
    parts += [f"Task instructions: {steps}"] if steps else []
    return UserScenario(persona=persona, instructions="\n\n".join(parts), known_info=known_facts(known)), reason


def _domain(record: dict[str, Any]) -> str | None:
    scenario = record.get("user_scenario")
    instructions = scenario.get("instructions") if isinstance(scenario, dict) else None
    domain = instructions.get("domain") if isinstance(instructions, dict) else None
    return domain.strip() if isinstance(domain, str) and domain.strip() else None


# ------------------------------------------------------------------------------------------
#  One record → one Task and its report
# ------------------------------------------------------------------------------------------


def _action_checks(
    actions: list[Any], basis: set[str],
) -> tuple[list[ToolCall], list[Check], list[Unmapped], set[str]]:
    """Reference calls, one tool_called check per distinct action, unmapped user-side actions, tools used."""
    reference: list[ToolCall] = []
    checks: list[Check] = []
    unmapped: list[Unmapped] = []
    seen: set[str] = set()
    used: set[str] = set()
    for number, raw in enumerate(actions):
        where = f"evaluation_criteria.actions[{number}]"
        action = _object(raw, where)
        assert action is not None
        name = _string(action.get("name"), where + ".name", required=True) or ""
        arguments = _object(action.get("arguments") or {}, where + ".arguments")
        assert arguments is not None
        compare = action.get("compare_args")
        if compare is not None and (not isinstance(compare, list) or not all(isinstance(c, str) for c in compare)):
            raise Reject("must be a list of argument names or null", where + ".compare_args")
        missing = [c for c in compare or [] if c not in arguments]
        if missing:
            raise Reject(f"names arguments the action does not have: {missing}", where + ".compare_args")
        requestor = action.get("requestor") or "assistant"
        if requestor != "assistant":
            unmapped.append(Unmapped(where, f"user-side action: {name!r} is performed by the {requestor}, and "
                                            "only toolgym's own apps have user-side tools",
                                     bool(basis & {"DB", "ACTION"})))
            continue
        try:
            reference.append(ToolCall(name=name, arguments=arguments))
        except ValidationError as exc:
            raise Reject(str(exc.errors()[0].get("msg")), where + ".arguments") from exc
        used.add(name)
        compared = arguments if compare is None else {k: arguments[k] for k in compare}
        key = json.dumps([name, compared], sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        action_id = action.get("action_id")
        label = f"action {action_id}: {name}" if isinstance(action_id, str | int) else f"action {number}: {name}"
        checks.append(ToolCalled(name=name, arguments=compared or None, label=label))
    return reference, checks, unmapped, used


def record_to_task(
    record: Any, *, env: str | None, write_tools: list[str] | None, splits: dict[str, Split], source: str, line: int,
    index: int,
) -> tuple[Task | None, TaskReport]:
    """Map one tau2 task; a malformed field raises Reject naming it."""
    if not isinstance(record, dict):
        raise Reject(f"a task must be a JSON object, got {type(record).__name__}")
    raw_id = record.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
        raise Reject(f"must be a non-empty string, got {json.dumps(raw_id)[:60]}", "id")
    tau2_id = str(raw_id).strip()
    scenario, opening = _scenario(record)
    env_name = env or _domain(record)
    if not env_name:
        raise Reject("missing: name the environment with --env", "user_scenario.instructions.domain")
    report = TaskReport(tau2_id=tau2_id, index=index, line=line, status="mapped")
    criteria = _object(record.get("evaluation_criteria"), "evaluation_criteria", required=False) or {}
    basis = {str(b) for b in _list(criteria.get("reward_basis"), "evaluation_criteria.reward_basis")}
    basis = basis or {"DB", "COMMUNICATE"}  # tau2's default
    actions = _list(criteria.get("actions"), "evaluation_criteria.actions")
    reference, checks, report.unmapped, used = _action_checks(actions, basis)

    infos = _list(criteria.get("communicate_info"), "evaluation_criteria.communicate_info")
    values = []
    for number, info in enumerate(infos):
        if isinstance(info, bool) or not isinstance(info, str | int | float) or not str(info).strip():
            raise Reject(f"must be a non-empty string, got {json.dumps(info)[:60]}",
                         f"evaluation_criteria.communicate_info[{number}]")
        values.append(str(info).strip())
    if values:
        checks.append(AnswerContains(values=values, label="communicate_info"))

    if "DB" in basis:
        if write_tools is None:
            report.unmapped.append(Unmapped("evaluation_criteria.reward_basis", "DB: the final database is not "
                                            "compared (the server exposes none) and writes beyond the gold actions "
                                            "are not checked; name the write tools to check them", True))
        else:
            checks += [ToolNotCalled(name=tool, label=f"no {tool} (no gold action writes with it)")
                       for tool in write_tools if tool not in used]
    for number, assertion in enumerate(_list(criteria.get("nl_assertions"), "evaluation_criteria.nl_assertions")):
        report.unmapped.append(Unmapped(f"evaluation_criteria.nl_assertions[{number}]",
                                        f"nl_assertion: needs an LLM judge: {str(assertion)[:120]}",
                                        "NL_ASSERTION" in basis))
    for number, _ in enumerate(_list(criteria.get("env_assertions"), "evaluation_criteria.env_assertions")):
        report.unmapped.append(Unmapped(f"evaluation_criteria.env_assertions[{number}]",
                                        "env_assertion: runs a tau2 environment function", "ENV_ASSERTION" in basis))
    for kind in sorted(basis - {"DB", "COMMUNICATE", "ACTION", "NL_ASSERTION", "ENV_ASSERTION"}):
        report.unmapped.append(Unmapped("evaluation_criteria.reward_basis", f"reward basis {kind}: unknown", True))
    if record.get("initial_state") is not None:
        report.unmapped.append(Unmapped("initial_state", "initial_state: a remote server's start state cannot be "
                                        "set from a task", True))
        report.status = "skipped"
    if not checks:
        report.unmapped.append(Unmapped("evaluation_criteria", "no check: nothing in the criteria maps to a check "
                                        "(a task without checks would pass any episode)", True))
        report.status = "skipped"
    report.checks = len(checks)
    if report.status == "skipped":
        return None, report
    if any(u.in_reward_basis for u in report.unmapped):
        report.status = "partial"
    description = record.get("description")
    try:
        task = Task(
            id=f"tau2-{env_name}-{tau2_id}",
            env=env_name,
            env_version=ENV_VERSION,
            prompt=opening,
            split=splits.get(tau2_id, "train"),
            family=f"tau2-{env_name}",
            checks=checks,
            reference_solution=reference,
            expected_answer=", ".join(values) if values else None,
            user_scenario=scenario,
            metadata={
                "source": "tau2", "source_file": source, "source_line": line, "tau2_id": tau2_id,
                "tau2": {"reward_basis": sorted(basis), "mapping": report.status,
                         "unmapped": [asdict(u) for u in report.unmapped],
                         "nl_assertions": list(criteria.get("nl_assertions") or []),
                         **({"description": description} if description else {})},
            },
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise Reject(str(first.get("msg")), field_path(first.get("loc", ())) or None) from exc
    report.task_id = task.id
    return task, report


# ------------------------------------------------------------------------------------------
#  A whole file
# ------------------------------------------------------------------------------------------


def read_splits(path: Path) -> dict[str, Split]:
    """tau2 task id → toolgym split from a split_tasks.json ({"train": [...], "test": [...]})."""
    try:
        data = read_json(path)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the splits: {exc.strerror or exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the splits must be an object of split name → task ids")
    splits: dict[str, Split] = {}
    for name, split in SPLITS.items():
        ids = data.get(name) or []
        if not isinstance(ids, list):
            raise ValueError(f"{path}: field '{name}': must be a list of task ids")
        splits.update({str(i): split for i in ids})
    return splits


def import_tau2_file(
    path: str | Path, *, env: str | None = None, write_tools: list[str] | None = None,
    splits_file: str | Path | None = None,
) -> Tau2Import:
    """Every task of a tau2 tasks.json, each mapped, skipped or rejected with the reason.

    Splits come from `splits_file`, else from a split_tasks.json beside the tasks (train → train,
    test → heldout_tasks); without one every task is train.
    """
    source = Path(path)
    split_path = Path(splits_file) if splits_file is not None else source.with_name(SPLIT_FILE)
    result = Tau2Import(source=source)
    splits: dict[str, Split] = {}
    if splits_file is not None or split_path.is_file():
        splits = read_splits(split_path)
        result.splits_file = split_path
    seen: dict[str, int] = {}
    for index, (line, record) in enumerate(iter_records(source)):
        if isinstance(record, Reject):
            result.errors.append(RecordError(str(source), line, record.message, record.field, index=index))
            continue
        result.records += 1
        raw_id = record.get("id") if isinstance(record, dict) else None
        key = str(raw_id) if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
        try:
            task, report = record_to_task(record, env=env, write_tools=write_tools, splits=splits,
                                          source=source.name, line=line, index=index)
        except Reject as exc:
            result.errors.append(RecordError(str(source), line, exc.message, exc.field, key, index))
            continue
        if report.tau2_id in seen:
            result.errors.append(RecordError(str(source), line, f"duplicate task id (first at task #{seen[report.tau2_id]})",
                                             "id", report.tau2_id, index))
            continue
        seen[report.tau2_id] = index
        result.reports.append(report)
        if task is not None:
            result.tasks.append(task)
    return result


def write_tau2_import(result: Tau2Import, out_dir: str | Path, write_tools: list[str] | None = None) -> dict[str, Path]:
    """DIR/tasks.jsonl, DIR/errors.jsonl, and DIR/manifest.json with every task's mapping report."""
    db_check = ("each gold write action made (tool_called) and no other write tool called (tool_not_called)"
                if write_tools is not None else "not checked: no write tools named")
    return write_imported(out_dir, "tau2_import", result,
                          splits_path=str(result.splits_file) if result.splits_file else None,
                          write_tools=write_tools, db_check=db_check, counts=result.counts(),
                          tasks=[asdict(r) for r in result.reports])
