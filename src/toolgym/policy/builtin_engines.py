"""Builders of the built-in engine kinds, imported by the engine registry only when one is built; each imports
its policy's module on call, so building the oracle loads neither torch nor an HTTP client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolgym.policy.base import Policy
from toolgym.policy.engines import EngineOptions
from toolgym.policy.spec import HarnessSpec, ImperfectSpec, ModelSpec, OpenAISpec, OracleSpec


def build_oracle(spec: OracleSpec, options: EngineOptions) -> Policy:
    """The instructing oracle: plays a plain reference solution exactly like OraclePolicy, and speaks user-owned
    (dual-control) calls as instructions for the user simulator."""
    from toolgym.policy.instructing_oracle import InstructingOraclePolicy

    return InstructingOraclePolicy(prompt_style=options.chat_style)


def build_imperfect(spec: ImperfectSpec, options: EngineOptions) -> Policy:
    from toolgym.policy.instructing_oracle import InstructingOraclePolicy
    from toolgym.policy.teacher import ImperfectTeacherPolicy, TeacherMistakes

    mistakes = TeacherMistakes.parse_spec(spec.rates)
    return ImperfectTeacherPolicy(mistakes, InstructingOraclePolicy(prompt_style=options.chat_style))


def _model_keywords(spec: ModelSpec, options: EngineOptions, *, threads: bool) -> dict[str, Any]:
    keywords: dict[str, Any] = {"device": options.device, **options.extra}
    if spec.lora is not None:
        keywords["lora"] = spec.lora
    if options.seed is not None:
        keywords.setdefault("seed", options.seed)
    if threads and options.threads is not None:
        keywords.setdefault("threads", options.threads)
    return keywords


def build_hf(spec: ModelSpec, options: EngineOptions) -> Policy:
    from toolgym.policy.hf import HFPolicy

    keywords = _model_keywords(spec, options, threads=False)
    if options.max_batch_size is not None:
        keywords.setdefault("max_batch_size", options.max_batch_size)
    return HFPolicy(spec.model, **keywords)


def build_vllm(spec: ModelSpec, options: EngineOptions) -> Policy:
    from toolgym.policy.vllm_policy import VLLMPolicy

    return VLLMPolicy(spec.model, **_model_keywords(spec, options, threads=True))


def build_openai(spec: OpenAISpec, options: EngineOptions) -> Policy:
    """Token mode needs the model's tokenizer here (`tokenizer_dir`, or MODEL when it is a local folder), because
    prompts are rendered on this side; a local MODEL folder names the prompt style it was built for."""
    from toolgym.policy.openai_policy import OpenAIPolicy

    local = Path(spec.model).is_dir()
    tokenizer_dir = options.tokenizer_dir
    if spec.mode == "token" and tokenizer_dir is None and local:
        tokenizer_dir = spec.model
    style = options.prompt_style if local else options.chat_style
    return OpenAIPolicy(spec.base_url, spec.model, api_key=options.api_key or "EMPTY", mode=spec.mode,
                        tokenizer_dir=tokenizer_dir, prompt_style=style)  # type: ignore[arg-type]


def build_harness(spec: HarnessSpec, options: EngineOptions) -> Policy:
    """`harness` names a training engine, not a policy a command can play tasks with."""
    raise ValueError("policy spec 'harness' is the training engine whose episodes an agent harness plays "
                     "(grpo engine.name: harness with engine.command); to play tasks through a harness, run "
                     "toolgym harness run --command CMD --policy SPEC")
