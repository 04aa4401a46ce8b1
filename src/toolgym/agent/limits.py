"""How long one episode may run: the agent loop's own settings, composed into the commands' configs
(`toolgym.config.pieces` re-exports them), so each default is stated here once."""

from __future__ import annotations

from pydantic import Field

from toolgym.schema.section import Section


class EpisodeLimits(Section):
    """How long one episode may run (the agent loop's limits)."""

    max_turns: int = Field(20, ge=1)
    """Agent turns per episode at most."""
    max_context_tokens: int = Field(4096, ge=16)
    """Prompt plus history tokens at most; an episode that outgrows it ends truncated."""
    timeout_s: float = Field(120.0, gt=0)
    """Wall clock per episode, seconds."""
    done_tool: bool = False
    """Give the agent a `done(answer)` tool."""
    max_format_errors: int | None = Field(None, ge=1)
    """End an episode after this many malformed tool calls (null: answer each with feedback and go on)."""
    turn_progress: bool = False
    """Score the task's checks after every agent turn: the episode's row gets `progress` (the weighted share of
    checks holding on the seed and after each turn) and the checks that flipped (toolgym.verify.progress).
    GRPO's advantage.credit: turn switches it on for its rollouts."""
