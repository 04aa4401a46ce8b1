"""The pipeline config lives in the config tree (`toolgym.config.pipeline`); this module keeps the import path."""

from toolgym.config.loading import load_pipeline_config, pipeline_config_from_dict
from toolgym.config.pipeline import EVAL_STAGES, STAGES, PipelineConfig, TasksSettings

__all__ = ["EVAL_STAGES", "STAGES", "PipelineConfig", "TasksSettings", "load_pipeline_config",
           "pipeline_config_from_dict"]
