"""A generic synthetic corpus of tool-use episodes, deterministic from a seed.

Every episode invents its own little app (a domain noun from a field the env suite does not model,
random record fields, random tool names and arguments, a random policy), so a model pre-trained on
it learns the *skills* of tool use — copy an entity into an argument, pick the min/max or a
matching item from a JSON result, turn "next Friday" into a date, chain an id from one call into
the next, follow the system prompt's conventions, stop with an answer that quotes a result — and
none of the suite's tasks, tool names or prompts.

Episodes are messages + ToolSpecs + a policy text; `toolgym.model.pretrain.render` turns them
into the agent's own compact layout. `Mark`s name the assistant spans that measure each skill.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from toolgym.envs.environment import render_result
from toolgym.model.pretrain import vocab
from toolgym.schema import Message, ToolCall, ToolSpec

# ---------------------------------------------------------------------------------------------
# episode data


@dataclass(frozen=True)
class Mark:
    """A value inside assistant message `message` that measures `skill`.

    `argument` names the tool-call argument holding it (None: the value is quoted in text).
    """

    message: int
    value: str
    skill: str
    argument: str | None = None


@dataclass
class CorpusEpisode:
    """One synthetic episode: the context the agent sees, the messages, and its skill marks."""

    skill: str
    env_variables: dict[str, str]
    tools: list[ToolSpec]
    messages: list[Message]
    marks: list[Mark] = field(default_factory=list)
    policy: str = ""

    def user_prompts(self) -> list[str]:
        return [m.content or "" for m in self.messages if m.role == "user"]


# ---------------------------------------------------------------------------------------------
# argument kinds: how values look, what arguments are called, how people phrase them

ARG_NAMES: dict[str, tuple[str, ...]] = {
    "person": ("owner", "person", "guest", "customer", "contact", "assignee", "recipient", "member",
               "buyer", "keeper", "pilot", "driver", "captain", "chef", "coach", "full_name"),
    "username": ("username", "user", "handle", "login", "account"),
    "email": ("email", "email_address", "contact_email", "notify_email"),
    "city": ("city", "location", "place", "site", "region", "town"),
    "date": ("date", "day", "start_date", "end_date", "due_date", "deadline", "visit_date", "delivery_date"),
    "time": ("time", "start_time", "slot", "pickup_time"),
    "count": ("quantity", "count", "seats", "units", "copies", "people", "crates", "hours"),
    "price": ("max_price", "budget", "price", "cost", "limit"),
    "code": ("code", "reference", "ref", "tracking_code", "serial", "voucher"),
    "title": ("title", "name", "subject", "heading", "caption", "nickname"),
    "text": ("note", "message", "body", "text", "comment", "description", "reason"),
    "slug": ("slug", "path", "key"),
    "path": ("project", "space", "board", "collection", "channel"),
    "bool": ("urgent", "public", "notify", "express", "confirmed", "gift", "insured"),
    "phone": ("phone", "phone_number", "mobile"),
}
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


def _words(name: str) -> str:
    return name.replace("_", " ")


def article(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def make_value(kind: str, rng: random.Random, arg: Arg | None = None) -> Any:
    if kind == "person":
        return vocab.person_name(rng)
    if kind == "username":
        return vocab.username_of(vocab.person_name(rng), rng)
    if kind == "email":
        return vocab.email_of(vocab.username_of(vocab.person_name(rng), rng), rng)
    if kind == "city":
        return vocab.city(rng)
    if kind == "date":
        return vocab.iso_date(rng)
    if kind == "time":
        return vocab.clock_time(rng)
    if kind == "count":
        return rng.randint(1, 40)
    if kind == "price":
        return vocab.price(rng)
    if kind == "code":
        return vocab.code(rng)
    if kind == "title":
        return vocab.title(rng)
    if kind == "text":
        return vocab.sentence(rng)
    if kind == "slug":
        return vocab.slug(rng)
    if kind == "path":
        return vocab.path(rng)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "phone":
        return vocab.phone(rng)
    if kind == "enum":
        assert arg is not None
        return rng.choice(arg.choices)
    raise ValueError(f"unknown argument kind {kind!r}")


def text_of(value: Any) -> str:
    """How a value appears in prose and in tool-call JSON text (strings unquoted here)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def phrase_argument(arg: Arg, value: Any, rng: random.Random) -> str:
    """How a person mentions one argument value in a request."""
    words = _words(arg.name)
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


# ---------------------------------------------------------------------------------------------
# a small random app: a noun, its record fields, its tools, its policy

NUMERIC_FIELDS: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {
    # field: (kind, words, min phrases, max phrases)
    "price": ("price", "price", ("cheapest", "least expensive", "lowest-priced"), ("most expensive", "priciest")),
    "rating": ("rating", "rating", ("lowest rated", "worst rated"), ("best rated", "highest rated", "top rated")),
    "distance_km": ("count", "distance", ("closest", "nearest"), ("farthest", "most distant")),
    "capacity": ("count", "capacity", ("smallest",), ("largest", "biggest")),
    "weight_kg": ("count", "weight", ("lightest",), ("heaviest",)),
    "age_years": ("count", "age", ("youngest", "newest"), ("oldest",)),
    "stock": ("count", "stock", ("least stocked",), ("best stocked",)),
    "score": ("count", "score", ("lowest scoring",), ("highest scoring",)),
    "votes": ("count", "votes", ("least voted",), ("most voted", "most popular")),
    "duration_min": ("count", "duration", ("shortest", "quickest"), ("longest",)),
    "date": ("date", "date", ("earliest", "soonest"), ("latest", "most recent")),
    "created_at": ("date", "creation date", ("oldest",), ("newest", "most recent")),
    "starts_at": ("time", "start time", ("earliest",), ("latest",)),
}


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
        return _words(self.singular)

    @property
    def plural_words(self) -> str:
        return _words(self.plural)

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


REFUSALS: tuple[str, ...] = ("I cannot", "I cannot", "Sorry, I can't", "Unable to", "That is not possible:")
DESCRIPTION_TAILS: tuple[str, ...] = (
    "Returns the new record.", "Needs write access.", "Newest first.", "Soonest first.",
    "Only for your own records.", "Fails when the record is locked.", "Ids come from the search tools.",
    "Dates are YYYY-MM-DD.", "Prices are in USD.", "At most 20 results.", "Returns a confirmation code.",
)


@dataclass
class Scene:
    """What every episode shares: runtime context, the policy text and the tool list under construction."""

    rng: random.Random
    env_variables: dict[str, str]
    today: dt.date
    username: str
    name: str
    long: bool
    refusal: str
    policy_lines: list[str] = field(default_factory=list)
    tools: list[ToolSpec] = field(default_factory=list)

    def describe(self, text: str) -> str:
        """Long scenes get the chatty descriptions real apps have."""
        if self.long and self.rng.random() < 0.75:
            return text + " " + self.rng.choice(DESCRIPTION_TAILS)
        return text

    def add(self, tool: ToolSpec) -> ToolSpec:
        self.tools.append(tool)
        return tool

    def finish(self, skill: str, messages: list[Message], marks: list[Mark], domain: Domain | None) -> CorpusEpisode:
        rng = self.rng
        count = rng.randint(8, 15) if self.long else rng.randint(1, 6)
        names = {t.name for t in self.tools}
        extra = []
        if domain is not None:
            extra += same_domain_tools(rng, domain, names, rng.randint(0, count // 2), self)
        extra += distractor_tools(rng, names, count - len(extra), self)
        tools = self.tools + extra
        rng.shuffle(tools)
        policy = "\n".join(self.policy_lines)
        return CorpusEpisode(skill, self.env_variables, tools, messages, marks, policy)


def policy_lines(rng: random.Random, domain: Domain, refusal: str, long: bool) -> list[str]:
    """A generic app policy: who the assistant is, invented rules, and the refusal convention."""
    noun, nouns = domain.words, domain.plural_words
    lines = [rng.choice([
        f"You are the assistant of an app for {nouns}. You act for the logged-in user; \"today\" is the current date.",
        f"You help people manage {nouns}. \"My\" means the logged-in user.",
        f"You are a {noun} desk assistant acting for the logged-in user.",
    ])]
    if not long:
        if rng.random() < 0.5:
            lines.append(f"If a request cannot be done, change nothing and reply starting with '{refusal}' and the reason.")
        return lines
    fields = [_words(a.name) for a in domain.attributes] + [_words(domain.label_field)]
    rules = [
        f"Use the tools for every fact: never guess ids or {rng.choice(fields)} values.",
        f"Quote {rng.choice(fields)} values exactly as the tools return them.",
        f"Only the owner of {article(noun)} may change it.",
        f"A {noun} that is {rng.choice(sum((a.choices for a in domain.attributes if a.kind == 'enum'), ('locked',)))} cannot be changed.",
        f"Look {nouns} up before you change them, and answer with the exact values the tools return.",
        "Dates are YYYY-MM-DD and times HH:MM.",
        f"Each user may hold at most {rng.randint(2, 9)} {nouns} at a time.",
        "Do only what was asked.",
        f"After a change, tell the user the {rng.choice(['confirmation code', 'reference', 'new status'])}.",
        f"Prices are per {rng.choice(['day', 'night', 'item', 'person', 'hour'])}.",
        vocab.sentence(rng),
        vocab.sentence(rng),
    ]
    lines += rng.sample(rules, rng.randint(4, 10))
    lines.append(f"If a request cannot be done, change nothing and reply starting with '{refusal}' and the reason.")
    if rng.random() < 0.5:
        lines = [lines[0], *["- " + line for line in lines[1:]]]
    return lines


def new_scene(rng: random.Random, domain: Domain | None = None, long: bool | None = None) -> Scene:
    """CURRENT_DATE (always), a logged-in user (usually), and a policy (always in long scenes)."""
    today = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(1200))
    name = vocab.person_name(rng)
    username = vocab.username_of(name, rng)
    variables = {"CURRENT_DATE": today.isoformat()}
    if rng.random() < 0.8:
        variables["LOGGED_IN_USER"] = username
        variables["LOGGED_IN_NAME"] = name
    is_long = rng.random() < 0.35 if long is None else long
    refusal = rng.choice(REFUSALS)
    lines = policy_lines(rng, domain, refusal, is_long) if domain is not None and (is_long or rng.random() < 0.4) else []
    return Scene(rng, variables, today, username, name, is_long, refusal, lines)


def same_domain_tools(rng: random.Random, domain: Domain, avoid: set[str], count: int, scene: Scene) -> list[ToolSpec]:
    """Other tools of the same app (real apps' tool lists share one domain)."""
    tools: list[ToolSpec] = []
    for _ in range(count * 3):
        if len(tools) >= count:
            break
        roll = rng.random()
        if roll < 0.4:
            verb = rng.choice(vocab.WRITE_VERBS)
            used: set[str] = {domain.id_arg().name}
            args = [domain.id_arg()] + [random_arg(rng, used) for _ in range(rng.randint(0, 2))]
            name = f"{verb}_{domain.singular}"
            description = f"{_verb_phrase(verb).capitalize()} {article(domain.words)}."
        elif roll < 0.7:
            name = f"{rng.choice(vocab.READ_VERBS)}_{domain.singular}"
            args = [domain.id_arg()]
            description = f"Show one {domain.words} with all its fields."
        else:
            name = f"list_my_{domain.plural}"
            args = []
            description = f"List the logged-in user's {domain.plural_words}."
        if name in avoid:
            continue
        avoid.add(name)
        tools.append(spec(name, scene.describe(description), args))
    return tools


def distractor_tools(rng: random.Random, avoid: set[str], count: int, scene: Scene) -> list[ToolSpec]:
    """Tools of other random domains: the agent must pick the right one by name."""
    tools: list[ToolSpec] = []
    while len(tools) < count:
        singular, plural = rng.choice(vocab.DOMAIN_NOUNS)
        roll = rng.random()
        used: set[str] = set()
        if roll < 0.3:
            name = f"{rng.choice(vocab.SEARCH_VERBS)}_{plural}"
            args = [random_arg(rng, used, ("city", "date", "person", "enum", "price")).optional()
                    for _ in range(rng.randint(0, 3))]
            description = f"Search {_words(plural)}."
        elif roll < 0.5:
            name = f"{rng.choice(vocab.READ_VERBS)}_{singular}"
            args = [Arg(f"{singular}_id", "id_int")]
            description = f"Get one {_words(singular)} by id."
        else:
            verb = rng.choice(vocab.WRITE_VERBS)
            name = f"{verb}_{singular}"
            args = [random_arg(rng, used) for _ in range(rng.randint(1, 3))]
            description = f"{_verb_phrase(verb).capitalize()} {article(_words(singular))}."
        if name in avoid:
            continue
        avoid.add(name)
        tools.append(spec(name, scene.describe(description), args))
    return tools


def _verb_phrase(verb: str) -> str:
    return vocab.WRITE_PHRASES.get(verb, verb)


# ---------------------------------------------------------------------------------------------
# messages


def _capital(text: str) -> str:
    return text[0].upper() + text[1:] if text else text


def polite(rng: random.Random, clause: str, question: bool = False) -> str:
    """The same request in one of several registers."""
    clause = clause.strip()
    if question:
        return _capital(clause) + "?"
    forms = ["{c}.", "Please {c}.", "Can you {c}?", "I need you to {c}.", "Could you {c}, please?",
             "{c}, thanks.", "Hi! {C}.", "I'd like to {c}."]
    form = rng.choice(forms)
    return _capital(form.replace("{C}", _capital(clause)).replace("{c}", clause))


def assistant_call(name: str, arguments: dict[str, Any]) -> Message:
    return Message(role="assistant", content="", tool_calls=[ToolCall(name=name, arguments=arguments)])


def tool_message(content: Any) -> Message:
    return Message(role="tool", content=render_result(content))


def user(text: str) -> Message:
    return Message(role="user", content=text)


def answer(text: str) -> Message:
    return Message(role="assistant", content=text)


CONFIRMATION_KEYS: tuple[str, ...] = ("confirmation", "reference", "code", "receipt", "confirmation_code")


def confirmation(rng: random.Random, domain: Domain, ident: Any, state: str) -> dict[str, Any]:
    result: dict[str, Any] = {domain.id_field: ident, "status": state}
    if rng.random() < 0.8:
        result[rng.choice(CONFIRMATION_KEYS)] = vocab.code(rng)
    return result


PAST_TENSE: dict[str, str] = {
    "create": "created", "add": "added", "register": "registered", "log": "logged", "schedule": "scheduled",
    "assign": "assigned", "reserve": "reserved", "order": "ordered", "ship": "shipped", "tag": "tagged",
    "rate": "rated", "transfer": "transferred", "close": "closed", "open": "opened", "move": "moved",
    "rename": "renamed", "update": "updated", "cancel": "cancelled", "remove": "removed", "archive": "archived",
    "approve": "approved", "reject": "rejected", "adopt": "adopted", "plant": "planted", "water": "watered",
    "repair": "repaired", "inspect": "inspected", "calibrate": "calibrated", "refill": "refilled",
    "paint": "painted", "rent": "rented", "borrow": "borrowed", "return": "returned", "enroll": "enrolled",
    "invite": "invited", "lock": "locked", "unlock": "unlocked", "pause": "paused", "resume": "resumed",
    "clone": "cloned", "merge_into": "merged", "flag": "flagged", "pin": "pinned", "star": "starred",
    "mark": "marked", "claim": "claimed", "donate": "donated", "label_as": "labelled", "move_to": "moved",
    "set": "set up", "restock": "restocked",
}


def write_answer(rng: random.Random, verb: str, noun: str, ident: Any, result: dict[str, Any]) -> tuple[str, str]:
    """A final answer for a write, quoting the result's code (else the id); returns (text, quoted value)."""
    past = PAST_TENSE.get(verb, verb + "ed")
    key = next((k for k in CONFIRMATION_KEYS if k in result), None)
    if key is None:
        value = text_of(ident)
        forms = [f"Done: {noun} {value} is {past}.", f"I {past} {noun} {value}.", f"{_capital(noun)} {value} was {past}."]
        return rng.choice(forms), value
    value = str(result[key])
    words = _words(key)
    forms = [
        f"Done. The {noun} is {past}; {words} {value}.",
        f"The {noun} was {past}. Your {words} is {value}.",
        f"{_capital(past)} {noun} {text_of(ident)} ({words}: {value}).",
        f"All set: {words} {value}.",
        f"I {past} the {noun}. {_capital(words)}: {value}.",
    ]
    return rng.choice(forms), value


def _write_tool(rng: random.Random, domain: Domain, n_args: int, scene: Scene, by_id: bool = False
                ) -> tuple[str, ToolSpec, list[Arg], list[Arg]]:
    """A write tool of the domain: (verb, spec, its required non-id arguments, its optional ones)."""
    verb = rng.choice(vocab.WRITE_VERBS)
    used: set[str] = {domain.id_arg().name, domain.label_field}
    args = [random_arg(rng, used) for _ in range(n_args)]
    optional = [random_arg(rng, used).optional() for _ in range(rng.randint(0, 2))]
    listed = ([domain.id_arg()] if by_id else []) + args + optional
    description = f"{_verb_phrase(verb).capitalize()} {article(domain.words)}" + (" by id." if by_id else ".")
    return verb, spec(f"{verb}_{domain.singular}", scene.describe(description), listed), args, optional


def _kind_group(kind: str) -> str:
    if kind in ("person", "username", "email", "city", "title", "text", "slug", "phone", "code", "path"):
        return "entity"
    if kind in ("count", "price", "id_int", "numeric"):
        return "number"
    if kind in ("date", "time"):
        return "date"
    return "enum"


def _mention(rng: random.Random, args: list[Arg], values: dict[str, Any]) -> str:
    phrases = [phrase_argument(a, values[a.name], rng) for a in args]
    rng.shuffle(phrases)
    if len(phrases) > 1 and rng.random() < 0.5:
        return ", ".join(phrases[:-1]) + " and " + phrases[-1]
    return " ".join(phrases)


# ---------------------------------------------------------------------------------------------
# skills


def skill_copy_call(rng: random.Random) -> CorpusEpisode:
    """Fill a call from values spread through the request, skipping optional arguments not mentioned."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    verb, tool, args, optional = _write_tool(rng, domain, rng.randint(1, 4), scene)
    scene.add(tool)
    values = {a.name: make_value(a.kind, rng, a) for a in args}
    mentioned = args + [a for a in optional if rng.random() < 0.4]
    for a in mentioned:
        values.setdefault(a.name, make_value(a.kind, rng, a))
    clause = f"{_verb_phrase(verb)} {article(domain.words)} " + _mention(rng, mentioned, values)
    order = list(tool.parameters["properties"])
    call_args = {n: values[n] for n in order if n in values}
    ident = domain.new_id(rng)
    result = confirmation(rng, domain, ident, PAST_TENSE.get(verb, "ok"))
    text, quoted = write_answer(rng, verb, domain.words, ident, result)
    messages = [user(polite(rng, clause)), assistant_call(tool.name, call_args), tool_message(result), answer(text)]
    kinds = {a.name: a.kind for a in mentioned}
    marks = [Mark(1, text_of(v), f"copy_{_kind_group(kinds[n])}", n) for n, v in call_args.items()]
    marks.append(Mark(3, quoted, "answer_quote"))
    return scene.finish("copy_call", messages, marks, domain)


def _get_tool(rng: random.Random, domain: Domain, scene: Scene) -> ToolSpec:
    verb = rng.choice(vocab.READ_VERBS)
    return spec(f"{verb}_{domain.singular}", scene.describe(f"Show one {domain.words} by id."), [domain.id_arg()])


def _id_phrase(rng: random.Random, domain: Domain, ident: Any) -> str:
    if domain.id_field == "number" or isinstance(ident, int):
        return rng.choice([f"{domain.words} {ident}", f"{domain.words} #{ident}", f"{domain.words} number {ident}"])
    return f"{domain.words} {ident}"


def skill_lookup_answer(rng: random.Random) -> CorpusEpisode:
    """Look a record up by id and answer with one or two of its fields."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    record = make_record(domain, rng, set())
    fields = [a.name for a in domain.attributes] + [domain.label_field]
    asked = rng.sample(fields, 2 if len(fields) > 1 and rng.random() < 0.35 else 1)
    get = scene.add(_get_tool(rng, domain, scene))
    ident = record_id(domain, record)
    what = " and ".join(f"the {_words(a)}" for a in asked)
    phrase = _id_phrase(rng, domain, ident)
    question, is_question = rng.choice([
        (f"what is {what} of {phrase}", True), (f"tell me {what} of {phrase}", False),
        (f"look up {phrase} and give me {what}", False), (f"I need {what} of {phrase}", False),
    ])
    facts = [f"the {_words(a)} is {text_of(record[a])}" for a in asked]
    body = " and ".join(facts)
    text = rng.choice([f"For {phrase}, {body}.", f"{_capital(body)}.",
                       f"{_capital(phrase)}: " + ", ".join(f"{_words(a)} {text_of(record[a])}" for a in asked) + "."])
    messages = [user(polite(rng, question, question=is_question)),
                assistant_call(get.name, {domain.id_arg().name: ident}), tool_message(record), answer(text)]
    marks = [Mark(1, text_of(ident), "copy_id", domain.id_arg().name)]
    marks += [Mark(3, text_of(record[a]), "answer_field") for a in asked]
    return scene.finish("lookup_answer", messages, marks, domain)


def _unique_extreme(records: list[dict[str, Any]], field_name: str, pick_max: bool) -> dict[str, Any] | None:
    values = [r[field_name] for r in records]
    target = max(values) if pick_max else min(values)
    winners = [r for r in records if r[field_name] == target]
    return winners[0] if len(winners) == 1 else None


def _selection(rng: random.Random, domain: Domain, records: list[dict[str, Any]], mode: str
               ) -> tuple[str, dict[str, Any]] | None:
    """A phrase that selects exactly one record ("the cheapest", "the red one") and that record."""
    numeric = [a.name for a in domain.attributes if a.kind == "numeric"]
    if mode == "extreme" and numeric:
        field_name = rng.choice(numeric)
        pick_max = rng.random() < 0.5
        chosen = _unique_extreme(records, field_name, pick_max)
        if chosen is None:
            return None
        _, words, low, high = NUMERIC_FIELDS[field_name]
        if rng.random() < 0.6:
            phrase = f"the {rng.choice(high if pick_max else low)} {domain.words}"
        else:
            phrase = f"the {domain.words} with the {'highest' if pick_max else 'lowest'} {words}"
        return phrase, chosen
    categorical = [a for a in domain.attributes if a.kind in ("enum", "city", "person", "username")] + [
        Arg(domain.label_field, domain.label_kind)]
    attribute = rng.choice(categorical)
    chosen = rng.choice(records)
    if sum(r[attribute.name] == chosen[attribute.name] for r in records) != 1:
        return None
    v = text_of(chosen[attribute.name])
    if attribute.kind == "enum":
        phrase = rng.choice([f"the {v} {domain.words}", f"the {domain.words} whose {_words(attribute.name)} is {v}"])
    elif attribute.kind == "city":
        phrase = f"the {domain.words} in {v}"
    elif attribute.kind in ("person", "username"):
        phrase = rng.choice([f"the {domain.words} of {v}", f"{v}'s {domain.words}", f"the {domain.words} by {v}"])
    else:
        phrase = rng.choice([f'the {domain.words} called "{v}"', f"the {domain.words} named {v}",
                             f"the '{v}' {domain.words}"])
    return phrase, chosen


def _search_tool(rng: random.Random, domain: Domain, filters: list[Arg], scene: Scene) -> ToolSpec:
    verb = rng.choice(vocab.SEARCH_VERBS)
    by = " and ".join(_words(a.name) for a in filters)
    description = f"Search {domain.plural_words}" + (f" by {by}." if by else ".")
    return spec(f"{verb}_{domain.plural}", scene.describe(description), [a.optional() for a in filters])


def _search_filters(rng: random.Random, domain: Domain, chosen: dict[str, Any], records: list[dict[str, Any]],
                    scene: Scene) -> tuple[list[Arg], dict[str, Any], str, list[Mark]]:
    """Filters the search tool offers, those the request uses (all results then share them), the scope phrase."""
    offered = [a for a in domain.attributes if a.kind in ("city", "enum", "username")]
    offered = rng.sample(offered, min(len(offered), rng.randint(0, 2)))
    date_filter = rng.random() < 0.25
    if date_filter:
        offered.append(Arg(rng.choice(("date", "day", "on")), "date"))
    used = [a for a in offered if rng.random() < 0.75]
    args: dict[str, Any] = {}
    phrases: list[str] = []
    marks: list[Mark] = []
    for a in used:
        if a.kind == "date":
            expression = vocab.relative_date(rng, scene.today)
            if rng.random() < 0.3:
                expression = vocab.DateExpression(expression.iso, expression.iso)
            args[a.name] = expression.iso
            phrases.append(expression.phrase if expression.phrase.startswith("on ") else rng.choice(
                [expression.phrase, f"for {expression.phrase}"]))
            marks.append(Mark(1, expression.iso, "date_relative", a.name))
            continue
        value = chosen[a.name]
        for r in records:
            r[a.name] = value
        args[a.name] = value
        if a.kind == "city":
            phrases.append(f"in {value}")
        elif a.kind == "username":
            phrases.append(f"by {value}")
        else:
            phrases.append(rng.choice([f"with {_words(a.name)} {value}", f"that are {value}"]))
        marks.append(Mark(1, text_of(value), "copy_entity" if a.kind != "enum" else "copy_enum", a.name))
    scope = (" " + " ".join(phrases)) if phrases else ""
    return offered, args, scope, marks


def skill_search_select(rng: random.Random, mode: str | None = None) -> CorpusEpisode:
    """Search, select one result by min/max or by a condition, then act on it, look it up, or answer."""
    for _ in range(100):
        domain = make_domain(rng)
        chosen_mode = mode or ("extreme" if rng.random() < 0.65 else "filter")
        records = make_records(domain, rng)
        selection = _selection(rng, domain, records, chosen_mode)
        if selection is not None:
            break
    else:  # pragma: no cover - the loop succeeds in practice
        raise RuntimeError("could not draw a selectable record set")
    scene = new_scene(rng, domain)
    phrase, chosen = selection
    offered, search_args, scope, marks = _search_filters(rng, domain, chosen, records, scene)
    search = scene.add(_search_tool(rng, domain, offered, scene))
    ident = record_id(domain, chosen)
    id_arg = domain.id_arg()
    result_list = domain.wrap(records, search_args)
    roll = rng.random()
    if roll < 0.55:
        verb, act, extra, _ = _write_tool(rng, domain, rng.randint(0, 2), scene, by_id=True)
        scene.add(act)
        values = {a.name: make_value(a.kind, rng, a) for a in extra}
        mention = _mention(rng, extra, values)
        clause = f"find {phrase}{scope} and {_verb_phrase(verb)} it" + (f" {mention}" if mention else "")
        result = confirmation(rng, domain, ident, PAST_TENSE.get(verb, "ok"))
        text, quoted = write_answer(rng, verb, domain.words, ident, result)
        call_values = {id_arg.name: ident, **values}
        messages = [user(polite(rng, clause)), assistant_call(search.name, search_args), tool_message(result_list),
                    assistant_call(act.name, call_values), tool_message(result), answer(text)]
        marks.append(Mark(3, text_of(ident), f"select_{chosen_mode}", id_arg.name))
        marks += [Mark(3, text_of(values[a.name]), f"copy_{_kind_group(a.kind)}", a.name) for a in extra]
        marks.append(Mark(5, quoted, "answer_quote"))
    elif roll < 0.75:
        get = scene.add(_get_tool(rng, domain, scene))
        detail = dict(chosen)
        hidden = rng.choice(("phone", "address", "manager", "capacity_left", "notes"))
        detail[hidden] = make_value({"phone": "phone", "address": "city", "manager": "person",
                                     "capacity_left": "count", "notes": "text"}[hidden], rng)
        # the search result lacks the detail field: the agent must look the record up
        question = f"what is the {_words(hidden)} of {phrase}{scope}"
        value = text_of(detail[hidden])
        text = rng.choice([f"The {_words(hidden)} of {chosen[domain.label_field]} is {value}.",
                           f"{_capital(_words(hidden))}: {value}."])
        messages = [user(polite(rng, question, question=True)), assistant_call(search.name, search_args),
                    tool_message(result_list), assistant_call(get.name, {id_arg.name: ident}), tool_message(detail),
                    answer(text)]
        marks.append(Mark(3, text_of(ident), f"select_{chosen_mode}", id_arg.name))
        marks.append(Mark(5, value, "answer_field"))
    else:
        asked = rng.choice([k for k in chosen if k != domain.id_field])
        if asked == domain.label_field:
            question = f"which {domain.words} is {phrase[4:] if phrase.startswith('the ') else phrase}{scope}"
        else:
            question = f"what is the {_words(asked)} of {phrase}{scope}"
        value = text_of(chosen[asked])
        text = rng.choice([f"The {_words(asked)} is {value}.", f"{value}.",
                           f"It is {value} ({domain.words} {ident}).", f"{_capital(phrase)} is {chosen[domain.label_field]}: {_words(asked)} {value}."])
        messages = [user(polite(rng, question, question=True)), assistant_call(search.name, search_args),
                    tool_message(result_list), answer(text)]
        marks.append(Mark(3, value, f"select_{chosen_mode}_answer"))
    return scene.finish(f"search_{chosen_mode}", messages, marks, domain)


def skill_relative_date(rng: random.Random) -> CorpusEpisode:
    """Turn "tomorrow", "in 3 days", "next Friday" into the YYYY-MM-DD the tool wants."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    verb, tool, args, _ = _write_tool(rng, domain, rng.randint(0, 2), scene)
    args = [a for a in args if a.kind != "date"]
    date_name = next(n for n in rng.sample(ARG_NAMES["date"], 8) if n not in tool.parameters["properties"])
    date_arg = Arg(date_name, "date")
    all_args = [*args, date_arg]
    rng.shuffle(all_args)
    tool = scene.add(spec(tool.name, tool.description, all_args))
    expression = vocab.relative_date(rng, scene.today)
    values = {a.name: make_value(a.kind, rng, a) for a in args}
    date_words = _words(date_arg.name)
    date_phrase = expression.phrase if expression.phrase.startswith("on ") else rng.choice(
        [expression.phrase, f"{date_words} {expression.phrase}", f"for {expression.phrase}"])
    pieces = [phrase_argument(a, values[a.name], rng) for a in args] + [date_phrase]
    rng.shuffle(pieces)
    clause = f"{_verb_phrase(verb)} {article(domain.words)} " + " ".join(pieces)
    call_args = {a.name: (expression.iso if a is date_arg else values[a.name]) for a in all_args}
    ident = domain.new_id(rng)
    result = confirmation(rng, domain, ident, PAST_TENSE.get(verb, "ok"))
    result[date_arg.name] = expression.iso
    text, quoted = write_answer(rng, verb, domain.words, ident, result)
    messages = [user(polite(rng, clause)), assistant_call(tool.name, call_args), tool_message(result), answer(text)]
    marks = [Mark(1, expression.iso, "date_relative", date_arg.name), Mark(3, quoted, "answer_quote")]
    marks += [Mark(1, text_of(values[a.name]), f"copy_{_kind_group(a.kind)}", a.name) for a in args]
    return scene.finish("relative_date", messages, marks, domain)


def skill_chain(rng: random.Random) -> CorpusEpisode:
    """Find a record by its label, then use the id from the result in one or two further calls."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    records = make_records(domain, rng, 1, 4)
    chosen = records[0]
    label = chosen[domain.label_field]
    hits = [r for r in records if r[domain.label_field] == label]
    search = scene.add(spec(f"{rng.choice(vocab.SEARCH_VERBS)}_{domain.plural}",
                            scene.describe(f"Find {domain.plural_words} by {_words(domain.label_field)}."),
                            [Arg(domain.label_field, domain.label_kind)]))
    id_arg = domain.id_arg()
    ident = record_id(domain, chosen)
    label_phrase = rng.choice([f'the {domain.words} "{label}"', f"the '{label}' {domain.words}"]) \
        if domain.label_kind == "title" else f"{label}'s {domain.words}"
    actions = []
    for _ in range(2 if rng.random() < 0.35 else 1):
        verb, act, extra, _ = _write_tool(rng, domain, rng.randint(0, 2), scene, by_id=True)
        if any(act.name == a[1].name for a in actions):
            continue
        scene.add(act)
        values = {a.name: make_value(a.kind, rng, a) for a in extra}
        actions.append((verb, act, extra, values))
    clauses = []
    for verb, _, extra, values in actions:
        mention = _mention(rng, extra, values)
        clauses.append(_verb_phrase(verb) + (" it" if clauses else f" {label_phrase}") + (f" {mention}" if mention else ""))
    messages = [user(polite(rng, " and then ".join(clauses))),
                assistant_call(search.name, {domain.label_field: label}), tool_message(domain.wrap(hits, {}))]
    marks = [Mark(1, text_of(label), "copy_entity", domain.label_field)]
    result: dict[str, Any] = {}
    for verb, act, extra, values in actions:
        messages.append(assistant_call(act.name, {id_arg.name: ident, **values}))
        skill = "copy_from_result" if len(messages) == 4 else "copy_from_context"
        marks.append(Mark(len(messages) - 1, text_of(ident), skill, id_arg.name))
        marks += [Mark(len(messages) - 1, text_of(values[a.name]), f"copy_{_kind_group(a.kind)}", a.name) for a in extra]
        result = confirmation(rng, domain, ident, PAST_TENSE.get(verb, "ok"))
        messages.append(tool_message(result))
    text, quoted = write_answer(rng, actions[-1][0], domain.words, ident, result)
    messages.append(answer(text))
    marks.append(Mark(len(messages) - 1, quoted, "answer_quote"))
    return scene.finish("chain", messages, marks, domain)


def skill_context_user(rng: random.Random) -> CorpusEpisode:
    """"My ..." means the logged-in user: a list-mine tool, or LOGGED_IN_USER copied into the call."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    scene.env_variables["LOGGED_IN_USER"] = scene.username
    scene.env_variables["LOGGED_IN_NAME"] = scene.name
    records = make_records(domain, rng, 0, 4)
    if rng.random() < 0.5:
        user_arg: Arg | None = Arg(rng.choice(("username", "user", "owner", "account")), "username")
        tool = scene.add(spec(f"{rng.choice(vocab.SEARCH_VERBS)}_{domain.plural}",
                              scene.describe(f"List a user's {domain.plural_words}."), [user_arg]))
        call_args = {user_arg.name: scene.username}
    else:
        user_arg = None
        tool = scene.add(spec(f"list_my_{domain.plural}", scene.describe(f"List the logged-in user's {domain.plural_words}."), []))
        call_args = {}
    question = rng.choice([f"list my {domain.plural_words}", f"show me my {domain.plural_words}",
                           f"what {domain.plural_words} do I have", f"how many {domain.plural_words} do I have"])
    labels = [text_of(r[domain.label_field]) for r in records]
    if not records:
        text, quoted = f"You have no {domain.plural_words}.", "no"
    elif question.startswith("how many"):
        text = f"You have {len(records)} {domain.plural_words if len(records) != 1 else domain.words}."
        quoted = str(len(records))
    else:
        text = rng.choice([f"You have {len(records)}: {', '.join(labels)}.", f"Your {domain.plural_words}: {', '.join(labels)}."])
        quoted = labels[0]
    messages = [user(polite(rng, question, question=question.startswith(("what", "how")))),
                assistant_call(tool.name, call_args), tool_message(domain.wrap(records, call_args)), answer(text)]
    marks = [Mark(3, quoted, "answer_list")]
    if user_arg is not None:
        marks.append(Mark(1, scene.username, "copy_context", user_arg.name))
    return scene.finish("context_user", messages, marks, domain)


def skill_impossible(rng: random.Random) -> CorpusEpisode:
    """Nothing matches, or the tool refuses: change nothing and answer with the refusal convention."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    search = scene.add(spec(f"{rng.choice(vocab.SEARCH_VERBS)}_{domain.plural}",
                            scene.describe(f"Find {domain.plural_words} by {_words(domain.label_field)}."),
                            [Arg(domain.label_field, domain.label_kind)]))
    label = vocab.person_name(rng) if domain.label_kind == "person" else vocab.title(rng, 1, 3)
    verb, act, _, _ = _write_tool(rng, domain, 0, scene, by_id=True)
    scene.add(act)
    verb_phrase = _verb_phrase(verb)
    clause = f'{verb_phrase} the {domain.words} "{label}"'
    refusal = scene.refusal if scene.policy_lines else "I cannot"
    if rng.random() < 0.6:
        text = rng.choice([f'{refusal} {verb_phrase} it: there is no {domain.words} called "{label}".',
                           f'{refusal} find a {domain.words} named "{label}", so nothing was changed.'])
        messages = [user(polite(rng, clause)), assistant_call(search.name, {domain.label_field: label}),
                    tool_message(domain.wrap([], {})), answer(text)]
    else:
        hit = make_record(domain, rng, set())
        hit[domain.label_field] = label
        reason = rng.choice(["is locked", "belongs to another user", f"is already {PAST_TENSE.get(verb, 'done')}"])
        text = f"{refusal} {verb_phrase} it: the {domain.words} {reason}."
        messages = [user(polite(rng, clause)), assistant_call(search.name, {domain.label_field: label}),
                    tool_message(domain.wrap([hit], {})), assistant_call(act.name, {domain.id_arg().name: record_id(domain, hit)}),
                    tool_message(f"Error: {domain.words} {record_id(domain, hit)} {reason}"), answer(text)]
    marks = [Mark(1, label, "copy_entity", domain.label_field), Mark(len(messages) - 1, refusal.split()[0], "refuse")]
    return scene.finish("impossible", messages, marks, domain)


def skill_count(rng: random.Random) -> CorpusEpisode:
    """Count the results that meet the request's conditions, answering in the request's words."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    records = make_records(domain, rng, 1, 6)
    chosen = records[0]
    offered, search_args, scope, marks = _search_filters(rng, domain, chosen, records, scene)
    search = scene.add(_search_tool(rng, domain, offered, scene))
    matching = records
    question = rng.choice([f"how many {domain.plural_words}{scope} are there", f"count the {domain.plural_words}{scope}"])
    n = len(matching)
    noun = domain.plural_words if n != 1 else domain.words
    text = rng.choice([f"There {'are' if n != 1 else 'is'} {n} {noun}{scope}.", f"{n}.", f"I count {n} {noun}."])
    messages = [user(polite(rng, question, question=question.startswith("how"))),
                assistant_call(search.name, search_args), tool_message(domain.wrap(matching, search_args)), answer(text)]
    marks.append(Mark(3, str(n), "count"))
    return scene.finish("count", messages, marks, domain)


ECHO_KINDS: tuple[str, ...] = ("person", "username", "email", "city", "code", "title", "slug", "path", "date", "count", "phone")


def skill_transcribe(rng: random.Random) -> CorpusEpisode:
    """Copy a list of values verbatim into an array argument: dense, exact copying from the request.

    Every supervised value token is a copy of a token in the request, which is what makes the
    copy circuit form early instead of after a long plateau.
    """
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    kind = rng.choice(ECHO_KINDS)
    values: list[Any] = []
    while len(values) < rng.randint(2, 7):
        value = make_value(kind, rng)
        if value not in values:
            values.append(value)
    arg = Arg(rng.choice(("items", "entries", "names", "values", "list")), kind)
    verb = rng.choice(vocab.WRITE_VERBS)
    tool = scene.add(ToolSpec(
        name=f"{verb}_{domain.plural}",
        description=scene.describe(f"{_verb_phrase(verb).capitalize()} several {domain.plural_words} at once."),
        parameters={"type": "object", "properties": {arg.name: {"type": "array", "items": {"type": KIND_TYPES.get(kind, "string")}}},
                    "required": [arg.name]},
    ))
    listed = ", ".join(text_of(v) for v in values) if kind not in ("title",) else "; ".join(text_of(v) for v in values)
    clause = rng.choice([f"{_verb_phrase(verb)} these {domain.plural_words}: {listed}",
                         f"{_verb_phrase(verb)} {domain.plural_words} for {listed}",
                         f"here are the {domain.plural_words} to {_verb_phrase(verb)}: {listed}"])
    result = {"count": len(values), "status": PAST_TENSE.get(verb, "ok")}
    text = rng.choice([f"Done: {len(values)} {domain.plural_words} {PAST_TENSE.get(verb, 'saved')}.",
                       f"I {PAST_TENSE.get(verb, 'saved')} {len(values)} {domain.plural_words}."])
    messages = [user(polite(rng, clause)), assistant_call(tool.name, {arg.name: values}), tool_message(result), answer(text)]
    marks = [Mark(1, text_of(values[0]), f"copy_{_kind_group(kind)}", arg.name), Mark(3, str(len(values)), "count")]
    return scene.finish("transcribe", messages, marks, domain)


def _echo_text(rng: random.Random) -> tuple[str, str]:
    """40–200 tokens of values and prose to repeat: (text, its first value)."""
    shape = rng.randrange(4)
    if shape == 0:  # a list of values of mixed kinds
        values = [text_of(make_value(rng.choice(ECHO_KINDS), rng)) for _ in range(rng.randint(4, 14))]
        return rng.choice([", ", "; ", "\n"]).join(values), values[0]
    if shape == 1:  # a JSON record, as tools return them
        domain = make_domain(rng)
        record = make_record(domain, rng, set())
        return render_result(record), text_of(record[domain.id_field])
    if shape == 2:  # prose with entities in it
        first = vocab.person_name(rng)
        text = (f"{first} asked for {vocab.title(rng)} in {vocab.city(rng)} on {vocab.iso_date(rng)}, "
                f"reference {vocab.code(rng)}. {vocab.sentence(rng)} Contact: {vocab.email_of(vocab.username_of(first, rng), rng)}.")
        return text, first
    lines = [f"{_words(rng.choice(ARG_NAMES[k]))}: {text_of(make_value(k, rng))}"
             for k in rng.sample(ECHO_KINDS, rng.randint(3, 7))]
    return "\n".join(lines), lines[0].split(": ", 1)[1]


def skill_echo(rng: random.Random) -> CorpusEpisode:
    """Repeat a text verbatim: the densest copy signal there is, so the copy circuit forms early.

    Weighted up only for the first episodes of the corpus (see CURRICULUM); kept at a small weight after.
    """
    domain = make_domain(rng)
    scene = new_scene(rng, domain, long=False)
    text, first = _echo_text(rng)
    request = rng.choice(["Repeat this exactly:", "Copy the following back to me, unchanged:",
                          "Say this back word for word:", "Echo:"])
    messages = [user(f"{request}\n{text}"), answer(text)]
    return scene.finish("echo", messages, [Mark(1, first, "echo")], domain)


SKILLS: dict[str, tuple[Callable[[random.Random], CorpusEpisode], float]] = {
    "echo": (skill_echo, 0.03),
    "transcribe": (skill_transcribe, 0.08),
    "copy_call": (skill_copy_call, 0.18),
    "lookup_answer": (skill_lookup_answer, 0.10),
    "search_select": (skill_search_select, 0.26),
    "relative_date": (skill_relative_date, 0.10),
    "chain": (skill_chain, 0.14),
    "context_user": (skill_context_user, 0.07),
    "impossible": (skill_impossible, 0.08),
    "count": (skill_count, 0.07),
}


def episode_rng(seed: int, index: int) -> random.Random:
    """Each episode has its own stream, so episode i is the same whatever was generated before."""
    digest = hashlib.sha256(f"toolgym-pretrain/{seed}/{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


# The first episodes of the corpus are mostly verbatim copying: with the copy circuit in place the
# other skills start at once; without it, every copied value waits on a long plateau.
CURRICULUM_EPISODES = 4000
CURRICULUM_WEIGHTS: dict[str, float] = {"echo": 1.0, "transcribe": 0.2}


def generate_episode(seed: int, index: int, weights: dict[str, float] | None = None,
                     curriculum_episodes: int = 0) -> CorpusEpisode:
    """Episode `index` of the corpus of `seed`; indices below `curriculum_episodes` use CURRICULUM_WEIGHTS."""
    rng = episode_rng(seed, index)
    if index < curriculum_episodes:
        weights = {**(weights or {}), **CURRICULUM_WEIGHTS}
    names = list(SKILLS)
    w = [(weights or {}).get(n, SKILLS[n][1]) for n in names]
    skill = rng.choices(names, weights=w)[0]
    return SKILLS[skill][0](rng)


def generate_corpus(seed: int, count: int, start: int = 0, weights: dict[str, float] | None = None,
                    curriculum_episodes: int = 0) -> Iterator[CorpusEpisode]:
    for index in range(start, start + count):
        yield generate_episode(seed, index, weights, curriculum_episodes)
