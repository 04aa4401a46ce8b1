"""GRPO pieces on hand-computed examples: advantages, honest groups, clip low/high, KL k3, weights, masks."""

from __future__ import annotations

import contextlib
import math
import random

import pytest
import torch

from toolgym.algorithms.advantages import build_groups, group_advantages, shaped_reward
from toolgym.algorithms.losses import (
    clipped_surrogate,
    entropy,
    kl_k3,
    policy_loss,
    sampled_token_logprobs,
    token_weights,
)
from toolgym.config.grpo import GRPOSettings
from toolgym.policy.base import SamplingParams
from toolgym.policy.sampling import RowSampler, RowState
from toolgym.schema import CheckResult, Episode, TrainingSample, Verdict
from toolgym.train.batching import collate
from toolgym.train.grpo.curriculum import Curriculum, CurriculumRule
from toolgym.train.grpo.update import (
    TrainItem,
    _aligned,
    _token_logprobs,
    sequence_ratios,
    train_items,
    with_weights,
)
from toolgym.train.loss import supervised_logits

# -- rewards and advantages -------------------------------------------------------------------------


def test_shaped_reward_adds_alpha_times_partial_score() -> None:
    assert shaped_reward(1.0, 0.5, 0.25) == 1.125
    assert shaped_reward(0.0, 0.6, 0.25) == pytest.approx(0.15)
    assert shaped_reward(0.0, 0.6, 0.0) == 0.0


def test_group_advantages_by_hand() -> None:
    # rewards 1, 0, 0, 1: mean 0.5, sample std sqrt(4 * 0.25 / 3) = 0.57735
    advantages = group_advantages([1.0, 0.0, 0.0, 1.0], std_normalize=True, eps=0.0)
    # 0.5 / 0.5773503 in doubles: the 7-decimal literal is within 5e-8
    assert advantages == pytest.approx([0.8660254, -0.8660254, -0.8660254, 0.8660254], abs=1e-7)
    # Dr. GRPO: mean-centred only
    assert group_advantages([1.0, 0.0, 0.0, 0.0], std_normalize=False) == pytest.approx([0.75, -0.25, -0.25, -0.25])
    # shaped rewards 1.25, 0.15, 0.0: mean 0.4667, std = 0.6658
    shaped = [1.25, 0.15, 0.0]
    mean = sum(shaped) / 3
    std = math.sqrt(sum((r - mean) ** 2 for r in shaped) / 2)
    assert group_advantages(shaped, eps=0.0) == pytest.approx([(r - mean) / std for r in shaped])
    assert group_advantages([1.0]) == [0.0]
    # positive-only: what beat the group mean keeps its advantage, the rest get 0
    assert group_advantages([1.0, 0.0, 0.0, 0.0], std_normalize=False, positive_only=True) == pytest.approx(
        [0.75, 0.0, 0.0, 0.0])
    assert group_advantages([1.0, 0.0, 0.0, 1.0], eps=0.0, positive_only=True) == pytest.approx(
        [0.866025, 0.0, 0.0, 0.866025], abs=1e-6)


def test_leave_one_out_baseline_by_hand() -> None:
    """RLOO: each episode against the mean of the others. Rewards 1, 0, 0, 0: 1 - 0 = 1 for the success,
    0 - 1/3 for each failure."""
    rloo = group_advantages([1.0, 0.0, 0.0, 0.0], std_normalize=False, baseline="leave_one_out")
    assert rloo == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3])
    shaped = [1.25, 0.15, 0.0]
    by_definition = [r - (sum(shaped) - r) / 2 for r in shaped]
    assert group_advantages(shaped, std_normalize=False, baseline="leave_one_out") == pytest.approx(by_definition)
    with pytest.raises(ValueError, match="leave_one_out"):
        group_advantages(shaped, baseline="loo")
    groups, _ = build_groups([_episode("t", 1.0), _episode("t", 0.0), _episode("t", 0.0)], lambda env: 0.0,
                             std_normalize=False, baseline="leave_one_out")
    assert groups[0].advantages == pytest.approx([1.0, -0.5, -0.5])


def _episode(task_id: str, reward: float, partial: float = 0.0, status: str = "ok", env: str = "booking",
             samples: list[TrainingSample] | None = None) -> Episode:
    passed = reward >= 1.0
    verdict = None if status == "error" else Verdict(
        reward=reward, partial_score=partial,
        checks=[CheckResult(kind="answer_contains", label="answer", passed=passed, weight=1.0)])
    return Episode(task_id=task_id, env=env, status=status, verdict=verdict,  # type: ignore[arg-type]
                   error="env error: tool crashed" if status == "error" else None, samples=samples or [])


def test_errored_episodes_leave_their_group_and_are_counted() -> None:
    episodes = [
        _episode("a", 1.0), _episode("a", 0.0), _episode("a", 0.0, status="error"), _episode("a", 0.0, status="error"),
    ]
    groups, stats = build_groups(episodes, lambda env: 0.0)
    (group,) = groups
    assert len(group.episodes) == 2 and group.errored == 2
    assert group.rewards == [1.0, 0.0]  # the two errors are not zeros in the group
    # [1, 0]: 0.5 / (std 0.7071068 + eps 1e-6) in doubles; the 7-decimal literal is within 5e-8
    assert group.advantages == pytest.approx([0.7071058, -0.7071058], abs=1e-7)
    assert stats.episodes == 4 and stats.episodes_errored == 2 and stats.groups_with_signal == 1
    assert stats.errors_by_cause == {"env error": 2}
    assert stats.error_examples == {"env error": "env error: tool crashed"}  # metrics.jsonl says why


def test_groups_without_signal_give_no_gradient_and_are_counted() -> None:
    episodes = [
        _episode("small", 1.0), _episode("small", 0.0, status="error"),  # one scored episode left
        _episode("flat", 0.0, 0.5), _episode("flat", 0.0, 0.5), _episode("flat", 0.0, 0.5),  # equal rewards
        _episode("shaped", 0.0, 0.5), _episode("shaped", 0.0, 0.0),  # differ only by partial score
    ]
    groups, stats = build_groups(episodes, lambda env: 0.25)
    reasons = {g.task_id: g.reason for g in groups}
    assert reasons == {"small": "too_small", "flat": "zero_variance", "shaped": "signal"}
    assert (stats.groups, stats.groups_with_signal, stats.groups_too_small, stats.groups_zero_variance) == (3, 1, 1, 1)
    assert all(a == 0.0 for g in groups if not g.has_signal for a in g.advantages)
    # Without shaping the "shaped" group has no signal either.
    _, unshaped = build_groups(episodes, lambda env: 0.0)
    assert unshaped.groups_with_signal == 0


def test_solved_anchor_trains_a_few_episodes_of_solved_groups_only() -> None:
    """solved_anchor: every-success groups train anchor_episodes episodes at that advantage; all-fail ones nothing."""
    sample = _sample([1, 2, 3], [0, 1, 1], [0, -1, -1])
    episodes = ([_episode("solved", 1.0, samples=[sample]) for _ in range(4)]
                + [_episode("failed", 0.0, samples=[sample]) for _ in range(4)]
                + [_episode("mixed", r, samples=[sample]) for r in (1.0, 0.0, 0.0, 0.0)])
    off, off_stats = build_groups(episodes, lambda env: 0.0)
    assert off_stats.groups_anchored == 0 and len(train_items(off)) == 4  # only the mixed group
    groups, stats = build_groups(episodes, lambda env: 0.0, solved_anchor=0.5, anchor_episodes=2)
    assert stats.groups_anchored == 1 and stats.groups_zero_variance == 2 and stats.groups_with_signal == 1
    solved = next(g for g in groups if g.task_id == "solved")
    assert solved.reason == "anchor" and solved.advantages == [0.5, 0.5, 0.0, 0.0]
    trained = train_items(groups)
    assert len(trained) == 2 + 4  # two anchored episodes, the mixed group's four
    assert [items[0].advantage for items in trained[:2]] == [0.5, 0.5]


def test_alpha_per_env_and_custom_reward() -> None:
    episodes = [_episode("a", 0.0, 1.0, env="mail"), _episode("a", 0.0, 0.0, env="mail")]
    groups, _ = build_groups(episodes, {"mail": 0.5}.get)  # type: ignore[arg-type]
    assert groups[0].rewards == [0.5, 0.0]
    groups, _ = build_groups(episodes, lambda env: 0.0, reward_fn=lambda e: 2.0 * e.partial_score)
    assert groups[0].rewards == [2.0, 0.0]


# -- the clipped surrogate, KL and aggregation -----------------------------------------------------------


def test_clip_low_and_high_by_hand() -> None:
    sampler = torch.zeros(4)
    # ratios 1.5, 1.5, 0.5, 0.5 with advantages +1, -1, +1, -1
    logprobs = torch.log(torch.tensor([1.5, 1.5, 0.5, 0.5]))
    advantages = torch.tensor([1.0, -1.0, 1.0, -1.0])
    out = clipped_surrogate(logprobs, sampler, advantages, clip_low=0.2, clip_high=0.28)
    # +A, r=1.5: min(1.5, 1.28) = 1.28 → loss -1.28 (clipped high)
    # -A, r=1.5: min(-1.5, -1.28) = -1.5 → loss 1.5 (not clipped: the pessimistic side)
    # +A, r=0.5: min(0.5, 0.8) = 0.5 → loss -0.5
    # -A, r=0.5: min(-0.5, -0.8) = -0.8 → loss 0.8 (clipped low)
    assert out.loss.tolist() == pytest.approx([-1.28, 1.5, -0.5, 0.8])
    assert out.clipped_high.tolist() == [True, False, False, False]
    assert out.clipped_low.tolist() == [False, False, False, True]


def test_clipped_tokens_get_no_gradient() -> None:
    logprobs = torch.log(torch.tensor([1.5, 0.5, 1.1])).requires_grad_(True)
    out = clipped_surrogate(logprobs, torch.zeros(3), torch.tensor([1.0, -1.0, 1.0]), 0.2, 0.28)
    out.loss.sum().backward()
    assert logprobs.grad is not None
    assert logprobs.grad.tolist()[:2] == [0.0, 0.0]
    assert logprobs.grad.tolist()[2] == pytest.approx(-1.1)  # d(-r·A)/d logp = -r·A


def test_gspo_sequence_ratio_by_hand_has_gspos_gradient() -> None:
    """One episode, token log-ratios 0.1 and 0.3: s = exp(0.2). Its tokens carry s as ratio, and with
    sequence_mean weights (1/2 each) the gradient is GSPO's, -A · s / |y| per token."""
    sampler = torch.tensor([-1.0, -2.0])
    logprobs = (sampler + torch.tensor([0.1, 0.3])).requires_grad_(True)
    s = math.exp(0.2)
    loss, surrogate, _ = policy_loss(logprobs, sampler, torch.tensor([1.0, 1.0]), torch.tensor([0.5, 0.5]),
                                     sequence_ratios=torch.tensor([s, s]))
    loss.backward()
    assert float(loss) == pytest.approx(-s)
    assert surrogate.ratio.tolist() == pytest.approx([s, s])
    assert logprobs.grad is not None and logprobs.grad.tolist() == pytest.approx([-s / 2, -s / 2])
    # the same as differentiating GSPO's own objective, -s(logp) · A with s = exp(mean(logp - sampler))
    direct = logprobs.detach().clone().requires_grad_(True)
    (-torch.exp((direct - sampler).mean())).backward()
    assert direct.grad is not None and direct.grad.tolist() == pytest.approx(logprobs.grad.tolist())


def test_gspo_clips_whole_episodes() -> None:
    """An episode whose ratio is past the clip gets no gradient on any token, even one whose own ratio is 1;
    per-token clipping would have trained that token."""
    sampler = torch.zeros(2)
    logprobs = torch.tensor([0.0, 2 * math.log(1.5)]).requires_grad_(True)
    advantages = torch.tensor([1.0, 1.0])
    ratios = torch.tensor([1.5, 1.5])  # exp(mean log-ratio) = 1.5 > 1 + 0.28
    _, surrogate, _ = policy_loss(logprobs, sampler, advantages, torch.tensor([0.5, 0.5]), sequence_ratios=ratios)
    assert surrogate.clipped_high.tolist() == [True, True]
    per_token = logprobs.detach().clone().requires_grad_(True)
    loss, _, _ = policy_loss(per_token, sampler, advantages, torch.tensor([0.5, 0.5]))
    loss.backward()
    assert per_token.grad is not None and per_token.grad.tolist()[0] == pytest.approx(-0.5)
    logprobs.grad = None
    policy_loss(logprobs, sampler, advantages, torch.tensor([0.5, 0.5]), sequence_ratios=ratios)[0].backward()
    assert logprobs.grad is not None and logprobs.grad.tolist() == [0.0, 0.0]


def test_kl_k3_by_hand() -> None:
    logprobs = torch.tensor([-1.0, -1.0, -2.0])
    reference = torch.tensor([-1.0, -2.0, -1.0])
    # k3 = exp(q - p) - (q - p) - 1
    expected = [0.0, math.exp(-1) + 1 - 1, math.exp(1) - 1 - 1]
    assert kl_k3(logprobs, reference).tolist() == pytest.approx(expected)
    assert (kl_k3(torch.randn(100), torch.randn(100)) >= 0).all()


def test_policy_loss_weights_tokens_and_adds_kl() -> None:
    logprobs = torch.tensor([-1.0, -1.0])
    advantages = torch.tensor([1.0, -1.0])
    weights = torch.tensor([0.25, 0.75])
    loss, _, kl = policy_loss(logprobs, logprobs.clone(), advantages, weights)
    assert kl is None
    assert float(loss) == pytest.approx(0.25 * -1.0 + 0.75 * 1.0)  # ratio 1: loss = -A
    reference = torch.tensor([-2.0, -1.0])
    loss, _, kl = policy_loss(logprobs, logprobs.clone(), advantages, weights, kl_coef=0.1,
                              reference_logprobs=reference)
    assert kl is not None
    assert float(loss) == pytest.approx(0.5 + 0.1 * 0.25 * math.exp(-1))


def test_token_weights_by_hand() -> None:
    # two episodes of 2 and 6 trained tokens (and one with none)
    assert token_weights([2, 6, 0], "token_mean") == pytest.approx([1 / 8, 1 / 8, 0.0])
    assert token_weights([2, 6, 0], "sequence_mean") == pytest.approx([1 / 4, 1 / 12, 0.0])
    assert token_weights([2, 6, 0], "dr_grpo", constant=10) == pytest.approx([1 / 20, 1 / 20, 0.0])
    with pytest.raises(ValueError, match="aggregation"):
        token_weights([1], "mean")
    with pytest.raises(ValueError, match="constant"):
        token_weights([1], "dr_grpo")


def test_entropy_of_uniform_and_peaked() -> None:
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.0]])
    assert entropy(logits).tolist() == pytest.approx([math.log(4), 0.0], abs=1e-6)


@pytest.mark.parametrize(("temperature", "top_p", "top_k"), [(1.0, 1.0, 0), (0.9, 0.95, 0), (0.7, 1.0, 5), (1.3, 0.5, 3)])
def test_trainer_logprobs_equal_the_samplers(temperature: float, top_p: float, top_k: int) -> None:
    """The ratio's two sides agree: same logits → the log-prob the sampler recorded, exactly."""
    torch.manual_seed(0)
    logits = torch.randn(6, 50) * 3
    rows = [RowState(SamplingParams(temperature=temperature, top_p=top_p, top_k=top_k),
                     torch.Generator().manual_seed(i)) for i in range(6)]
    RowSampler(rows)(torch.zeros((6, 1), dtype=torch.long), logits.clone())
    targets = torch.tensor([r.token_ids[0] for r in rows])
    recorded = torch.tensor([r.logprobs[0] for r in rows])
    ours = sampled_token_logprobs(logits, targets, temperature=temperature, top_p=top_p, top_k=top_k)
    assert ours.tolist() == pytest.approx(recorded.tolist(), abs=1e-5)


# -- masks: only sampled tokens are trained, each with its episode's advantage ---------------------------


def _sample(ids: list[int], mask: list[int], logprobs: list[float]) -> TrainingSample:
    return TrainingSample(input_ids=ids, loss_mask=mask, sampler_logprobs=logprobs)


def test_masks_select_exactly_the_sampled_tokens() -> None:
    # prompt 10 11 | sampled 12 13 | tool 14 | sampled 15
    first = _sample([10, 11, 12, 13, 14, 15], [0, 0, 1, 1, 0, 1], [0, 0, -0.5, -0.25, 0, -2.0])
    second = _sample([20, 21, 22], [0, 1, 1], [0, -1.0, -3.0])
    items = [TrainItem(first, advantage=2.0, weight=0.1, episode=0), TrainItem(second, -1.0, 0.2, 1)]
    batch = collate([i.sample for i in items], pad_id=0)
    aligned = _aligned(items, batch)
    assert batch.targets[batch.targets != -100].tolist() == [12, 13, 15, 21, 22]
    assert aligned.sampler.tolist() == [-0.5, -0.25, -2.0, -1.0, -3.0]
    assert aligned.advantages.tolist() == [2.0, 2.0, 2.0, -1.0, -1.0]
    assert aligned.weights.tolist() == pytest.approx([0.1, 0.1, 0.1, 0.2, 0.2])
    assert aligned.episodes.tolist() == [0, 0, 0, 1, 1]


def test_gspo_episode_ratios_do_not_depend_on_how_micro_batches_split_an_episode() -> None:
    """An episode's samples can lie in different micro-batches; its ratio is the mean over all of them."""
    from transformers import AutoModelForCausalLM

    from test_rollout_support import tiny_model_dir

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir()), local_files_only=True).eval()
    settings = GRPOSettings()
    samples = [_sample([5, 6, 7, 8], [0, 1, 1, 1], [0.0] * 4), _sample([9, 10, 11], [0, 0, 1], [0.0] * 3),
               _sample([12, 13, 14, 15, 16], [0, 1, 0, 1, 1], [0.0] * 5)]
    items = [TrainItem(samples[0], 1.0, 0.0, 0), TrainItem(samples[1], 1.0, 0.0, 0), TrainItem(samples[2], -1.0, 0.0, 1)]
    with torch.no_grad():  # sampler log-probs 0: the ratio is exp(mean log p) over the episode's sampled tokens
        own = [_token_logprobs(*supervised_logits(model, collate([x], pad_id=0)), settings) for x in samples]
    expected = [math.exp(float(torch.cat(own[:2]).mean())), math.exp(float(own[2].mean()))]
    for chunks in ([[0, 1, 2]], [[0], [1], [2]], [[1, 2], [0]]):
        ratios = sequence_ratios(model, items, chunks, 2, pad_id=0, device="cpu", settings=settings,
                                 autocast=contextlib.nullcontext)
        assert ratios.tolist() == pytest.approx(expected, rel=1e-5)


def test_only_groups_with_signal_are_trained_and_weights_follow_the_aggregation() -> None:
    sample_a = _sample([1, 2, 3], [0, 1, 1], [0, -1, -1])
    sample_b = _sample([1, 2, 3, 4, 5], [0, 1, 1, 1, 1], [0, -1, -1, -1, -1])
    episodes = [
        _episode("t", 1.0, samples=[sample_a]), _episode("t", 0.0, samples=[sample_b]),
        _episode("flat", 0.0, samples=[sample_a]), _episode("flat", 0.0, samples=[sample_a]),
    ]
    groups, _ = build_groups(episodes, lambda env: 0.0)
    per_episode = train_items(groups)
    assert len(per_episode) == 2  # the flat group gives nothing
    flat = with_weights(per_episode, "sequence_mean", None)
    assert [i.weight for i in flat] == pytest.approx([1 / (2 * 2), 1 / (4 * 2)])
    assert [i.advantage for i in flat] == pytest.approx([0.7071058, -0.7071058], abs=1e-7)  # 0.5 / (0.7071068 + 1e-6)


def test_kl_quiet_episodes_trains_a_few_episodes_of_zero_variance_groups_at_advantage_zero() -> None:
    sample = _sample([1, 2, 3], [0, 1, 1], [0, -1, -1])
    episodes = [
        _episode("t", 1.0, samples=[sample]), _episode("t", 0.0, samples=[sample]),
        *[_episode("flat", 0.0, samples=[sample]) for _ in range(3)],
    ]
    groups, _ = build_groups(episodes, lambda env: 0.0)
    per_episode = train_items(groups, kl_quiet_episodes=2)
    assert len(per_episode) == 4  # 2 with signal + 2 of the flat group's 3
    assert [items[0].advantage for items in per_episode][2:] == [0.0, 0.0]
    flat = with_weights(per_episode, "sequence_mean", None)
    assert [i.weight for i in flat] == pytest.approx([1 / (2 * 4)] * 4)  # quiet episodes count in the mean


def test_kl_on_quiet_groups_pulls_a_drifted_policy_back_to_the_reference() -> None:
    """Every group without reward variance: no policy gradient at all, and with kl_quiet_episodes the k3 KL
    alone moves the weights, toward the reference."""
    import contextlib
    import copy

    from transformers import AutoModelForCausalLM

    from test_rollout_support import tiny_model_dir
    from toolgym.algorithms.losses import cross_entropy_logprobs, kl_k3
    from toolgym.train.grpo.update import policy_update
    from toolgym.train.loss import supervised_logits

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir())
    reference = copy.deepcopy(model).eval().requires_grad_(False)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    ids = [torch.randint(5, 200, (12,)).tolist() for _ in range(3)]
    mask = [0] * 6 + [1] * 6

    def logprobs(net: torch.nn.Module, samples: list[TrainingSample]) -> torch.Tensor:
        with torch.no_grad():
            return cross_entropy_logprobs(*supervised_logits(net, collate(samples, pad_id=0)))

    def with_sampler(row: list[int]) -> TrainingSample:
        plain = _sample(row, mask, [0.0] * 12)
        return _sample(row, mask, [0.0] * 6 + logprobs(model, [plain]).tolist())

    samples = [with_sampler(row) for row in ids]
    episodes = [_episode("quiet", 0.0, samples=[s]) for s in samples]

    def kl() -> float:
        return float(kl_k3(logprobs(model, samples[:2]), logprobs(reference, samples[:2])).mean())

    def update(quiet: int) -> int:
        groups, _ = build_groups(episodes, lambda env: 0.0)
        settings = GRPOSettings(loss={"kl_coef": 1.0, "aggregation": "sequence_mean"},
                                experimental={"kl_quiet_episodes": quiet}, optim={"update_epochs": 8})
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        stats = policy_update(
            model, optimizer, groups, settings, pad_id=0, device="cpu", rng=random.Random(0),
            backward=lambda loss: loss.backward(),
            clip_grad=lambda norm: float(torch.nn.utils.clip_grad_norm_(model.parameters(), norm)),
            autocast=contextlib.nullcontext,
            reference=lambda batch: cross_entropy_logprobs(*supervised_logits(reference, batch)))
        return stats.optimizer_steps

    drifted = kl()
    assert drifted > 1e-3
    assert update(quiet=0) == 0 and kl() == drifted  # quiet groups alone: nothing to train
    assert update(quiet=2) == 8
    assert kl() < 0.5 * drifted


# -- curriculum ---------------------------------------------------------------------------------------


def test_curriculum_tau2_rule() -> None:
    rule = CurriculumRule()
    assert rule.weight(4, 4) == 1.0  # fewer than 5 attempts: default
    assert rule.weight(5, 4) == 0.1  # 0.8 > 0.75
    assert rule.weight(8, 6) == 1.0  # 0.75 is not > 0.75
    assert rule.weight(5, 1) == 0.5  # 0.2 < 0.25
    assert rule.weight(8, 2) == 1.0  # 0.25 is not < 0.25


def test_curriculum_samples_by_weight_and_round_trips() -> None:
    curriculum = Curriculum()
    tasks = [f"t{i}" for i in range(20)]
    for task in tasks[:10]:
        curriculum.record(task, 10, 10)  # solved: weight 0.1
    counts = dict.fromkeys(tasks, 0)
    rng = random.Random(0)
    for _ in range(500):
        for task in curriculum.sample(tasks, 4, rng):
            counts[task] += 1
    solved = sum(counts[t] for t in tasks[:10])
    unsolved = sum(counts[t] for t in tasks[10:])
    assert unsolved > 5 * solved
    again = Curriculum.from_dict(curriculum.to_dict())
    assert again.to_dict() == curriculum.to_dict()
    assert again.sample(tasks, 4, random.Random(3)) == curriculum.sample(tasks, 4, random.Random(3))
    assert len(set(curriculum.sample(tasks, 4, random.Random(1)))) == 4  # without replacement
    disabled = Curriculum(enabled=False)
    disabled.record("t0", 10, 10)
    assert disabled.weight("t0") == 1.0
    with pytest.raises(ValueError, match="successes"):
        curriculum.record("x", 1, 2)


def test_curriculum_family_scope_pools_attempts_across_a_family() -> None:
    """Each task drawn once: per-task counts never reach min_attempts, a family's do."""
    tasks = [f"easy{i}" for i in range(6)] + [f"mid{i}" for i in range(6)]
    per_task, per_family = Curriculum(), Curriculum(scope="family")
    per_family.scope_of = {t: "app/" + t.rstrip("0123456789") for t in tasks}
    for curriculum in (per_task, per_family):
        for task in tasks[:3]:
            curriculum.record(task, 2, 2)  # 6 of 6 solved in the easy family
        for task in tasks[6:9]:
            curriculum.record(task, 2, 1)  # 3 of 6 in the mid family
    assert per_task.weight("easy5") == 1.0 and per_task.weight("easy0") == 1.0  # 2 attempts each: too few
    assert per_family.weight("easy5") == 0.1  # never drawn, but its family is solved
    assert per_family.weight("mid5") == 1.0
    assert per_family.weight_counts() == {"0.1": 1, "1": 1}
    again = Curriculum.from_dict(per_family.to_dict())
    assert again.scope == "family" and again.attempts == {"app/easy": 6, "app/mid": 6}


def test_curriculum_mixed_groups_rule_weighs_families_by_groups_with_signal() -> None:
    """Weight (mixed + 1) / (groups + 2): a family whose groups all agree fades, an undecided one leads."""
    curriculum = Curriculum(CurriculumRule(kind="mixed_groups"), scope="family")
    curriculum.scope_of = {t: "app/" + t.rstrip("0123456789") for t in ("solved0", "mixed0", "mixed1", "new0")}
    for _ in range(3):
        curriculum.record("solved0", 8, 8)  # every episode succeeds: no signal
        curriculum.record("mixed0", 8, 3)
    assert curriculum.weight("solved0") == pytest.approx(1 / 5)
    assert curriculum.weight("mixed1") == pytest.approx(4 / 5)  # never drawn; its family's groups were mixed
    assert curriculum.weight("new0") == pytest.approx(1 / 2)  # nothing known yet
    curriculum.record("mixed1", 8, 0)  # all fail: a group without a mixed outcome
    assert curriculum.weight("mixed0") == pytest.approx(4 / 6)
    again = Curriculum.from_dict(curriculum.to_dict())
    again.scope_of = curriculum.scope_of  # not saved: it comes from the tasks
    assert again.rule.kind == "mixed_groups" and again.weight("mixed0") == pytest.approx(4 / 6)


def test_curriculum_stratify_draws_distinct_families_by_weight() -> None:
    """Stratified: a step's tasks come from distinct families, and families are drawn ∝ their weight."""
    families = {"big": 40, "small": 2, "solved": 10, "other": 10}
    scope_of = {f"{name}{i}": f"app/{name}" for name, n in families.items() for i in range(n)}
    tasks = list(scope_of)
    curriculum = Curriculum(CurriculumRule(min_attempts=1), scope="family", stratify=True)
    curriculum.scope_of = scope_of
    curriculum.record("solved0", 8, 8)  # solved family: weight 0.1
    plain = Curriculum(CurriculumRule(min_attempts=1), scope="family")
    plain.scope_of = scope_of
    plain.record("solved0", 8, 8)
    picks = {"stratified": dict.fromkeys(families, 0), "plain": dict.fromkeys(families, 0)}
    rng = random.Random(0)
    for _ in range(400):
        drawn = curriculum.sample(tasks, 3, rng)
        assert len({scope_of[t] for t in drawn}) == 3  # three tasks, three families
        for task in drawn:
            picks["stratified"][scope_of[task].split("/")[1]] += 1
        for task in plain.sample(tasks, 3, rng):
            picks["plain"][scope_of[task].split("/")[1]] += 1
    # the 2-task family is drawn as often as the 40-task one when stratified; plain sampling follows task counts
    assert picks["stratified"]["small"] > 0.8 * picks["stratified"]["big"]
    assert picks["plain"]["small"] < 0.2 * picks["plain"]["big"]
    assert picks["stratified"]["solved"] < 0.5 * picks["stratified"]["other"]  # weight 0.1 against 1.0
    wide = curriculum.sample(tasks, 6, random.Random(1))  # more tasks than families: the rest unstratified
    assert len(set(wide)) == 6 and {scope_of[t] for t in wide} >= {"app/big", "app/small", "app/other"}
    again = Curriculum.from_dict(curriculum.to_dict())
    again.scope_of = scope_of
    assert again.stratify and again.sample(tasks, 3, random.Random(5)) == curriculum.sample(tasks, 3, random.Random(5))
    with pytest.raises(ValueError, match="scope 'family'"):
        Curriculum(stratify=True)


# -- optimizer ------------------------------------------------------------------------------------


def test_sgd_moves_each_weight_with_its_gradient_where_adamw_moves_all_by_lr() -> None:
    """One step on gradients 1e-3 and 1: AdamW moves both weights by ~lr, SGD by lr × gradient."""
    from toolgym.train.optim import build_optimizer

    moved: dict[str, list[float]] = {}
    for name in ("adamw", "sgd"):
        model = torch.nn.Linear(2, 1, bias=False)
        torch.nn.init.zeros_(model.weight)
        optimizer = build_optimizer(model, lr=0.01, name=name)
        model.weight.grad = torch.tensor([[1e-3, 1.0]])
        optimizer.step()
        moved[name] = (-model.weight.detach()[0]).tolist()
    assert moved["adamw"] == pytest.approx([0.01, 0.01], rel=1e-3)
    assert moved["sgd"] == pytest.approx([1e-5, 0.01], rel=1e-6)
    with pytest.raises(ValueError, match="optimizer must be one of adamw, sgd"):
        build_optimizer(torch.nn.Linear(2, 1), lr=0.01, name="lion")
