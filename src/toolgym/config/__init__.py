"""One typed config tree for every command: shared pieces composed into the SFT, RFT, GRPO, eval, rollout
and pipeline configs (see docs/config-reference.md, generated from these models)."""

from toolgym.config.base import (
    ConfigError,
    Section,
    apply_overrides,
    format_validation_error,
    load_config,
    read_yaml,
    validate_config,
)

__all__ = ["ConfigError", "Section", "apply_overrides", "format_validation_error", "load_config", "read_yaml",
           "validate_config"]
