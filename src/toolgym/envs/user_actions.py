"""Instructions <-> user-side tool calls, from the `user_actions` an app declares.

`parse_instructions` is how a scripted user understands "Please turn off airplane mode, then run
a speed test": the text is split into clauses, and each clause is matched against every action's
regexes (lower-cased, apostrophes normalised); slot values (which app, which permission, which
network mode) are read from the same clause. `instruction_for` goes the other way, for an agent
that must phrase a reference solution's user-side call. Deterministic: no model, no randomness.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from toolgym.schema import ToolCall

_CLAUSE_SPLIT = re.compile(r"(?<=[.!?;:])\s+|\n+|,\s*(?:and\s+)?then\s+|\s+and\s+then\s+|\s+then\s+")
_PREFERRED = re.compile(r"\b(?:to|set to|select|choose|pick)\s+(?:the\s+)?$")


def normalize(text: str) -> str:
    """Lower case, straight apostrophes, single spaces: what the action regexes are written for."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(text.lower().split())


def clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_SPLIT.split(normalize(text)) if c and c.strip()]


def app_user_actions(apps: Iterable[Any]) -> list[Any]:
    """Every `user_actions` entry of the given apps (apps without any contribute nothing)."""
    return [action for app in apps for action in getattr(app, "user_actions", ())]


def _slot_values(clause: str, aliases: dict[Any, Sequence[str]]) -> list[tuple[int, int, Any]]:
    """(preference, position, value) for each value named in the clause; lower sorts first.

    A value right after "to"/"set to" is preferred ("from 2G only to LTE" means LTE); otherwise the
    first mentioned wins, and at the same position the longest alias ("5G/4G/3G" over "5G").
    """
    found: dict[Any, tuple[int, int, int]] = {}
    for value, patterns in aliases.items():
        for pattern in patterns:
            for match in re.finditer(pattern, clause):
                preferred = 0 if _PREFERRED.search(clause[: match.start()]) else 1
                key = (preferred, match.start(), -(match.end() - match.start()))
                if value not in found or key < found[value]:
                    found[value] = key
    ranked = sorted(found.items(), key=lambda item: item[1])
    return [(k[0], k[1], v) for v, k in ranked]


def _calls_for(action: Any, clause: str) -> list[tuple[int, ToolCall]]:
    """The calls one action recognises in one clause, each with its position in the clause."""
    positions = [m.start() for p in action.patterns if (m := re.search(p, clause))]
    if not positions:
        return []
    start = min(positions)
    slot_choices: list[list[tuple[str, Any]]] = []
    for slot, aliases in action.slots.items():
        values = _slot_values(clause, aliases)
        if not values:
            return []  # the instruction is recognised but incomplete (which app?): not actionable
        if slot == action.multi:
            ordered = sorted(values, key=lambda v: v[1])
            slot_choices.append([(slot, v[2]) for v in ordered])
        else:
            slot_choices.append([(slot, values[0][2])])
    calls = []
    for index, combination in enumerate(itertools.product(*slot_choices)):
        arguments = {**action.arguments, **dict(combination)}
        calls.append((start + index, ToolCall(name=action.tool, arguments=arguments)))
    return calls


def parse_instructions(actions: Sequence[Any], text: str) -> list[ToolCall]:
    """The user-side calls an agent's message asks for, in the order it asks for them (no duplicates
    within a clause)."""
    result: list[ToolCall] = []
    for clause in clauses(text):
        found: list[tuple[int, int, ToolCall]] = []
        for order, action in enumerate(actions):
            for position, call in _calls_for(action, clause):
                found.append((position, order, call))
        seen: set[str] = set()
        for _, _, call in sorted(found, key=lambda f: (f[0], f[1])):
            key = f"{call.name}:{sorted(call.arguments.items())}"
            if key not in seen:
                seen.add(key)
                result.append(call)
    return result


def _describing(actions: Sequence[Any], call: ToolCall) -> tuple[Any, dict[str, Any]] | None:
    """The action that describes `call` exactly, with its slot values as they are spoken."""
    for action in actions:
        if action.tool != call.name:
            continue
        if any(call.arguments.get(k) != v for k, v in action.arguments.items()):
            continue
        slots = set(action.slots)
        if set(call.arguments) - set(action.arguments) != slots:
            continue
        if any(call.arguments[s] not in action.slots[s] for s in slots):
            continue
        shown = {s: action.say_values.get(s, {}).get(call.arguments[s], call.arguments[s]) for s in slots}
        return action, shown
    return None


def instruction_for(actions: Sequence[Any], call: ToolCall) -> str | None:
    """The canonical sentence asking the user to make `call`, or None if no action describes it."""
    found = _describing(actions, call)
    return str(found[0].say).format(**found[1]) if found else None


def report_for(actions: Sequence[Any], call: ToolCall) -> str | None:
    """What the user says after making `call` ("I turned off airplane mode."), if the app phrased it."""
    found = _describing(actions, call)
    done = str(getattr(found[0], "done", "") or "") if found else ""
    return done.format(**found[1]) if found and done else None
