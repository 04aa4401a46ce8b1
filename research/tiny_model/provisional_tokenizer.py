"""Provisional tokenizer for experiments until `toolgym.model.tiny.build_tokenizer` lands.

Same spec as the brief: byte-level BPE, digits split one by one, Qwen tags as added tokens,
the tiny ChatML template. Trained on rendered corpus text.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

TAGS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>",
        "</tool_response>", "<think>", "</think>"]


def build(texts: list[str], vocab_size: int, out: Path) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=TAGS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = Path("src/toolgym/model/tiny_chat_template.jinja").read_text()
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)
    (out / "toolgym.json").write_text(json.dumps({"prompt_style": "compact"}))
    return fast
