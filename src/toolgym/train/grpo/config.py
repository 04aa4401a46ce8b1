"""GRPO settings live in the config tree (`toolgym.config.grpo`); this module keeps the import path."""

from toolgym.config.base import ConfigError, format_validation_error, read_yaml
from toolgym.config.grpo import (
    AdvantageSettings,
    CheckpointSettings,
    CurriculumSettings,
    DynamicSamplingSettings,
    EngineSettings,
    ExperimentalSettings,
    GRPOConfig,
    GRPOSettings,
    LossSettings,
    MonitorSettings,
    OptimSettings,
    PeriodicEvalSettings,
    RewardSettings,
    SamplingSettings,
    fingerprint_of_recorded,
)
from toolgym.config.loading import grpo_config_from_dict, load_grpo_config

__all__ = ["AdvantageSettings", "CheckpointSettings", "ConfigError", "CurriculumSettings", "DynamicSamplingSettings",
           "EngineSettings", "ExperimentalSettings", "GRPOConfig", "GRPOSettings", "LossSettings", "MonitorSettings",
           "OptimSettings", "PeriodicEvalSettings", "RewardSettings", "SamplingSettings", "fingerprint_of_recorded",
           "format_validation_error", "grpo_config_from_dict", "load_grpo_config", "read_yaml"]
