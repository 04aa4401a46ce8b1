"""Multi-process training: `accelerate launch --num_processes 2` (gloo on CPU) trains the same steps as one
process — SFT through the real CLI, GRPO through its run function — and resuming under another world size
is refused. Step sharding and episode merging are checked directly first.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from test_rollout_support import free_port, subprocess_env
from test_train_sft_support import toy_sft_rows
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR
from toolgym.train.distributed import WorldSizeError, check_world_size, shard_step
from toolgym.train.grpo.distributed import merge_episodes, my_tasks
from toolgym.train.metrics import read_metrics
from toolgym.train.sft import SFTConfig, SFTError, run_sft

U = 2.0**-24  # fp32 unit roundoff: rounding to fp32 moves a value by at most U of itself
# The same batch at the same weights need not round the same way in another process (its kernels may block a product
# otherwise): a dot product of d terms then moves by ~√d·U (a random walk), ~28U for the widest here (d = 768). Both
# runs, and micro-batch totals re-added in another order (≤ 4U): 1 vs 2 processes agree to ~64U of a result.
SAME_WEIGHTS = 64 * U
# Adam divides by √v̂: where a gradient element cancels down to that noise, the runs step differently (by up to
# Adam's reach each). Cancelling no more often than uniformly, that is ~64U of the weights per step; FLIP_SHARE is
# ~8 times that over a few steps. Dropping or repeating one micro-batch of a step moves 20-50% of the SFT update,
# as many as 2·10⁴ of its weights taking opposite full steps would.
FLIP_SHARE = 1e-4


# -- sharding (no processes) -----------------------------------------------------------------------


def test_a_step_s_micro_batches_are_dealt_out_with_equal_counts_per_rank() -> None:
    step = [[0, 1], [2], [3, 4], [5], [6]]
    shares = [shard_step(step, rank, 2) for rank in range(2)]
    assert shares[0] == [([0, 1], 1.0), ([3, 4], 1.0), ([6], 1.0)]
    # rank 1 is one short: it repeats the first micro-batch with weight 0, so both ranks run 3 forwards
    assert shares[1] == [([2], 1.0), ([5], 1.0), ([0, 1], 0.0)]
    trained = sorted(i for share in shares for batch, weight in share if weight for i in batch)
    assert trained == list(range(7))
    assert shard_step([[9]], 1, 2) == [([9], 0.0)]
    assert shard_step(step, 0, 1) == [(batch, 1.0) for batch in step]
    with pytest.raises(ValueError):
        shard_step(step, 2, 2)


def test_a_checkpoint_resumes_only_under_the_world_size_that_wrote_it() -> None:
    check_world_size({"world_size": 2}, 2, "ck")
    check_world_size({}, 1, "ck")  # written before the size was recorded: one process
    with pytest.raises(WorldSizeError, match=r"ck: written by 2 processes, resumed with 1"):
        check_world_size({"world_size": 2}, 1, "ck")
    with pytest.raises(WorldSizeError, match=r"written by 1 process, resumed with 4"):
        check_world_size({}, 4, "ck")


def test_grpo_groups_stay_whole_on_one_rank_and_merge_back_in_one_process_order() -> None:
    tasks: list[Any] = [SimpleNamespace(id=f"t{i}") for i in range(5)]
    shares = [my_tasks(tasks, rank, 2) for rank in range(2)]
    assert [[t.id for t in share] for share in shares] == [["t0", "t2", "t4"], ["t1", "t3"]]
    per_rank = [[SimpleNamespace(task_id=t.id, index=k) for t in share for k in range(3)] for share in shares]
    merged = merge_episodes(per_rank, tasks, 3)  # type: ignore[arg-type]
    assert [(e.task_id, e.index) for e in merged] == [(f"t{i}", k) for i in range(5) for k in range(3)]
    with pytest.raises(RuntimeError, match="no full group for task t1"):
        merge_episodes([per_rank[0], per_rank[1][:2]], tasks, 3)  # type: ignore[arg-type]


def test_grpo_update_shards_add_up_to_the_one_process_update() -> None:
    """policy_update's shard trains rank k mod world's micro-batches with the loss times the world size; DDP
    averages the ranks' gradients, which with plain SGD is the mean of the weights each rank reaches alone."""
    import contextlib
    import copy
    import random

    from transformers import AutoModelForCausalLM

    from test_rollout_support import tiny_model_dir
    from toolgym.algorithms.advantages import build_groups
    from toolgym.algorithms.losses import cross_entropy_logprobs
    from toolgym.config.grpo import GRPOSettings
    from toolgym.schema import Episode, TrainingSample, Verdict
    from toolgym.train.batching import collate
    from toolgym.train.grpo.update import Shard, policy_update
    from toolgym.train.loss import supervised_logits

    torch.manual_seed(0)
    start = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir()), local_files_only=True)
    mask = [0] * 5 + [1] * 5

    def sample(row: list[int]) -> TrainingSample:  # sampled by the start weights: every ratio starts at 1
        with torch.no_grad():
            own = cross_entropy_logprobs(*supervised_logits(start, collate([TrainingSample(
                input_ids=row, loss_mask=mask, sampler_logprobs=[0.0] * 10)], pad_id=0)))
        return TrainingSample(input_ids=row, loss_mask=mask, sampler_logprobs=[0.0] * 5 + own.tolist())

    rows = [torch.randint(5, 200, (10,)).tolist() for _ in range(3)]
    episodes = [Episode(task_id="t", env="booking", status="ok", verdict=Verdict(reward=reward, partial_score=reward),
                        samples=[sample(row)]) for reward, row in zip([1.0, 0.0, 0.0], rows, strict=True)]
    groups, _ = build_groups(episodes, lambda env: 0.0)
    settings = GRPOSettings(optim={"batch_tokens": 10, "max_grad_norm": 0})  # one sample per micro-batch: 3

    def update(shard: Shard | None) -> tuple[Any, Any]:
        model = copy.deepcopy(start)
        stats = policy_update(model, torch.optim.SGD(model.parameters(), lr=0.1), groups, settings, pad_id=0,
                              device="cpu", rng=random.Random(0), backward=lambda loss: loss.backward(),
                              clip_grad=lambda norm: 0.0, autocast=contextlib.nullcontext, shard=shard)
        return model, stats

    held: list[int] = []

    def no_sync(rank: int) -> Any:
        held.append(rank)
        return contextlib.nullcontext()

    one, one_stats = update(None)
    ranks = [update(Shard(rank, 2, no_sync=lambda rank=rank: no_sync(rank))) for rank in range(2)]
    # rank 0 runs micro-batches 0 and 2 (the gradient all-reduce held back for the first), rank 1 runs
    # micro-batch 1 and repeats micro-batch 0 with weight 0: its statistics do not count
    assert held == [0, 1]
    assert [stats.tokens for _, stats in ranks] == [10, 5] and one_stats.tokens == 15
    assert sum(stats.loss for _, stats in ranks) == pytest.approx(one_stats.loss, abs=1e-6)
    moved = 0.0
    for before, alone, *shares in zip(start.parameters(), one.parameters(), *(m.parameters() for m, _ in ranks),
                                      strict=True):
        averaged = sum(p.detach() for p in shares) / 2
        moved = max(moved, float((alone.detach() - before.detach()).abs().max()))
        assert torch.allclose(averaged, alone.detach(), atol=1e-6)
    assert moved > 1e-4


# -- real launches -----------------------------------------------------------------------------------


def launch(processes: int, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`accelerate launch --multi_gpu --num_processes N` (torchrun underneath; gloo on a CPU machine).

    `--cpu` would not do: for several processes accelerate's CPU launcher expects MPI and starts one.
    """
    command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes),
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
               "--main_process_port", str(free_port()), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=subprocess_env(), check=False)


# warmup_steps 1: the first step's rate is 0, so step 2 (and step 1's eval) still sees the start weights in both runs
SFT_SETTINGS = {"lr": 1e-3, "max_steps": 3, "batch_tokens": 1400, "max_rows": 2, "grad_accum": 3,
                "eval_fraction": 0.2, "warmup_steps": 1, "save_every": 2, "eval_every": 1, "threads": 1}


def flat(weights: dict[str, torch.Tensor], keys: list[str]) -> torch.Tensor:
    return torch.cat([weights[k].double().flatten() for k in keys])


def adam_reach(lrs: list[float], betas: tuple[float, float] = (0.9, 0.999)) -> float:
    """The farthest AdamW without weight decay can move a weight in steps at these rates, whatever the gradients.

    Step t moves it by lr·|m̂/√v̂|; m̂ and v̂ are weighted means of g and g² (weights a_i, b_i summing to 1), so by
    Cauchy–Schwarz |m̂| ≤ √(Σ a_i²/b_i)·√v̂: that root is 1 at t = 1 and 1.007 at t = 4 (betas 0.9, 0.999).
    """
    reach = 0.0
    for t, lr in enumerate(lrs, start=1):
        a = [(1 - betas[0]) * betas[0] ** (t - i) / (1 - betas[0] ** t) for i in range(1, t + 1)]
        b = [(1 - betas[1]) * betas[1] ** (t - i) / (1 - betas[1] ** t) for i in range(1, t + 1)]
        reach += lr * math.sqrt(sum(x * x / y for x, y in zip(a, b, strict=True)))
    return reach


def assert_same_update(start: dict[str, torch.Tensor], one: dict[str, torch.Tensor], two: dict[str, torch.Tensor],
                       lrs: list[float]) -> str:
    """Adam-trained weights of 1 and 2 processes: each within Adam's reach of the start, and apart by no more
    than FLIP_SHARE of the weights taking opposite full steps. Returns the numbers, for the test's output."""
    assert one.keys() == two.keys() and one.keys() <= start.keys()
    keys = sorted(one)
    s, a, b = flat(start, keys), flat(one, keys), flat(two, keys)
    reach = adam_reach(lrs)
    # each step also rounds the weight (≤ U·|w|) and its update, a few fp32 operations on m and v (≤ 16U of it)
    allowed = reach * (1 + 16 * U * len(lrs)) + len(lrs) * U * (s.abs() + reach)
    assert bool(((a - s).abs() <= allowed).all() and ((b - s).abs() <= allowed).all()), "moved beyond Adam's reach"
    update, gap = float((a - s).norm()), float((b - a).norm())
    budget = 2 * reach * math.sqrt(FLIP_SHARE * s.numel())  # FLIP_SHARE·N weights apart by 2·reach each
    assert budget < update / 10  # the check means something: a fault moving a tenth of the update exceeds it
    assert gap <= budget, f"‖two - one‖ {gap:.3e} > {budget:.3e} (‖one - start‖ {update:.3e})"
    return (f"‖two - one‖ {gap:.2e} ≤ {budget:.2e} (‖one - start‖ {update:.2e}), max |two - one| "
            f"{float((b - a).abs().max()):.2e} ≤ 2·reach {2 * reach:.2e}")


@pytest.mark.distributed
def test_sft_on_two_processes_trains_the_same_steps_as_one(tmp_path: Path) -> None:
    fields = {"data": str(toy_sft_rows()), "model": str(DEFAULT_MODEL_DIR), **SFT_SETTINGS}
    one = run_sft(SFTConfig(**fields, out=str(tmp_path / "one")))
    overrides = [f"--set={key}={value}" for key, value in fields.items()]
    two = tmp_path / "two"
    done = launch(2, "-m", "toolgym.cli.main", "train", "sft", *overrides, f"--set=out={two}", "--no-progress")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("train samples") == 1  # the summary, printed by the main process only

    rows_one, rows_two = read_metrics(tmp_path / "one"), read_metrics(two)
    # written once: one row per step (and per eval), not one per process
    assert [(r["kind"], r["step"]) for r in rows_two] == [(r["kind"], r["step"]) for r in rows_one]
    train_one = [r for r in rows_one if r["kind"] == "train"]
    train_two = [r for r in rows_two if r["kind"] == "train"]
    assert len(train_one) == 3 and all(r["micro_batches"] == 3 for r in train_one)  # the same global batch
    lrs = [r["lr"] for r in train_one]
    assert lrs[0] == 0 < lrs[1] and [r["lr"] for r in train_two] == lrs
    start = load_file(str(DEFAULT_MODEL_DIR / "model.safetensors"))
    checkpoints = [load_file(str(out / "checkpoints" / "step-00000002" / "model.safetensors"))
                   for out in (tmp_path / "one", two)]
    gap_before_3 = float((flat(checkpoints[1], sorted(start)) - flat(checkpoints[0], sorted(start))).norm())
    for a, b in zip(train_one, train_two, strict=True):
        assert (a["supervised_tokens"], a["tokens"]) == (b["supervised_tokens"], b["tokens"])
        tolerance = SAME_WEIGHTS * abs(a["loss"])  # a sum of positive per-token losses
        if not any(lrs[: a["step"] - 1]):  # start weights in both runs (step 1's rate is 0)
            # each micro-batch's gradient element moves by ≲ 64U of its terms: so does the norm while the
            # micro-batch gradients do not cancel each other
            assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=SAME_WEIGHTS, abs=0)
        else:  # weights ‖δw‖ apart: the loss moves by ≤ ‖∇L‖·‖δw‖ (grad_norm is ‖∇L‖), doubled for the
            # curvature term ½‖H‖·‖δw‖², below the first while ‖H‖ < 2‖∇L‖/‖δw‖ (~10⁴ here)
            tolerance += 2 * a["grad_norm"] * gap_before_3
        assert abs(b["loss"] - a["loss"]) <= tolerance, (a["step"], a["loss"], b["loss"], tolerance)
    # only step 1's eval sees equal weights; later ones see weights that already differ, compared directly below
    evals = [(a["eval_loss"], b["eval_loss"]) for a, b in zip(rows_one, rows_two, strict=True)
             if a["kind"] == "eval" and a["step"] == 1]
    assert evals and all(abs(b - a) <= SAME_WEIGHTS * a for a, b in evals), evals

    final_one = load_file(str(Path(one.final_dir) / "model.safetensors"))
    final_two = load_file(str(two / "final" / "model.safetensors"))
    print(f"1 vs 2 processes: max |loss diff| {max(abs(a['loss'] - b['loss']) for a, b in zip(train_one, train_two, strict=True)):.2e}"
          f" (‖δw‖ before step 3: {gap_before_3:.2e}), {assert_same_update(start, final_one, final_two, lrs)}")
    # the export loads unchanged with transformers
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(two / "final"), local_files_only=True)
    assert float(model.get_input_embeddings().weight.detach().sub(final_two["model.embed_tokens.weight"]).abs().max()) == 0
    state = json.loads((two / "checkpoints" / "step-00000003" / "trainer_state.json").read_text())
    assert state["world_size"] == 2
    manifest = json.loads((two / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["processes"] == 2

    # the same command in one process would resume a 2-process checkpoint: refused, naming both sizes
    with pytest.raises(SFTError, match=r"written by 2 processes, resumed with 1"):
        run_sft(SFTConfig(**fields, out=str(two)))


GRPO_SCRIPT = '''
import json, sys
sys.path.insert(0, {tests!r})
from test_grpo_support import first_token_parity
from test_rollout_support import env_factory
from toolgym.train.grpo.config import grpo_config_from_dict
from toolgym.train.grpo.trainer import run_grpo
config = grpo_config_from_dict(json.loads(open(sys.argv[1]).read()), sys.argv[1])
run_grpo(config, env_factory=env_factory, reward_fn=first_token_parity)
'''


def grpo_settings(root: Path, out: Path) -> dict[str, Any]:
    from test_grpo_support import toy_dataset
    from test_rollout_support import tiny_model_dir

    # max_batch_size 1: a request's tokens never depend on which others share its generate call
    return {"tasks": str(toy_dataset(root)), "model": str(tiny_model_dir()), "out": str(out), "steps": 2,
            "tasks_per_step": 4, "samples_per_task": 3, "threads": 1, "save_rollouts": True,
            "sampling": {"max_new_tokens": 8, "max_turns": 1, "temperature": 1.0},
            "optim": {"lr": 3e-3, "precision": "fp32", "mini_batches": 2, "batch_tokens": 600, "warmup_steps": 1},
            "loss": {"kl_coef": 0.01}, "engine": {"max_batch_size": 1}, "checkpoint": {"save_every": 1},
            "eval": {"enabled": False}}


@pytest.mark.distributed
def test_grpo_on_two_processes_samples_the_same_episodes_and_makes_the_same_update(tmp_path: Path) -> None:
    from test_grpo_support import first_token_parity
    from test_rollout_support import env_factory, tiny_model_dir
    from toolgym.train.grpo.config import grpo_config_from_dict
    from toolgym.train.grpo.trainer import GRPOError, run_grpo

    one = run_grpo(grpo_config_from_dict(grpo_settings(tmp_path, tmp_path / "one"), "one"),
                   env_factory=env_factory, reward_fn=first_token_parity)
    two = tmp_path / "two"
    (tmp_path / "two.json").write_text(json.dumps(grpo_settings(tmp_path, two)))
    (tmp_path / "grpo_run.py").write_text(GRPO_SCRIPT.format(tests=str(Path(__file__).parent)))
    done = launch(2, str(tmp_path / "grpo_run.py"), str(tmp_path / "two.json"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    for step in (1, 2):  # the same episodes, in the same order, although each rank sampled half the groups
        episodes = [[(r["example_id"], r["completion"]) for r in
                     map(json.loads, (out / "rollouts" / f"step-{step}.jsonl").read_text().splitlines())]
                    for out in (tmp_path / "one", two)]
        assert len(episodes[0]) == 12 and episodes[0] == episodes[1]
    rows = [[r for r in read_metrics(out) if r["kind"] == "train"] for out in (tmp_path / "one", two)]
    assert [r["step"] for r in rows[1]] == [1, 2]  # written once
    start = load_file(str(tiny_model_dir() / "model.safetensors"))
    finals = [load_file(str(Path(folder) / "model.safetensors")) for folder in (one.final_dir, two / "final")]
    keys = sorted(finals[0])
    gaps = [float((flat(b, keys) - flat(a, keys)).norm()) for a, b in (
        [load_file(str(out / "checkpoints" / "step-00000001" / "model.safetensors")) for out in (tmp_path / "one", two)],
        finals)]
    vocab = json.loads((tiny_model_dir() / "config.json").read_text())["vocab_size"]
    for a, b in zip(*rows, strict=True):
        assert a["groups_with_signal"] > 0 and a["optimizer_steps"] == b["optimizer_steps"] == 2
        for key in ("episodes", "successes", "reward_mean", "trained_tokens", "groups_with_signal"):
            assert a[key] == b[key], key
        # means of per-token terms computed from log-probs ≤ ln V (near uniform) and at most |advantage| ≤ √2
        # (groups of 3) times them
        tolerance = SAME_WEIGHTS * math.sqrt(2) * math.log(vocab)
        if a["step"] > 1:  # step 1 trains the start weights (its first rate is 0); later ones weights ≤ max(gaps)
            # apart: first order in the gap, the loss's gradient norm taken as the scale of these means' gradients,
            # doubled for the curvature term
            tolerance += 2 * a["grad_norm"] * max(gaps)
        for key in ("loss", "kl", "entropy", "ratio_mean"):
            assert abs(b[key] - a[key]) <= tolerance, (a["step"], key, a[key], b[key], tolerance)
    lr = grpo_settings(tmp_path, two)["optim"]["lr"]
    lrs = [0.0] + [lr] * (sum(r["optimizer_steps"] for r in rows[0]) - 1)  # warmup_steps 1, then constant
    print(f"GRPO 1 vs 2 processes: max |loss diff| {max(abs(a['loss'] - b['loss']) for a, b in zip(*rows, strict=True)):.2e}"
          f" (‖δw‖ after steps 1, 2: {gaps[0]:.2e}, {gaps[1]:.2e}), {assert_same_update(start, *finals, lrs)}")
    assert json.loads((two / "checkpoints" / "step-00000002" / "trainer_state.json").read_text())["world_size"] == 2

    with pytest.raises(GRPOError, match=r"written by 2 processes, resumed with 1"):
        run_grpo(grpo_config_from_dict(grpo_settings(tmp_path, two), "two"), env_factory=env_factory,
                 reward_fn=first_token_parity)


def test_the_launch_configs_load_as_their_config_classes() -> None:
    import yaml

    from toolgym.config import load_config
    from toolgym.config.evaluation import EvalRunConfig
    from toolgym.config.loading import load_grpo_config

    root = Path(__file__).resolve().parents[1] / "configs" / "launch"
    sft = load_config(SFTConfig, root / "sft_qwen3_8b.yaml")
    assert sft.lora.enabled and sft.precision == "bf16"
    assert load_grpo_config(root / "grpo_qwen3_8b.yaml").samples_per_task == 4
    assert load_config(EvalRunConfig, root / "ray_eval_qwen3_8b.yaml").ray == "auto"
    kinds = {name: yaml.safe_load((root / f"accelerate_{name}.yaml").read_text())["distributed_type"]
             for name in ("one_gpu", "ddp", "fsdp2")}
    assert kinds == {"one_gpu": "NO", "ddp": "MULTI_GPU", "fsdp2": "FSDP"}
    assert yaml.safe_load((root / "accelerate_fsdp2.yaml").read_text())["fsdp_config"]["fsdp_version"] == 2


FSDP2_SCRIPT = '''
import sys
import torch
from accelerate import Accelerator
from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin
from toolgym.config.pieces import Lora
from toolgym.train.distributed import export_on_main, is_sharded
from toolgym.train.runtime import load_model, load_tokenizer

model_dir, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
accelerator = Accelerator(cpu=True)
if accelerator.num_processes > 1:  # accelerate sets FSDP up only on GPUs: force torch's fully_shard over gloo
    accelerator.state.distributed_type = DistributedType.FSDP
    accelerator.state.fsdp_plugin = FullyShardedDataParallelPlugin(
        fsdp_version=2, auto_wrap_policy="transformer_based_wrap", reshard_after_forward=True)
torch.manual_seed(0)
model = load_model(model_dir, lora=Lora(enabled=True, rank=4, dropout=0.0) if mode == "lora" else None)
optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
model, optimizer = accelerator.prepare(model, optimizer)
assert is_sharded(accelerator.unwrap_model(model)) == (accelerator.num_processes > 1)
ids = (torch.arange(64).reshape(2, 32) % 97 + 3).to(accelerator.device)
for _ in range(2):
    accelerator.backward(model(input_ids=ids, labels=ids).loss)
    optimizer.step()
    optimizer.zero_grad()
export_on_main(accelerator, model, load_tokenizer(model_dir), model_dir, f"{out}/{mode}")
accelerator.end_training()  # gloo's threads joined before exit, as the trainers do (else an abort at shutdown)
'''


@pytest.mark.distributed
def test_fsdp2_sharded_weights_export_whole_and_load_in_transformers_and_peft(tmp_path: Path) -> None:
    """accelerate 1.15 runs an FSDP config on CPU as DDP; torch's FSDP2 itself runs over gloo, so the
    export of sharded weights (gathered to the main process) is checked with FSDP2 forced on."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    script = tmp_path / "fsdp2_export.py"
    script.write_text(FSDP2_SCRIPT)
    for mode in ("full", "lora"):
        single = subprocess.run([sys.executable, str(script), str(DEFAULT_MODEL_DIR), str(tmp_path / "one"), mode],
                                capture_output=True, text=True, timeout=300, env=subprocess_env(), check=False)
        assert single.returncode == 0, single.stderr[-3000:]
        done = launch(2, str(script), str(DEFAULT_MODEL_DIR), str(tmp_path / "two"), mode)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for mode, file in (("full", "model.safetensors"), ("lora", "adapter_model.safetensors")):
        one, two = (load_file(str(tmp_path / run / mode / file)) for run in ("one", "two"))
        two.pop("lm_head.weight", None)  # the gathered state keeps the tied head (equal to the embeddings)
        assert one.keys() == two.keys(), mode
        # every rank trains on the same ids, so 2 processes take the one-process steps, rounded by their own
        # kernels: ≲ SAME_WEIGHTS of each weight, or of the tensor's largest where a weight nears zero
        for key, weight in one.items():
            assert torch.allclose(two[key], weight, rtol=SAME_WEIGHTS,
                                  atol=SAME_WEIGHTS * float(weight.abs().max())), (mode, key)
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "two" / "full"), local_files_only=True)
    assert torch.equal(model.lm_head.weight, model.get_input_embeddings().weight)
    base = AutoModelForCausalLM.from_pretrained(str(DEFAULT_MODEL_DIR), local_files_only=True)
    adapted = PeftModel.from_pretrained(base, str(tmp_path / "two" / "lora"))
    assert any("lora_B" in name and float(p.abs().max()) > 0 for name, p in adapted.named_parameters())
