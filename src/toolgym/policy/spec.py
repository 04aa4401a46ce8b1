"""Policy specs: what a user types (`oracle`, `imperfect:RATES`, `hf:MODEL_DIR[+lora:ADAPTER]`,
`vllm:MODEL_DIR[+lora:ADAPTER]`, `openai:BASE_URL#MODEL[#token]`) as typed models, one per engine kind.

The text is parsed once, where it enters (a flag or a config file: `toolgym.policy.engines.parse_policy_spec`),
and code past that edge reads the typed fields. `PolicySpec` is the union of the built-in kinds, told apart by
`kind`; an engine registered later brings its own spec type (`ModelSpec` for one that loads a model folder).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator

from toolgym.policy.base import Policy
from toolgym.schema.section import Section

SPEC_HELP = ("oracle | imperfect:KIND=RATE,...[,seed=N] | hf:MODEL_DIR[+lora:ADAPTER_DIR] | "
             "vllm:MODEL_DIR[+lora:ADAPTER_DIR] | openai:BASE_URL#MODEL[#token]")


class EngineSpec(Section):
    """A parsed policy spec: the engine `kind` and what that engine needs; `text` is how a user writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str

    @classmethod
    def parse(cls, kind: str, rest: str | None) -> EngineSpec:
        """The spec of `KIND:REST` (`rest` None: the text had no colon); ValueError says how to write it."""
        raise NotImplementedError

    @property
    def text(self) -> str:
        """The spec as a user writes it."""
        raise NotImplementedError


class OracleSpec(EngineSpec):
    """`oracle`: replays each task's reference solution (speaking user-owned calls as instructions)."""

    kind: Literal["oracle"] = "oracle"

    @classmethod
    def parse(cls, kind: str, rest: str | None) -> OracleSpec:
        if rest is not None:
            raise ValueError(f"policy spec {'oracle:' + rest!r}: write oracle, with nothing after it")
        return cls()

    @property
    def text(self) -> str:
        return "oracle"


class HarnessSpec(EngineSpec):
    """`harness`: GRPO's and RFT's in-process sampler whose episodes an agent harness plays (`engine.command`);
    it is no policy of its own (`toolgym harness run --policy SPEC` plays a harness with any policy)."""

    kind: Literal["harness"] = "harness"

    @classmethod
    def parse(cls, kind: str, rest: str | None) -> HarnessSpec:
        if rest is not None:
            raise ValueError(f"policy spec {'harness:' + rest!r}: write harness, with nothing after it")
        return cls()

    @property
    def text(self) -> str:
        return "harness"


class ImperfectSpec(EngineSpec):
    """`imperfect:KIND=RATE,...[,seed=N]`: the oracle making real teachers' mistakes at these rates."""

    kind: Literal["imperfect"] = "imperfect"
    rates: str
    """The mistake rates as written (toolgym.policy.teacher.TeacherMistakes.parse_spec reads them)."""

    @field_validator("rates")
    @classmethod
    def _valid_rates(cls, value: str) -> str:
        from toolgym.policy.teacher import TeacherMistakes  # loads the apps: only when such a spec is named

        TeacherMistakes.parse_spec(value)
        return value

    @classmethod
    def parse(cls, kind: str, rest: str | None) -> ImperfectSpec:
        if rest is None:
            raise ValueError("policy spec 'imperfect': write imperfect:KIND=RATE,...[,seed=N]")
        from toolgym.policy.teacher import TeacherMistakes

        TeacherMistakes.parse_spec(rest)  # its own message names the bad part
        return cls(rates=rest)

    @property
    def text(self) -> str:
        return f"imperfect:{self.rates}"


class ModelSpec(EngineSpec):
    """`KIND:MODEL_DIR[+lora:ADAPTER_DIR]`: an engine that loads a local model folder (and a LoRA adapter)."""

    model: str
    """The model folder."""
    lora: str | None = None
    """A peft LoRA adapter folder loaded on the model."""

    @classmethod
    def parse(cls, kind: str, rest: str | None) -> ModelSpec:
        model, marker, adapter = (rest or "").partition("+lora:")
        if not model or (marker and not adapter):
            raise ValueError(f"policy spec {kind + (':' + rest if rest is not None else '')!r}: write "
                             f"{kind}:MODEL_DIR or {kind}:MODEL_DIR+lora:ADAPTER_DIR")
        return cls(kind=kind, model=model, lora=adapter or None)

    @property
    def text(self) -> str:
        return f"{self.kind}:{self.model}" + (f"+lora:{self.lora}" if self.lora else "")


class HFSpec(ModelSpec):
    """`hf:MODEL_DIR[+lora:ADAPTER_DIR]`: in-process transformers, batched (token mode)."""

    kind: Literal["hf"] = "hf"


class VLLMSpec(ModelSpec):
    """`vllm:MODEL_DIR[+lora:ADAPTER_DIR]`: vLLM in this process (token mode)."""

    kind: Literal["vllm"] = "vllm"


class OpenAISpec(EngineSpec):
    """`openai:BASE_URL#MODEL[#token]`: an OpenAI-compatible server, in chat mode or token mode."""

    kind: Literal["openai"] = "openai"
    base_url: str
    """The server's base URL (…/v1)."""
    model: str
    """The served model's name (a local folder: its tokenizer and prompt style are read from it)."""
    mode: Literal["chat", "token"] = "chat"
    """chat (messages in, a parsed message out) | token (ids in, ids and log-probs out)."""

    @classmethod
    def parse(cls, kind: str, rest: str | None) -> OpenAISpec:
        parts = (rest or "").split("#")
        if len(parts) not in (2, 3) or not parts[0] or not parts[1] or (len(parts) == 3 and parts[2] not in ("token", "chat")):
            raise ValueError(f"policy spec {kind + (':' + rest if rest is not None else '')!r}: write "
                             "openai:BASE_URL#MODEL or openai:BASE_URL#MODEL#token")
        return cls(base_url=parts[0], model=parts[1], mode=parts[2] if len(parts) == 3 else "chat")  # type: ignore[arg-type]

    @property
    def text(self) -> str:
        return f"openai:{self.base_url}#{self.model}" + ("#token" if self.mode == "token" else "")


PolicySpec = Annotated[OracleSpec | ImperfectSpec | HFSpec | VLLMSpec | OpenAISpec, Field(discriminator="kind")]
"""The built-in policy specs, told apart by `kind` (a dict with `kind: hf, model: …` validates to HFSpec)."""


class PolicyChoice(Section):
    """Settings that name a policy by its spec text (their field `policy`): the text is checked when the settings
    load, so a bad spec is an error naming the field before anything runs, and `policy_spec` is its typed form."""

    @field_validator("policy", check_fields=False)
    @classmethod
    def _known_policy(cls, value: str | None) -> str | None:
        if value is not None:
            from toolgym.policy.engines import parse_policy_spec

            parse_policy_spec(value)
        return value

    @property
    def policy_spec(self) -> EngineSpec | None:
        """The typed spec of `policy` (None when no policy is named)."""
        from toolgym.policy.engines import parse_policy_spec

        text = getattr(self, "policy", None)
        return None if text is None else parse_policy_spec(text)


def make_policy(spec: str, **options: Any) -> Policy:
    """The policy a spec text names, built through the engine registry (`toolgym.policy.engines`); a bad spec
    raises ValueError saying what is allowed. Options are `build_policy`'s."""
    from toolgym.policy.engines import build_policy, parse_policy_spec

    return build_policy(parse_policy_spec(spec), **options)
