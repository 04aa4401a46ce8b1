"""Curriculum: which train tasks a GRPO step samples, weighted by how the policy does on them.

The tau2 RL pipeline's rule is the default: once a task has ≥ 5 scored attempts, success rate
> 0.75 → weight 0.1 (mostly solved: little left to learn), < 0.25 → 0.5 (too hard for now),
else 1.0. Errored episodes are not attempts. The state is plain JSON saved with each checkpoint,
so a resumed run samples exactly what an unbroken one would.

Scope `family` keeps the counts per task family instead of per task: with more train tasks than a run
samples, a task is rarely drawn twice, so per-task counts never reach `min_attempts`; a family's
attempts do, and tell the sampler where the policy's groups have reward variance.

Rule `mixed_groups` weighs a key by the share of its groups that held both a success and a failure,
Laplace-smoothed ((mixed + 1) / (groups + 2)): GRPO learns only from such groups, so this spends the
rollouts where they teach, without thresholds to tune (an unseen key starts at 0.5).

`stratify` (scope family) draws the step's families first, distinct and ∝ weight, then one task of each:
a step's groups then come from different families, so an update sees the contexts where a shared
decision (answer with the count, or assign the issue) goes each way, instead of one of them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

CurriculumScope = Literal["task", "family"]
RuleKind = Literal["success_rate", "mixed_groups"]


@dataclass(frozen=True)
class CurriculumRule:
    min_attempts: int = 5
    easy_above: float = 0.75
    easy_weight: float = 0.1
    hard_below: float = 0.25
    hard_weight: float = 0.5
    default_weight: float = 1.0
    kind: RuleKind = "success_rate"

    def weight(self, attempts: int, successes: int, groups: int = 0, mixed: int = 0) -> float:
        if self.kind == "mixed_groups":
            return self.default_weight * (mixed + 1) / (groups + 2)
        if attempts < self.min_attempts:
            return self.default_weight
        rate = successes / attempts
        if rate > self.easy_above:
            return self.easy_weight
        if rate < self.hard_below:
            return self.hard_weight
        return self.default_weight


class Curriculum:
    """Attempts and successes per scope key (a task id, or a task's `env/family`); weighted sampling
    of tasks without replacement."""

    def __init__(self, rule: CurriculumRule | None = None, enabled: bool = True,
                 scope: CurriculumScope = "task", stratify: bool = False) -> None:
        if stratify and scope != "family":
            raise ValueError("curriculum stratify needs scope 'family' (it draws one task per family)")
        self.rule = rule or CurriculumRule()
        self.enabled = enabled
        self.scope = scope
        self.stratify = stratify
        self.scope_of: dict[str, str] = {}  # task id → its family key (scope family; not saved: from the tasks)
        self.attempts: dict[str, int] = {}
        self.successes: dict[str, int] = {}
        self.groups: dict[str, int] = {}  # record() calls: one per group
        self.mixed: dict[str, int] = {}  # groups with a success and a failure

    def key(self, task_id: str) -> str:
        return self.scope_of.get(task_id, task_id) if self.scope == "family" else task_id

    def record(self, task_id: str, attempts: int, successes: int) -> None:
        if not 0 <= successes <= attempts:
            raise ValueError(f"task {task_id}: successes {successes} outside [0, attempts {attempts}]")
        key = self.key(task_id)
        self.attempts[key] = self.attempts.get(key, 0) + attempts
        self.successes[key] = self.successes.get(key, 0) + successes
        self.groups[key] = self.groups.get(key, 0) + 1
        self.mixed[key] = self.mixed.get(key, 0) + int(0 < successes < attempts)

    def weight(self, task_id: str) -> float:
        return self._key_weight(self.key(task_id))

    def _key_weight(self, key: str) -> float:
        if not self.enabled:
            return 1.0
        return self.rule.weight(self.attempts.get(key, 0), self.successes.get(key, 0), self.groups.get(key, 0),
                                self.mixed.get(key, 0))

    def sample(self, task_ids: Sequence[str], n: int, rng: random.Random) -> list[str]:
        """n distinct tasks drawn with probability ∝ weight; stratified: distinct families first."""
        if n >= len(task_ids):
            order = list(task_ids)
            rng.shuffle(order)
            return order
        if not self.stratify:
            return _weighted_draw(task_ids, self.weight, n, rng)
        by_family: dict[str, list[str]] = {}
        for task_id in task_ids:
            by_family.setdefault(self.key(task_id), []).append(task_id)
        families = _weighted_draw(sorted(by_family), self._key_weight, n, rng)
        chosen = [rng.choice(by_family[family]) for family in families]
        if len(chosen) < n:  # fewer families than tasks a step: the rest as without stratification
            taken = set(chosen)
            rest = [task_id for task_id in task_ids if task_id not in taken]
            chosen += _weighted_draw(rest, self.weight, n - len(chosen), rng)
        return chosen

    def weight_counts(self) -> dict[str, int]:
        """How many tracked scope keys (tasks or families) sit at each weight (for metrics)."""
        counts: dict[str, int] = {}
        for key in self.attempts:
            label = f"{self._key_weight(key):.3g}"
            counts[label] = counts.get(label, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {"rule": asdict(self.rule), "enabled": self.enabled, "scope": self.scope, "stratify": self.stratify,
                "attempts": dict(sorted(self.attempts.items())), "successes": dict(sorted(self.successes.items())),
                "groups": dict(sorted(self.groups.items())), "mixed": dict(sorted(self.mixed.items()))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Curriculum:
        curriculum = cls(CurriculumRule(**data.get("rule", {})), bool(data.get("enabled", True)),
                         data.get("scope", "task"), bool(data.get("stratify", False)))
        curriculum.attempts = {str(k): int(v) for k, v in data.get("attempts", {}).items()}
        curriculum.successes = {str(k): int(v) for k, v in data.get("successes", {}).items()}
        curriculum.groups = {str(k): int(v) for k, v in data.get("groups", {}).items()}
        curriculum.mixed = {str(k): int(v) for k, v in data.get("mixed", {}).items()}
        return curriculum


def _weighted_draw(items: Sequence[str], weight: Callable[[str], float], n: int, rng: random.Random) -> list[str]:
    """n distinct items drawn with probability ∝ weight (Efraimidis–Spirakis keys u^(1/w))."""
    keyed = []
    for item in items:
        w = weight(item)
        u = rng.random()
        keyed.append((math.log(u) / w if w > 0 and u > 0 else -math.inf, item))
    keyed.sort(key=lambda pair: pair[0], reverse=True)
    return [item for _, item in keyed[:n]]
