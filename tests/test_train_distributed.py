"""Multi-process training: `accelerate launch --num_processes 2` (gloo on CPU) trains the same steps as one
process — SFT through the real CLI, GRPO through its run function — and resuming under another world size
is refused. Step sharding and episode merging are checked directly first.
"""

from __future__ import annotations

import json
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

LOSS_TOLERANCE = 1e-5  # per-step loss, 1 vs 2 processes: only the gradient summation order differs
WEIGHT_TOLERANCE = 1e-3  # final weights: Adam's first steps turn near-zero gradient differences into ~lr-sized ones


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


SFT_SETTINGS = {"lr": 1e-3, "max_steps": 3, "batch_tokens": 1400, "max_rows": 2, "grad_accum": 3,
                "eval_fraction": 0.2, "warmup_steps": 1, "save_every": 2, "threads": 1}


def max_abs_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


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
    for a, b in zip(train_one, train_two, strict=True):
        assert (a["supervised_tokens"], a["tokens"]) == (b["supervised_tokens"], b["tokens"])
        assert b["loss"] == pytest.approx(a["loss"], abs=LOSS_TOLERANCE)
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-4)
    evals = [(a["eval_loss"], b["eval_loss"]) for a, b in zip(rows_one, rows_two, strict=True) if a["kind"] == "eval"]
    assert evals and all(b == pytest.approx(a, abs=LOSS_TOLERANCE) for a, b in evals)

    start = load_file(str(DEFAULT_MODEL_DIR / "model.safetensors"))
    final_one = load_file(str(Path(one.final_dir) / "model.safetensors"))
    final_two = load_file(str(two / "final" / "model.safetensors"))
    moved = max_abs_diff(start, final_one)
    diff = max_abs_diff(final_one, final_two)
    print(f"1 vs 2 processes: max |loss diff| {max(abs(a['loss'] - b['loss']) for a, b in zip(train_one, train_two, strict=True)):.2e}"
          f", max |weight diff| {diff:.2e} (weights moved up to {moved:.2e})")
    assert diff < WEIGHT_TOLERANCE and diff < moved / 10
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
            "optim": {"lr": 3e-3, "precision": "fp32", "mini_batches": 2, "batch_tokens": 600},
            "loss": {"kl_coef": 0.01}, "engine": {"max_batch_size": 1}, "checkpoint": {"save_every": 1},
            "eval": {"enabled": False}}


@pytest.mark.distributed
def test_grpo_on_two_processes_samples_the_same_episodes_and_makes_the_same_update(tmp_path: Path) -> None:
    from test_grpo_support import first_token_parity
    from test_rollout_support import env_factory
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
    for a, b in zip(*rows, strict=True):
        assert a["groups_with_signal"] > 0 and a["optimizer_steps"] == b["optimizer_steps"] == 2
        for key in ("episodes", "successes", "reward_mean", "trained_tokens", "groups_with_signal"):
            assert a[key] == b[key], key
        for key in ("loss", "kl", "entropy", "ratio_mean"):
            assert b[key] == pytest.approx(a[key], abs=LOSS_TOLERANCE), key
    weights = [load_file(str(Path(folder) / "model.safetensors")) for folder in (one.final_dir, two / "final")]
    diff = max_abs_diff(*weights)
    print(f"GRPO 1 vs 2 processes: max |loss diff| "
          f"{max(abs(a['loss'] - b['loss']) for a, b in zip(*rows, strict=True)):.2e}, max |weight diff| {diff:.2e}")
    assert diff < WEIGHT_TOLERANCE
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
        assert one.keys() == two.keys() and max_abs_diff(one, two) < 1e-6, mode
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "two" / "full"), local_files_only=True)
    assert torch.equal(model.lm_head.weight, model.get_input_embeddings().weight)
    base = AutoModelForCausalLM.from_pretrained(str(DEFAULT_MODEL_DIR), local_files_only=True)
    adapted = PeftModel.from_pretrained(base, str(tmp_path / "two" / "lora"))
    assert any("lora_B" in name and float(p.abs().max()) > 0 for name, p in adapted.named_parameters())
