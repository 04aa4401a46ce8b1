"""Task families of the drive app: seventeen kinds of request over files, versions, sharing and trash.

Each generator picks a Drive user and a CURRENT_DATE with `rng`, reads the seed through the app's
own tools, and emits the prompt, the gold calls, the expected answer and weighted checks. Writes are
checked on the intended row (new rows by the id the next insert gets) plus a `diff_only` of exactly
the expected changes, activity rows included.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable

from toolgym.envs import App, TaskDraft, TaskFamily, World
from toolgym.envs.apps.drive import tools as t
from toolgym.envs.apps.drive.task_support import (
    KIND_NOUNS,
    ROLE_PHRASES,
    Reader,
    article,
    call,
    drive_users,
    impossible_checks,
    logged,
    long_date,
    names_checks,
    next_id,
    no_change,
    people,
    phrase,
    pick_grantee,
    pick_past_day,
    random_day,
    unique_latest,
)
from toolgym.schema import (
    AnswerContains,
    DiffOnly,
    ExpectedChange,
    FieldEquals,
    RowExists,
)

Generator = Callable[[random.Random, World], TaskDraft | None]
EDITOR = t.RANK["editor"]


def _setup(app: App, rng: random.Random, world: World) -> Reader:
    return Reader(app, world, rng.choice(drive_users(world)), random_day(rng))


def _named(reader: Reader, files: list[dict]) -> list[dict]:
    """The files whose name alone identifies them among everything the user can open."""
    return [f for f in files if reader.by_name(f["name"]) is not None]


def _pick_named(reader: Reader, rng: random.Random, files: list[dict]) -> dict | None:
    """One of `files`, drawn at random, if its name alone identifies it; None when there is none to draw."""
    if not files:
        return None
    named = _named(reader, [rng.choice(files)])
    return named[0] if named else None


def _live_namesake(reader: Reader, file_id: int) -> bool:
    """A file outside the trash in the same folder already has this (trashed) file's name."""
    row = reader.ctx.one("SELECT folder_id, name FROM files WHERE id=?", (file_id,))
    return row is None or t.name_taken(reader.ctx, row["folder_id"], row["name"], except_id=file_id) is not None


def _share_checks(file_id: int, grantee: str, role: str, me: str, weight: float = 2.0) -> tuple[list, list]:
    checks = [
        RowExists(table="permissions", where={"file_id": file_id, "grantee": grantee}, count=1, weight=weight,
                  label=f"file {file_id} shared with {grantee}"),
        FieldEquals(table="permissions", where={"file_id": file_id, "grantee": grantee}, field="role", value=role,
                    weight=1.0, label=f"{grantee} is {article(role)} of file {file_id}"),
    ]
    expected = [ExpectedChange(table="permissions", op="insert", where={"file_id": file_id, "grantee": grantee}),
                logged(me, "share", file_id=file_id)]
    return checks, expected


# -- lookups -------------------------------------------------------------------------------------------

def last_editor_of_file(app: App) -> Generator:
    phrasings = (
        "Who made the last edit to {name}?",
        "Who last edited {name}, and how big is the file now?",
        "I need to know who last modified {name}. Can you check?",
        "Look up {name} for me: who modified it last and what's its current size?",
    )
    with_size = {1, 3}

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        files = reader.all_files()
        others = [f for f in files if f["modified_by"] != reader.owner.name]
        pool = others if others and rng.random() < 0.6 else files
        named = _named(reader, rng.sample(pool, min(len(pool), 6)))
        if not named:
            return None
        pick = rng.choice(named)
        index, prompt = phrase(rng, phrasings, name=pick["name"])
        checks = [AnswerContains(values=[pick["modified_by"]], weight=2.0, label="names the last editor")]
        answer = f"{pick['name']} was last changed by {pick['modified_by']} on {pick['modified_at'][:10]}"
        if index in with_size:
            checks.append(AnswerContains(values=[pick["size"]], weight=1.0, label="gives the size"))
            answer += f"; it is {pick['size']}"
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("search_files", query=pick["name"])],
            expected_answer=answer + ".",
            checks=[*checks, no_change()],
            difficulty=1,
            metadata={"phrasing": index, "file_id": pick["id"]},
        )

    return generate


def who_has_access(app: App) -> Generator:
    everyone_phrasings = (
        "Who has access to {name}? List everyone and their role.",
        "Which people can open {name}, and with what permission?",
        "Tell me who {name} is shared with, including the owner.",
    )
    editor_phrasings = (
        "Who can edit {name}?",
        "Which people have edit rights on {name}, the owner included?",
        "List everyone who is able to make changes to {name}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        files = reader.all_files()
        if not files:
            return None
        pick = rng.choice(files)
        if not _named(reader, [pick]):
            return None
        access = reader(t.get_file, file_id=pick["id"])["access"]
        editors_only = rng.random() < 0.4
        if editors_only:
            chosen = [a for a in access if a["role"] in ("owner", "editor")]
            if len(chosen) < 2 or len(chosen) == len(access):
                return None
            index, prompt = phrase(rng, editor_phrasings, name=pick["name"])
            index += len(everyone_phrasings)
            answer = "These people can edit it: " + ", ".join(f"{a['name']} ({a['role']})" for a in chosen) + "."
        else:
            chosen = access
            if not 2 <= len(chosen) <= 6:
                return None
            index, prompt = phrase(rng, everyone_phrasings, name=pick["name"])
            answer = f"{pick['name']} is accessible to: " + ", ".join(
                f"{a['name']} ({a['role']})" for a in chosen) + "."
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("search_files", query=pick["name"]), call("get_file", file_id=pick["id"])],
            expected_answer=answer,
            checks=[*names_checks([a["name"] for a in chosen]), no_change()],
            difficulty=1,
            metadata={"phrasing": index, "file_id": pick["id"], "editors_only": editors_only},
        )

    return generate


# -- single writes -------------------------------------------------------------------------------------

def share_file_with_role(app: App) -> Generator:
    phrasings = (
        "Share {name} with {person} {role_phrase}.",
        "Please give {person} access to {name}, {role_phrase}.",
        "{person} needs {name}. Share it with them {role_phrase}.",
        "Could you add {person} to {name} {role_phrase}?",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        mine = [f for f in reader.all_files() if t.RANK[f["my_role"]] >= EDITOR]
        if not mine:
            return None
        named = _named(reader, rng.sample(mine, min(len(mine), 4)))
        if not named:
            return None
        pick = rng.choice(named)
        person = pick_grantee(rng, world, reader, [pick["id"]], set())
        if person is None:
            return None
        role = rng.choice(("viewer", "commenter", "editor"))
        index, prompt = phrase(rng, phrasings, name=pick["name"], person=person["name"],
                               role_phrase=rng.choice(ROLE_PHRASES[role]))
        me = reader.owner.username
        checks, expected = _share_checks(pick["id"], person["username"], role, me)
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[
                call("search_files", query=pick["name"]),
                call("search_people", query=person["name"]),
                call("share_file", file_id=pick["id"], username=person["username"], role=role),
            ],
            expected_answer=f"I shared {pick['name']} with {person['name']} as {article(role)}.",
            checks=[*checks, DiffOnly(expected=expected, weight=1.0, label="only that share")],
            difficulty=1,
            metadata={"phrasing": index, "file_id": pick["id"], "grantee": person["username"], "role": role},
        )

    return generate


RENAME_SUFFIXES = ("_final", "_approved", "_old", "_draft", "_archived", "_signed", "_reviewed", "_for_review")


def _new_name(rng: random.Random, name: str) -> str:
    stem, extension = name.rsplit(".", 1)
    roll = rng.random()
    if roll < 0.5:
        return f"{stem}{rng.choice(RENAME_SUFFIXES)}.{extension}"
    if roll < 0.75:
        return f"{rng.choice(('2026_', 'team_', 'shared_', 'OLD_'))}{stem}.{extension}"
    words = stem.replace("-", "_").split("_")
    return f"{' '.join(w.capitalize() for w in words if w)}.{extension}"


def rename_file(app: App) -> Generator:
    phrasings = (
        "Rename {old} to {new}.",
        "Please change the name of {old} to \"{new}\".",
        "{old} should be called {new} from now on. Can you rename it?",
        "Give the file {old} the new name {new}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        mine = [f for f in reader.all_files() if t.RANK[f["my_role"]] >= EDITOR]
        named = _named(reader, rng.sample(mine, min(len(mine), 4)))
        if not named:
            return None
        pick = rng.choice(named)
        new = _new_name(rng, pick["name"])
        folder = reader(t.get_file, file_id=pick["id"])
        clash = world.one("SELECT id FROM files WHERE lower(name)=lower(?) AND folder_id=(SELECT folder_id FROM files "
                          "WHERE id=?)", (new, pick["id"]))
        if clash or new == pick["name"] or folder["in_trash"]:
            return None
        index, prompt = phrase(rng, phrasings, old=pick["name"], new=new)
        me = reader.owner.username
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("search_files", query=pick["name"]),
                                call("rename_file", file_id=pick["id"], new_name=new)],
            expected_answer=f"I renamed {pick['name']} to {new}.",
            checks=[
                FieldEquals(table="files", where={"id": pick["id"]}, field="name", value=new, weight=2.0,
                            label="file renamed"),
                DiffOnly(expected=[ExpectedChange(table="files", op="update", where={"id": pick["id"]},
                                                  fields=["name"]),
                                   logged(me, "rename", file_id=pick["id"])], weight=1.0, label="only the rename"),
            ],
            difficulty=1,
            metadata={"phrasing": index, "file_id": pick["id"], "new_name": new},
        )

    return generate


def restore_from_trash(app: App) -> Generator:
    phrasings = (
        "I deleted {name} by mistake. Please get it back.",
        "Restore {name} from the trash.",
        "Can you bring {name} back out of my trash?",
        "Undo the deletion of {name}, please.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        trash = reader(t.list_trash)
        if not trash:
            return None
        pick = rng.choice(trash)
        if sum(1 for f in trash if f["name"].lower() == pick["name"].lower()) != 1:
            return None
        if _live_namesake(reader, pick["id"]):
            return None  # the restore would fail
        index, prompt = phrase(rng, phrasings, name=pick["name"])
        me = reader.owner.username
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("list_trash"), call("restore_file", file_id=pick["id"])],
            expected_answer=f"{pick['name']} is back in {pick['folder']}.",
            checks=[
                FieldEquals(table="files", where={"id": pick["id"]}, field="trashed_at", value=None, weight=2.0,
                            label="file out of the trash"),
                DiffOnly(expected=[ExpectedChange(table="files", op="update", where={"id": pick["id"]},
                                                  fields=["trashed_at"]),
                                   logged(me, "restore", file_id=pick["id"])], weight=1.0, label="only the restore"),
            ],
            difficulty=1,
            metadata={"phrasing": index, "file_id": pick["id"]},
        )

    return generate


# -- search, choose, write -----------------------------------------------------------------------------

def share_latest_in_folder(app: App) -> Generator:
    phrasings = (
        "Share the most recently modified {noun} in my {folder} folder with {person} {role_phrase}.",
        "Find the {noun} in {path} that changed most recently and give {person} access to it, {role_phrase}.",
        "{person} needs the latest {noun} from my {folder} folder. Share it with them {role_phrase}.",
        "Whichever {noun} in my {folder} folder was edited last: share it with {person} {role_phrase}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        folders = sorted({f["folder"] for f in reader.my_files()} - {"/Personal"})
        if not folders:
            return None
        path = rng.choice(folders)
        files = reader(t.list_drive_folder, path=path)["files"]
        latest = unique_latest(files, "modified_at")
        if latest is None or len(files) < 2:
            return None
        person = pick_grantee(rng, world, reader, [latest["id"]], set())
        if person is None:
            return None
        role = rng.choice(("viewer", "commenter", "editor"))
        noun = "report" if path.endswith("/Reports") else "file"
        index, prompt = phrase(rng, phrasings, noun=noun, folder=path.rsplit("/", 1)[-1], path=path,
                               person=person["name"], role_phrase=rng.choice(ROLE_PHRASES[role]))
        me = reader.owner.username
        checks, expected = _share_checks(latest["id"], person["username"], role, me)
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[
                call("list_drive_folder", path=path),
                call("share_file", file_id=latest["id"], username=person["username"], role=role),
            ],
            expected_answer=f"The most recently modified {noun} in {path} is {latest['name']} "
                            f"({latest['modified_at'][:10]}); I shared it with {person['name']} as {article(role)}.",
            checks=[*checks, DiffOnly(expected=expected, weight=1.0, label="only that share")],
            difficulty=2,
            metadata={"phrasing": index, "file_id": latest["id"], "grantee": person["username"]},
        )

    return generate


def trash_largest_of_type(app: App) -> Generator:
    drive_phrasings = (
        "I'm running low on space. Move my largest {kind} to the trash.",
        "Find the biggest {kind} I own and delete it.",
        "Trash whichever of my {kinds} takes up the most space.",
        "Free up some storage: put my single largest {kind} in the trash.",
    )
    folder_phrasings = (
        "Delete the biggest file in my {folder} folder.",
        "My {folder} folder is too big. Move its largest file to the trash.",
        "Find the file that takes up the most space in {path} and trash it.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        if rng.random() < 0.5:
            kind = rng.choice(sorted(KIND_NOUNS))
            files = reader(t.search_files, type=kind, owner="me", sort_by="size", limit=50)["files"]
            noun, plural = KIND_NOUNS[kind]
            index, prompt = phrase(rng, drive_phrasings, kind=noun, kinds=plural)
            first = call("search_files", type=kind, owner="me", sort_by="size")
            scope = kind
        else:
            folders = sorted({f["folder"] for f in reader.my_files()})
            path = rng.choice(folders) if folders else "/"
            files = sorted(reader(t.list_drive_folder, path=path)["files"],
                           key=lambda f: reader(t.get_file, file_id=f["id"])["size_bytes"], reverse=True)
            index, prompt = phrase(rng, folder_phrasings, folder=path.rsplit("/", 1)[-1], path=path)
            index += len(drive_phrasings)
            first = call("list_drive_folder", path=path)
            scope = path
        if len(files) < 2:
            return None
        sizes = [reader(t.get_file, file_id=f["id"])["size_bytes"] for f in files[:2]]
        biggest = files[0]
        if sizes[0] == sizes[1] or files[0]["size"] == files[1]["size"]:
            return None
        me = reader.owner.username
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[first, call("trash_file", file_id=biggest["id"])],
            expected_answer=f"I moved {biggest['name']} ({biggest['size']}) to the trash.",
            checks=[
                FieldEquals(table="files", where={"id": biggest["id"]}, field="trashed_at", value=reader.stamp(),
                            weight=2.0, label="largest file trashed"),
                DiffOnly(expected=[ExpectedChange(table="files", op="update", where={"id": biggest["id"]},
                                                  fields=["trashed_at"]),
                                   logged(me, "trash", file_id=biggest["id"])], weight=1.0, label="only that file"),
            ],
            difficulty=2,
            metadata={"phrasing": index, "file_id": biggest["id"], "scope": scope},
        )

    return generate


def restore_before_edit(app: App) -> Generator:
    phrasings = (
        "{person} made a mess of {name} in their last edit. Restore the version from just before that edit.",
        "Roll {name} back to how it was before {person}'s latest change.",
        "Undo {person}'s most recent edit to {name} by restoring the version that came right before it.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        me = reader.owner
        files = [f for f in reader.all_files() if t.RANK[f["my_role"]] >= EDITOR]
        if not files:
            return None
        pick = rng.choice(files)
        history = reader(t.list_file_versions, file_id=pick["id"])
        versions = history["versions"]  # newest first, numbered without gaps
        authors = sorted({v["author"] for v in versions[:-1]} - {me.name})
        if not authors or not _named(reader, [pick]):
            return None
        person = rng.choice(authors)
        last = next(v for v in versions if v["author"] == person)
        before = next(v for v in versions if v["version"] == last["version"] - 1)
        if before["author"] == person:
            return None
        top = world.one("SELECT MAX(version_number) AS n FROM file_versions WHERE file_id=?", (pick["id"],))
        if top is None or top["n"] != history["current_version"]:
            return None  # a later version is still in the future
        target = before["version"]
        new_number = history["current_version"] + 1
        index, prompt = phrase(rng, phrasings, person=person, name=pick["name"])
        return TaskDraft(
            prompt=prompt,
            env_variables=me.env(reader.today),
            reference_solution=[
                call("search_files", query=pick["name"]),
                call("list_file_versions", file_id=pick["id"]),
                call("restore_file_version", file_id=pick["id"], version_number=target),
            ],
            expected_answer=f"{person}'s last edit made version {last['version']}; I restored version {target} of "
                            f"{pick['name']} (by {before['author']}), which is now version {new_number}.",
            checks=[
                RowExists(table="file_versions", where={"file_id": pick["id"], "version_number": new_number,
                                                        "restored_from": target, "author": me.username},
                          count=1, weight=2.0, label=f"version {target} restored"),
                DiffOnly(expected=[ExpectedChange(table="file_versions", op="insert", where={"file_id": pick["id"]}),
                                   logged(me.username, "restore_version", file_id=pick["id"])],
                         weight=1.0, label="only the restore"),
            ],
            difficulty=2,
            metadata={"phrasing": index, "file_id": pick["id"], "version": target},
        )

    return generate


# -- multi-step ----------------------------------------------------------------------------------------

def collect_quarter_invoices(app: App) -> Generator:
    phrasings = (
        "Create a folder named \"{folder}\" in {parent}, move all my Q{q} invoices into it, and share the folder "
        "with {person} as a viewer.",
        "Gather my Q{q} invoices into a new folder \"{folder}\" under {parent}, then give {person} read-only "
        "access to that folder.",
        "{person} needs to see our Q{q} invoices. Put all of them in a new folder called \"{folder}\" inside "
        "{parent} and share that folder with them, view only.",
    )
    folder_names = ("Q{q} Invoices", "Q{q} 2026 invoices", "Invoices Q{q}", "Q{q} invoices for review")

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        me = reader.owner.username
        q = rng.choice((1, 2, 3))
        invoices = reader(t.search_files, query=f"invoice Q{q}", owner="me", limit=50)["files"]
        if not 2 <= len(invoices) <= 6:
            return None
        homes = {f["folder"] for f in invoices}
        if len(homes) != 1:
            return None
        parent = next(iter(homes)).rsplit("/", 1)[0] or "/"
        name = rng.choice(folder_names).format(q=q)
        path = f"{parent.rstrip('/')}/{name}"
        parent_row = world.one("SELECT id FROM folders WHERE owner=? AND path=?", (me, parent))
        if parent_row is None or world.one("SELECT id FROM folders WHERE owner=? AND path=?", (me, path)):
            return None
        candidates = people(world, {me})
        person = rng.choice(candidates)
        if t.inherited_access(reader.ctx, parent_row["id"], person["username"])[0] or world.one(
                "SELECT id FROM permissions WHERE grantee=? AND folder_id IN (SELECT id FROM folders WHERE owner=?)",
                (person["username"], me)):
            return None
        folder_id = next_id(world, "folders")
        index, prompt = phrase(rng, phrasings, folder=name, parent=parent, q=str(q), person=person["name"])
        invoices = sorted(invoices, key=lambda f: f["id"])
        gold = [call("search_files", query=f"invoice Q{q}", owner="me"),
                call("create_drive_folder", name=name, parent_path=parent)]
        gold += [call("move_file", file_id=f["id"], folder_path=path) for f in invoices]
        gold.append(call("share_folder", username=person["username"], role="viewer", folder_path=path))
        checks: list = [RowExists(table="folders", where={"id": folder_id, "owner": me, "path": path}, count=1,
                                  weight=1.0, label=f"folder {path} created")]
        checks += [FieldEquals(table="files", where={"id": f["id"]}, field="folder_id", value=folder_id, weight=1.0,
                               label=f"{f['name']} moved") for f in invoices]
        checks.append(RowExists(table="permissions", where={"folder_id": folder_id, "grantee": person["username"],
                                                           "role": "viewer"}, count=1, weight=2.0,
                                label="folder shared read-only"))
        expected = [ExpectedChange(table="folders", op="insert", where={"owner": me, "path": path}),
                    ExpectedChange(table="permissions", op="insert", where={"folder_id": folder_id,
                                                                            "grantee": person["username"]}),
                    logged(me, "create_folder", folder_id=folder_id), logged(me, "share", folder_id=folder_id)]
        expected += [ExpectedChange(table="files", op="update", where={"id": f["id"]}, fields=["folder_id"])
                     for f in invoices]
        expected += [logged(me, "move", file_id=f["id"]) for f in invoices]
        checks.append(DiffOnly(expected=expected, weight=2.0, label="only the folder, the moves and the share"))
        listing = ", ".join(f["name"] for f in invoices)
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=gold,
            expected_answer=f"I created {path}, moved {len(invoices)} Q{q} invoices into it ({listing}) and "
                            f"shared it with {person['name']} as a viewer.",
            checks=checks,
            difficulty=3,
            metadata={"phrasing": index, "folder_path": path, "invoices": [f["id"] for f in invoices],
                      "grantee": person["username"]},
        )

    return generate


def share_kind_in_folder(app: App) -> Generator:
    phrasings = (
        "Share all the {kinds} in my {folder} folder with {person} {role_phrase}.",
        "Give {person} {role} access to each {kind} in {path}, but not to the other files there.",
        "{person} should get every {kind} in my {folder} folder, {role_phrase}. Share the files one by one; "
        "don't share the whole folder.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        folders = sorted({f["folder"] for f in reader.my_files()} - {"/Personal"})
        if not folders:
            return None
        path = rng.choice(folders)
        files = reader(t.list_drive_folder, path=path)["files"]
        kinds = sorted({f["type"] for f in files})
        kind = rng.choice(kinds)
        chosen = [f for f in files if f["type"] == kind]
        if not 2 <= len(chosen) <= 4 or len(chosen) == len(files):
            return None
        person = pick_grantee(rng, world, reader, [f["id"] for f in files], set())
        if person is None:
            return None
        role = rng.choice(("viewer", "commenter", "editor"))
        noun, plural = KIND_NOUNS[kind]
        index, prompt = phrase(rng, phrasings, kinds=plural, kind=noun, folder=path.rsplit("/", 1)[-1], path=path,
                               person=person["name"], role=role, role_phrase=rng.choice(ROLE_PHRASES[role]))
        me = reader.owner.username
        checks: list = []
        expected: list = []
        for f in chosen:
            checks.append(RowExists(table="permissions", where={"file_id": f["id"], "grantee": person["username"],
                                                               "role": role}, count=1, weight=1.0,
                                    label=f"{f['name']} shared as {role}"))
            expected += _share_checks(f["id"], person["username"], role, me)[1]
        checks.append(DiffOnly(expected=expected, weight=2.0, label=f"only the {plural} shared"))
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("list_drive_folder", path=path)] + [
                call("share_file", file_id=f["id"], username=person["username"], role=role) for f in chosen],
            expected_answer=f"I shared {len(chosen)} {plural} with {person['name']} as {article(role)}: "
                            + ", ".join(f["name"] for f in chosen) + ".",
            checks=checks,
            difficulty=3,
            metadata={"phrasing": index, "file_ids": [f["id"] for f in chosen], "grantee": person["username"]},
        )

    return generate


# -- context: relative days ----------------------------------------------------------------------------

def files_i_modified(app: App) -> Generator:
    phrasings = (
        "Which {what} did I change {when}?",
        "What did I work on in Drive {when}? List the {what} I modified.",
        "Show me the {what} I edited or uploaded {when}.",
        "I updated some {what} {when}. Which ones were they?",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(drive_users(world))
        days = [r["day"] for r in world.query(
            "SELECT DISTINCT substr(created_at, 1, 10) AS day FROM file_versions WHERE author=? "
            "AND created_at >= '2026-03-25' AND created_at < '2026-08-31' ORDER BY day", (owner.username,))]
        if not days:
            return None
        when = pick_past_day(rng, dt.date.fromisoformat(rng.choice(days)))
        if when is None:
            return None
        reader = Reader(app, world, owner, when.today)
        day = when.day.isoformat()
        touched = world.query(
            "SELECT DISTINCT v.file_id, f.mime_type FROM file_versions v JOIN files f ON f.id = v.file_id "
            "WHERE v.author=? AND v.created_at >= ? AND v.created_at <= ? ORDER BY v.file_id",
            (owner.username, f"{day}T00:00", f"{day}T23:59"))
        kind = None
        if rng.random() < 0.5:
            kind = t.MIME_KIND[rng.choice(touched)["mime_type"]]
            touched = [r for r in touched if t.MIME_KIND[r["mime_type"]] == kind]
        arguments = {"modified_by": "me", "modified_after": when.argument, "modified_before": when.argument}
        if kind:
            arguments["type"] = kind
        found = reader(t.search_files, **arguments, limit=50)["files"]
        if not 1 <= len(found) <= 4 or {f["id"] for f in found} != {r["file_id"] for r in touched}:
            return None  # someone changed one of them later, or it was trashed: "what I changed" is unclear
        names = [f["name"] for f in found]
        if len(set(names)) != len(names):
            return None
        index, prompt = phrase(rng, phrasings, when=when.phrase, what=KIND_NOUNS[kind][1] if kind else "files")
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(when.today),
            reference_solution=[call("search_files", **arguments)],
            expected_answer=f"On {long_date(when.day)} you changed: {', '.join(names)}.",
            checks=[*names_checks(names), no_change()],
            difficulty=2,
            metadata={"phrasing": index, "day": day, "kind": kind},
        )

    return generate


def shared_with_me_recently(app: App) -> Generator:
    phrasings = (
        "What has been shared with me {span}?",
        "Which files or folders did people share with me {span}?",
        "List everything that was shared with me {span}, and who shared it.",
        "Did anyone share something with me {span}? Tell me what.",
    )
    by_person = (
        "What did {person} share with me {span}?",
        "{person} said they shared something with me {span}. What was it?",
        "List what {person} has shared with me {span}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(drive_users(world))
        shares = world.query(
            "SELECT substr(granted_at, 1, 10) AS day FROM permissions WHERE grantee=? AND granted_at >= '2026-03-28' "
            "AND granted_at < '2026-08-31' ORDER BY granted_at, id", (owner.username,))
        if not shares:
            return None
        day = dt.date.fromisoformat(rng.choice(shares)["day"])
        today = day + dt.timedelta(days=rng.randint(0, 5))
        if not dt.date(2026, 4, 1) <= today <= dt.date(2026, 8, 31):
            return None
        back = (today - day).days
        options = [(f"in the last {n} days", f"{n} days ago") for n in range(max(back, 2), 8)]
        options.append(("in the past week", "7 days ago"))
        if back == 1:
            options.append(("since yesterday", "yesterday"))
        if back == 0:
            options.append(("today", "today"))
        name = long_date(day).split(",")[0]
        if back >= 2:
            options.append((f"since last {name}", f"last {name}"))
        span, argument = rng.choice(options)
        reader = Reader(app, world, owner, today)
        items = reader(t.list_shared_with_me, since=argument)
        sharers = sorted({i["shared_by"] for i in items})
        person = rng.choice(sharers) if sharers and rng.random() < 0.4 else None
        if person:
            items = [i for i in items if i["shared_by"] == person]
        names = [i["name"] for i in items]
        if not 1 <= len(items) <= 4 or len(set(names)) != len(names):
            return None
        if person:
            index, prompt = phrase(rng, by_person, person=person, span=span)
            index += len(phrasings)
        else:
            index, prompt = phrase(rng, phrasings, span=span)
        listing = "; ".join(f"{i['type']} {i['name']} from {i['shared_by']} ({i['my_role']})" for i in items)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[call("list_shared_with_me", since=argument)],
            expected_answer=f"Shared with you {span}: {listing}.",
            checks=[*names_checks(names), no_change()],
            difficulty=2,
            metadata={"phrasing": index, "since": argument},
        )

    return generate


def copy_recent_share(app: App) -> Generator:
    phrasings = (
        "Make a copy of the file {person} shared with me {when} and put it in my {folder} folder.",
        "{person} shared a file with me {when}. Save a copy of it into {path}.",
        "Copy the file I got from {person} {when} into my {folder} folder, please.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(drive_users(world))
        shares = world.query(
            "SELECT p.file_id, p.granted_by, p.granted_at FROM permissions p WHERE p.grantee=? AND p.file_id IS NOT NULL "
            "AND p.granted_at >= '2026-03-25' AND p.granted_at < '2026-08-31' ORDER BY p.granted_at, p.id",
            (owner.username,))
        if not shares:
            return None
        share = rng.choice(shares)
        when = pick_past_day(rng, dt.date.fromisoformat(share["granted_at"][:10]))
        if when is None:
            return None
        reader = Reader(app, world, owner, when.today)
        day = when.day.isoformat()
        from_them = [i for i in reader(t.list_shared_with_me, since=when.argument) if i["shared_at"][:10] == day]
        sharer = world.one("SELECT name FROM users WHERE username=?", (share["granted_by"],))
        matches = [i for i in from_them if sharer and i["shared_by"] == sharer["name"]]
        if len(matches) != 1 or matches[0]["type"] != "file" or matches[0]["id"] != share["file_id"]:
            return None
        item = matches[0]
        others = world.query("SELECT COUNT(*) AS n FROM permissions WHERE grantee=? AND granted_by=? "
                             "AND substr(granted_at, 1, 10)=?", (owner.username, share["granted_by"], day))
        if others[0]["n"] != 1:
            return None
        folders = [r["path"] for r in world.query(
            "SELECT path FROM folders WHERE owner=? AND parent_id IS NOT NULL ORDER BY path", (owner.username,))]
        path = rng.choice(folders)
        folder = world.one("SELECT id FROM folders WHERE owner=? AND path=?", (owner.username, path))
        name = f"Copy of {item['name']}"
        details = reader(t.get_file, file_id=item["id"])
        usage = reader(t.get_storage_usage)
        if folder is None or details["size_bytes"] > usage["free_bytes"] or world.one(
                "SELECT id FROM files WHERE folder_id=? AND lower(name)=lower(?)", (folder["id"], name)):
            return None
        index, prompt = phrase(rng, phrasings, person=item["shared_by"], when=when.phrase,
                               folder=path.rsplit("/", 1)[-1], path=path)
        new_id = next_id(world, "files")
        me = owner.username
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(when.today),
            reference_solution=[call("list_shared_with_me", since=when.argument),
                                call("copy_file", file_id=item["id"], folder_path=path)],
            expected_answer=f"I copied {item['name']} (shared by {item['shared_by']} on {day}) into {path} as "
                            f"\"{name}\".",
            checks=[
                RowExists(table="files", where={"id": new_id, "owner": me, "copied_from": item["id"],
                                                "folder_id": folder["id"]}, count=1, weight=2.0,
                          label=f"copy of file {item['id']} in {path}"),
                DiffOnly(expected=[ExpectedChange(table="files", op="insert", where={"owner": me,
                                                                                    "copied_from": item["id"]}),
                                   ExpectedChange(table="file_versions", op="insert", where={"file_id": new_id}),
                                   logged(me, "copy", file_id=new_id)], weight=1.0, label="only the copy"),
            ],
            difficulty=2,
            metadata={"phrasing": index, "file_id": item["id"], "folder_path": path},
        )

    return generate


# -- impossible ----------------------------------------------------------------------------------------

def share_view_only_file(app: App) -> Generator:
    phrasings = (
        "Give {person} access to {name} {role_phrase}, please.",
        "Please share {name} with {person} ({role_phrase}).",
        "Add {person} as a collaborator on {name}, {role_phrase}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        pick = _pick_named(reader, rng, [f for f in reader.all_files() if f["my_role"] in ("viewer", "commenter")])
        if pick is None:
            return None
        person = pick_grantee(rng, world, reader, [pick["id"]], set())
        if person is None:
            return None
        role = rng.choice(("viewer", "commenter", "editor"))
        index, prompt = phrase(rng, phrasings, name=pick["name"], person=person["name"],
                               role_phrase=rng.choice(ROLE_PHRASES[role]))
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("search_files", query=pick["name"])],
            expected_answer=f"I cannot share {pick['name']}: you only have {pick['my_role']} access to it, and only "
                            f"its owner ({pick['owner']}) or an editor can share it.",
            checks=impossible_checks("share_file"),
            difficulty=2,
            metadata={"phrasing": index, "file_id": pick["id"], "grantee": person["username"], "role": role},
        )

    return generate


def restore_missing_version(app: App) -> Generator:
    phrasings = (
        "Restore version {n} of {name}.",
        "Bring back version {n} of {name}, please.",
        "Roll {name} back to its version {n}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        pick = _pick_named(reader, rng, [f for f in reader.all_files() if t.RANK[f["my_role"]] >= EDITOR])
        if pick is None:
            return None
        top = world.one("SELECT MAX(version_number) AS n FROM file_versions WHERE file_id=?", (pick["id"],))
        history = reader(t.list_file_versions, file_id=pick["id"])
        count = history["current_version"]
        if top is None or top["n"] != count:
            return None
        wanted = count + rng.randint(1, 3)
        index, prompt = phrase(rng, phrasings, n=str(wanted), name=pick["name"])
        span = "version 1" if count == 1 else f"versions 1 to {count}"
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("search_files", query=pick["name"]),
                                call("list_file_versions", file_id=pick["id"])],
            expected_answer=f"I cannot restore version {wanted} of {pick['name']}: it only has {span}.",
            checks=impossible_checks("restore_file_version"),
            difficulty=2,
            metadata={"phrasing": index, "file_id": pick["id"], "version": wanted},
        )

    return generate


def rename_to_taken_name(app: App) -> Generator:
    phrasings = (
        "In my {folder} folder, rename {old} to {new}.",
        "Rename {old} (in {path}) to {new}.",
        "Change the name of {old} in my {folder} folder to \"{new}\".",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        folders = sorted({f["folder"] for f in reader.my_files()})
        if not folders:
            return None
        path = rng.choice(folders)
        files = reader(t.list_drive_folder, path=path)["files"]
        if len(files) < 2:
            return None
        old, new = rng.sample(files, 2)
        index, prompt = phrase(rng, phrasings, folder=path.rsplit("/", 1)[-1], path=path, old=old["name"],
                               new=new["name"])
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("list_drive_folder", path=path)],
            expected_answer=f"I cannot rename {old['name']} to {new['name']}: {path} already has a file with that "
                            "name, and names must be unique within a folder.",
            checks=impossible_checks("rename_file"),
            difficulty=2,
            metadata={"phrasing": index, "file_id": old["id"], "new_name": new["name"]},
        )

    return generate


def copy_over_quota(app: App) -> Generator:
    phrasings = (
        "Make a copy of {name} in my {folder} folder.",
        "I'd like my own copy of {name}. Can you duplicate it into {path}?",
        "Copy {name} into my {folder} folder, please.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        basic = [o for o in drive_users(world) if world.one(
            "SELECT 1 FROM users WHERE username=? AND plan='basic'", (o.username,))]
        reader = Reader(app, world, rng.choice(basic), random_day(rng))
        usage = reader(t.get_storage_usage)
        big = [f for f in reader.all_files() if f["type"] in ("video", "archive", "presentation")]
        if not big:
            return None
        pick = rng.choice(big)
        if reader(t.get_file, file_id=pick["id"])["size_bytes"] <= usage["free_bytes"] or not _named(reader, [pick]):
            return None
        folders = [r["path"] for r in world.query(
            "SELECT path FROM folders WHERE owner=? AND parent_id IS NOT NULL ORDER BY path", (reader.owner.username,))]
        path = rng.choice(folders)
        index, prompt = phrase(rng, phrasings, name=pick["name"], folder=path.rsplit("/", 1)[-1], path=path)
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("search_files", query=pick["name"]), call("get_storage_usage")],
            expected_answer=f"I cannot copy {pick['name']}: it is {pick['size']} and you only have {usage['free']} "
                            f"of storage left on your {usage['quota']} plan.",
            checks=impossible_checks("copy_file"),
            difficulty=2,
            metadata={"phrasing": index, "file_id": pick["id"]},
        )

    return generate


def restore_over_namesake(app: App) -> Generator:
    phrasings = (
        "Restore {name} from my trash.",
        "Get the trashed copy of {name} back into my {folder} folder, please.",
        "I need the old {name} that I deleted. Take it out of the trash.",
        "Put the deleted {name} back where it was ({path}).",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        reader = _setup(app, rng, world)
        trash = reader(t.list_trash)
        clashing = [f for f in trash if _live_namesake(reader, f["id"])]
        if not clashing:
            return None
        pick = rng.choice(clashing)
        if sum(1 for f in trash if f["name"].lower() == pick["name"].lower()) != 1:
            return None
        index, prompt = phrase(rng, phrasings, name=pick["name"], folder=pick["folder"].rsplit("/", 1)[-1],
                               path=pick["folder"])
        return TaskDraft(
            prompt=prompt,
            env_variables=reader.owner.env(reader.today),
            reference_solution=[call("list_trash"), call("list_drive_folder", path=pick["folder"])],
            expected_answer=f"I cannot restore {pick['name']}: {pick['folder']} already has a file with that name. "
                            "Rename or move that file first.",
            checks=impossible_checks("restore_file"),
            difficulty=2,
            metadata={"phrasing": index, "file_id": pick["id"]},
        )

    return generate


def task_families(app: App) -> list[TaskFamily]:
    """All families, bound to `app` so generators can run its tools on the seed."""
    return [
        TaskFamily("last_editor_of_file", "lookup", last_editor_of_file(app)),
        TaskFamily("who_has_access", "lookup", who_has_access(app)),
        TaskFamily("share_file_with_role", "write", share_file_with_role(app)),
        TaskFamily("rename_file", "write", rename_file(app)),
        TaskFamily("restore_from_trash", "write", restore_from_trash(app)),
        TaskFamily("share_latest_in_folder", "search_choose_write", share_latest_in_folder(app)),
        TaskFamily("trash_largest_of_type", "search_choose_write", trash_largest_of_type(app)),
        TaskFamily("restore_before_edit", "search_choose_write", restore_before_edit(app)),
        TaskFamily("collect_quarter_invoices", "multi_step", collect_quarter_invoices(app)),
        TaskFamily("share_kind_in_folder", "multi_step", share_kind_in_folder(app)),
        TaskFamily("files_i_modified", "context", files_i_modified(app)),
        TaskFamily("shared_with_me_recently", "context", shared_with_me_recently(app)),
        TaskFamily("copy_recent_share", "context", copy_recent_share(app)),
        TaskFamily("share_view_only_file", "impossible", share_view_only_file(app)),
        TaskFamily("restore_missing_version", "impossible", restore_missing_version(app)),
        TaskFamily("rename_to_taken_name", "impossible", rename_to_taken_name(app)),
        TaskFamily("copy_over_quota", "impossible", copy_over_quota(app)),
        TaskFamily("restore_over_namesake", "impossible", restore_over_namesake(app)),
    ]
