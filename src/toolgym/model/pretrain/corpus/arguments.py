"""Tool arguments: the kinds of value they take, what they are called, how people phrase them."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolgym.model.pretrain import vocab
from toolgym.model.pretrain.corpus.phrases import ARG_NAMES
from toolgym.schema import ToolSpec

KIND_TYPES: dict[str, str] = {"count": "integer", "price": "number", "bool": "boolean"}
WRITE_KINDS: tuple[str, ...] = ("person", "username", "email", "city", "date", "time", "count", "price",
                                "code", "title", "text", "slug", "path", "bool", "phone", "enum")


@dataclass(frozen=True)
class Arg:
    """A tool argument: its name, its value kind and (for enums) the allowed values."""

    name: str
    kind: str
    required: bool = True
    choices: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        if self.kind == "enum":
            return {"type": "string", "enum": list(self.choices)}
        if self.kind in ("id_int", "numeric"):
            return {"type": "integer"}
        return {"type": KIND_TYPES.get(self.kind, "string")}

    def optional(self) -> Arg:
        return Arg(self.name, self.kind, False, self.choices)


def as_words(name: str) -> str:
    return name.replace("_", " ")


def article(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


# value kind → how a value of it is drawn ("enum" draws from the argument's own choices)
VALUE_MAKERS: dict[str, Callable[[random.Random], Any]] = {
    "person": vocab.person_name,
    "username": lambda rng: vocab.username_of(vocab.person_name(rng), rng),
    "email": lambda rng: vocab.email_of(vocab.username_of(vocab.person_name(rng), rng), rng),
    "city": vocab.city,
    "date": vocab.iso_date,
    "time": vocab.clock_time,
    "count": lambda rng: rng.randint(1, 40),
    "price": vocab.price,
    "code": vocab.code,
    "title": vocab.title,
    "text": vocab.sentence,
    "slug": vocab.slug,
    "path": vocab.path,
    "bool": lambda rng: rng.random() < 0.5,
    "phone": vocab.phone,
}


def make_value(kind: str, rng: random.Random, arg: Arg | None = None) -> Any:
    if kind == "enum":
        assert arg is not None
        return rng.choice(arg.choices)
    if kind not in VALUE_MAKERS:
        raise ValueError(f"unknown argument kind {kind!r}")
    return VALUE_MAKERS[kind](rng)


def text_of(value: Any) -> str:
    """How a value appears in prose and in tool-call JSON text (strings unquoted here)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def phrase_argument(arg: Arg, value: Any, rng: random.Random) -> str:
    """How a person mentions one argument value in a request."""
    words = as_words(arg.name)
    v = text_of(value)
    generic = [f"{words} {v}", f"with {words} {v}", f"{words}: {v}"]
    kind = arg.kind
    if kind == "person":
        options = [f"for {v}", f"for {v}", f"{words} {v}"]
    elif kind == "city":
        options = [f"in {v}", f"in {v}", f"{words} {v}", f"at {v}"]
    elif kind == "date":
        options = [f"on {v}", f"for {v}", f"{words} {v}"]
    elif kind == "time":
        options = [f"at {v}", f"{words} {v}"]
    elif kind == "count":
        options = [f"{v} {words}", f"{words} {v}", f"with {words} set to {v}"]
    elif kind == "price":
        options = [f"{words} {v}", f"with a {words} of {v}"]
    elif kind in ("title", "text"):
        quote = rng.choice(['"', "'"])
        options = [f"{words} {quote}{v}{quote}", f"with {words} {quote}{v}{quote}", f"{words}: {quote}{v}{quote}"]
        return rng.choice(options)
    elif kind == "bool":
        return rng.choice([f"{words}: {'yes' if value else 'no'}", f"{words} set to {v}"])
    elif kind == "enum":
        options = [f"{words} {v}", f"with {words} {v}", f"set to {v} {words}"]
    elif kind == "path":
        options = [f"in {v}", f"{words} {v}", f"in {words} {v}"]
    elif kind in ("email", "username", "phone", "code", "slug"):
        options = [f"{words} {v}", f"{words} {v}", f"with {words} {v}"]
    else:
        options = []
    return rng.choice(options + generic)


def random_arg(rng: random.Random, used: set[str], kinds: tuple[str, ...] = WRITE_KINDS) -> Arg:
    """A fresh argument whose name is not in `used`."""
    for _ in range(50):
        kind = rng.choice(kinds)
        if kind == "enum":
            name = rng.choice(list(vocab.ENUM_SETS))
            choices = vocab.ENUM_SETS[name]
            arg = Arg(name, "enum", True, tuple(rng.sample(choices, rng.randint(3, len(choices)))))
        else:
            arg = Arg(rng.choice(ARG_NAMES[kind]), kind)
        if arg.name not in used:
            used.add(arg.name)
            return arg
    raise RuntimeError("could not draw a fresh argument name")


def spec(name: str, description: str, args: list[Arg]) -> ToolSpec:
    properties = {a.name: a.schema() for a in args}
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    required = [a.name for a in args if a.required]
    if required:
        parameters["required"] = required
    return ToolSpec(name=name, description=description, parameters=parameters)


def kind_group(kind: str) -> str:
    if kind in ("person", "username", "email", "city", "title", "text", "slug", "phone", "code", "path"):
        return "entity"
    if kind in ("count", "price", "id_int", "numeric"):
        return "number"
    if kind in ("date", "time"):
        return "date"
    return "enum"


def mention_arguments(rng: random.Random, args: list[Arg], values: dict[str, Any]) -> str:
    phrases = [phrase_argument(a, values[a.name], rng) for a in args]
    rng.shuffle(phrases)
    if len(phrases) > 1 and rng.random() < 0.5:
        return ", ".join(phrases[:-1]) + " and " + phrases[-1]
    return " ".join(phrases)
