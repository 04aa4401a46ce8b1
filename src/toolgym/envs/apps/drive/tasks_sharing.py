"""Drive task families over sharing: who has access, sharing a file or a folder's files with a role,
and what was shared with me recently."""

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
    logged,
    names_checks,
    pick_past_day,
    pick_share,
    setup,
    uniquely_named,
)
from toolgym.envs.apps.drive.tool_common import RANK
from toolgym.envs.kit.grouped import pick_group
from toolgym.schema import DiffOnly, ExpectedChange, FieldEquals, RowExists

TEXTS = kit.module_texts(__file__)


def _share_checks(file_id: int, grantee: str, role: str, me: str, weight: float = 2.0) -> tuple[list, list]:
    checks = [
        RowExists(table="permissions", where={"file_id": file_id, "grantee": grantee}, count=1, weight=weight,
                  label=f"file {file_id} shared with {grantee}"),
        FieldEquals(table="permissions", where={"file_id": file_id, "grantee": grantee}, field="role", value=role,
                    weight=1.0, label=f"{grantee} is {kit.with_article(role)} of file {file_id}"),
    ]
    expected = [ExpectedChange(table="permissions", op="insert", where={"file_id": file_id, "grantee": grantee}),
                logged(me, "share", file_id=file_id)]
    return checks, expected


def who_has_access(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    files = reader.all_files()
    if not files:
        return None
    pick = rng.choice(files)
    if not uniquely_named(reader, [pick]):
        return None
    access = reader(t.get_file, file_id=pick["id"])["access"]
    editors_only = rng.random() < 0.4
    if editors_only:
        chosen = [a for a in access if a["role"] in ("owner", "editor")]
        if len(chosen) < 2 or len(chosen) == len(access):
            return None
        index, prompt = kit.phrase(rng, TEXTS["who_has_access.editor_phrasings"], name=pick["name"])
        index += len(TEXTS["who_has_access.everyone_phrasings"])
        answer = "These people can edit it: " + ", ".join(f"{a['name']} ({a['role']})" for a in chosen) + "."
    else:
        chosen = access
        if not 2 <= len(chosen) <= 6:
            return None
        index, prompt = kit.phrase(rng, TEXTS["who_has_access.everyone_phrasings"], name=pick["name"])
        answer = f"{pick['name']} is accessible to: " + ", ".join(
            f"{a['name']} ({a['role']})" for a in chosen) + "."
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[kit.call("search_files", query=pick["name"]), kit.call("get_file", file_id=pick["id"])],
        expected_answer=answer,
        checks=[*names_checks([a["name"] for a in chosen]), kit.diff_only([], weight=1.0)],
        difficulty=1,
        metadata={"phrasing": index, "file_id": pick["id"], "editors_only": editors_only},
    )


def share_file_with_role(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    mine = [f for f in reader.all_files() if RANK[f["my_role"]] >= EDITOR]
    if not mine:
        return None
    named = uniquely_named(reader, rng.sample(mine, min(len(mine), 4)))
    if not named:
        return None
    pick = rng.choice(named)
    share = pick_share(rng, world, reader, [pick["id"]])
    if share is None:
        return None
    person, role, role_phrase = share
    index, prompt = kit.phrase(rng, TEXTS["share_file_with_role"], name=pick["name"], person=person["name"],
                               role_phrase=role_phrase)
    me = reader.owner.username
    checks, expected = _share_checks(pick["id"], person["username"], role, me)
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[
            kit.call("search_files", query=pick["name"]),
            kit.call("search_people", query=person["name"]),
            kit.call("share_file", file_id=pick["id"], username=person["username"], role=role),
        ],
        expected_answer=f"I shared {pick['name']} with {person['name']} as {kit.with_article(role)}.",
        checks=[*checks, DiffOnly(expected=expected, weight=1.0, label="only that share")],
        difficulty=1,
        metadata={"phrasing": index, "file_id": pick["id"], "grantee": person["username"], "role": role},
    )


def share_latest_in_folder(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    folder = reader.pick_folder(rng)
    if folder is None:
        return None
    path, files = folder
    latest = kit.unique_best(files, "modified_at", largest=True)
    if latest is None or len(files) < 2:
        return None
    share = pick_share(rng, world, reader, [latest["id"]])
    if share is None:
        return None
    person, role, role_phrase = share
    noun = "report" if path.endswith("/Reports") else "file"
    index, prompt = kit.phrase(rng, TEXTS["share_latest_in_folder"], noun=noun, folder=path.rsplit("/", 1)[-1], path=path,
                               person=person["name"], role_phrase=role_phrase)
    me = reader.owner.username
    checks, expected = _share_checks(latest["id"], person["username"], role, me)
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[
            kit.call("list_drive_folder", path=path),
            kit.call("share_file", file_id=latest["id"], username=person["username"], role=role),
        ],
        expected_answer=f"The most recently modified {noun} in {path} is {latest['name']} "
                        f"({latest['modified_at'][:10]}); I shared it with {person['name']} as {kit.with_article(role)}.",
        checks=[*checks, DiffOnly(expected=expected, weight=1.0, label="only that share")],
        difficulty=2,
        metadata={"phrasing": index, "file_id": latest["id"], "grantee": person["username"]},
    )


def share_kind_in_folder(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    folder = reader.pick_folder(rng)
    if folder is None:
        return None
    path, files = folder
    chosen = pick_group(rng, files, lambda f: f["type"])
    if not 2 <= len(chosen) <= 4 or len(chosen) == len(files):
        return None
    kind = chosen[0]["type"]
    share = pick_share(rng, world, reader, [f["id"] for f in files])
    if share is None:
        return None
    person, role, role_phrase = share
    noun, plural = KIND_NOUNS[kind]
    index, prompt = kit.phrase(rng, TEXTS["share_kind_in_folder"], kinds=plural, kind=noun, folder=path.rsplit("/", 1)[-1], path=path,
                               person=person["name"], role=role, role_phrase=role_phrase)
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
        reference_solution=[kit.call("list_drive_folder", path=path)] + [
            kit.call("share_file", file_id=f["id"], username=person["username"], role=role) for f in chosen],
        expected_answer=f"I shared {len(chosen)} {plural} with {person['name']} as {kit.with_article(role)}: "
                        + ", ".join(f["name"] for f in chosen) + ".",
        checks=checks,
        difficulty=3,
        metadata={"phrasing": index, "file_ids": [f["id"] for f in chosen], "grantee": person["username"]},
    )


def shared_with_me_recently(rng: random.Random, world: World) -> TaskDraft | None:
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
    name = kit.human_date(day, weekday=True).split(",")[0]
    if back >= 2:
        options.append((f"since last {name}", f"last {name}"))
    span, argument = rng.choice(options)
    reader = Reader(world, owner, today)
    items = reader(t.list_shared_with_me, since=argument)
    sharers = sorted({i["shared_by"] for i in items})
    person = rng.choice(sharers) if sharers and rng.random() < 0.4 else None
    if person:
        items = [i for i in items if i["shared_by"] == person]
    names = [i["name"] for i in items]
    if not 1 <= len(items) <= 4 or len(set(names)) != len(names):
        return None
    if person:
        index, prompt = kit.phrase(rng, TEXTS["shared_with_me_recently.by_person"], person=person, span=span)
        index += len(TEXTS["shared_with_me_recently.phrasings"])
    else:
        index, prompt = kit.phrase(rng, TEXTS["shared_with_me_recently.phrasings"], span=span)
    listing = "; ".join(f"{i['type']} {i['name']} from {i['shared_by']} ({i['my_role']})" for i in items)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[kit.call("list_shared_with_me", since=argument)],
        expected_answer=f"Shared with you {span}: {listing}.",
        checks=[*names_checks(names), kit.diff_only([], weight=1.0)],
        difficulty=2,
        metadata={"phrasing": index, "since": argument},
    )


def copy_recent_share(rng: random.Random, world: World) -> TaskDraft | None:
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
    reader = Reader(world, owner, when.today)
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
    index, prompt = kit.phrase(rng, TEXTS["copy_recent_share"], person=item["shared_by"], when=when.phrase,
                               folder=path.rsplit("/", 1)[-1], path=path)
    new_id = kit.next_id(world, "files")
    me = owner.username
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(when.today),
        reference_solution=[kit.call("list_shared_with_me", since=when.argument),
                            kit.call("copy_file", file_id=item["id"], folder_path=path)],
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
