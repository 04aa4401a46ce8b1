"""The tools of an episode: the domain's own (write, get, search) and distractors from other domains."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from toolgym.model.pretrain import vocab
from toolgym.model.pretrain.corpus.arguments import Arg, article, as_words, random_arg, spec
from toolgym.model.pretrain.corpus.domain import Domain
from toolgym.schema import ToolSpec

if TYPE_CHECKING:
    from toolgym.model.pretrain.corpus.scene import Scene


def verb_words(verb: str) -> str:
    return vocab.WRITE_PHRASES.get(verb, verb)


def _add_new(tools: list[ToolSpec], avoid: set[str], scene: Scene, name: str, description: str, args: list[Arg]) -> None:
    """Add the tool unless its name is taken (the caller's loop then draws another)."""
    if name not in avoid:
        avoid.add(name)
        tools.append(spec(name, scene.describe(description), args))


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
            description = f"{verb_words(verb).capitalize()} {article(domain.words)}."
        elif roll < 0.7:
            name = f"{rng.choice(vocab.READ_VERBS)}_{domain.singular}"
            args = [domain.id_arg()]
            description = f"Show one {domain.words} with all its fields."
        else:
            name = f"list_my_{domain.plural}"
            args = []
            description = f"List the logged-in user's {domain.plural_words}."
        _add_new(tools, avoid, scene, name, description, args)
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
            description = f"Search {as_words(plural)}."
        elif roll < 0.5:
            name = f"{rng.choice(vocab.READ_VERBS)}_{singular}"
            args = [Arg(f"{singular}_id", "id_int")]
            description = f"Get one {as_words(singular)} by id."
        else:
            verb = rng.choice(vocab.WRITE_VERBS)
            name = f"{verb}_{singular}"
            args = [random_arg(rng, used) for _ in range(rng.randint(1, 3))]
            description = f"{verb_words(verb).capitalize()} {article(as_words(singular))}."
        _add_new(tools, avoid, scene, name, description, args)
    return tools


def write_tool(rng: random.Random, domain: Domain, n_args: int, scene: Scene, by_id: bool = False
                ) -> tuple[str, ToolSpec, list[Arg], list[Arg]]:
    """A write tool of the domain: (verb, spec, its required non-id arguments, its optional ones)."""
    verb = rng.choice(vocab.WRITE_VERBS)
    used: set[str] = {domain.id_arg().name, domain.label_field}
    args = [random_arg(rng, used) for _ in range(n_args)]
    optional = [random_arg(rng, used).optional() for _ in range(rng.randint(0, 2))]
    listed = ([domain.id_arg()] if by_id else []) + args + optional
    description = f"{verb_words(verb).capitalize()} {article(domain.words)}" + (" by id." if by_id else ".")
    return verb, spec(f"{verb}_{domain.singular}", scene.describe(description), listed), args, optional


def get_tool(rng: random.Random, domain: Domain, scene: Scene) -> ToolSpec:
    verb = rng.choice(vocab.READ_VERBS)
    return spec(f"{verb}_{domain.singular}", scene.describe(f"Show one {domain.words} by id."), [domain.id_arg()])


def search_tool(rng: random.Random, domain: Domain, filters: list[Arg], scene: Scene) -> ToolSpec:
    verb = rng.choice(vocab.SEARCH_VERBS)
    by = " and ".join(as_words(a.name) for a in filters)
    description = f"Search {domain.plural_words}" + (f" by {by}." if by else ".")
    return spec(f"{verb}_{domain.plural}", scene.describe(description), [a.optional() for a in filters])
