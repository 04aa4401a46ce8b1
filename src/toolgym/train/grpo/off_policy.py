"""One-step-off-policy GRPO: the next step's rollouts are sampled while the current update runs.

Step t trains on episodes sampled by the weights of version t-1 (the weights before step t-1's update;
version v = the weights after v updates), sampled on a background thread while step t-1's update ran:
rollouts (the slow part with vLLM) and updates overlap. The first step of a run has nothing prefetched
and samples at once (staleness 0). Each episode's version travels with it; an episode more than
`max_staleness` updates old is dropped, never trained on. The ratio's denominator and the importance
weights of `loss.mismatch` (mismatch.py) use the sampler's recorded log-probs, so the stale episodes are
corrected like any sampler/trainer mismatch.

The HF engine samples from a snapshot copy of the trainer's weights (`SnapshotPolicy`): the update
changes the trainer's tensors in place while the background thread samples. Pending rollouts are saved
with each checkpoint, so a resumed run trains exactly what the unbroken run would have.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from toolgym.schema import Episode, Task
from toolgym.train.grpo.policy import SharedModelPolicy

Sampler = Callable[[int], tuple[list[Task], list[Episode], int]]  # step → (tasks, episodes, sampling rounds)


class SnapshotPolicy(SharedModelPolicy):
    """HF rollouts from a copy of the trainer's model, refreshed by `weights_changed(label)` on a new label,
    so sampling in the background never sees an update half-applied."""

    def __init__(self, model: Any, tokenizer: Any, **options: Any) -> None:
        self.source = model
        snapshot = copy.deepcopy(model).requires_grad_(False).eval()
        super().__init__(snapshot, tokenizer, **options)
        self.synced_label: str | None = None

    def weights_changed(self, checkpoint: str | None = None) -> None:
        if checkpoint is not None and checkpoint == self.synced_label:
            return
        with torch.no_grad():
            for served, trained in zip(self.model.state_dict().values(), self.source.state_dict().values(),
                                       strict=True):
                served.copy_(trained)
        self.synced_label = checkpoint
        super().weights_changed(checkpoint)


@dataclass
class SampledStep:
    """The rollouts one step trains on, with the weights version that sampled each episode."""

    step: int  # the step (0-based) that trains them
    tasks: list[Task]
    episodes: list[Episode]
    rounds: int
    versions: list[int]  # per episode: the updates its sampling weights had seen (0: the initial weights)
    seconds: float = 0.0  # sampling wall time
    too_stale: int = field(default=0)  # episodes dropped by the staleness bound

    def staleness(self, episode: int) -> int:
        return self.step - self.versions[episode]

    def row(self) -> dict[str, Any]:
        """The metrics row's version numbers: the oldest sampling weights of the step and their staleness."""
        oldest = min(self.versions) if self.versions else self.step
        return {"policy_version": oldest, "staleness": self.step - oldest}

    def to_state(self) -> dict[str, Any]:
        """JSON for a checkpoint's trainer state (pending rollouts survive a restart)."""
        return {"step": self.step, "task_ids": [t.id for t in self.tasks], "rounds": self.rounds,
                "versions": self.versions, "seconds": self.seconds,
                "episodes": [e.model_dump(mode="json") for e in self.episodes]}

    @classmethod
    def from_state(cls, data: dict[str, Any], tasks_by_id: dict[str, Task]) -> SampledStep:
        return cls(step=int(data["step"]), tasks=[tasks_by_id[i] for i in data["task_ids"]],
                   episodes=[Episode.model_validate(e) for e in data["episodes"]], rounds=int(data["rounds"]),
                   versions=[int(v) for v in data["versions"]], seconds=float(data.get("seconds", 0.0)))


def within_staleness(sampled: SampledStep, max_staleness: int) -> SampledStep:
    """The episodes at most `max_staleness` updates older than the step's weights; the rest are counted in
    `too_stale` and never trained on."""
    keep = [i for i in range(len(sampled.episodes)) if sampled.staleness(i) <= max_staleness]
    if len(keep) == len(sampled.episodes):
        return sampled
    kept_ids = {sampled.episodes[i].task_id for i in keep}
    return replace(sampled, episodes=[sampled.episodes[i] for i in keep],
                   versions=[sampled.versions[i] for i in keep],
                   tasks=[t for t in sampled.tasks if t.id in kept_ids],
                   too_stale=sampled.too_stale + len(sampled.episodes) - len(keep))


def sample_now(sample: Sampler, step: int, version: int) -> SampledStep:
    began = time.perf_counter()
    tasks, episodes, rounds = sample(step)
    return SampledStep(step, tasks, episodes, rounds, [version] * len(episodes), time.perf_counter() - began)


class RolloutPrefetch:
    """One background thread that samples the next step's rollouts; `take` hands them to the step."""

    def __init__(self, sample: Sampler) -> None:
        self.sample = sample
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grpo-prefetch")
        self.future: Future[SampledStep] | None = None
        self.held: SampledStep | None = None

    def start(self, step: int, version: int) -> None:
        """Sample `step`'s rollouts in the background with the engine's current weights (`version`)."""
        self.wait()
        self.held = None
        self.future = self.executor.submit(sample_now, self.sample, step, version)

    def wait(self) -> SampledStep | None:
        """Block until the background sampling (if any) is done; its rollouts stay held for `take`.
        A failure of the sampling is raised here."""
        if self.future is not None:
            future, self.future = self.future, None
            self.held = future.result()
        return self.held

    def hold(self, sampled: SampledStep) -> None:
        """Rollouts restored from a checkpoint."""
        self.held = sampled

    def take(self, step: int) -> SampledStep | None:
        """The rollouts sampled for `step` (None if none are)."""
        held = self.wait()
        self.held = None
        return held if held is not None and held.step == step else None

    def close(self) -> None:
        """Wait for a sampling in flight (its result or failure no longer matters), then stop the thread."""
        with contextlib.suppress(Exception):  # the run is ending (or already failing) for another reason
            self.wait()
        self.executor.shutdown(wait=True)
