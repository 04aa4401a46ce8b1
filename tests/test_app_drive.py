"""The drive app: seed, tool rules and errors, runtime context, write tools of tasks and hand-computed scores."""

from __future__ import annotations

import datetime as dt

import pytest

from app_helpers import AppKit, assert_reference_writes_match_the_shape, assert_small_json, call, error
from toolgym.envs import Environment, make_env
from toolgym.envs.apps.drive import APP
from toolgym.envs.apps.drive.data import MAILBOX_OWNERS
from toolgym.schema import Task
from toolgym.verify import verify_task

WRITE_TOOLS = {"create_drive_folder", "move_file", "rename_file", "copy_file", "share_file", "unshare_file",
               "share_folder", "unshare_folder", "create_share_link", "disable_share_link", "restore_file_version",
               "trash_file", "restore_file", "comment_on_file"}
TODAY = "2026-08-31"

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("drive", today=TODAY)
tasks_30, first_task, seed_one = KIT.tasks_30, KIT.first_task, KIT.seed_one


def user_env(username: str, today: str = TODAY) -> dict[str, str]:
    name = seed_one("SELECT name FROM users WHERE username=?", (username,))["name"]
    return {"CURRENT_DATE": today, "LOGGED_IN_USER": username, "LOGGED_IN_NAME": name}


def fresh_env(username: str, today: str = TODAY) -> Environment:
    env = make_env("drive")
    env.reset(user_env(username, today))
    return env


def shared_file(role: str) -> dict:
    """A file shared directly with a Drive user in `role`, live on TODAY, with that user not its owner's editor."""
    return seed_one(
        "SELECT p.file_id, p.grantee, f.owner, f.name, f.folder_id FROM permissions p JOIN files f ON f.id = p.file_id "
        "JOIN users u ON u.username = p.grantee WHERE u.has_drive = 1 AND p.role = ? AND p.granted_at < ? "
        "AND (f.trashed_at IS NULL OR f.trashed_at > ?) AND NOT EXISTS (SELECT 1 FROM permissions q "
        "WHERE q.grantee = p.grantee AND q.folder_id IS NOT NULL) ORDER BY p.id LIMIT 1",
        (role, TODAY, TODAY + "T23:59"))


# -- structure and seed --------------------------------------------------------------------------------

def test_every_mailbox_owner_has_a_drive_and_every_drive_has_files() -> None:
    world = APP.world()
    drive = {r["username"] for r in world.query("SELECT username FROM users WHERE has_drive=1")}
    mail = make_env("mail").db("seed")
    mailboxes = {r[0] for r in mail.execute("SELECT username FROM users WHERE has_mailbox=1")}
    assert mailboxes == set(MAILBOX_OWNERS) and mailboxes < drive
    owners = {r["owner"] for r in world.query("SELECT DISTINCT owner FROM files")}
    assert owners == drive  # every Drive user has files, nobody else does


def test_seed_is_realistic_and_plants_the_hard_cases() -> None:
    world = APP.world()
    first, last = world.one("SELECT MIN(created_at) AS a, MAX(created_at) AS b FROM file_versions WHERE "
                            "created_at >= '2026-01-01'").values()
    assert first < "2026-02" and "2026-08-31" < last < "2026-10"
    roles = {r["role"] for r in world.query("SELECT DISTINCT role FROM permissions")}
    assert roles == {"viewer", "commenter", "editor"}
    # collaborators edit each other's files, and every seed folder predates the task window
    assert world.one("SELECT COUNT(*) AS n FROM file_versions v JOIN files f ON f.id = v.file_id "
                     "WHERE v.author != f.owner")["n"] > 100
    assert world.one("SELECT MAX(created_at) AS m FROM folders")["m"] < "2026-04-01"
    # basic-plan users sit close to their 2 GB quota
    basic = world.query("SELECT username, quota_bytes FROM users WHERE plan='basic' ORDER BY username")
    assert len(basic) == 5
    for user in basic:
        env = fresh_env(user["username"])
        usage = call(env, "get_storage_usage")
        assert 0 < usage["free_bytes"] < 500 * 1024 * 1024, usage
    # trashed files with a live namesake in the same folder
    assert world.one("SELECT COUNT(*) AS n FROM files a JOIN files b ON a.folder_id = b.folder_id "
                     "AND a.name = b.name AND a.id != b.id WHERE a.trashed_at < b.created_at")["n"] >= 10


# -- app surface ---------------------------------------------------------------------------------------

def test_bad_arguments_get_readable_errors_naming_the_argument() -> None:
    env = fresh_env(MAILBOX_OWNERS[0])
    own = seed_one("SELECT id FROM files WHERE owner=? AND trashed_at IS NULL ORDER BY id LIMIT 1",
                   (MAILBOX_OWNERS[0],))["id"]
    cases = [
        ("get_file", {"file_id": "seven"}, "'file_id'"),
        ("get_file", {"file_id": 999999}, "'file_id'"),
        ("list_drive_folder", {"path": "/No Such Folder"}, "'path'"),
        ("search_files", {"limit": 500}, "'limit'"),
        ("search_files", {"type": "movie"}, "'type'"),
        ("search_files", {"modified_after": "someday"}, "someday"),
        ("search_files", {"owner": "nobody.at.all"}, "'owner'"),
        ("share_file", {"file_id": own, "username": "nobody.at.all", "role": "viewer"}, "'username'"),
        ("share_file", {"file_id": own, "username": "karen.thomas", "role": "admin"}, "'role'"),
        ("rename_file", {"file_id": own, "new_name": "a/b.pdf"}, "'new_name'"),
        ("restore_file_version", {"file_id": own, "version_number": 99}, "'version_number'"),
        ("create_drive_folder", {"name": "", "parent_path": "/"}, "'name'"),
        ("create_drive_folder", {"name": "X", "parent_path": "/Nope"}, "'parent_path'"),
        ("move_file", {"file_id": own}, "'folder_id'"),
    ]
    for name, arguments, expected in cases:
        message = error(env, name, **arguments)
        assert expected in message, (name, message)
    assert "/Personal" in error(env, "list_drive_folder", path="/Nope")  # lists the folders that exist
    assert env.diff() == []


def test_tool_results_are_small_json() -> None:
    env = fresh_env("brittany.davis")
    assert_small_json(env, [("search_files", {"limit": 50}), ("list_shared_with_me", {}), ("list_drive_folder", {}),
                            ("list_trash", {}), ("get_storage_usage", {})], limit=16_000)


# -- rules ---------------------------------------------------------------------------------------------

def test_viewers_and_commenters_cannot_share_move_or_rename_but_commenters_can_comment() -> None:
    viewer = shared_file("viewer")
    env = fresh_env(viewer["grantee"])
    assert "viewer access" in error(env, "share_file", file_id=viewer["file_id"], username="karen.thomas",
                                    role="viewer")
    assert "viewer access" in error(env, "rename_file", file_id=viewer["file_id"], new_name="x.pdf")
    assert "viewer access" in error(env, "comment_on_file", file_id=viewer["file_id"], text="hi")
    assert "only its owner" in error(env, "trash_file", file_id=viewer["file_id"])
    commenter = shared_file("commenter")
    env = fresh_env(commenter["grantee"])
    assert "commenter access" in error(env, "create_share_link", file_id=commenter["file_id"])
    added = call(env, "comment_on_file", file_id=commenter["file_id"], text="Looks good.")
    assert added["text"] == "Looks good."
    assert [c.table for c in env.diff()] == ["activity", "comments"]


def test_editors_share_and_move_within_the_owners_drive_only() -> None:
    editor = shared_file("editor")
    env = fresh_env(editor["grantee"])
    other = seed_one("SELECT id FROM folders WHERE owner=? AND id != ? AND parent_id IS NOT NULL ORDER BY id LIMIT 1",
                     (editor["grantee"], editor["folder_id"]))
    assert "owner's Drive" in error(env, "move_file", file_id=editor["file_id"], folder_id=other["id"])
    stranger = seed_one("SELECT username FROM users WHERE has_drive=0 ORDER BY username LIMIT 1")["username"]
    shared = call(env, "share_file", file_id=editor["file_id"], username=stranger, role="commenter")
    assert shared["changed"] and shared["role"] == "commenter"
    again = call(env, "share_file", file_id=editor["file_id"], username=stranger, role="commenter")
    assert again["changed"] is False
    people = {a["username"]: a["role"] for a in call(env, "get_file", file_id=editor["file_id"])["access"]}
    assert people[stranger] == "commenter" and people[editor["owner"]] == "owner"


def test_folder_shares_reach_every_file_inside() -> None:
    share = seed_one("SELECT p.folder_id, p.grantee, p.role FROM permissions p JOIN users u ON u.username = p.grantee "
                     "WHERE p.folder_id IS NOT NULL AND u.has_drive = 1 AND p.granted_at < '2026-04-01' "
                     "AND EXISTS (SELECT 1 FROM files f WHERE f.folder_id = p.folder_id) ORDER BY p.id LIMIT 1")
    env = fresh_env(share["grantee"])
    listing = call(env, "list_drive_folder", folder_id=share["folder_id"])
    assert listing["files"] and {f["my_role"] for f in listing["files"]} <= {share["role"], "editor"}
    inside = listing["files"][0]
    access = call(env, "get_file", file_id=inside["id"])["access"]
    me = next(a for a in access if a["username"] == share["grantee"])
    assert me["via"].startswith("shared folder")
    if inside["my_role"] == "editor":  # editors manage file shares, but folder access is removed on the folder
        message = error(env, "unshare_file", file_id=inside["id"], username=share["grantee"])
        assert "unshare that folder instead" in message
    else:
        message = error(env, "share_file", file_id=inside["id"], username="karen.thomas", role="viewer")
        assert "only its owner or an editor can share it" in message


def test_restoring_a_version_adds_one_and_names_stay_unique() -> None:
    row = seed_one("SELECT f.id, f.owner, f.folder_id FROM files f WHERE f.trashed_at IS NULL AND f.created_at < ? "
                   "AND (SELECT COUNT(*) FROM file_versions v WHERE v.file_id = f.id) = 3 "
                   "AND (SELECT MAX(created_at) FROM file_versions v WHERE v.file_id = f.id) < ? ORDER BY f.id LIMIT 1",
                   (TODAY, TODAY))
    env = fresh_env(row["owner"])
    assert "already is the current version" in error(env, "restore_file_version", file_id=row["id"], version_number=3)
    restored = call(env, "restore_file_version", file_id=row["id"], version_number=1)
    assert restored["new_version"] == 4
    history = call(env, "list_file_versions", file_id=row["id"])
    assert [v["version"] for v in history["versions"]] == [4, 3, 2, 1]
    assert history["versions"][0]["restored_from"] == 1
    assert history["versions"][0]["size"] == history["versions"][-1]["size"]
    sibling = seed_one("SELECT name FROM files WHERE folder_id=? AND id != ? AND trashed_at IS NULL ORDER BY id LIMIT 1",
                       (row["folder_id"], row["id"]))
    assert "unique within a folder" in error(env, "rename_file", file_id=row["id"], new_name=sibling["name"].upper())
    stamps = [c.after["occurred_at"] for c in env.diff() if c.table == "activity"]
    assert stamps == [f"{TODAY}T18:00"]


def test_trash_restore_and_the_quota() -> None:
    basic = seed_one("SELECT username FROM users WHERE plan='basic' ORDER BY username LIMIT 1")["username"]
    env = fresh_env(basic)
    biggest = call(env, "search_files", owner="me", sort_by="size", limit=1)["files"][0]
    assert "not enough storage" in error(env, "copy_file", file_id=biggest["id"])
    before = call(env, "get_storage_usage")
    call(env, "trash_file", file_id=biggest["id"])
    assert call(env, "get_storage_usage")["used_bytes"] == before["used_bytes"]  # the trash still counts
    assert biggest["id"] in [f["id"] for f in call(env, "list_trash")]
    assert "in your trash" in error(env, "rename_file", file_id=biggest["id"], new_name="x.zip")
    call(env, "restore_file", file_id=biggest["id"])
    assert env.diff() and all(c.table == "activity" for c in env.diff())  # trash then restore: no net change
    twin = seed_one("SELECT a.id, a.owner FROM files a JOIN files b ON a.folder_id = b.folder_id AND a.name = b.name "
                    "AND a.id != b.id WHERE a.trashed_at < b.created_at AND b.created_at < ? ORDER BY a.id LIMIT 1",
                    (TODAY,))
    env = fresh_env(twin["owner"])
    assert "already has a file named" in error(env, "restore_file", file_id=twin["id"])


def test_logged_in_user_decides_whose_drive_it_is() -> None:
    first, second = MAILBOX_OWNERS[:2]
    env = fresh_env(first)
    mine = call(env, "search_files", owner="me", limit=50)
    root = call(env, "list_drive_folder")
    env.reset(user_env(second))
    assert call(env, "search_files", owner="me", limit=50) != mine
    assert call(env, "list_drive_folder") != root
    private = seed_one("SELECT f.id FROM files f JOIN folders d ON d.id = f.folder_id WHERE f.owner=? "
                       "AND d.path='/Personal' ORDER BY f.id LIMIT 1", (first,))
    assert "no file with id" in error(env, "get_file", file_id=private["id"])
    env.reset({"CURRENT_DATE": TODAY})
    assert "LOGGED_IN_USER" in error(env, "list_drive_folder")
    outsider = seed_one("SELECT username FROM users WHERE has_drive=0 ORDER BY username LIMIT 1")["username"]
    env.reset(user_env(outsider))
    assert "no Drive account" in error(env, "search_files")


def test_current_date_decides_what_yesterday_is_and_what_exists() -> None:
    version = seed_one("SELECT v.file_id, v.author, v.created_at FROM file_versions v JOIN files f ON f.id = v.file_id "
                       "WHERE v.version_number = 1 AND f.owner = v.author AND v.created_at > '2026-05-01' "
                       "AND f.trashed_at IS NULL ORDER BY v.id LIMIT 1")
    day = dt.date.fromisoformat(version["created_at"][:10])
    args = {"modified_by": "me", "modified_after": "yesterday", "modified_before": "yesterday", "limit": 50}
    env = fresh_env(version["author"], (day + dt.timedelta(days=1)).isoformat())
    assert version["file_id"] in [f["id"] for f in call(env, "search_files", **args)["files"]]
    env.reset(user_env(version["author"], (day + dt.timedelta(days=3)).isoformat()))
    assert version["file_id"] not in [f["id"] for f in call(env, "search_files", **args)["files"]]
    env.reset(user_env(version["author"], (day - dt.timedelta(days=1)).isoformat()))
    assert "no file with id" in error(env, "get_file", file_id=version["file_id"])  # not uploaded yet


# -- task generation -----------------------------------------------------------------------------------

def test_tasks_log_in_drive_users_under_their_drive_name() -> None:
    drive = {r["username"]: r["name"] for r in APP.world().query("SELECT username, name FROM users WHERE has_drive=1")}
    for task in tasks_30():
        assert drive[task.env_variables["LOGGED_IN_USER"]] == task.env_variables["LOGGED_IN_NAME"], task.id


def test_reference_solutions_write_exactly_when_the_task_expects_changes() -> None:
    assert_reference_writes_match_the_shape(tasks_30(), WRITE_TOOLS)
    assert {t.name for t in APP.tools} >= WRITE_TOOLS


def test_impossible_tasks_really_are_impossible() -> None:
    """Trying the forbidden write anyway is refused by the tool, so 'I cannot' is the only right reply."""
    env = make_env("drive")
    for task in tasks_30():
        if task.metadata["shape"] != "impossible":
            continue
        env.reset(task.env_variables)
        meta = task.metadata
        attempt = {
            "share_view_only_file": ("share_file", {"file_id": meta.get("file_id"), "username": meta.get("grantee"),
                                                    "role": meta.get("role")}),
            "restore_missing_version": ("restore_file_version", {"file_id": meta.get("file_id"),
                                                                 "version_number": meta.get("version")}),
            "rename_to_taken_name": ("rename_file", {"file_id": meta.get("file_id"), "new_name": meta.get("new_name")}),
            "copy_over_quota": ("copy_file", {"file_id": meta.get("file_id")}),
            "restore_over_namesake": ("restore_file", {"file_id": meta.get("file_id")}),
        }[task.family]
        assert env.call_tool(*attempt).is_error, task.id
        assert env.diff() == [], task.id


# -- partial credit --------------------------------------------------------------------------------------

def _score(task: Task, calls: list[tuple[str, dict]], answer: str) -> tuple[float, set[str]]:
    env = make_env("drive")
    env.reset(task.env_variables)
    for name, arguments in calls:
        result = env.call_tool(name, arguments)
        assert not result.is_error, result.content
    verdict = verify_task(task, env, answer)
    assert verdict.error is None
    return verdict.partial_score, {c.label or c.kind for c in verdict.checks if not c.passed}


def test_wrong_extra_and_missing_writes_lose_the_right_checks() -> None:
    task = first_task("share_file_with_role")
    # row_exists (shared with the person) 2, field_equals (role) 1, diff_only 1 -> total 4
    assert [c.weight for c in task.checks] == [2.0, 1.0, 1.0]
    share = task.reference_solution[-1].arguments
    assert _score(task, [("share_file", share)], task.expected_answer)[0] == 1.0
    other_role = next(r for r in ("viewer", "commenter", "editor") if r != share["role"])
    score, failed = _score(task, [("share_file", {**share, "role": other_role})], "Done.")
    assert score == pytest.approx(3 / 4) and len(failed) == 1  # only the role check fails
    stranger = seed_one("SELECT username FROM users WHERE username NOT IN (?, ?) AND has_drive=0 AND username NOT IN "
                        "(SELECT grantee FROM permissions WHERE file_id=?) ORDER BY username LIMIT 1",
                        (share["username"], task.env_variables["LOGGED_IN_USER"], share["file_id"]))["username"]
    score, _ = _score(task, [("share_file", {**share, "username": stranger})], "Done.")
    assert score == 0.0  # wrong person: no right row, and the diff has the wrong share
    extra = [("share_file", share), ("share_file", {**share, "username": stranger})]
    score, failed = _score(task, extra, "Done.")
    assert score == pytest.approx(3 / 4) and failed == {"only that share"}
    assert _score(task, [], "Done.")[0] == 0.0  # nothing shared: every check fails


def test_multi_step_without_the_share_gets_partial_credit() -> None:
    task = first_task("collect_quarter_invoices")
    moves = len(task.metadata["invoices"])
    # folder 1, one per move, folder share 2, diff_only 2
    assert sum(c.weight for c in task.checks) == 5 + moves
    gold = [(c.name, c.arguments) for c in task.reference_solution if c.name != "share_folder"]
    score, failed = _score(task, gold, task.expected_answer)
    assert score == pytest.approx((1 + moves) / (5 + moves))
    assert failed == {"folder shared read-only", "only the folder, the moves and the share"}


def test_impossible_task_penalises_an_attempted_write() -> None:
    task = first_task("share_view_only_file")
    env = make_env("drive")
    env.reset(task.env_variables)
    attempt = env.call_tool("share_file", {"file_id": task.metadata["file_id"], "username": task.metadata["grantee"],
                                           "role": task.metadata["role"]})
    assert attempt.is_error and "only its owner or an editor" in attempt.content
    verdict = verify_task(task, env, "I cannot share it.")
    # diff_only 2 and answer 1 pass, tool_not_called 1 fails
    assert verdict.reward == 0.0 and verdict.partial_score == pytest.approx(3 / 4)
