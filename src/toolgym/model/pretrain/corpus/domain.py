"""A small invented app: a noun, its record fields and ids, and the records themselves."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolgym.model.pretrain import vocab
from toolgym.model.pretrain.corpus.arguments import Arg, as_words, make_value
from toolgym.model.pretrain.corpus.phrases import NUMERIC_FIELDS


def numeric_value(field_name: str, rng: random.Random) -> Any:
    kind = NUMERIC_FIELDS[field_name][0]
    if field_name == "rating":
        return round(rng.uniform(1.0, 10.0 if rng.random() < 0.3 else 5.0), 1)
    if field_name == "price":
        return vocab.price(rng)
    if kind == "date":
        return vocab.iso_date(rng)
    if kind == "time":
        return vocab.clock_time(rng)
    return rng.randint(1, 999 if rng.random() < 0.5 else 99)


@dataclass
class Domain:
    """The records of one invented app: ids, a human label, typed attributes, and how results look."""

    singular: str
    plural: str
    id_style: str
    id_field: str  # "id", "<noun>_id" or "number"
    label_field: str
    label_kind: str
    attributes: list[Arg]
    envelope: str  # "list", "total", "results" or "echo": how a search result wraps its list
    fillers: list[str] = field(default_factory=list)  # fields no request is about (real records have many)

    @property
    def words(self) -> str:
        return as_words(self.singular)

    @property
    def plural_words(self) -> str:
        return as_words(self.plural)

    def new_id(self, rng: random.Random) -> int | str:
        return vocab.item_id(rng, self.id_style)

    def id_arg(self) -> Arg:
        name = "number" if self.id_field == "number" else f"{self.singular}_id"
        return Arg(name, "id_int" if "int" in self.id_style else "code")

    def wrap(self, records: list[dict[str, Any]], echo: dict[str, Any]) -> Any:
        """A search result in this app's shape."""
        if self.envelope == "total":
            return {"total_count": len(records), self.plural: records}
        if self.envelope == "results":
            return {"results": records}
        if self.envelope == "echo":
            return {**echo, self.plural: records}
        return records


def make_domain(rng: random.Random) -> Domain:
    singular, plural = rng.choice(vocab.DOMAIN_NOUNS)
    style = vocab.id_style(rng, singular)
    id_field = rng.choice(["id", "id", f"{singular}_id", "number"] if "int" in style else ["id", f"{singular}_id"])
    label_kind = "person" if rng.random() < 0.2 else "title"
    label_field = "name" if rng.random() < 0.6 else rng.choice(("title", "label", "nickname"))
    used = {id_field, label_field}
    attributes: list[Arg] = []
    for name in rng.sample(list(NUMERIC_FIELDS), rng.randint(1, 3)):
        attributes.append(Arg(name, "numeric"))
        used.add(name)
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        if roll < 0.45:
            enum_name = rng.choice(list(vocab.ENUM_SETS))
            if enum_name in used:
                continue
            choices = vocab.ENUM_SETS[enum_name]
            attributes.append(Arg(enum_name, "enum", True, tuple(rng.sample(choices, rng.randint(3, len(choices))))))
            used.add(enum_name)
        elif roll < 0.7 and "city" not in used:
            attributes.append(Arg("city", "city"))
            used.add("city")
        elif roll < 0.85 and "owner" not in used and label_kind != "person":
            attributes.append(Arg("owner", "person"))
            used.add("owner")
        elif "author" not in used:
            attributes.append(Arg("author", "username"))
            used.add("author")
    envelope = rng.choice(["list", "list", "total", "results", "echo"])
    fillers = rng.sample(list(FILLERS), rng.randint(0, 3))
    return Domain(singular, plural, style, id_field, label_field, label_kind, attributes, envelope, fillers)


FILLERS: dict[str, Callable[[random.Random], Any]] = {
    "description": vocab.sentence,
    "tags": lambda rng: [rng.choice(vocab.LOREM_WORDS) for _ in range(rng.randint(0, 3))],
    "updated_at": lambda rng: vocab.iso_date(rng),
    "active": lambda rng: rng.random() < 0.7,
    "summary": lambda rng: vocab.title(rng, 3, 6),
}


def make_record(domain: Domain, rng: random.Random, taken_ids: set[Any]) -> dict[str, Any]:
    record_id = domain.new_id(rng)
    while record_id in taken_ids:
        record_id = domain.new_id(rng)
    taken_ids.add(record_id)
    record: dict[str, Any] = {domain.id_field: record_id}
    record[domain.label_field] = vocab.person_name(rng) if domain.label_kind == "person" else vocab.title(rng, 1, 4)
    for attribute in domain.attributes:
        if attribute.kind == "numeric":
            record[attribute.name] = numeric_value(attribute.name, rng)
        else:
            record[attribute.name] = make_value(attribute.kind, rng, attribute)
    for filler in domain.fillers:
        record[filler] = FILLERS[filler](rng)
    return record


def make_records(domain: Domain, rng: random.Random, low: int = 3, high: int = 6) -> list[dict[str, Any]]:
    taken: set[Any] = set()
    return [make_record(domain, rng, taken) for _ in range(rng.randint(low, high))]


def record_id(domain: Domain, record: dict[str, Any]) -> Any:
    return record[domain.id_field]
