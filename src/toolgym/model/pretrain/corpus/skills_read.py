"""Skills that read: look a record up, select one result by min/max or condition, count, list "my" records."""

from __future__ import annotations

import random
from typing import Any

from toolgym.model.pretrain import vocab
from toolgym.model.pretrain.corpus.arguments import (
    Arg,
    as_words,
    kind_group,
    make_value,
    mention_arguments,
    spec,
    text_of,
)
from toolgym.model.pretrain.corpus.domain import Domain, make_domain, make_record, make_records, record_id
from toolgym.model.pretrain.corpus.episode import CorpusEpisode, Mark
from toolgym.model.pretrain.corpus.messages import (
    answer,
    assistant_call,
    capital,
    confirmation,
    polite,
    tool_message,
    user,
    write_answer,
)
from toolgym.model.pretrain.corpus.phrases import NUMERIC_FIELDS, PAST_TENSE
from toolgym.model.pretrain.corpus.scene import Scene, new_scene
from toolgym.model.pretrain.corpus.tools import get_tool, search_tool, verb_words, write_tool


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
    get = scene.add(get_tool(rng, domain, scene))
    ident = record_id(domain, record)
    what = " and ".join(f"the {as_words(a)}" for a in asked)
    phrase = _id_phrase(rng, domain, ident)
    question, is_question = rng.choice([
        (f"what is {what} of {phrase}", True), (f"tell me {what} of {phrase}", False),
        (f"look up {phrase} and give me {what}", False), (f"I need {what} of {phrase}", False),
    ])
    facts = [f"the {as_words(a)} is {text_of(record[a])}" for a in asked]
    body = " and ".join(facts)
    text = rng.choice([f"For {phrase}, {body}.", f"{capital(body)}.",
                       f"{capital(phrase)}: " + ", ".join(f"{as_words(a)} {text_of(record[a])}" for a in asked) + "."])
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
        phrase = rng.choice([f"the {v} {domain.words}", f"the {domain.words} whose {as_words(attribute.name)} is {v}"])
    elif attribute.kind == "city":
        phrase = f"the {domain.words} in {v}"
    elif attribute.kind in ("person", "username"):
        phrase = rng.choice([f"the {domain.words} of {v}", f"{v}'s {domain.words}", f"the {domain.words} by {v}"])
    else:
        phrase = rng.choice([f'the {domain.words} called "{v}"', f"the {domain.words} named {v}",
                             f"the '{v}' {domain.words}"])
    return phrase, chosen


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
            phrases.append(rng.choice([f"with {as_words(a.name)} {value}", f"that are {value}"]))
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
    search = scene.add(search_tool(rng, domain, offered, scene))
    ident = record_id(domain, chosen)
    id_arg = domain.id_arg()
    result_list = domain.wrap(records, search_args)
    roll = rng.random()
    if roll < 0.55:
        verb, act, extra, _ = write_tool(rng, domain, rng.randint(0, 2), scene, by_id=True)
        scene.add(act)
        values = {a.name: make_value(a.kind, rng, a) for a in extra}
        mention = mention_arguments(rng, extra, values)
        clause = f"find {phrase}{scope} and {verb_words(verb)} it" + (f" {mention}" if mention else "")
        result = confirmation(rng, domain, ident, PAST_TENSE.get(verb, "ok"))
        text, quoted = write_answer(rng, verb, domain.words, ident, result)
        call_values = {id_arg.name: ident, **values}
        messages = [user(polite(rng, clause)), assistant_call(search.name, search_args), tool_message(result_list),
                    assistant_call(act.name, call_values), tool_message(result), answer(text)]
        marks.append(Mark(3, text_of(ident), f"select_{chosen_mode}", id_arg.name))
        marks += [Mark(3, text_of(values[a.name]), f"copy_{kind_group(a.kind)}", a.name) for a in extra]
        marks.append(Mark(5, quoted, "answer_quote"))
    elif roll < 0.75:
        get = scene.add(get_tool(rng, domain, scene))
        detail = dict(chosen)
        hidden = rng.choice(("phone", "address", "manager", "capacity_left", "notes"))
        detail[hidden] = make_value({"phone": "phone", "address": "city", "manager": "person",
                                     "capacity_left": "count", "notes": "text"}[hidden], rng)
        # the search result lacks the detail field: the agent must look the record up
        question = f"what is the {as_words(hidden)} of {phrase}{scope}"
        value = text_of(detail[hidden])
        text = rng.choice([f"The {as_words(hidden)} of {chosen[domain.label_field]} is {value}.",
                           f"{capital(as_words(hidden))}: {value}."])
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
            question = f"what is the {as_words(asked)} of {phrase}{scope}"
        value = text_of(chosen[asked])
        text = rng.choice([f"The {as_words(asked)} is {value}.", f"{value}.",
                           f"It is {value} ({domain.words} {ident}).", f"{capital(phrase)} is {chosen[domain.label_field]}: {as_words(asked)} {value}."])
        messages = [user(polite(rng, question, question=True)), assistant_call(search.name, search_args),
                    tool_message(result_list), answer(text)]
        marks.append(Mark(3, value, f"select_{chosen_mode}_answer"))
    return scene.finish(f"search_{chosen_mode}", messages, marks, domain)


def skill_count(rng: random.Random) -> CorpusEpisode:
    """Count the results that meet the request's conditions, answering in the request's words."""
    domain = make_domain(rng)
    scene = new_scene(rng, domain)
    records = make_records(domain, rng, 1, 6)
    chosen = records[0]
    offered, search_args, scope, marks = _search_filters(rng, domain, chosen, records, scene)
    search = scene.add(search_tool(rng, domain, offered, scene))
    matching = records
    question = rng.choice([f"how many {domain.plural_words}{scope} are there", f"count the {domain.plural_words}{scope}"])
    n = len(matching)
    noun = domain.plural_words if n != 1 else domain.words
    text = rng.choice([f"There {'are' if n != 1 else 'is'} {n} {noun}{scope}.", f"{n}.", f"I count {n} {noun}."])
    messages = [user(polite(rng, question, question=question.startswith("how"))),
                assistant_call(search.name, search_args), tool_message(domain.wrap(matching, search_args)), answer(text)]
    marks.append(Mark(3, str(n), "count"))
    return scene.finish("count", messages, marks, domain)


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
