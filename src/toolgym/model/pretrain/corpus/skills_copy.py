"""Skills of verbatim copying: a list into an array argument, a whole text back.

They are the densest copy signal, so the copy circuit forms early instead of after a long plateau.
"""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs.environment import render_result
from toolgym.model.pretrain import vocab
from toolgym.model.pretrain.corpus.arguments import KIND_TYPES, Arg, as_words, kind_group, make_value, text_of
from toolgym.model.pretrain.corpus.domain import make_domain, make_record
from toolgym.model.pretrain.corpus.episode import CorpusEpisode, Mark
from toolgym.model.pretrain.corpus.messages import answer, assistant_call, polite, tool_message, user
from toolgym.model.pretrain.corpus.phrases import ARG_NAMES, PAST_TENSE
from toolgym.model.pretrain.corpus.scene import new_scene
from toolgym.model.pretrain.corpus.tools import verb_words
from toolgym.schema import ToolSpec

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
        description=scene.describe(f"{verb_words(verb).capitalize()} several {domain.plural_words} at once."),
        parameters={"type": "object", "properties": {arg.name: {"type": "array", "items": {"type": KIND_TYPES.get(kind, "string")}}},
                    "required": [arg.name]},
    ))
    listed = ", ".join(text_of(v) for v in values) if kind not in ("title",) else "; ".join(text_of(v) for v in values)
    clause = rng.choice([f"{verb_words(verb)} these {domain.plural_words}: {listed}",
                         f"{verb_words(verb)} {domain.plural_words} for {listed}",
                         f"here are the {domain.plural_words} to {verb_words(verb)}: {listed}"])
    result = {"count": len(values), "status": PAST_TENSE.get(verb, "ok")}
    text = rng.choice([f"Done: {len(values)} {domain.plural_words} {PAST_TENSE.get(verb, 'saved')}.",
                       f"I {PAST_TENSE.get(verb, 'saved')} {len(values)} {domain.plural_words}."])
    messages = [user(polite(rng, clause)), assistant_call(tool.name, {arg.name: values}), tool_message(result), answer(text)]
    marks = [Mark(1, text_of(values[0]), f"copy_{kind_group(kind)}", arg.name), Mark(3, str(len(values)), "count")]
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
    lines = [f"{as_words(rng.choice(ARG_NAMES[k]))}: {text_of(make_value(k, rng))}"
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
