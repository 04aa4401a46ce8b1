"""A new algorithm option is one registered function: the test registers a loss, an advantage baseline and
an aggregation of its own and runs a GRPO update with them, touching nothing but the registry."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import pytest
import torch

from test_rollout_support import tiny_model_dir
from toolgym.algorithms import registry
from toolgym.algorithms.advantages import build_groups
from toolgym.algorithms.losses import Surrogate
from toolgym.config import ConfigError, validate_config
from toolgym.config.grpo import GRPOSettings
from toolgym.schema import CheckResult, Episode, TrainingSample, Verdict
from toolgym.train.grpo.update import policy_update


def _episode(reward: float, samples: list[TrainingSample]) -> Episode:
    verdict = Verdict(reward=reward, partial_score=reward,
                      checks=[CheckResult(kind="answer_contains", label="answer", passed=reward >= 1.0, weight=1.0)])
    return Episode(task_id="t", env="booking", status="ok", verdict=verdict, samples=samples)


@pytest.fixture
def own_options() -> Iterator[list[str]]:
    """A REINFORCE loss (no ratio, no clip), a median baseline and a per-episode-sum aggregation."""
    called: list[str] = []

    @registry.register_loss("reinforce_test")
    def reinforce(inputs: registry.LossInputs, loss: object) -> Surrogate:
        called.append("loss")
        ratio = torch.exp(inputs.logprobs - inputs.logprobs.detach())  # 1, with the gradient of log p
        none = torch.zeros_like(ratio, dtype=torch.bool)
        return Surrogate(loss=-ratio * inputs.advantages, ratio=ratio, clipped_low=none, clipped_high=none)

    @registry.register_baseline("median_test")
    def median(rewards: list[float]) -> list[float]:
        called.append("baseline")
        middle = sorted(rewards)[len(rewards) // 2]
        return [r - middle for r in rewards]

    @registry.register_aggregation("episode_sum_test")
    def episode_sum(tokens: list[int], constant: int | None) -> list[float]:
        called.append("aggregation")
        return [1.0 if n else 0.0 for n in tokens]

    yield called
    for kind, name in (("loss", "reinforce_test"), ("baseline", "median_test"), ("aggregation", "episode_sum_test")):
        registry.unregister(kind, name)


def test_registered_options_validate_and_drive_a_grpo_update(own_options: list[str]) -> None:
    from transformers import AutoModelForCausalLM

    settings = validate_config(GRPOSettings, {
        "loss": {"objective": "reinforce_test", "aggregation": "episode_sum_test"},
        "advantage": {"baseline": "median_test", "std_normalize": False}})
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir()), local_files_only=True)
    before = [p.detach().clone() for p in model.parameters()]
    rows = [torch.randint(5, 200, (10,)).tolist() for _ in range(3)]
    episodes = [_episode(reward, [TrainingSample(input_ids=row, loss_mask=[0] * 5 + [1] * 5,
                                                 sampler_logprobs=[0.0] * 10)])
                for reward, row in zip([1.0, 0.0, 0.0], rows, strict=True)]
    groups, stats = build_groups(episodes, lambda env: 0.0, baseline=settings.advantage.baseline,
                                 std_normalize=settings.advantage.std_normalize)
    assert stats.groups_with_signal == 1 and groups[0].advantages == [1.0, 0.0, 0.0]
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    update = policy_update(model, optimizer, groups, settings, pad_id=0, device="cpu", rng=random.Random(0),
                           backward=lambda loss: loss.backward(),
                           clip_grad=lambda norm: float(torch.nn.utils.clip_grad_norm_(model.parameters(), norm)),
                           autocast=contextlib.nullcontext)
    assert update.optimizer_steps == 1 and update.tokens == 15
    assert {"loss", "baseline", "aggregation"} <= set(own_options)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_an_unregistered_option_is_a_config_error_listing_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"field loss.objective: .*loss must be one of token, sequence; got 'nope'"):
        validate_config(GRPOSettings, {"loss": {"objective": "nope"}}, "grpo.yaml")
    with pytest.raises(ConfigError, match=r"advantage.baseline: .*group_mean, leave_one_out"):
        validate_config(GRPOSettings, {"advantage": {"baseline": "median"}}, "grpo.yaml")
    with pytest.raises(ValueError, match="registered already"):
        registry.register_loss("token")(lambda inputs, loss: None)  # type: ignore[arg-type,return-value]
