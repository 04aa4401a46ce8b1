"""Loading the GRPO and pipeline configs from YAML files, a pipeline's GRPO section included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolgym.config.base import apply_overrides, read_yaml_lines, validate_config
from toolgym.config.grpo import GRPOConfig
from toolgym.config.pipeline import PipelineConfig


def grpo_config_from_dict(data: dict[str, Any], source: str = "config") -> GRPOConfig:
    """A GRPOConfig; a bad key or value is a ConfigError naming `source` and the field."""
    return validate_config(GRPOConfig, data, source)


def load_grpo_config(path: str | Path, overrides: list[str] | tuple[str, ...] = (), **values: Any) -> GRPOConfig:
    """A GRPO config file, or a pipeline config's `grpo.settings` section (its seed and threads too);
    `values` (non-None) replace top-level fields (e.g. out from the CLI), then `--set` overrides apply."""
    data, lines = read_yaml_lines(path)
    source = str(path)
    if isinstance(data.get("grpo"), dict):  # a pipeline config: tasks, model and out come from the command line
        section = data["grpo"].get("settings", {}) or {}
        data = {**{k: data[k] for k in ("seed", "threads") if data.get(k) is not None}, **section}
        lines = {key[2:]: line for key, line in lines.items() if key[:2] == ("grpo", "settings")}
        source = f"{path} (grpo.settings)"
    data.update({k: v for k, v in values.items() if v is not None})
    apply_overrides(data, overrides)
    return validate_config(GRPOConfig, data, source, lines)


def pipeline_config_from_dict(data: dict[str, Any], source: str = "config") -> PipelineConfig:
    """A PipelineConfig; a bad key or value is a ConfigError naming `source` and the field."""
    return validate_config(PipelineConfig, data, source)


def load_pipeline_config(path: str | Path, out: str | None = None,
                         overrides: list[str] | tuple[str, ...] = ()) -> PipelineConfig:
    """A pipeline YAML file; `out` replaces its run folder, then `--set` overrides apply."""
    data, lines = read_yaml_lines(path)
    if out is not None:
        data["out"] = out
    apply_overrides(data, overrides)
    return validate_config(PipelineConfig, data, str(path), lines)
