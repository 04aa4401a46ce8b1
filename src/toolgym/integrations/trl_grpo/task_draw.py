"""toolgym's curriculum under TRL: which task each group of a generation batch plays.

TRL's RepeatSampler fixes the layout of a generation batch (`num_generations` consecutive copies of one prompt
per group, the global batch dealt to ranks in contiguous slices) but draws prompts uniformly. With
`curriculum.enabled`, rollout_func keeps that layout and replaces each group's task by toolgym's own draw: the
same `Curriculum` and seed key as toolgym's trainer, recorded from the gathered episodes of every rank, so all
ranks hold the same state and draw the same tasks. The state after each step is written as it is recorded
(`OUT/trl/curriculum/step-N.json`, before any checkpoint of that step can exist) and the one of the checkpoint's
step is read back on resume, so a resumed run draws what an unbroken one would.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from toolgym.algorithms.advantages import Group
from toolgym.config.grpo import GRPOConfig
from toolgym.schema import Task
from toolgym.schema.documents import read_json
from toolgym.train.grpo.curriculum import Curriculum
from toolgym.train.grpo.run_state import new_curriculum

STATE_FOLDER = "curriculum"


class TaskDraw:
    """The curriculum's tasks for each generation batch, and its state after every step."""

    def __init__(self, config: GRPOConfig, tasks_by_id: dict[str, Task], folder: Path) -> None:
        self.config = config
        self.tasks_by_id = tasks_by_id
        self.folder = folder / STATE_FOLDER
        self.curriculum = self._fresh()

    def _fresh(self, state: dict[str, object] | None = None) -> Curriculum:
        curriculum = Curriculum.from_dict(state) if state is not None else new_curriculum(self.config)
        curriculum.scope_of = {t.id: f"{t.env}/{t.family}" for t in self.tasks_by_id.values()}
        return curriculum

    def step_tasks(self, step: int) -> list[str]:
        """The step's task ids, one per group, drawn exactly as toolgym's trainer draws them."""
        key = f"toolgym-grpo-tasks/{self.config.seed}/{step}"
        return self.curriculum.sample(list(self.tasks_by_id), self.config.tasks_per_step, random.Random(key))

    def tasks_for(self, prompts: list[str], step: int, first_index: int) -> list[Task]:
        """This rank's tasks: the group of global position p is p // num_generations. TRL's prompts only carry
        the layout, which is checked: a rank's copies of one group must share a prompt."""
        size = self.config.samples_per_task
        drawn = self.step_tasks(step)
        for i in range(1, len(prompts)):
            if (first_index + i) // size == (first_index + i - 1) // size and prompts[i] != prompts[i - 1]:
                raise RuntimeError(f"TRL's generation batch does not hold {size} consecutive copies of a prompt per "
                                   f"group (position {first_index + i}); the curriculum cannot keep its groups")
        return [self.tasks_by_id[drawn[(first_index + i) // size]] for i in range(len(prompts))]

    def record(self, step: int, groups: list[Group], *, main: bool) -> None:
        """Every rank records the same gathered groups (errored episodes are not attempts); the main one writes
        the state after `step` (0-based)."""
        for group in groups:
            self.curriculum.record(group.task_id, len(group.episodes), sum(e.succeeded for e in group.episodes))
        if main:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / f"step-{step + 1}.json"
            partial = path.with_suffix(".json.partial")
            partial.write_text(json.dumps(self.curriculum.to_dict(), sort_keys=True))
            partial.replace(path)

    def resume(self, steps_done: int) -> None:
        """The state after `steps_done` steps (the resumed checkpoint's); a fresh one at 0."""
        if steps_done == 0:
            self.curriculum = self._fresh()
            return
        path = self.folder / f"step-{steps_done}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: the curriculum state of the checkpoint's step is missing; resume "
                                    "needs it to draw what an unbroken run would (or start in a new out folder)")
        self.curriculum = self._fresh(read_json(path))
