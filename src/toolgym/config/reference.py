"""docs/config-reference.md, generated from the config tree: every command's settings, defaults and help.

    python -m toolgym.config.reference > docs/config-reference.md
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from toolgym.config.data import ConvertConfig, DataValidateConfig
from toolgym.config.evaluation import EvalRunConfig, EvalShowConfig, LeakageConfig, RolloutConfig, SweepConfig
from toolgym.config.grpo import GRPOConfig
from toolgym.config.harness import HarnessConfig
from toolgym.config.model import InitTinyConfig, PretrainTinyConfig, VerifyDefaultConfig
from toolgym.config.pipeline import PipelineConfig
from toolgym.config.report import ReportConfig
from toolgym.config.serve import ServeEnvConfig, ServePolicyConfig
from toolgym.config.tasks import TasksBuildConfig, TasksImportConfig, TasksValidateConfig
from toolgym.config.traces import TracesDiffConfig
from toolgym.config.train import RFTConfig, SFTConfig

COMMANDS: list[tuple[str, type[BaseModel]]] = [
    ("toolgym train sft", SFTConfig), ("toolgym train rft", RFTConfig), ("toolgym train grpo", GRPOConfig),
    ("toolgym eval", EvalRunConfig), ("toolgym eval sweep", SweepConfig), ("toolgym eval show", EvalShowConfig),
    ("toolgym eval leakage", LeakageConfig), ("toolgym traces diff", TracesDiffConfig), ("toolgym rollout", RolloutConfig),
    ("toolgym harness run", HarnessConfig),
    ("toolgym tasks build", TasksBuildConfig), ("toolgym tasks validate", TasksValidateConfig),
    ("toolgym tasks import", TasksImportConfig), ("toolgym model init-tiny", InitTinyConfig),
    ("toolgym model pretrain-tiny", PretrainTinyConfig), ("toolgym model verify-default", VerifyDefaultConfig),
    ("toolgym data validate", DataValidateConfig), ("toolgym data convert", ConvertConfig), ("toolgym serve policy", ServePolicyConfig), ("toolgym serve env", ServeEnvConfig),
    ("toolgym report", ReportConfig), ("toolgym pipeline", PipelineConfig)]
HEADER = """# Config reference

Generated from `toolgym.config` by `python -m toolgym.config.reference`; do not edit by hand.

Every command reads a YAML file with `--config FILE` (the pipeline takes it as its argument), then its
shortcut flags, then `--set KEY=VALUE` overrides with dotted keys, applied in that order:

    toolgym train sft --config sft.yaml --set lr=3e-4 --set lora.enabled=true
    toolgym train grpo --config grpo.yaml --set loss.objective=sequence --set optim.lr=5e-5
    toolgym eval --config eval.yaml --samples 4 --set ks=[1,4]
    toolgym tasks build --apps booking,mail --set tasks_per_family=3 --out runs/tasks
    toolgym serve policy runs/sft/final --config serve.yaml --set port=8001
    toolgym pipeline configs/quickstart.yaml --set grpo.settings.steps=4

Values are read as YAML (`--set ks=[1,4]`, `--set envs=null`). Unknown keys are errors naming the file,
field and line. Secrets are flags only, never settings: the servers' `--api-key` (or $TOOLGYM_API_KEY).
"""


def _default(field: Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    if isinstance(value, BaseModel):
        return "(section)"
    if dataclasses.is_dataclass(value):
        return "(section)"
    return f"`{json.dumps(value, default=str)}`"


def _type(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation).replace("typing.", "")
    return text.replace("|", "\\|")


def _rows(model: type[BaseModel], prefix: str = "") -> list[str]:
    rows: list[str] = []
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            nested.append((key, annotation))
            continue
        help_text = " ".join((field.description or "").split()).replace("|", "\\|")  # a table cell
        rows.append(f"| `{key}` | {_type(annotation)} | {_default(field)} | {help_text} |")
    for key, sub in nested:
        doc = " ".join((sub.__doc__ or "").split()).replace("|", "\\|")
        rows.append(f"| **`{key}`** | section | | {doc} |")
        rows.extend(_rows(sub, key + "."))
    return rows


def render() -> str:
    """The whole reference as markdown."""
    parts = [HEADER]
    for command, model in COMMANDS:
        doc = " ".join((model.__doc__ or "").split())
        parts.append(f"\n## {command}\n\n{doc}\n\n| setting | type | default | help |\n| --- | --- | --- | --- |")
        parts.extend(_rows(model))
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(render(), end="")
