"""A two-table app used by SDK tests (the real apps have their own tests)."""

from __future__ import annotations

import random
import sqlite3

from faker import Faker

from toolgym.envs import App, ToolContext, ToolError, tool

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT UNIQUE NOT NULL, name TEXT NOT NULL);
CREATE TABLE notes (id INTEGER PRIMARY KEY, owner TEXT NOT NULL REFERENCES users(username),
                    title TEXT NOT NULL, due TEXT, done INTEGER NOT NULL DEFAULT 0);
"""


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

    def task_families(self) -> list:
        return []


APP = ToyApp()
