"""Messages of an episode: requests in several registers, tool calls and results, answers that quote them."""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs.environment import render_result
from toolgym.model.pretrain import vocab
from toolgym.model.pretrain.corpus.arguments import as_words, text_of
from toolgym.model.pretrain.corpus.domain import Domain
from toolgym.model.pretrain.corpus.phrases import CONFIRMATION_KEYS, PAST_TENSE
from toolgym.schema import Message, ToolCall


def capital(text: str) -> str:
    return text[0].upper() + text[1:] if text else text


def polite(rng: random.Random, clause: str, question: bool = False) -> str:
    """The same request in one of several registers."""
    clause = clause.strip()
    if question:
        return capital(clause) + "?"
    forms = ["{c}.", "Please {c}.", "Can you {c}?", "I need you to {c}.", "Could you {c}, please?",
             "{c}, thanks.", "Hi! {C}.", "I'd like to {c}."]
    form = rng.choice(forms)
    return capital(form.replace("{C}", capital(clause)).replace("{c}", clause))


def assistant_call(name: str, arguments: dict[str, Any]) -> Message:
    return Message(role="assistant", content="", tool_calls=[ToolCall(name=name, arguments=arguments)])


def tool_message(content: Any) -> Message:
    return Message(role="tool", content=render_result(content))


def user(text: str) -> Message:
    return Message(role="user", content=text)


def answer(text: str) -> Message:
    return Message(role="assistant", content=text)


def confirmation(rng: random.Random, domain: Domain, ident: Any, state: str) -> dict[str, Any]:
    result: dict[str, Any] = {domain.id_field: ident, "status": state}
    if rng.random() < 0.8:
        result[rng.choice(CONFIRMATION_KEYS)] = vocab.code(rng)
    return result


def write_answer(rng: random.Random, verb: str, noun: str, ident: Any, result: dict[str, Any]) -> tuple[str, str]:
    """A final answer for a write, quoting the result's code (else the id); returns (text, quoted value)."""
    past = PAST_TENSE.get(verb, verb + "ed")
    key = next((k for k in CONFIRMATION_KEYS if k in result), None)
    if key is None:
        value = text_of(ident)
        forms = [f"Done: {noun} {value} is {past}.", f"I {past} {noun} {value}.", f"{capital(noun)} {value} was {past}."]
        return rng.choice(forms), value
    value = str(result[key])
    words = as_words(key)
    forms = [
        f"Done. The {noun} is {past}; {words} {value}.",
        f"The {noun} was {past}. Your {words} is {value}.",
        f"{capital(past)} {noun} {text_of(ident)} ({words}: {value}).",
        f"All set: {words} {value}.",
        f"I {past} the {noun}. {capital(words)}: {value}.",
    ]
    return rng.choice(forms), value
