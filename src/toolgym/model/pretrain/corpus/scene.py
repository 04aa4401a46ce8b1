"""What every episode shares: the runtime context, the app's policy text and its tool list."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from toolgym.model.pretrain import vocab
from toolgym.model.pretrain.corpus.arguments import article, as_words
from toolgym.model.pretrain.corpus.domain import Domain
from toolgym.model.pretrain.corpus.episode import CorpusEpisode, Mark
from toolgym.model.pretrain.corpus.phrases import DESCRIPTION_TAILS, REFUSALS
from toolgym.model.pretrain.corpus.tools import distractor_tools, same_domain_tools
from toolgym.schema import Message, ToolSpec


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
    fields = [as_words(a.name) for a in domain.attributes] + [as_words(domain.label_field)]
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
