"""Grammar-constrained decoding: which tokens a row may write next, from a Lark grammar, via llguidance.

A row given a grammar gets a matcher; before each sampling step the sampler asks every matcher for
its allowed tokens (a packed bitmask, one bit per token) and masks the rest of that row's logits, and
after the step the matcher consumes the token drawn. Rows without a grammar cost nothing.

Why llguidance: one wheel with no dependencies (xgrammar pulls triton, which this CPU env must not
have); it reads a transformers tokenizer as is (`llguidance.hf.from_tokenizer`); its Lark dialect
names special tokens (`<[4]>` for `</tool_call>`) and embeds JSON schemas (`%json {...}`), so a
whole tool call, or a choice among tools, is one grammar; and it enforces integer ranges and string
lengths (outlines-core leaves `minimum`/`maximum` out of its regex, so a small model's runaway
integer never ends). With it the default model writes a schema-valid call to each of the twelve
booking tools, named or `required`, greedy and sampled (without: 1 and 3 of 12). vLLM's `guidance`
structured-output backend is the same library.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import llguidance
import llguidance.hf
import torch
from llguidance import LLMatcher

_BITS = torch.arange(32, dtype=torch.int32)
COMPILED_GRAMMARS = 64  # grammars kept compiled per tokenizer


class GrammarError(ValueError):
    """A grammar llguidance cannot compile (the message says where)."""


class GrammarTokenizer:
    """llguidance's view of one transformers tokenizer: built once per policy, then shared by every matcher.

    A grammar is compiled once (tens of ms for a dozen tool schemas) and kept, most recently used
    first; each row gets a copy (a tenth of a ms), so an agent that sends the same tools every turn,
    or `n` choices of one request, pay for one compilation."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.inner = llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab_size)
        self._compiled = functools.lru_cache(maxsize=COMPILED_GRAMMARS)(self._compile)

    def _compile(self, grammar: str) -> LLMatcher:
        return LLMatcher(self.inner, LLMatcher.grammar_from_lark(grammar), log_level=0)

    def problem(self, grammar: str) -> str | None:
        """Why `grammar` (Lark) cannot be used with this tokenizer, or None when it can."""
        compiled = self._compiled(grammar)
        return compiled.get_error() if compiled.is_error() else None

    def matcher(self, grammar: str) -> LLMatcher:
        """A fresh matcher at the start of `grammar` (Lark)."""
        compiled = self._compiled(grammar)
        if compiled.is_error():
            raise GrammarError(compiled.get_error())
        return compiled.deep_copy()

    def terminal(self, text: str) -> str:
        """`text` as a Lark terminal: the token itself when the tokenizer has it as one added token
        (`<[id]>`: llguidance never spells a special token out of plain text), else the literal."""
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if len(ids) == 1 and ids[0] in getattr(self.tokenizer, "added_tokens_decoder", {}):
            return f"<[{ids[0]}]>"
        return literal(text)


def literal(text: str) -> str:
    """`text` as a Lark string literal (JSON's escapes are Lark's)."""
    return json.dumps(text)


def allowed_tokens(matchers: Sequence[LLMatcher], vocab_size: int) -> torch.Tensor:
    """Bool [len(matchers), vocab_size]: the tokens each matcher allows next."""
    words = (vocab_size + 31) // 32
    bitmask = torch.empty((len(matchers), words), dtype=torch.int32)
    for index, matcher in enumerate(matchers):
        row = bitmask[index]
        matcher.unsafe_compute_mask_ptr(row.data_ptr(), words * 4)
    bits = (bitmask.unsqueeze(-1) >> _BITS) & 1
    return bits.view(len(matchers), words * 32)[:, :vocab_size].bool()


def advance(matcher: LLMatcher, token_id: int) -> None:
    """Feed the drawn token to its row's matcher; a token the mask allowed is always accepted."""
    if not matcher.consume_token(token_id):
        raise GrammarError(f"token {token_id} broke the grammar: {matcher.get_error()}")


def replay_allowed(tokenizer: GrammarTokenizer, grammar: str, token_ids: Sequence[int]) -> torch.Tensor:
    """Bool [len(token_ids), vocab]: the tokens the grammar allowed at each position of a finished
    completion (for recomputing its log-probs under the masked distribution it was drawn from)."""
    matcher = tokenizer.matcher(grammar)
    rows = []
    for token_id in token_ids:
        rows.append(allowed_tokens([matcher], tokenizer.vocab_size)[0])
        advance(matcher, token_id)
    if not rows:
        return torch.zeros((0, tokenizer.vocab_size), dtype=torch.bool)
    return torch.stack(rows)
