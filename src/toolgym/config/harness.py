"""`toolgym harness run`: an agent harness of your own (a command) run per episode against toolgym's endpoints."""

from __future__ import annotations

from typing import cast

from pydantic import Field

from toolgym.chat.render import PROMPT_STYLES, PromptStyle, load_prompt_style
from toolgym.config.pieces import PolicyTarget, Sampling, TaskSelection
from toolgym.model import DEFAULT_MODEL, model_folder


class HarnessConfig(Sampling, TaskSelection, PolicyTarget):
    """`toolgym harness run`: per episode, an MCP endpoint holding the task's environment and an
    OpenAI-compatible endpoint recording the policy's tokens, both on loopback; the command runs against them,
    and its final state is scored into OUT/results.jsonl (resumable). The sampling settings are defaults for
    what a request leaves unset: a harness that sends its own temperature keeps it."""

    command: str | None = None
    """The harness: a shell command line run once per episode (sh -c, in the current folder). It reads
    OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL, TOOLGYM_MCP_URL, TOOLGYM_SYSTEM_PROMPT, TOOLGYM_TASK_PROMPT
    and the task's env_variables (docs/harness.md)."""
    out: str | None = None
    """Run folder: results.jsonl + manifest.json; re-run to resume."""
    samples_per_task: int = Field(1, ge=1)
    """Episodes per task (K)."""
    concurrency: int = Field(4, ge=1)
    """Episodes (harness processes) in flight at once."""
    timeout_s: float = Field(600.0, gt=0)
    """Wall clock of one harness process, seconds; past it the process group is killed and the episode is an
    infrastructure error (never scored)."""
    seed: int | None = None
    """Run seed: a request that sends no seed samples with one derived from it, the task, the sample and the
    request's place in the episode (null: unseeded)."""
    max_turns: int = Field(30, ge=1)
    """Model requests one episode may make; the next is refused (HTTP 400) and the episode scored as truncated."""
    retry_errors: bool = False
    """Run error rows of a previous run again."""
    model: str | None = DEFAULT_MODEL
    """The model the rows are for (a folder, or default): chat-mode policies (oracle, openai:…) write the
    system prompt in the prompt style of its toolgym.json unless prompt_style is set; null: full."""

    def chat_prompt_style(self) -> PromptStyle:
        """The prompt style of the system prompt for a chat-mode policy (a `model` that is no folder raises ValueError)."""
        if self.prompt_style is not None:
            if self.prompt_style not in PROMPT_STYLES:
                raise ValueError(f"prompt_style {self.prompt_style!r}: use one of {', '.join(PROMPT_STYLES)}")
            return cast(PromptStyle, self.prompt_style)
        return "full" if self.model is None else load_prompt_style(model_folder(self.model))
