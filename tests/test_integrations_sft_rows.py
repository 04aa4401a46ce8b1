"""SFT rows another trainer reproduces: the shipped template's generation markers and what rows carry.

No TRL needed: `apply_chat_template(..., return_assistant_tokens_mask=True)` is what TRL's SFTTrainer calls
with `assistant_only_loss=True`, so its ids and masks must equal toolgym's own SFT samples.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from test_integrations_support import app_tasks, oracle_rows, tiny_tokenizer
from toolgym.chat.render import Renderer
from toolgym.data.convert import rendered_prompt_style, template_kwargs
from toolgym.data.validate import validate_file
from toolgym.integrations.trl import sft_rows
from toolgym.model.tiny import chat_template
from toolgym.train.sft_data import row_samples

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Close PLAT-7."},
    {"role": "assistant", "content": "Looking.", "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "get_ticket", "arguments": '{"key": "PLAT-7"}'}},
        {"id": "c1", "type": "function", "function": {"name": "close", "arguments": {"key": "PLAT-7"}}}]},
    {"role": "tool", "tool_call_id": "c0", "content": '{"status": "open"}'},
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    {"role": "assistant", "content": "Closed.", "weight": 0},
]
# What the template rendered before it had generation markers: the markers must not change a character.
RENDERED = (
    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nClose PLAT-7.<|im_end|>\n<|im_start|>assistant\n"
    'Looking.\n<tool_call>\n{"name": "get_ticket", "arguments": {"key": "PLAT-7"}}\n</tool_call>\n<tool_call>\n'
    '{"name": "close", "arguments": {"key": "PLAT-7"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n'
    '{"status": "open"}\n</tool_response>\n<tool_response>\nok\n</tool_response><|im_end|>\n'
    "<|im_start|>assistant\nClosed.<|im_end|>\n"
)


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    tasks = app_tasks()
    return {style: oracle_rows(tmp_path_factory.mktemp(style), tasks, style) for style in ("compact", "full")}


def _trl_ids_and_mask(tokenizer: Any, row: dict[str, Any]) -> tuple[list[int], list[int]]:
    """What TRL's SFTTrainer tokenizes for a conversational row with assistant_only_loss=True."""
    tools = row.get("tools")
    kwargs = {"tools": json.loads(tools) if isinstance(tools, str) else tools, **row.get("chat_template_kwargs", {})}
    out = tokenizer.apply_chat_template(row["messages"], tokenize=True, return_dict=True,
                                        return_assistant_tokens_mask=True, **kwargs)
    return list(out["input_ids"]), list(out["assistant_masks"])


def test_generation_markers_leave_the_rendering_unchanged() -> None:
    tokenizer = tiny_tokenizer()
    assert tokenizer.chat_template == chat_template()  # the shipped model and init_tiny share the template
    assert tokenizer.apply_chat_template(CONVERSATION, tokenize=False) == RENDERED
    ids, mask = _trl_ids_and_mask(tokenizer, {"messages": CONVERSATION})
    assert ids == tokenizer(RENDERED, add_special_tokens=False)["input_ids"]
    trained = tokenizer.decode([i for i, m in zip(ids, mask, strict=True) if m])
    # content, calls and the turn's end are trained; the role header, the newline after it and the weight-0 turn not
    assert trained == ('Looking.\n<tool_call>\n{"name": "get_ticket", "arguments": {"key": "PLAT-7"}}\n</tool_call>\n'
                       '<tool_call>\n{"name": "close", "arguments": {"key": "PLAT-7"}}\n</tool_call><|im_end|>')


def test_rows_say_their_prompt_style_and_how_to_render_them(rows: dict[str, tuple[Path, list[dict[str, Any]]]]) -> None:
    for style, (path, converted) in rows.items():
        assert validate_file(path).invalid == 0
        assert {r["prompt_style"] for r in converted} == {style}
        assert all(r["chat_template_kwargs"] == template_kwargs(style) for r in converted)
    assert template_kwargs("compact") == {"tools": None, "enable_thinking": False}
    assert rendered_prompt_style([{"role": "system", "content": "x"}], [], {"prompt_style": "compact"}) == "compact"
    assert rendered_prompt_style([{"role": "user", "content": "x"}], []) == "full"


@pytest.mark.parametrize("style", ["compact", "full"])
def test_template_masks_equal_toolgyms_sft_masks(rows: dict[str, tuple[Path, list[dict[str, Any]]]], style: str) -> None:
    """Each oracle row, rendered whole as TRL does, gives toolgym's ids and loss mask token for token."""
    tokenizer = tiny_tokenizer()
    renderer = Renderer(tokenizer, prompt_style=style)  # type: ignore[arg-type]
    raw = rows[style][1]
    for row, trl_row in zip(raw, sft_rows(raw), strict=True):
        (sample,), source = row_samples(row, renderer)
        assert source == "rendered"
        for candidate in (row, trl_row):  # the row as written, and as `sft_rows` hands it to TRL
            ids, mask = _trl_ids_and_mask(tokenizer, candidate)
            # the whole conversation ends with the template's newline after <|im_end|>, never trained
            assert ids[: len(sample.input_ids)] == sample.input_ids, row["task_id"]
            assert mask[: len(sample.loss_mask)] == sample.loss_mask, row["task_id"]
            assert tokenizer.decode(ids[len(sample.input_ids):]) == "\n" and not any(mask[len(sample.loss_mask):])


def test_a_weight_zero_turn_is_context_for_both(rows: dict[str, tuple[Path, list[dict[str, Any]]]]) -> None:
    tokenizer = tiny_tokenizer()
    renderer = Renderer(tokenizer, prompt_style="compact")
    row = next(r for r in rows["compact"][1] if sum(m["role"] == "assistant" for m in r["messages"]) >= 2)
    first = next(i for i, m in enumerate(row["messages"]) if m["role"] == "assistant")
    messages = [{**m, "weight": 0} if i == first else m for i, m in enumerate(row["messages"])]
    weighted = {**row, "messages": messages}
    samples, _ = row_samples(weighted, renderer)
    ids, mask = _trl_ids_and_mask(tokenizer, weighted)
    (sample,) = samples
    assert (sample.input_ids, sample.loss_mask) == (ids[: len(sample.input_ids)], mask[: len(sample.loss_mask)])
    assert sum(mask) < sum(_trl_ids_and_mask(tokenizer, row)[1])

