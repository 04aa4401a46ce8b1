"""The agent side of an episode: the loop and its training samples (rendering and parsing, from `toolgym.chat`,
are re-exported for convenience).

The episode loop (`run_episode`, `DONE_TOOL`, `format_feedback`) is imported on first use, so the
light parts (rendering for the tokenizer build, parsing) do not pull in policies and verifiers.
"""

from typing import Any

from toolgym.agent.limits import EpisodeLimits
from toolgym.agent.samples import build_samples
from toolgym.agent.user import UserSimulator, UserTermination, split_termination
from toolgym.chat.parse import (
    PARSERS,
    HermesParser,
    ParseResult,
    ToolCallParser,
    get_parser,
    register_parser,
)
from toolgym.chat.render import (
    MODEL_CONFIG_FILE,
    PROMPT_STYLES,
    PromptStyle,
    Renderer,
    RenderError,
    load_prompt_style,
    read_model_config,
    system_prompt,
)

__all__ = [
    "DONE_TOOL",
    "MODEL_CONFIG_FILE",
    "PARSERS",
    "PROMPT_STYLES",
    "EpisodeLimits",
    "HermesParser",
    "ParseResult",
    "PromptStyle",
    "RenderError",
    "Renderer",
    "ToolCallParser",
    "UserSimulator",
    "UserTermination",
    "build_samples",
    "format_feedback",
    "get_parser",
    "load_prompt_style",
    "read_model_config",
    "register_parser",
    "run_episode",
    "split_termination",
    "system_prompt",
]

_EPISODE_NAMES = ("DONE_TOOL", "format_feedback", "run_episode")


def __getattr__(name: str) -> Any:
    if name in _EPISODE_NAMES:
        from toolgym.agent import episode

        return getattr(episode, name)
    raise AttributeError(f"module 'toolgym.agent' has no attribute {name!r}")
