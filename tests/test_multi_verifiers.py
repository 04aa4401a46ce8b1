"""Multi-app verifiers score every app: a wrong, extra or missing write in one app fails that app's row
check and the cross-app diff check, with the partial score computed here by hand from the weights."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from toolgym.dataset.build import BuildConfig, generate_composition_tasks
from toolgym.envs import Environment, get_app, make_env
from toolgym.envs.multi import get_composition
from toolgym.schema import Task, ToolCall, Verdict
from toolgym.verify import verify_task


@cache
def tasks(name: str) -> tuple[Task, ...]:
    return tuple(generate_composition_tasks(get_composition(name), BuildConfig(tasks_per_family=6)))


def first(name: str, family: str) -> Task:
    return next(t for t in tasks(name) if t.family == family)


def episode(task: Task, calls: list[ToolCall], answer: str | None = None,
            allow_errors: bool = False) -> tuple[Verdict, Environment]:
    """Run `calls` as the agent in a fresh environment and verify with `answer` (default: the expected one)."""
    env = make_env(task.env)
    env.reset(task.env_variables)
    for tool_call in calls:
        result = env.call_tool(tool_call.name, tool_call.arguments)
        assert allow_errors or not result.is_error, result.content
    return verify_task(task, env, task.expected_answer if answer is None else answer), env


def failed(verdict: Verdict) -> set[str]:
    return {c.label for c in verdict.checks if not c.passed}


def gold(task: Task, name: str) -> ToolCall:
    return next(c for c in task.reference_solution if c.name == name)


def without(task: Task, name: str) -> list[ToolCall]:
    return [c for c in task.reference_solution if c.name != name]


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


# -- mail + drive -------------------------------------------------------------------------------------

def test_sharing_with_the_wrong_person_fails_the_drive_check_and_the_diff() -> None:
    task = first("mail+drive", "share_file_with_sender_and_reply")
    share = gold(task, "share_file")
    sender = share.arguments["username"]
    drive = get_app("drive").world()
    other = drive.one(
        "SELECT username FROM users WHERE username NOT IN (?, ?) AND username NOT IN "
        "(SELECT grantee FROM permissions WHERE file_id=?) ORDER BY username LIMIT 1",
        (sender, task.env_variables["LOGGED_IN_USER"], share.arguments["file_id"]))
    assert other is not None
    wrong = call("share_file", **{**share.arguments, "username": other["username"]})
    calls = [wrong if c is share else c for c in task.reference_solution]
    verdict, env = episode(task, calls)
    assert {c.table for c in env.diff()} == {"drive.permissions", "drive.activity", "mail.messages"}
    # weights: shared with sender 2 (fail), role 1 (fail: no row), reply 2, diff 2 (fail), answer 1
    assert verdict.reward == 0.0
    assert verdict.partial_score == pytest.approx(3 / 8)
    drive_checks = {c.label for c in task.checks if getattr(c, "table", "").startswith("drive.")}
    assert len(drive_checks) == 2
    assert failed(verdict) == drive_checks | {"only the share and the reply"}


def test_a_missing_reply_fails_the_mail_check_and_the_diff() -> None:
    task = first("mail+drive", "share_file_with_sender_and_reply")
    verdict, _ = episode(task, without(task, "reply_to_message"))
    # weights: share 2, role 1, reply 2 (fail), diff 2 (fail: the reply is missing), answer 1
    assert verdict.partial_score == pytest.approx(4 / 8)
    labels = failed(verdict)
    assert len(labels) == 2 and "only the share and the reply" in labels
    assert any(label.startswith("replied to message") for label in labels)


def test_sharing_with_an_attendee_who_did_not_accept_fails() -> None:
    task = next(t for t in tasks("mail+drive") if t.family == "share_file_with_meeting_attendees"
                and any(c.kind == "row_absent" for c in t.checks))
    absent = next(c for c in task.checks if c.kind == "row_absent")
    share = gold(task, "share_file")
    extra = call("share_file", **{**share.arguments, "username": absent.where["grantee"]})
    verdict, _ = episode(task, [*task.reference_solution, extra])
    assert failed(verdict) == {absent.label, "only shares with the accepted attendees"}
    total = sum(c.weight for c in task.checks)
    assert verdict.partial_score == pytest.approx((total - absent.weight - 2.0) / total)


def test_impossible_share_fails_when_the_agent_tries_the_write_anyway() -> None:
    task = next(t for t in tasks("mail+drive") if t.metadata.get("reason") == "view_only_file")
    attempt = call("share_file", file_id=task.metadata["file_id"], username="karen.thomas", role="viewer")
    verdict, env = episode(task, [*task.reference_solution, attempt], allow_errors=True)
    assert env.diff() == [] and env.calls[-1].ok is False
    # weights: no app changed 2, share_file not called 1 (fail), reply_to_message not called 1, cannot 1
    assert failed(verdict) == {"share_file not called"}
    assert verdict.partial_score == pytest.approx(4 / 5)
    assert episode(task, task.reference_solution)[0].reward == 1.0


# -- tracker + code_host --------------------------------------------------------------------------------

def test_commenting_instead_of_closing_fails_the_tracker_check_and_the_diff() -> None:
    task = first("tracker+code_host", "merge_linked_pr_and_close_ticket")
    key = task.metadata["ticket"]
    calls = [*without(task, "transition_ticket"), call("add_comment_to_ticket", key=key, body="Merged.")]
    verdict, env = episode(task, calls)
    assert {c.table for c in env.diff()} == {"code_host.pull_requests", "tracker.comments", "tracker.tickets"}
    # weights: merged 2, method 1, ticket Done 2 (fail), diff 2 (fail: an unexpected comment), answer 1
    assert failed(verdict) == {f"{key} is Done", "only the merge and the ticket changed"}
    assert verdict.partial_score == pytest.approx(4 / 8)


def test_merging_another_way_fails_only_the_method_check() -> None:
    task = first("tracker+code_host", "merge_linked_pr_and_close_ticket")
    merge = gold(task, "merge_pull_request")
    method = next(m for m in ("merge", "squash", "rebase") if m != merge.arguments["merge_method"])
    wrong = call("merge_pull_request", **{**merge.arguments, "merge_method": method})
    verdict, _ = episode(task, [wrong if c is merge else c for c in task.reference_solution])
    assert failed(verdict) == {f"merged with {merge.arguments['merge_method']}"}
    assert verdict.partial_score == pytest.approx(7 / 8)


def test_a_lookup_fails_its_diff_check_when_any_app_is_written() -> None:
    task = first("tracker+code_host", "linked_pull_request_status")
    verdict, env = episode(task, [*task.reference_solution, call("watch_ticket", key=task.metadata["ticket"])])
    assert [c.table for c in env.diff()] == ["tracker.watchers"]
    assert failed(verdict) == {"no app changed"}
    total = sum(c.weight for c in task.checks)
    assert verdict.partial_score == pytest.approx((total - 1.0) / total)


def test_impossible_merge_is_refused_and_trying_it_costs_the_tool_check() -> None:
    task = next(t for t in tasks("tracker+code_host") if t.metadata.get("reason") == "ci_failing")
    pr = gold(task, "get_pull_request").arguments
    verdict, env = episode(task, [*task.reference_solution, call("merge_pull_request", **pr)], allow_errors=True)
    assert "CI must pass first" in env.calls[-1].error  # type: ignore[operator]
    assert env.diff() == []
    # weights: no app changed 2, merge not called 1 (fail), transition not called 1, cannot 1
    assert failed(verdict) == {"merge_pull_request not called"}
    assert verdict.partial_score == pytest.approx(4 / 5)
    refused, _ = episode(task, task.reference_solution, answer="Done, merged it.")
    assert failed(refused) == {"says it cannot"}


# -- mail + maps --------------------------------------------------------------------------------------

def test_saving_the_wrong_place_fails_the_maps_check_and_the_diff() -> None:
    task = first("mail+maps", "meal_near_meeting_room")
    save = gold(task, "save_place")
    search = gold(task, "nearby_places")
    env = make_env(task.env)
    env.reset(task.env_variables)
    places = json.loads(env.call_tool(search.name, search.arguments).content)["places"]
    lists = json.loads(env.call_tool("list_my_lists", {}).content)
    saved_list = next(entry for entry in lists if entry["name"] == save.arguments["list_name"])
    runner_up = next(p for p in places[1:] if all(s["place_id"] != p["place_id"] for s in saved_list["places"])) \
        if len(places) > 1 else None
    if runner_up is None:  # only one place qualified: save a place from elsewhere on the map
        runner_up = {"place_id": next(i for i in range(1, 50) if i != save.arguments["place"]
                                      and all(s["place_id"] != i for s in saved_list["places"]))}
    wrong = call("save_place", list_name=save.arguments["list_name"], place=runner_up["place_id"])
    verdict, env = episode(task, [wrong if c is save else c for c in task.reference_solution])
    maps_check = next(c for c in task.checks if getattr(c, "table", "").startswith("maps."))
    assert failed(verdict) == {maps_check.label, "only the event, its invitations and the saved place"}
    total = sum(c.weight for c in task.checks)
    assert verdict.partial_score == pytest.approx((total - 2.0 - 2.0) / total)
    assert any(c.table == "mail.calendar_events" for c in env.diff())


def test_a_travel_block_of_the_wrong_length_fails_the_mail_row_check() -> None:
    task = first("mail+maps", "block_travel_time_before_meeting")
    create = gold(task, "create_event")
    start = create.arguments["start_time"]
    earlier = f"{int(start[:2]) - 1:02d}{start[2:]}"
    wrong = call("create_event", **{**create.arguments, "start_time": earlier})
    verdict, _ = episode(task, [wrong if c is create else c for c in task.reference_solution])
    # weights: the block at the right times 3 (fail), diff 2 (the insert itself is expected), minutes 1
    assert verdict.partial_score == pytest.approx(3 / 6)
    assert len(failed(verdict)) == 1


def test_accepting_without_giving_the_travel_time_fails_the_answer_check() -> None:
    task = first("mail+maps", "accept_invite_with_travel_time")
    verdict, _ = episode(task, task.reference_solution, answer="Accepted.")
    # weights: accepted 2, diff 2, minutes 2 (fail)
    assert verdict.partial_score == pytest.approx(4 / 6)
    no_accept, _ = episode(task, without(task, "respond_to_invite"))
    assert no_accept.partial_score == pytest.approx(2 / 6)
