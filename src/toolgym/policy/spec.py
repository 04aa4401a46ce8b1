"""Policy specs on the command line: `oracle`, `imperfect:RATES`, `hf:MODEL_DIR[+lora:ADAPTER]`,
`vllm:MODEL_DIR[+lora:ADAPTER]`, `openai:BASE_URL#MODEL[#token]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolgym.chat.render import PROMPT_STYLES, PromptStyle
from toolgym.policy.base import Policy

SPEC_HELP = ("oracle | imperfect:KIND=RATE,...[,seed=N] | hf:MODEL_DIR[+lora:ADAPTER_DIR] | "
             "vllm:MODEL_DIR[+lora:ADAPTER_DIR] | openai:BASE_URL#MODEL[#token]")


def make_policy(
    spec: str,
    *,
    device: str = "cpu",
    tokenizer_dir: str | Path | None = None,
    api_key: str | None = None,
    prompt_style: str | None = None,
    default_prompt_style: PromptStyle | None = None,
    **hf_kwargs: Any,
) -> Policy:
    """Build the policy a spec names; a bad spec raises ValueError saying what is allowed.

    Token mode against a server needs the model's tokenizer here (`tokenizer_dir`, or MODEL when
    it is a local folder), because prompts are rendered on this side. `prompt_style` tells a chat-mode
    policy which system prompt the served model expects (default: MODEL's toolgym.json when MODEL is a
    local folder, else `default_prompt_style`, else full). `default_prompt_style` is the style of the model
    the rows are for (a rollout's student): the oracle, imperfect: and a remote openai: MODEL have no own.
    """
    if prompt_style is not None and prompt_style not in PROMPT_STYLES:
        raise ValueError(f"--prompt-style {prompt_style!r}: use one of {', '.join(PROMPT_STYLES)}")
    chat_style = prompt_style or default_prompt_style
    if spec == "oracle":
        # The instructing oracle plays a plain reference solution exactly like OraclePolicy, and
        # speaks user-owned (dual-control) calls as instructions for the user simulator.
        from toolgym.policy.instructing_oracle import InstructingOraclePolicy

        return InstructingOraclePolicy(prompt_style=chat_style)
    if spec.startswith("imperfect:"):
        from toolgym.policy.instructing_oracle import InstructingOraclePolicy
        from toolgym.policy.teacher import ImperfectTeacherPolicy, TeacherMistakes

        mistakes = TeacherMistakes.parse_spec(spec.removeprefix("imperfect:"))
        return ImperfectTeacherPolicy(mistakes, InstructingOraclePolicy(prompt_style=chat_style))
    kind, _, rest = spec.partition(":")
    if kind == "hf" and rest:
        from toolgym.policy.hf import HFPolicy

        model_dir, _, adapter = rest.partition("+lora:")
        if "+lora:" in rest and not adapter:
            raise ValueError(f"policy spec {spec!r}: write hf:MODEL_DIR+lora:ADAPTER_DIR")
        if adapter:
            hf_kwargs["lora"] = adapter
        return HFPolicy(model_dir, device=device, **hf_kwargs)
    if kind == "vllm" and rest:
        from toolgym.policy.vllm_policy import VLLMPolicy

        model_dir, _, adapter = rest.partition("+lora:")
        if "+lora:" in rest and not adapter:
            raise ValueError(f"policy spec {spec!r}: write vllm:MODEL_DIR+lora:ADAPTER_DIR")
        return VLLMPolicy(model_dir, device=device, lora=adapter or None, **hf_kwargs)
    if kind == "openai" and rest:
        from toolgym.policy.openai_policy import OpenAIPolicy

        parts = rest.split("#")
        if len(parts) not in (2, 3) or not parts[0] or not parts[1] or (len(parts) == 3 and parts[2] not in ("token", "chat")):
            raise ValueError(f"policy spec {spec!r}: write openai:BASE_URL#MODEL or openai:BASE_URL#MODEL#token")
        mode = parts[2] if len(parts) == 3 else "chat"
        local = Path(parts[1]).is_dir()
        if mode == "token" and tokenizer_dir is None and local:
            tokenizer_dir = parts[1]
        # A local MODEL folder names the style it was built for (the policy reads its toolgym.json).
        style = prompt_style if local else chat_style
        return OpenAIPolicy(parts[0], parts[1], api_key=api_key or "EMPTY", mode=mode,  # type: ignore[arg-type]
                            tokenizer_dir=tokenizer_dir, prompt_style=style)  # type: ignore[arg-type]
    raise ValueError(f"unknown policy spec {spec!r}; use {SPEC_HELP}")
