"""Engines behind one seam: a policy spec is parsed once into a typed spec, every command builds its policy
through the engine registry, and GRPO trains against any registered engine that keeps the TrainableEngine
protocol. The fake engine here is registered from this file alone and then runs a real `toolgym eval` and a
real GRPO step; it counts what it was asked, so a command that built its policy some other way fails here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError
from typer.testing import CliRunner

from test_grpo_support import read_jsonl, run_toy, toy_config
from test_rollout_support import subprocess_env, suite_tasks, tiny_model_dir
from toolgym.cli.main import app
from toolgym.config import ConfigError
from toolgym.config.evaluation import EvalStageSettings, RolloutConfig
from toolgym.config.grpo import GRPOConfig
from toolgym.policy.base import Generation, GenerationRequest, Policy, TrainableEngine
from toolgym.policy.engines import (
    EngineOptions,
    build_policy,
    build_trainable_engine,
    engine_kinds,
    model_spec,
    parse_policy_spec,
    register_engine,
    unregister_engine,
)
from toolgym.policy.spec import HFSpec, ImperfectSpec, ModelSpec, OpenAISpec, OracleSpec, PolicySpec, VLLMSpec
from toolgym.schema.jsonl import write_jsonl

FAKE = "fake"
BUILT: list[CountingEngine] = []  # every fake engine built in this process, in order


class CountingEngine(Policy):
    """The fake engine: a real engine underneath (so episodes and GRPO's update are real), counting the
    generate calls and the weight labels the run gave it."""

    def __init__(self, inner: Policy, *, name: str) -> None:
        self.inner = inner
        self.name = name
        self.tokenizer = inner.tokenizer
        self.checkpoint = inner.checkpoint
        self.weights = inner.weights
        self.generate_calls = 0
        self.labels: list[str | None] = []
        self.calls_at_label: list[int] = []  # generate calls made before each weights_changed
        BUILT.append(self)

    async def generate(self, request: GenerationRequest) -> Generation:
        self.generate_calls += 1
        return await self.inner.generate(request)

    def weights_changed(self, checkpoint: str | None = None) -> None:
        self.labels.append(checkpoint)
        self.calls_at_label.append(self.generate_calls)
        self.checkpoint = checkpoint
        if isinstance(self.inner, TrainableEngine):
            self.inner.weights_changed(checkpoint)

    def sync_metrics(self) -> dict[str, Any]:
        return {"fake_weight_labels": len(self.labels)}

    async def close(self) -> None:
        await self.inner.close()


def build_fake(spec: ModelSpec, options: EngineOptions) -> Policy:
    """`fake:MODEL_DIR`: the hf engine on MODEL_DIR, counted."""
    return CountingEngine(build_policy(HFSpec(model=spec.model, lora=spec.lora), device=options.device),
                          name=spec.text)


def build_fake_trainable(config: Any, model: Any, tokenizer: Any, *, name: str, device: str,
                         autocast_dtype: Any = None) -> CountingEngine:
    """GRPO's fake engine: the hf engine over the trainer's live model, counted."""
    from toolgym.train.grpo.policy import build_shared_engine

    inner = build_shared_engine(config, model, tokenizer, name=name, device=device, autocast_dtype=autocast_dtype)
    return CountingEngine(inner, name=f"{FAKE}:{name}")


@pytest.fixture
def fake_engine() -> Iterator[list[CountingEngine]]:
    BUILT.clear()
    register_engine(FAKE, build_fake, spec=ModelSpec, trainable=build_fake_trainable)
    try:
        yield BUILT
    finally:
        unregister_engine(FAKE)
        BUILT.clear()


def _dataset(root: Path) -> Path:
    """A few real tasks of two apps whose reference solutions replay to 1."""
    tasks = suite_tasks(apps=["booking", "forum"])
    chosen = [t for app in ("booking", "forum") for t in [t for t in tasks if t.env == app][:2]]
    write_jsonl(root / "tasks.jsonl", chosen)
    return root


def test_a_registered_engine_runs_toolgym_eval(tmp_path: Path, fake_engine: list[CountingEngine]) -> None:
    dataset, out = _dataset(tmp_path / "data"), tmp_path / "eval"
    result = CliRunner().invoke(app, ["eval", "--tasks", str(dataset), "--policy", f"{FAKE}:{tiny_model_dir()}",
                                      "--out", str(out), "--trials", "0", "--max-new-tokens", "16",
                                      "--max-turns", "2", "--no-progress"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert len(fake_engine) == 1 and fake_engine[0].generate_calls >= 4  # every task's first turn at least
    summary = json.loads((out / "eval.json").read_text())
    assert summary  # the eval wrote its tables from the fake engine's episodes
    rows = read_jsonl(next(out.rglob("results.jsonl")))
    assert len(rows) == 4 and {r["policy"] for r in rows} == {f"{FAKE}:{tiny_model_dir()}"}


def test_grpo_trains_against_a_registered_engine(tmp_path: Path, fake_engine: list[CountingEngine]) -> None:
    config = toy_config(tmp_path, tmp_path / "run", steps=1, engine={"name": FAKE},
                        eval={"enabled": True, "every": 0, "limit": 1, "splits": ["heldout_tasks"]})
    result = run_toy(config)
    assert result.steps == 1
    (engine,) = fake_engine
    assert engine.generate_calls > 0
    label = f"{Path(config.out).resolve()}@step"
    # told the initial weights before the first eval and before the rollouts, the updated ones before the last eval
    assert engine.labels == [f"{label}-0", f"{label}-0", f"{label}-1"]
    first_eval, rollouts = engine.calls_at_label[1], engine.calls_at_label[2] - engine.calls_at_label[1]
    assert first_eval > 0 and rollouts >= 2 * 3  # 2 tasks × 3 samples, each at least one turn, through the engine
    assert engine.generate_calls > engine.calls_at_label[2]  # the eval after the update sampled from it too
    train = [row for row in read_jsonl(Path(config.out) / "metrics.jsonl") if row["kind"] == "train"]
    assert train[0]["updated"] is True and train[0]["fake_weight_labels"] == 2  # its sync_metrics, read per step


def test_grpo_refuses_an_engine_it_cannot_train_against(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown engine 'sglang'; engines GRPO trains against: hf, vllm"):
        toy_config(tmp_path, tmp_path / "run", engine={"name": "sglang"})
    register_engine("sampler_only", build_fake)  # no trainable builder: evaluable, not trainable
    try:
        with pytest.raises(ConfigError, match="unknown engine 'sampler_only'"):
            toy_config(tmp_path, tmp_path / "run", engine={"name": "sampler_only"})
        assert EvalStageSettings(engine="sampler_only").engine == "sampler_only"
    finally:
        unregister_engine("sampler_only")
    with pytest.raises(ValidationError, match="engines that load a model folder: hf, vllm"):
        EvalStageSettings(engine="oracle")


def test_a_trainable_engine_must_keep_the_protocol() -> None:
    class NoSync(Policy):
        def weights_changed(self, checkpoint: str | None = None) -> None:
            pass

    register_engine("no_sync", build_fake, trainable=lambda *args, **kwargs: NoSync())
    try:
        with pytest.raises(TypeError, match=r"'no_sync' built a NoSync, which lacks sync_metrics of the "
                                            r"TrainableEngine protocol"):
            build_trainable_engine("no_sync", None, None, None, name="n", device="cpu")
        with pytest.raises(ValueError, match="registered already"):
            register_engine("no_sync", build_fake)
    finally:
        unregister_engine("no_sync")
    with pytest.raises(ValueError, match="cannot sample a training run's rollouts; use one of hf, vllm"):
        build_trainable_engine("oracle", None, None, None, name="n", device="cpu")


@pytest.mark.parametrize(("text", "spec"), [
    ("oracle", OracleSpec()),
    ("imperfect:premature_done=0.6,seed=2", ImperfectSpec(rates="premature_done=0.6,seed=2")),
    ("hf:models/a", HFSpec(model="models/a")),
    ("hf:models/a+lora:runs/ad", HFSpec(model="models/a", lora="runs/ad")),
    ("vllm:models/a+lora:runs/ad", VLLMSpec(model="models/a", lora="runs/ad")),
    ("openai:http://h:8000/v1#m", OpenAISpec(base_url="http://h:8000/v1", model="m")),
    ("openai:http://h:8000/v1#m#token", OpenAISpec(base_url="http://h:8000/v1", model="m", mode="token")),
])
def test_spec_texts_parse_once_into_typed_specs(text: str, spec: Any) -> None:
    parsed = parse_policy_spec(text)
    assert parsed == spec and type(parsed) is type(spec)
    assert parsed.text == text
    assert TypeAdapter(PolicySpec).validate_python(parsed.model_dump()) == spec  # the union, told apart by kind


@pytest.mark.parametrize(("text", "message"), [
    ("gpt:x", r"unknown policy spec 'gpt:x'; use oracle \| imperfect:.* \| openai:BASE_URL#MODEL\[#token\]"),
    ("hf:", r"write hf:MODEL_DIR or hf:MODEL_DIR\+lora:ADAPTER_DIR"),
    ("vllm:m+lora:", r"write vllm:MODEL_DIR or vllm:MODEL_DIR\+lora:ADAPTER_DIR"),
    ("openai:http://h/v1", "write openai:BASE_URL#MODEL or openai:BASE_URL#MODEL#token"),
    ("openai:http://h/v1#m#fast", "write openai:BASE_URL#MODEL"),
    ("oracle:x", "write oracle, with nothing after it"),
    ("imperfect:lazy=0.2", "unknown mistake 'lazy'"),
])
def test_bad_spec_texts_say_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_policy_spec(text)


def test_a_registered_kind_is_a_spec_every_config_accepts(fake_engine: list[CountingEngine]) -> None:
    with pytest.raises(ValidationError, match=r"policy\n.*unknown policy spec 'nope:m'.* \| fake:…"):
        RolloutConfig(policy="nope:m")
    settings = RolloutConfig(policy=f"{FAKE}:models/a+lora:ad")
    assert settings.policy_spec == ModelSpec(kind=FAKE, model="models/a", lora="ad")
    assert model_spec(FAKE, "m").text == f"{FAKE}:m"
    assert FAKE in engine_kinds(trainable=True) and FAKE in engine_kinds(model_folder=True)
    assert GRPOConfig(tasks="t", model="m", out="o", engine={"name": FAKE}).engine.name == FAKE
    with pytest.raises(ValueError, match="does not load a model folder; use one of hf, vllm, fake"):
        model_spec("openai", "m")


def test_options_reach_the_engines_they_apply_to() -> None:
    oracle = build_policy(OracleSpec(), device="cuda", max_batch_size=4, seed=3, prompt_style="compact")
    assert oracle.prompt_style == "compact"  # type: ignore[attr-defined]
    assert build_policy(OracleSpec(), default_prompt_style="compact").prompt_style == "compact"  # type: ignore[attr-defined]
    hf = build_policy(HFSpec(model=str(tiny_model_dir())), max_batch_size=3, seed=1)
    assert hf.max_batch_size == 3 and hf.checkpoint is not None  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="--prompt-style 'tiny': use one of"):
        build_policy(OracleSpec(), prompt_style="tiny")
    with pytest.raises(TypeError, match="engine 'hf' takes a HFSpec, got OracleSpec"):
        build_policy(OracleSpec(kind="oracle").model_copy(update={"kind": "hf"}))


def test_naming_an_engine_loads_none_of_them() -> None:
    """Parsing every built-in spec and validating the configs that name them imports neither torch nor vllm."""
    code = ("import sys\n"
            "from toolgym.policy.engines import parse_policy_spec\n"
            "from toolgym.config.grpo import GRPOConfig\n"
            "for text in ('oracle', 'hf:m', 'vllm:m+lora:a', 'openai:http://h/v1#m#token'):\n"
            "    parse_policy_spec(text)\n"
            "GRPOConfig(tasks='t', model='m', out='o', engine={'name': 'vllm'})\n"
            "loaded = [m for m in ('torch', 'vllm', 'transformers', 'openai') if m in sys.modules]\n"
            "assert not loaded, loaded\n")
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(),
                              timeout=120)
    assert finished.returncode == 0, finished.stderr


def test_episode_settings_have_one_default_per_field() -> None:
    from toolgym.config.evaluation import EvalConfig
    from toolgym.config.train import RFTConfig
    from toolgym.dataset.validate import TeacherConfig
    from toolgym.policy.base import Sampling, SamplingParams

    budget = Sampling().max_new_tokens
    grpo = GRPOConfig(tasks="t", model="m", out="o", sampling={"stop": ["</tool_call>"]})
    assert SamplingParams().max_new_tokens == EvalConfig().max_new_tokens == grpo.sampling.max_new_tokens == budget
    assert RFTConfig(tasks="t", model="m", out="o").max_new_tokens == TeacherConfig(policy="oracle").max_new_tokens \
        == budget
    assert grpo.sampling.to_params(seed=4) == SamplingParams(temperature=1.0, max_new_tokens=budget,
                                                             stop=["</tool_call>"], seed=4)
    eval_config = EvalConfig(temperature=0.7, top_p=0.9, max_new_tokens=40, seed=5)
    assert eval_config.trial_sampling(2) == SamplingParams(temperature=0.7, top_p=0.9, max_new_tokens=40, seed=6)
    assert eval_config.greedy_sampling() == SamplingParams(temperature=0.0, max_new_tokens=40, seed=5)
    source = Path(__file__).resolve().parent.parent / "src"
    literal = re.compile(r"max_new_tokens.*[0-9]{3}")
    found = [f"{path}:{number}" for path in sorted(source.rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if literal.search(line)]
    assert found == [f"{source / 'toolgym' / 'policy' / 'base.py'}:{_line_of_default()}"], found


def _line_of_default() -> int:
    import inspect

    from toolgym.policy.base import Sampling

    lines, first = inspect.getsourcelines(Sampling)
    return first + next(i for i, line in enumerate(lines) if line.strip().startswith("max_new_tokens:"))
