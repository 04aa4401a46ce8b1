"""The `rollout_func` GRPOTrainer calls: toolgym's own episodes, sampled by the model TRL is training.

TRL hands over one generation batch of prompts (already repeated `num_generations` times); each prompt is a task
key (`task_prompt`). Every prompt becomes one toolgym episode played by `run_episode` (toolgym's chat template,
parser, budgets, format feedback, user simulator, `done` tool) through a `SharedModelPolicy` over the unwrapped
trainer model, and one TRL sample: the first turn's prompt ids, everything after them as the completion, the
sampler's log-probs, `env_mask` = toolgym's loss mask (tool results and user turns are not trained), and the
shaped verifier reward as the extra field `toolgym_reward` (None for an errored episode: TRL leaves it out of its
group, never scores it 0).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from toolgym.agent.samples import build_samples
from toolgym.algorithms.advantages import shaped_reward
from toolgym.config.grpo import GRPOConfig
from toolgym.envs import Environment
from toolgym.integrations.trl_grpo.task_draw import TaskDraw
from toolgym.policy.base import Policy, SamplingParams
from toolgym.schema import Episode, Task
from toolgym.train.grpo.policy import SharedModelPolicy
from toolgym.train.grpo.rollouts import RolloutPool, step_sampling

PROMPT_PREFIX = "toolgym-task:"
REWARD_FIELD = "toolgym_reward"


def task_prompt(task: Task) -> str:
    """The dataset row's prompt: a key rollout_func maps back to the task (TRL passes prompts only)."""
    return PROMPT_PREFIX + task.id


def task_rows(tasks: list[Task], at_least: int) -> list[dict[str, str]]:
    """One row per task, the list repeated until a step's distinct prompts can be drawn from it."""
    rows = [{"prompt": task_prompt(t)} for t in tasks]
    while len(rows) < at_least:
        rows += rows[: at_least - len(rows)]
    return rows


def toolgym_reward(prompts: list[Any], completions: list[Any], **fields: Any) -> list[float | None]:
    """TRL's reward function: the shaped verifier reward rollout_func computed (None: errored, unscored)."""
    return list(fields[REWARD_FIELD])


def trl_vllm_policy(trainer: Any, config: GRPOConfig) -> Policy:
    """toolgym's sampler over TRL's vLLM: colocate, the engine TRL built in this rank (toolgym's request loop over
    it); server, `trl vllm-serve`'s OpenAI-compatible `/v1/completions` in token mode, one client per rank (TRL's
    own generate is a collective call per turn, which episodes of different lengths cannot make in step)."""
    args = trainer.args
    if args.vllm_mode == "colocate":
        from toolgym.policy.vllm_policy import VLLMPolicy

        return VLLMPolicy.attached(trainer.vllm_generation.llm, config.model, device=str(trainer.accelerator.device),
                                   max_context=config.sampling.max_context_tokens)
    from toolgym.policy.openai_policy import OpenAIPolicy

    base = args.vllm_server_base_url or f"http://{args.vllm_server_host}:{args.vllm_server_port}"
    return OpenAIPolicy(base.rstrip("/") + "/v1", config.model, mode="token", tokenizer_dir=config.model)


@dataclass
class SampledBatch:
    """One rollout_func call's episodes in prompt order, and how long they took."""

    step: int
    episodes: list[Episode]
    seconds: float


class ToolgymRollout:
    """rollout_func: plays a generation batch of toolgym episodes and turns each into one TRL sample."""

    def __init__(self, config: GRPOConfig, tasks_by_id: dict[str, Task], *,
                 env_factory: Callable[[str], Environment],
                 on_batch: Callable[[SampledBatch, Any], None], draw: TaskDraw | None = None) -> None:
        self.config = config
        self.tasks_by_id = tasks_by_id
        self.draw = draw  # curriculum.enabled: toolgym draws each group's task
        self.env_factory = env_factory
        self.on_batch = on_batch
        self.sampling = config.sampling.to_params()
        self.policy: Policy | None = None
        self.pool: RolloutPool | None = None

    def _start(self, trainer: Any) -> None:
        args = trainer.args
        if args.use_vllm:
            self.policy = trl_vllm_policy(trainer, self.config)
        else:
            engine = self.config.engine
            self.policy = SharedModelPolicy(trainer.accelerator.unwrap_model(trainer.model), trainer.processing_class,
                                            name=f"grpo-trl:{self.config.out}", device=str(trainer.accelerator.device),
                                            max_batch_size=engine.max_batch_size, batch_wait_ms=engine.batch_wait_ms,
                                            autocast_dtype=torch.bfloat16 if args.bf16 else None)
        slots = self.config.concurrency or self.config.tasks_per_step * self.config.samples_per_task
        self.pool = RolloutPool(self.policy, slots=slots, env_factory=self.env_factory, limits=self.config.sampling)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self.policy is not None:
            asyncio.run(self.policy.close())

    def _weights_moved(self, label: str) -> None:
        """The sampler now serves `label`'s weights: the in-process model shares them; TRL pushed them into vLLM
        before calling rollout_func (colocate: into its engine; server: over NCCL), so only the label moves."""
        assert self.policy is not None
        if isinstance(self.policy, SharedModelPolicy):
            self.policy.weights_changed(label)
        else:
            self.policy.checkpoint = label

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        if self.policy is None:
            self._start(trainer)
        assert self.policy is not None
        began = time.perf_counter()
        step = trainer.state.global_step // trainer.args.num_iterations  # toolgym's step: one generation batch
        self._weights_moved(f"{self.config.out}@step-{step}")
        first_index = trainer.accelerator.process_index * len(prompts)  # distinct episode seeds on every rank
        if self.draw is not None:
            tasks = self.draw.tasks_for([str(p) for p in prompts], step, first_index)
        else:
            tasks = [self.tasks_by_id[str(p).removeprefix(PROMPT_PREFIX)] for p in prompts]
        episodes = asyncio.run(self._play(tasks, step_sampling(self.sampling, self.config.seed, step), first_index))
        self.on_batch(SampledBatch(step, episodes, time.perf_counter() - began), trainer)
        return self.samples(episodes, trainer.processing_class)

    async def _play(self, tasks: list[Task], sampling: SamplingParams, first_index: int) -> list[Episode]:
        assert self.pool is not None
        pending = list(enumerate(tasks))
        pending.reverse()
        results: dict[int, Episode] = {}

        async def slot(worker: Any) -> None:
            while pending:
                position, task = pending.pop()
                results[position] = await worker.run(task, first_index + position, sampling)

        await asyncio.gather(*(slot(w) for w in self.pool.workers[: max(1, len(tasks))]))
        return [results[i] for i in range(len(tasks))]

    def reward(self, episode: Episode) -> float | None:
        """The shaped verifier reward, None for an episode infrastructure broke (or one TRL cannot take whole)."""
        if episode.status == "error" or len(build_samples(episode.token_turns)) != 1:
            return None
        return shaped_reward(episode.reward, episode.partial_score, self.config.reward.alpha_for(episode.env))

    def samples(self, episodes: list[Episode], tokenizer: Any) -> dict[str, list[Any]]:
        """One TRL sample per episode. An episode without one whole token sequence (errored, or a template that
        rewrote history) becomes a one-token placeholder that is masked out and has no reward."""
        filler = int(tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.pad_token_id)
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                     REWARD_FIELD: []}
        for episode in episodes:
            reward = self.reward(episode)
            if reward is None:
                prompt, completion, logprobs, mask = [filler], [filler], [0.0], [0]
            else:
                sample = build_samples(episode.token_turns)[0]
                cut = len(episode.token_turns[0].prompt_ids)
                prompt, completion = sample.input_ids[:cut], sample.input_ids[cut:]
                logprobs, mask = sample.sampler_logprobs[cut:], sample.loss_mask[cut:]
            out["prompt_ids"].append(list(prompt))
            out["completion_ids"].append(list(completion))
            out["logprobs"].append([float(x) for x in logprobs])
            out["env_mask"].append([int(x) for x in mask])
            out[REWARD_FIELD].append(reward)
        return out
