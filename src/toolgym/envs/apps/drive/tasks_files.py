"""Drive task families over files and their versions: who edited last, renaming, the trash, the largest
file of a kind, restoring an older version, collecting files into a folder, what I changed on a day."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.drive import tools as t
from toolgym.envs.apps.drive.task_common import (
    EDITOR,
    KIND_NOUNS,
    Reader,
    drive_users,
    file_field_changed,
    live_namesake,
    logged,
    names_checks,
    people,
    pick_past_day,
    setup,
    uniquely_named,
)
from toolgym.envs.apps.drive.tool_common import MIME_KIND, RANK, inherited_access
from toolgym.schema import AnswerContains, DiffOnly, ExpectedChange, FieldEquals, RowExists

TEXTS = kit.module_texts(__file__)


def last_editor_of_file(rng: random.Random, world: World) -> TaskDraft | None:
    with_size = {1, 3}
    reader = setup(rng, world)
    files = reader.all_files()
    others = [f for f in files if f["modified_by"] != reader.owner.name]
    pool = others if others and rng.random() < 0.6 else files
    named = uniquely_named(reader, rng.sample(pool, min(len(pool), 6)))
    if not named:
        return None
    pick = rng.choice(named)
    index, prompt = kit.phrase(rng, TEXTS["last_editor_of_file"], name=pick["name"])
    checks = [AnswerContains(values=[pick["modified_by"]], weight=2.0, label="names the last editor")]
    answer = f"{pick['name']} was last changed by {pick['modified_by']} on {pick['modified_at'][:10]}"
    if index in with_size:
        checks.append(AnswerContains(values=[pick["size"]], weight=1.0, label="gives the size"))
        answer += f"; it is {pick['size']}"
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[kit.call("search_files", query=pick["name"])],
        expected_answer=answer + ".",
        checks=[*checks, kit.diff_only([], weight=1.0)],
        difficulty=1,
        metadata={"phrasing": index, "file_id": pick["id"]},
    )


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


def rename_file(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    mine = [f for f in reader.all_files() if RANK[f["my_role"]] >= EDITOR]
    named = uniquely_named(reader, rng.sample(mine, min(len(mine), 4)))
    if not named:
        return None
    pick = rng.choice(named)
    new = _new_name(rng, pick["name"])
    folder = reader(t.get_file, file_id=pick["id"])
    clash = world.one("SELECT id FROM files WHERE lower(name)=lower(?) AND folder_id=(SELECT folder_id FROM files "
                      "WHERE id=?)", (new, pick["id"]))
    if clash or new == pick["name"] or folder["in_trash"]:
        return None
    index, prompt = kit.phrase(rng, TEXTS["rename_file"], old=pick["name"], new=new)
    me = reader.owner.username
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[kit.call("search_files", query=pick["name"]),
                            kit.call("rename_file", file_id=pick["id"], new_name=new)],
        expected_answer=f"I renamed {pick['name']} to {new}.",
        checks=file_field_changed(me, "rename", pick["id"], "name", new, "file renamed",
                                  "only the rename"),
        difficulty=1,
        metadata={"phrasing": index, "file_id": pick["id"], "new_name": new},
    )


def restore_from_trash(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    trash = reader(t.list_trash)
    if not trash:
        return None
    pick = rng.choice(trash)
    if sum(1 for f in trash if f["name"].lower() == pick["name"].lower()) != 1:
        return None
    if live_namesake(reader, pick["id"]):
        return None  # the restore would fail
    index, prompt = kit.phrase(rng, TEXTS["restore_from_trash"], name=pick["name"])
    me = reader.owner.username
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[kit.call("list_trash"), kit.call("restore_file", file_id=pick["id"])],
        expected_answer=f"{pick['name']} is back in {pick['folder']}.",
        checks=file_field_changed(me, "restore", pick["id"], "trashed_at", None, "file out of the trash",
                                  "only the restore"),
        difficulty=1,
        metadata={"phrasing": index, "file_id": pick["id"]},
    )


def trash_largest_of_type(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    if rng.random() < 0.5:
        kind = rng.choice(sorted(KIND_NOUNS))
        files = reader(t.search_files, type=kind, owner="me", sort_by="size", limit=50)["files"]
        noun, plural = KIND_NOUNS[kind]
        index, prompt = kit.phrase(rng, TEXTS["trash_largest_of_type.drive_phrasings"], kind=noun, kinds=plural)
        first = kit.call("search_files", type=kind, owner="me", sort_by="size")
        scope = kind
    else:
        folders = sorted({f["folder"] for f in reader.my_files()})
        path = rng.choice(folders) if folders else "/"
        files = sorted(reader(t.list_drive_folder, path=path)["files"],
                       key=lambda f: reader(t.get_file, file_id=f["id"])["size_bytes"], reverse=True)
        index, prompt = kit.phrase(rng, TEXTS["trash_largest_of_type.folder_phrasings"], folder=path.rsplit("/", 1)[-1], path=path)
        index += len(TEXTS["trash_largest_of_type.drive_phrasings"])
        first = kit.call("list_drive_folder", path=path)
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
        reference_solution=[first, kit.call("trash_file", file_id=biggest["id"])],
        expected_answer=f"I moved {biggest['name']} ({biggest['size']}) to the trash.",
        checks=file_field_changed(me, "trash", biggest["id"], "trashed_at", reader.stamp(), "largest file trashed",
                                  "only that file"),
        difficulty=2,
        metadata={"phrasing": index, "file_id": biggest["id"], "scope": scope},
    )


def restore_before_edit(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    me = reader.owner
    files = [f for f in reader.all_files() if RANK[f["my_role"]] >= EDITOR]
    if not files:
        return None
    pick = rng.choice(files)
    history = reader(t.list_file_versions, file_id=pick["id"])
    versions = history["versions"]  # newest first, numbered without gaps
    authors = sorted({v["author"] for v in versions[:-1]} - {me.name})
    if not authors or not uniquely_named(reader, [pick]):
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
    index, prompt = kit.phrase(rng, TEXTS["restore_before_edit"], person=person, name=pick["name"])
    return TaskDraft(
        prompt=prompt,
        env_variables=me.env(reader.today),
        reference_solution=[
            kit.call("search_files", query=pick["name"]),
            kit.call("list_file_versions", file_id=pick["id"]),
            kit.call("restore_file_version", file_id=pick["id"], version_number=target),
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


def collect_quarter_invoices(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    me = reader.owner.username
    q = rng.choice((1, 2, 3))
    invoices = reader(t.search_files, query=f"invoice Q{q}", owner="me", limit=50)["files"]
    if not 2 <= len(invoices) <= 6:
        return None
    homes = {f["folder"] for f in invoices}
    if len(homes) != 1:
        return None
    parent = next(iter(homes)).rsplit("/", 1)[0] or "/"
    name = rng.choice(TEXTS["collect_quarter_invoices.folder_names"]).format(q=q)
    path = f"{parent.rstrip('/')}/{name}"
    parent_row = world.one("SELECT id FROM folders WHERE owner=? AND path=?", (me, parent))
    if parent_row is None or world.one("SELECT id FROM folders WHERE owner=? AND path=?", (me, path)):
        return None
    candidates = people(world, {me})
    person = rng.choice(candidates)
    if inherited_access(reader.ctx, parent_row["id"], person["username"])[0] or world.one(
            "SELECT id FROM permissions WHERE grantee=? AND folder_id IN (SELECT id FROM folders WHERE owner=?)",
            (person["username"], me)):
        return None
    folder_id = kit.next_id(world, "folders")
    index, prompt = kit.phrase(rng, TEXTS["collect_quarter_invoices.phrasings"], folder=name, parent=parent, q=str(q), person=person["name"])
    invoices = sorted(invoices, key=lambda f: f["id"])
    gold = [kit.call("search_files", query=f"invoice Q{q}", owner="me"),
            kit.call("create_drive_folder", name=name, parent_path=parent)]
    gold += [kit.call("move_file", file_id=f["id"], folder_path=path) for f in invoices]
    gold.append(kit.call("share_folder", username=person["username"], role="viewer", folder_path=path))
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


def files_i_modified(rng: random.Random, world: World) -> TaskDraft | None:
    owner = rng.choice(drive_users(world))
    days = [r["day"] for r in world.query(
        "SELECT DISTINCT substr(created_at, 1, 10) AS day FROM file_versions WHERE author=? "
        "AND created_at >= '2026-03-25' AND created_at < '2026-08-31' ORDER BY day", (owner.username,))]
    if not days:
        return None
    when = pick_past_day(rng, dt.date.fromisoformat(rng.choice(days)))
    if when is None:
        return None
    reader = Reader(world, owner, when.today)
    day = when.day.isoformat()
    touched = world.query(
        "SELECT DISTINCT v.file_id, f.mime_type FROM file_versions v JOIN files f ON f.id = v.file_id "
        "WHERE v.author=? AND v.created_at >= ? AND v.created_at <= ? ORDER BY v.file_id",
        (owner.username, f"{day}T00:00", f"{day}T23:59"))
    kind = None
    if rng.random() < 0.5:
        kind = MIME_KIND[rng.choice(touched)["mime_type"]]
        touched = [r for r in touched if MIME_KIND[r["mime_type"]] == kind]
    arguments = {"modified_by": "me", "modified_after": when.argument, "modified_before": when.argument}
    if kind:
        arguments["type"] = kind
    found = reader(t.search_files, **arguments, limit=50)["files"]
    if not 1 <= len(found) <= 4 or {f["id"] for f in found} != {r["file_id"] for r in touched}:
        return None  # someone changed one of them later, or it was trashed: "what I changed" is unclear
    names = [f["name"] for f in found]
    if len(set(names)) != len(names):
        return None
    index, prompt = kit.phrase(
        rng, TEXTS["files_i_modified"], when=when.phrase, what=KIND_NOUNS[kind][1] if kind else "files")
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(when.today),
        reference_solution=[kit.call("search_files", **arguments)],
        expected_answer=f"On {kit.human_date(when.day, weekday=True)} you changed: {', '.join(names)}.",
        checks=[*names_checks(names), kit.diff_only([], weight=1.0)],
        difficulty=2,
        metadata={"phrasing": index, "day": day, "kind": kind},
    )
