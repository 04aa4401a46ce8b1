"""Tool-boundary fuzz: random and mutated-gold calls to every tool of every app; nothing may escape.

    python bench/fuzz_tools.py [--seed 0] [--calls-per-tool 120] [--tasks-per-family 8] [--apps mail,drive]

Random calls draw each argument from valid-looking values, wrong types and adversarial values
(NaN, ±Infinity, 1e308, integers beyond 64 bits, 60 KB strings, lone surrogates, 1000-deep
arrays and objects), and drop, add or garble arguments, tool names and the argument object.
Gold calls replay each generated task's reference solution (single apps and compositions) and
mutate one argument of one call. Every call is sorted into one of:

    ok           the tool answered
    tool error   a readable `Error: ...` result the model sees (the episode goes on and is scored)
    infra error  `EnvError`: the environment itself broke (the episode would end as `error`)
    escaped      any other exception out of `Environment.call_tool` (a contract break)
    unreadable   an error result that is not `Error: ...` text of at most 2,000 characters

Exit code 1 if any call escaped, was an infra error or gave an unreadable error.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from toolgym.dataset.build import BuildConfig, generate_app_tasks, generate_composition_tasks
from toolgym.envs import EnvError, Environment, Tool, app_names, get_app, make_env
from toolgym.envs.multi import composition_names, get_composition
from toolgym.schema import Task

DEFAULT_DATE = "2026-06-15"
MAX_ERROR_CHARS = 2_000
OUTCOMES = ("ok", "tool error", "infra error", "escaped", "unreadable")
RAISED_MARK = "could not use these arguments"  # Environment.call_tool's words for an exception from tool code


def _nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _nested_dict(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


DEEP_LIST = _nested_list(1000)
DEEP_DICT = _nested_dict(1000)

# Values no tool should ever see raw: each must come back as a readable tool error or a normal answer.
ADVERSARIAL: list[Any] = [
    math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 1.5, 1e19,
    2**63, 2**63 - 1, -(2**63), -(2**63) - 1, 2**64, 10**30, 10**5000, -1, 0,
    True, False, None,
    "", " ", "x" * 60_000, "%" * 60_000, "🙂" * 12_000, "\ud800", "a\udfffb", "[\udbff]",
    "%_\\", "'; DROP TABLE users; --", "\x00", "NaN", "1e400", "9" * 40, "2026-02-30", "tomorrow",
    [], {}, [1, "a", None], DEEP_LIST, DEEP_DICT, ["\ud800"], ["x" * 60_000],
    ["a"] * 5_000, {"\ud800": 1}, {"k": math.nan},
]
WRONG_TYPES: list[Any] = [None, True, 0, 7, 2.5, "7", "text", [], ["a"], {}, {"a": 1}]
WORDS = ["a", "test", "meeting", "report", "alpha", "Main St", "2026-06-20", "tomorrow", "next Friday", "*", "%"]
# Values the boundary lets through that tool code must still survive: extremes of each legal range.
EDGE_INTS = [2**63 - 1, -(2**63), 0, -1, 10**12]
EDGE_FLOATS = [1e300, -1e300, 5e-324, -0.0, 3.0]
EDGE_STRINGS = ["", " ", "x" * 10_000, "%" * 10_000, "🙂" * 2_500, "%_\\", "\x00", "' OR 1=1 --", "a\u0301", "9" * 40]

Pool = dict[str, list[Any]]  # argument name -> values reference solutions use for it


def valid_value(rng: random.Random, annotation: Any, gold: list[Any]) -> Any:
    """A plausible value of the annotated type: mostly one a reference solution used, sometimes an edge."""
    if gold and rng.random() < 0.6:
        return rng.choice(gold)
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return rng.choice(args)
    if args and type(None) in args:
        options = [a for a in args if a is not type(None)]
        return None if rng.random() < 0.1 else valid_value(rng, rng.choice(options), [])
    if args and origin is not list:
        return valid_value(rng, rng.choice(args), [])
    if origin is list:
        return [valid_value(rng, args[0] if args else str, []) for _ in range(rng.randint(0, 3))]
    if annotation is bool:
        return rng.random() < 0.5
    edge = rng.random() < 0.25
    if annotation is int:
        return rng.choice(EDGE_INTS) if edge else rng.choice([rng.randint(1, 60), rng.randint(100, 100_000)])
    if annotation is float:
        return rng.choice(EDGE_FLOATS) if edge else round(rng.uniform(-10, 500), 2)
    return rng.choice(EDGE_STRINGS) if edge else rng.choice(WORDS)


def odd_value(rng: random.Random) -> Any:
    return rng.choice(ADVERSARIAL) if rng.random() < 0.75 else rng.choice(WRONG_TYPES)


def random_call(rng: random.Random, tool: Tool, names: list[str], pool: Pool) -> tuple[str, Any]:
    """One call of `tool`: plausible arguments, then (mostly) one kind of damage."""
    arguments: dict[str, Any] = {}
    for p in tool.params:
        if p.required or rng.random() < 0.5:
            arguments[p.name] = valid_value(rng, p.annotation, pool.get(p.name, []))
    damage = rng.choices(
        ["none", "one odd", "all odd", "missing", "extra", "not an object", "unknown tool"],
        weights=[30, 35, 10, 10, 7, 4, 4],
    )[0]
    if damage == "one odd" and tool.params:
        arguments[rng.choice(tool.params).name] = odd_value(rng)
    elif damage == "all odd":
        arguments = {p.name: odd_value(rng) for p in tool.params}
    elif damage == "missing" and arguments:
        del arguments[rng.choice(sorted(arguments))]
    elif damage == "extra":
        arguments[rng.choice(["args", "limit_", "x" * 60_000, "\ud800", "id "])] = odd_value(rng)
    elif damage == "not an object":
        return tool.name, rng.choice([None, [], "{}", 3, math.nan, DEEP_LIST])
    elif damage == "unknown tool":
        return rng.choice([tool.name.upper(), tool.name + "_", "", "x" * 60_000, "\ud800", rng.choice(names)]), arguments
    return tool.name, arguments


def mutate(rng: random.Random, arguments: dict[str, Any], tool: Tool | None) -> Any:
    """A gold call's arguments with one argument damaged (or one dropped, or one added)."""
    mutated = dict(arguments)
    if mutated and rng.random() < 0.8:
        key = rng.choice(sorted(mutated))
        if rng.random() < 0.15:
            del mutated[key]
        else:
            mutated[key] = odd_value(rng)
    elif tool is not None and tool.params:
        mutated[rng.choice(tool.params).name] = odd_value(rng)
    else:
        mutated["args"] = odd_value(rng)
    return mutated


@dataclass
class Tally:
    """Outcome counts, with the first example of every escaped or infra failure by exception type."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    raised: int = 0  # tool errors that came from an exception in tool code

    def run(self, env: Environment, name: str, arguments: Any, caller: str) -> str:
        try:
            result = env.call_tool(name, arguments, caller=caller)
        except EnvError as exc:
            return self._failure("infra error", name, exc)
        except Exception as exc:
            return self._failure("escaped", name, exc)
        if not result.is_error:
            outcome = "ok"
        elif result.content.startswith("Error: ") and len(result.content) <= MAX_ERROR_CHARS:
            outcome = "tool error"
            if RAISED_MARK in result.content:  # tool code raised on the input: a readable error, but worth a look
                self.raised += 1
                self.examples.setdefault(f"tool raised {name}", ascii(result.content[:200]))
        else:
            outcome = "unreadable"
            self.examples.setdefault(f"unreadable {name[:40]}", ascii(result.content[:160]))
        self.counts[outcome] += 1
        return outcome

    def _failure(self, outcome: str, name: str, exc: Exception) -> str:
        self.counts[outcome] += 1
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        self.examples.setdefault(f"{outcome} {name[:40]!a} {type(cause).__name__}", ascii(str(exc)[:200]))
        return outcome

    def add(self, other: Tally) -> None:
        self.counts.update(other.counts)
        self.raised += other.raised
        for key, value in other.examples.items():
            self.examples.setdefault(key, value)

    @property
    def calls(self) -> int:
        return sum(self.counts.values())

    @property
    def broken(self) -> int:
        return self.counts["escaped"] + self.counts["infra error"] + self.counts["unreadable"]


def gold_pool(tasks: list[Task]) -> Pool:
    """Every value the reference solutions pass, by argument name."""
    pool: Pool = {}
    for task in tasks:
        for call in task.reference_solution:
            for key, value in call.arguments.items():
                values = pool.setdefault(key, [])
                if value not in values:
                    values.append(value)
    return pool


def fuzz_random(env_name: str, tasks: list[Task], calls_per_tool: int, seed: int, reset_every: int = 10) -> Tally:
    """`calls_per_tool` random calls of every tool in the environment, each by the tool's owner, as the
    logged-in user of one of the environment's tasks (so that "my" data exists)."""
    rng = random.Random(f"{seed}:{env_name}")
    env = make_env(env_name)
    contexts = [t.env_variables for t in tasks if t.env == env_name] or [{"CURRENT_DATE": DEFAULT_DATE}]
    pool = gold_pool([t for t in tasks if t.env == env_name])
    tools = [t for app in env.apps for t in app.tools]
    names = [t.name for t in tools]
    tally = Tally()
    index = 0
    for t in tools:
        for _ in range(calls_per_tool):
            if index % reset_every == 0:
                env.reset(rng.choice(contexts))
            index += 1
            name, arguments = random_call(rng, t, names, pool)
            tally.run(env, name, arguments, t.owner)
    env.close()
    return tally


def fuzz_gold(tasks: list[Task], seed: int) -> Tally:
    """For every task: replay its reference calls up to a random one, then send that call mutated."""
    rng = random.Random(f"{seed}:gold")
    envs: dict[str, Environment] = {}
    tally = Tally()
    for task in tasks:
        if not task.reference_solution:
            continue
        env = envs.setdefault(task.env, make_env(task.env))
        user_owned = {s.name for s in env.tool_specs("user")}
        tools = {t.name: t for app in env.apps for t in app.tools}
        for target in range(len(task.reference_solution)):
            env.reset(task.env_variables)
            for position, call in enumerate(task.reference_solution[: target + 1]):
                caller = "user" if call.name in user_owned else "agent"
                arguments = call.arguments
                if position == target:
                    arguments = mutate(rng, call.arguments, tools.get(call.name))
                    tally.run(env, call.name, arguments, caller)
                else:
                    try:
                        env.call_tool(call.name, arguments, caller=caller)
                    except Exception as exc:  # a gold call that crashes unmutated: a bug of its own
                        tally._failure("infra error", f"gold {call.name}", exc)
                        break
    for env in envs.values():
        env.close()
    return tally


def gold_tasks(apps: list[str], compositions: list[str], per_family: int) -> list[Task]:
    config = BuildConfig(tasks_per_family=per_family)
    tasks: list[Task] = []
    for name in apps:
        tasks.extend(generate_app_tasks(get_app(name), config))
    for name in compositions:
        tasks.extend(generate_composition_tasks(get_composition(name), config))
    return tasks


def line(label: str, tally: Tally, seconds: float) -> str:
    counts = "  ".join(f"{o} {tally.counts[o]:>6,}" for o in OUTCOMES)
    return f"{label:<28} calls {tally.calls:>7,}  {counts}   ({seconds:.1f}s)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", default=",".join(app_names()), help="comma-separated registered apps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--calls-per-tool", type=int, default=120)
    parser.add_argument("--composition-calls-per-tool", type=int, default=10)
    parser.add_argument("--tasks-per-family", type=int, default=8)
    args = parser.parse_args()
    apps = [a for a in args.apps.split(",") if a]
    compositions = [c for c in composition_names() if all(part in apps for part in c.split("+"))]

    total = Tally()
    started = time.perf_counter()
    tasks = gold_tasks(apps, compositions, args.tasks_per_family)
    print(f"seed {args.seed}; {len(apps)} apps, {len(compositions)} compositions, {len(tasks)} generated tasks "
          f"({time.perf_counter() - started:.1f}s)")
    for name in apps + compositions:
        started = time.perf_counter()
        per_tool = args.calls_per_tool if name in apps else args.composition_calls_per_tool
        tally = fuzz_random(name, tasks, per_tool, args.seed)
        total.add(tally)
        print(line(f"random {name}", tally, time.perf_counter() - started))
    started = time.perf_counter()
    gold = fuzz_gold(tasks, args.seed)
    total.add(gold)
    print(line(f"gold mutated ({len(tasks)} tasks)", gold, time.perf_counter() - started))
    print(line("total", total, 0.0).rsplit("(", 1)[0])
    print(f"of the tool errors, {total.raised:,} came from an exception in tool code"
          + (" (first of each tool below)" if total.raised else ""))
    for key, example in sorted(total.examples.items()):
        print(f"  {key}: {example}")
    print("PASS: nothing escaped" if total.broken == 0 else f"FAIL: {total.broken} call(s) broke the contract")
    return 1 if total.broken else 0


if __name__ == "__main__":
    sys.exit(main())
