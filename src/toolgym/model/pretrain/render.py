"""Corpus episodes → token ids, loss masks and skill spans, in the agent's own compact layout.

The text comes from the agent `Renderer` (the tokenizer's chat template + the compact system
prompt), so pre-training sees exactly the layout SFT and rollouts will. The loss mask follows the
rollout rule: 1 on assistant turn tokens including the closing <|im_end|>, 0 elsewhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolgym.chat.render import Renderer, system_prompt
from toolgym.model.pretrain.corpus import CorpusEpisode, Mark
from toolgym.schema import Message

ASSISTANT_OPEN = "<|im_start|>assistant\n"


@dataclass
class SkillSpan:
    """Tokens [start, end) of one marked value; `start` is the value's first token."""

    skill: str
    start: int
    end: int


@dataclass
class TokenizedEpisode:
    input_ids: list[int]
    loss_mask: list[int]
    skill: str
    spans: list[SkillSpan] = field(default_factory=list)
    turn_starts: list[int] = field(default_factory=list)  # first token of each assistant turn


class MarkNotFound(ValueError):
    """A mark's value is not where the episode says it is (a corpus generator bug)."""


def episode_text(episode: CorpusEpisode, renderer: Renderer) -> str:
    """The text the agent's Renderer writes for the whole episode (compact style)."""
    return renderer.render_text(episode_messages(episode), episode.tools, add_generation_prompt=False)


def episode_messages(episode: CorpusEpisode) -> list[dict[str, Any]]:
    """The episode as OpenAI dicts, led by the compact system prompt the agent would write."""
    system = Message(role="system", content=system_prompt(episode.policy, episode.env_variables, episode.tools, "compact"))
    return [m.to_openai() for m in (system, *episode.messages)]


def episode_text_plain(episode: CorpusEpisode, chat_template: str | None = None) -> str:
    """The same text without a tokenizer (to train the tokenizer itself), via transformers' renderer."""
    from transformers.utils.chat_template_utils import render_jinja_template

    from toolgym.model.tiny import chat_template as tiny_template

    rendered = render_jinja_template(
        conversations=[episode_messages(episode)], chat_template=chat_template or tiny_template(),
        add_generation_prompt=False,
    )
    text = rendered[0] if isinstance(rendered, tuple) else rendered
    return text[0] if isinstance(text, list) else text


def _assistant_spans(text: str, turn_end: str) -> list[tuple[int, int]]:
    """Character spans (content start, end of the closing turn token) of assistant turns."""
    spans: list[tuple[int, int]] = []
    at = 0
    while (start := text.find(ASSISTANT_OPEN, at)) >= 0:
        content = start + len(ASSISTANT_OPEN)
        end = text.find(turn_end, content)
        if end < 0:
            raise MarkNotFound("assistant turn is not closed")
        spans.append((content, end + len(turn_end)))
        at = end
    return spans


def _value_span(text: str, lo: int, hi: int, mark: Mark) -> tuple[int, int]:
    if mark.argument is not None:
        key = json.dumps(mark.argument, ensure_ascii=False) + ": "
        arguments_at = text.find('"arguments": ', lo, hi)
        at = text.find(key, arguments_at, hi) if arguments_at >= 0 else -1
        if at < 0:
            raise MarkNotFound(f"argument {mark.argument!r} not in assistant turn")
        start = at + len(key)
        if text[start] == "[":  # an array argument: the mark is its first element
            start += 1
        if text[start] == '"':
            start += 1
        encoded = json.dumps(mark.value, ensure_ascii=False)[1:-1] if text[start - 1] == '"' else mark.value
        if not text.startswith(encoded, start):
            raise MarkNotFound(f"argument {mark.argument!r} does not hold {mark.value!r}")
        return start, start + len(encoded)
    at = text.find(mark.value, lo, hi)
    if at < 0:
        raise MarkNotFound(f"value {mark.value!r} not in assistant turn")
    return at, at + len(mark.value)


def tokenize_episode(episode: CorpusEpisode, renderer: Renderer) -> TokenizedEpisode:
    """Ids, loss mask (assistant tokens + turn end) and token spans of every mark."""
    text = episode_text(episode, renderer)
    encoded: Any = renderer.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids: list[int] = list(encoded["input_ids"])
    offsets: list[tuple[int, int]] = [tuple(o) for o in encoded["offset_mapping"]]
    turns = _assistant_spans(text, renderer.turn_end)
    mask = [0] * len(ids)
    turn_starts: list[int] = []
    pointer = 0
    for lo, hi in turns:
        first = None
        for i in range(pointer, len(ids)):
            start, end = offsets[i]
            if start >= hi:
                pointer = i
                break
            if end > lo and start >= lo - 0:
                mask[i] = 1
                if first is None:
                    first = i
        if first is not None:
            turn_starts.append(first)
    assistant_messages = [i for i, m in enumerate(episode.messages) if m.role == "assistant"]
    spans: list[SkillSpan] = []
    for mark in episode.marks:
        turn = assistant_messages.index(mark.message)
        lo, hi = turns[turn]
        char_start, char_end = _value_span(text, lo, hi, mark)
        tokens = [i for i, (s, e) in enumerate(offsets) if e > char_start and s < char_end]
        if not tokens:
            raise MarkNotFound(f"no tokens for {mark.value!r}")
        spans.append(SkillSpan(mark.skill, tokens[0], tokens[-1] + 1))
    for index in turn_starts:
        spans.append(SkillSpan("turn_start", index, index + 1))
    return TokenizedEpisode(ids, mask, episode.skill, spans, turn_starts)
