"""Drive requests the rules forbid (sharing what I only view, a version that does not exist, a taken name,
a full quota, a namesake in the way): the agent must change nothing and say why."""

from __future__ import annotations

import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.drive import tools as t
from toolgym.envs.apps.drive.task_common import (
    EDITOR,
    Reader,
    drive_users,
    live_namesake,
    pick_share,
    setup,
    uniquely_named,
)
from toolgym.envs.apps.drive.tool_common import RANK

TEXTS = kit.module_texts(__file__)


def _pick_named(reader: Reader, rng: random.Random, files: list[dict]) -> dict | None:
    """One of `files`, drawn at random, if its name alone identifies it; None when there is none to draw."""
    if not files:
        return None
    named = uniquely_named(reader, [rng.choice(files)])
    return named[0] if named else None


def share_view_only_file(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    pick = _pick_named(reader, rng, [f for f in reader.all_files() if f["my_role"] in ("viewer", "commenter")])
    if pick is None:
        return None
    share = pick_share(rng, world, reader, [pick["id"]])
    if share is None:
        return None
    person, role, role_phrase = share
    index, prompt = kit.phrase(rng, TEXTS["share_view_only_file"], name=pick["name"], person=person["name"],
                               role_phrase=role_phrase)
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[kit.call("search_files", query=pick["name"])],
        expected_answer=f"I cannot share {pick['name']}: you only have {pick['my_role']} access to it, and only "
                        f"its owner ({pick['owner']}) or an editor can share it.",
        checks=kit.impossible_checks("share_file", reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": index, "file_id": pick["id"], "grantee": person["username"], "role": role},
    )


def restore_missing_version(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    pick = _pick_named(reader, rng, [f for f in reader.all_files() if RANK[f["my_role"]] >= EDITOR])
    if pick is None:
        return None
    top = world.one("SELECT MAX(version_number) AS n FROM file_versions WHERE file_id=?", (pick["id"],))
    history = reader(t.list_file_versions, file_id=pick["id"])
    count = history["current_version"]
    if top is None or top["n"] != count:
        return None
    wanted = count + rng.randint(1, 3)
    index, prompt = kit.phrase(rng, TEXTS["restore_missing_version"], n=str(wanted), name=pick["name"])
    span = "version 1" if count == 1 else f"versions 1 to {count}"
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[kit.call("search_files", query=pick["name"]),
                            kit.call("list_file_versions", file_id=pick["id"])],
        expected_answer=f"I cannot restore version {wanted} of {pick['name']}: it only has {span}.",
        checks=kit.impossible_checks("restore_file_version", reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": index, "file_id": pick["id"], "version": wanted},
    )


def rename_to_taken_name(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    folders = sorted({f["folder"] for f in reader.my_files()})
    if not folders:
        return None
    path = rng.choice(folders)
    files = reader(t.list_drive_folder, path=path)["files"]
    if len(files) < 2:
        return None
    old, new = rng.sample(files, 2)
    index, prompt = kit.phrase(rng, TEXTS["rename_to_taken_name"], folder=path.rsplit("/", 1)[-1], path=path, old=old["name"],
                               new=new["name"])
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[kit.call("list_drive_folder", path=path)],
        expected_answer=f"I cannot rename {old['name']} to {new['name']}: {path} already has a file with that "
                        "name, and names must be unique within a folder.",
        checks=kit.impossible_checks("rename_file", reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": index, "file_id": old["id"], "new_name": new["name"]},
    )


def copy_over_quota(rng: random.Random, world: World) -> TaskDraft | None:
    basic = [o for o in drive_users(world) if world.one(
        "SELECT 1 FROM users WHERE username=? AND plan='basic'", (o.username,))]
    reader = Reader(world, rng.choice(basic), kit.random_day(rng))
    usage = reader(t.get_storage_usage)
    big = [f for f in reader.all_files() if f["type"] in ("video", "archive", "presentation")]
    if not big:
        return None
    pick = rng.choice(big)
    if reader(t.get_file, file_id=pick["id"])["size_bytes"] <= usage["free_bytes"] or not uniquely_named(reader, [pick]):
        return None
    folders = [r["path"] for r in world.query(
        "SELECT path FROM folders WHERE owner=? AND parent_id IS NOT NULL ORDER BY path", (reader.owner.username,))]
    path = rng.choice(folders)
    index, prompt = kit.phrase(rng, TEXTS["copy_over_quota"], name=pick["name"], folder=path.rsplit("/", 1)[-1], path=path)
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[kit.call("search_files", query=pick["name"]), kit.call("get_storage_usage")],
        expected_answer=f"I cannot copy {pick['name']}: it is {pick['size']} and you only have {usage['free']} "
                        f"of storage left on your {usage['quota']} plan.",
        checks=kit.impossible_checks("copy_file", reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": index, "file_id": pick["id"]},
    )


def restore_over_namesake(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    trash = reader(t.list_trash)
    clashing = [f for f in trash if live_namesake(reader, f["id"])]
    if not clashing:
        return None
    pick = rng.choice(clashing)
    if sum(1 for f in trash if f["name"].lower() == pick["name"].lower()) != 1:
        return None
    index, prompt = kit.phrase(rng, TEXTS["restore_over_namesake"], name=pick["name"], folder=pick["folder"].rsplit("/", 1)[-1],
                               path=pick["folder"])
    return TaskDraft(
        prompt=prompt,
        env_variables=reader.owner.env(reader.today),
        reference_solution=[kit.call("list_trash"), kit.call("list_drive_folder", path=pick["folder"])],
        expected_answer=f"I cannot restore {pick['name']}: {pick['folder']} already has a file with that name. "
                        "Rename or move that file first.",
        checks=kit.impossible_checks("restore_file", reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": index, "file_id": pick["id"]},
    )
