"""The smallest complete app, in one file: two tables, four tools and two task families written with the
kit. Copy it to start an app; docs/adding-an-app.md says how a full app package is laid out.

The SDK tests use it too, which is why one tool (`crash`) has a deliberate bug: a tool that raises
anything but ToolError is an infrastructure error, never the agent's fault.
"""

from __future__ import annotations

import random
import sqlite3

from faker import Faker

from toolgym.envs import App, TaskDraft, TaskFamily, ToolContext, ToolError, World, kit, tool
from toolgym.schema import ExpectedChange, FieldEquals

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT UNIQUE NOT NULL, name TEXT NOT NULL);
CREATE TABLE notes (id INTEGER PRIMARY KEY, owner TEXT NOT NULL REFERENCES users(username),
                    title TEXT NOT NULL, due TEXT, done INTEGER NOT NULL DEFAULT 0);
"""


# ---------------------------------------------------------------- tools


@tool
def list_my_notes(ctx: ToolContext) -> list[dict]:
    """List the logged-in user's notes."""
    return ctx.query("SELECT id, title, due, done FROM notes WHERE owner=? ORDER BY id", (ctx.env.require_user(),))


@tool
def add_note(ctx: ToolContext, title: str, due: str | None = None) -> dict:
    """Add a note for the logged-in user.

    Args:
        title: Short title of the note.
        due: Due date: YYYY-MM-DD, 'today', 'tomorrow' or a weekday like 'next Friday'.
    """
    owner = ctx.env.require_user()
    due_iso = ctx.env.date(due) if due else None
    cur = ctx.db.execute("INSERT INTO notes(owner, title, due) VALUES (?, ?, ?)", (owner, title, due_iso))
    return {"id": cur.lastrowid, "title": title, "due": due_iso}


@tool
def complete_note(ctx: ToolContext, note_id: int) -> dict:
    """Mark one of the logged-in user's notes as done.

    Args:
        note_id: Id of the note.
    """
    row = ctx.one("SELECT * FROM notes WHERE id=? AND owner=?", (note_id, ctx.env.require_user()))
    if row is None:
        raise ToolError(f"no note with id {note_id} belongs to you")
    ctx.db.execute("UPDATE notes SET done=1 WHERE id=?", (note_id,))
    return {"id": note_id, "done": True}


@tool
def crash(ctx: ToolContext) -> str:
    """A tool with a bug, for infrastructure-error tests."""
    raise ZeroDivisionError("bug in tool")


# ---------------------------------------------------------------- task families


DUE_ON = (
    "What is my note due on {day} called?",
    "Which of my notes is due {day}? Just the title, please.",
    "I have a note due on {day}; remind me what it says.",
)
FINISH = (
    "Mark my note \"{title}\" as done.",
    "I finished \"{title}\"; tick it off my notes.",
    "Please complete the note \"{title}\".",
)


def _my_note(rng: random.Random, world: World) -> tuple[dict, dict]:
    """A note and its owner's users row, drawn with `rng` from the seed (ORDER BY keeps it deterministic)."""
    note = rng.choice(world.query("SELECT * FROM notes ORDER BY id"))
    owner = world.one("SELECT username, name FROM users WHERE username=?", (note["owner"],))
    assert owner is not None
    return note, owner


def note_due_on(rng: random.Random, world: World) -> TaskDraft | None:
    """A lookup: the title of my note due on a day, said the way people say dates."""
    note, owner = _my_note(rng, world)
    index, prompt = kit.phrase(rng, DUE_ON, day=kit.human_date(note["due"], weekday=True))
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([note["title"]]),
        reference_solution=[kit.call("list_my_notes")],
        env_variables=kit.env_for(owner, kit.random_day(rng)),
        expected_answer=f"Your note due on {note['due']} is \"{note['title']}\".",
        metadata={"phrasing": index, "note_id": note["id"]},
    )


def finish_note(rng: random.Random, world: World) -> TaskDraft | None:
    """A write: find my note by its title and mark it done; nothing else may change."""
    note, owner = _my_note(rng, world)
    index, prompt = kit.phrase(rng, FINISH, title=note["title"])
    return TaskDraft(
        prompt=prompt,
        checks=[
            FieldEquals(table="notes", where={"id": note["id"]}, field="done", value=1, weight=2.0, label="note done"),
            kit.diff_only([ExpectedChange(table="notes", op="update", where={"id": note["id"]}, fields=["done"])]),
        ],
        reference_solution=[kit.call("list_my_notes"), kit.call("complete_note", note_id=note["id"])],
        env_variables=kit.env_for(owner, kit.random_day(rng)),
        expected_answer=f"Done: \"{note['title']}\" is marked as complete.",
        metadata={"phrasing": index, "note_id": note["id"]},
    )


FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("note_due_on", "lookup", note_due_on),
    TaskFamily("finish_note", "write", finish_note),
)


# ---------------------------------------------------------------- the app


class ToyApp(App):
    name = "toy"
    version = "1.0.0"
    schema = SCHEMA
    policy = "You manage notes."
    tools = [list_my_notes, add_note, complete_note, crash]

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        for i, username in enumerate(["ana", "bo"], start=1):
            db.execute("INSERT INTO users VALUES (?, ?, ?)", (i, username, fake.name()))
        for i in range(1, 7):
            db.execute("INSERT INTO notes(owner, title, due) VALUES (?, ?, ?)",
                       ("ana" if i % 2 else "bo", fake.sentence(nb_words=3), f"2026-06-{10 + i:02d}"))

    def task_families(self) -> list[TaskFamily]:
        return list(FAMILIES)


APP = ToyApp()
