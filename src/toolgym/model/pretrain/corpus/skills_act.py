"""Skills that act: fill a write call from the request, resolve a relative date, chain an id, refuse."""

from __future__ import annotations

import random
from typing import Any

from toolgym.model.pretrain import vocab
from toolgym.model.pretrain.corpus.arguments import (
    Arg,
    article,
    as_words,
    kind_group,
    make_value,
    mention_arguments,
    phrase_argument,
    spec,
    text_of,
)
from toolgym.model.pretrain.corpus.domain import make_domain, make_record, make_records, record_id
from toolgym.model.pretrain.corpus.episode import CorpusEpisode, Mark
from toolgym.model.pretrain.corpus.messages import (
    answer,
    assistant_call,
    confirmation,
    polite,
    tool_message,
    user,
    write_answer,
)
from toolgym.model.pretrain.corpus.phrases import ARG_NAMES, PAST_TENSE
from toolgym.model.pretrain.corpus.scene import new_scene
from toolgym.model.pretrain.corpus.tools import verb_words, write_tool


def skill_copy_call(rng: random.Random) -> CorpusEpisode:
    """Fill a call from values spread through the request, skipping optional arguments not mentioned."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    verb, tool, args, optional = write_tool(rng, domain, rng.randint(1, 4), scene)
    scene.add(tool)
    values = {a.name: make_value(a.kind, rng, a) for a in args}
    mentioned = args + [a for a in optional if rng.random() < 0.4]
    for a in mentioned:
        values.setdefault(a.name, make_value(a.kind, rng, a))
    clause = f"{verb_words(verb)} {article(domain.words)} " + mention_arguments(rng, mentioned, values)
    order = list(tool.parameters["properties"])
    call_args = {n: values[n] for n in order if n in values}
    ident = domain.new_id(rng)
    result = confirmation(rng, domain, ident, PAST_TENSE.get(verb, "ok"))
    text, quoted = write_answer(rng, verb, domain.words, ident, result)
    messages = [user(polite(rng, clause)), assistant_call(tool.name, call_args), tool_message(result), answer(text)]
    kinds = {a.name: a.kind for a in mentioned}
    marks = [Mark(1, text_of(v), f"copy_{kind_group(kinds[n])}", n) for n, v in call_args.items()]
    marks.append(Mark(3, quoted, "answer_quote"))
    return scene.finish("copy_call", messages, marks, domain)


def skill_relative_date(rng: random.Random) -> CorpusEpisode:
    """Turn "tomorrow", "in 3 days", "next Friday" into the YYYY-MM-DD the tool wants."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    verb, tool, args, _ = write_tool(rng, domain, rng.randint(0, 2), scene)
    args = [a for a in args if a.kind != "date"]
    date_name = next(n for n in rng.sample(ARG_NAMES["date"], 8) if n not in tool.parameters["properties"])
    date_arg = Arg(date_name, "date")
    all_args = [*args, date_arg]
    rng.shuffle(all_args)
    tool = scene.add(spec(tool.name, tool.description, all_args))
    expression = vocab.relative_date(rng, scene.today)
    values = {a.name: make_value(a.kind, rng, a) for a in args}
    date_words = as_words(date_arg.name)
    date_phrase = expression.phrase if expression.phrase.startswith("on ") else rng.choice(
        [expression.phrase, f"{date_words} {expression.phrase}", f"for {expression.phrase}"])
    pieces = [phrase_argument(a, values[a.name], rng) for a in args] + [date_phrase]
    rng.shuffle(pieces)
    clause = f"{verb_words(verb)} {article(domain.words)} " + " ".join(pieces)
    call_args = {a.name: (expression.iso if a is date_arg else values[a.name]) for a in all_args}
    ident = domain.new_id(rng)
    result = confirmation(rng, domain, ident, PAST_TENSE.get(verb, "ok"))
    result[date_arg.name] = expression.iso
    text, quoted = write_answer(rng, verb, domain.words, ident, result)
    messages = [user(polite(rng, clause)), assistant_call(tool.name, call_args), tool_message(result), answer(text)]
    marks = [Mark(1, expression.iso, "date_relative", date_arg.name), Mark(3, quoted, "answer_quote")]
    marks += [Mark(1, text_of(values[a.name]), f"copy_{kind_group(a.kind)}", a.name) for a in args]
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
                            scene.describe(f"Find {domain.plural_words} by {as_words(domain.label_field)}."),
                            [Arg(domain.label_field, domain.label_kind)]))
    id_arg = domain.id_arg()
    ident = record_id(domain, chosen)
    label_phrase = rng.choice([f'the {domain.words} "{label}"', f"the '{label}' {domain.words}"]) \
        if domain.label_kind == "title" else f"{label}'s {domain.words}"
    actions = []
    for _ in range(2 if rng.random() < 0.35 else 1):
        verb, act, extra, _ = write_tool(rng, domain, rng.randint(0, 2), scene, by_id=True)
        if any(act.name == a[1].name for a in actions):
            continue
        scene.add(act)
        values = {a.name: make_value(a.kind, rng, a) for a in extra}
        actions.append((verb, act, extra, values))
    clauses = []
    for verb, _, extra, values in actions:
        mention = mention_arguments(rng, extra, values)
        clauses.append(verb_words(verb) + (" it" if clauses else f" {label_phrase}") + (f" {mention}" if mention else ""))
    messages = [user(polite(rng, " and then ".join(clauses))),
                assistant_call(search.name, {domain.label_field: label}), tool_message(domain.wrap(hits, {}))]
    marks = [Mark(1, text_of(label), "copy_entity", domain.label_field)]
    result: dict[str, Any] = {}
    for verb, act, extra, values in actions:
        messages.append(assistant_call(act.name, {id_arg.name: ident, **values}))
        skill = "copy_from_result" if len(messages) == 4 else "copy_from_context"
        marks.append(Mark(len(messages) - 1, text_of(ident), skill, id_arg.name))
        marks += [Mark(len(messages) - 1, text_of(values[a.name]), f"copy_{kind_group(a.kind)}", a.name) for a in extra]
        result = confirmation(rng, domain, ident, PAST_TENSE.get(verb, "ok"))
        messages.append(tool_message(result))
    text, quoted = write_answer(rng, actions[-1][0], domain.words, ident, result)
    messages.append(answer(text))
    marks.append(Mark(len(messages) - 1, quoted, "answer_quote"))
    return scene.finish("chain", messages, marks, domain)


def skill_impossible(rng: random.Random) -> CorpusEpisode:
    """Nothing matches, or the tool refuses: change nothing and answer with the refusal convention."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    search = scene.add(spec(f"{rng.choice(vocab.SEARCH_VERBS)}_{domain.plural}",
                            scene.describe(f"Find {domain.plural_words} by {as_words(domain.label_field)}."),
                            [Arg(domain.label_field, domain.label_kind)]))
    label = vocab.person_name(rng) if domain.label_kind == "person" else vocab.title(rng, 1, 3)
    verb, act, _, _ = write_tool(rng, domain, 0, scene, by_id=True)
    scene.add(act)
    verb_phrase = verb_words(verb)
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
