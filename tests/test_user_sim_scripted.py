"""Scripted-user acceptance: dual-control tasks are solvable only by instructing the user, stop tokens
end episodes with the right reason, and the instruction vocabulary round-trips."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from test_user_sim_support import ChatScript, dual_task, dual_tasks
from toolgym.agent.episode import run_episode
from toolgym.agent.limits import EpisodeLimits
from toolgym.agent.user import STOP_MARKER
from toolgym.agent.users import (
    InstructingOraclePolicy,
    ScriptedUserSimulator,
    UserSimulatorError,
    app_user_actions,
    instruction_for,
    parse_instructions,
)
from toolgym.envs import Environment, make_env
from toolgym.envs.apps.phone_support import APP
from toolgym.policy.base import Policy, SamplingParams
from toolgym.policy.oracle import OraclePolicy
from toolgym.schema import Episode, Message, Task, ToolCall

SAMPLING = SamplingParams(temperature=0.0)
ACTIONS = app_user_actions([APP])


def run(task: Task, policy: Policy, max_turns: int = 20) -> tuple[Episode, Environment]:
    env = make_env(task.env)
    episode = asyncio.run(run_episode(task, env, policy, SAMPLING, user_simulator=ScriptedUserSimulator(),
                                      limits=EpisodeLimits(max_turns=max_turns)))
    return episode, env


def user_lines(episode: Episode) -> list[str]:
    return [m.content or "" for m in episode.messages[2:] if m.role == "user"]


def device(env: Environment, task: Task) -> dict:
    row = env.db().execute("SELECT * FROM devices WHERE id = ?", (task.metadata["device_id"],)).fetchone()
    return dict(row)


# ---------------------------------------------------------------- solvable only by instructing


@pytest.mark.parametrize("family", sorted({t.family for t in dual_tasks()}))
def test_an_agent_that_instructs_the_user_solves_every_dual_family(family: str) -> None:
    for task in [t for t in dual_tasks() if t.family == family][:2]:
        episode, env = run(task, InstructingOraclePolicy())
        transfer = family == "dual_sim_damaged_transfer"
        assert episode.status == "ok" and episode.reward == 1.0, (task.id, episode.verdict)
        assert episode.stop_reason == ("user_transfer" if transfer else "user_stop")
        assert episode.user_termination == ("###TRANSFER###" if transfer else "###STOP###")
        assert episode.user_simulator == "scripted"
        assert episode.tool_errors == 0
        # the device changed only through the user's own calls
        user_calls = [c for c in env.calls if c.caller == "user" and c.ok]
        assert {c.name for c in user_calls} >= {c.name for c in task.reference_solution
                                                if APP.tool(c.name).owner == "user"}
        assert all(c.caller == "agent" for c in env.calls if APP.tool(c.name).owner == "agent")


@pytest.mark.parametrize("family", ["dual_no_service_airplane", "dual_roaming_abroad", "dual_mms_broken"])
def test_an_agent_that_calls_device_tools_itself_gets_the_owner_error_and_fails(family: str) -> None:
    task = dual_task(family)
    episode, env = run(task, OraclePolicy(), max_turns=12)  # replays the reference as agent calls
    refusals = [m.content or "" for m in episode.messages if m.role == "tool" and "belongs to the user" in (m.content or "")]
    assert refusals and all("ask the user to do it" in r for r in refusals)
    assert episode.tool_errors == len(refusals)
    assert episode.reward == 0.0 and episode.stop_reason == "max_turns"
    assert device(env, task) == dict(APP.world().one("SELECT * FROM devices WHERE id = ?", (task.metadata["device_id"],)))
    # the customer keeps saying it is broken: no STOP for an agent that only claims to have fixed it
    assert user_lines(episode) and all("still not working" in line for line in user_lines(episode))


def test_the_instructed_fix_is_the_users_own_tool_call() -> None:
    task = dual_task("dual_no_service_airplane")
    episode, env = run(task, ChatScript([
        "Hello! How can I help you today?",
        "Could you tell me your phone number, please?",
        "Thanks. Please turn airplane mode off on your phone.",
    ]))
    first, second, third = user_lines(episode)
    assert "still not working" in first and task.prompt in first  # the problem, restated
    assert task.metadata["phone_number"] in second and "###" not in second
    assert "I turned off airplane mode" in third
    assert episode.stop_reason == "user_stop" and episode.reward == 1.0
    assert [(c.name, c.caller) for c in env.calls if c.name == "toggle_airplane_mode"] == [
        ("toggle_airplane_mode", "user")]
    assert device(env, task)["airplane_mode"] == 0


# ---------------------------------------------------------------- stop tokens


@pytest.mark.parametrize(("agent_says", "reason", "marker"), [
    (["What is your mother's maiden name?"], "user_out_of_scope", "###OUT-OF-SCOPE###"),
    (["I'm transferring you to a technician now."], "user_transfer", "###TRANSFER###"),
    ([ToolCall(name="transfer_to_human_agent", id="t1", arguments={
        "phone_number": "PHONE", "summary": "No service; needs a technician."}), "A technician will take over."],
     "user_transfer", "###TRANSFER###"),
    (["Please turn off airplane mode on your phone."], "user_stop", "###STOP###"),
])
def test_stop_tokens_end_the_episode_with_the_right_reason(agent_says: list, reason: str, marker: str) -> None:
    task = dual_task("dual_no_service_airplane")
    script = [ToolCall(name=s.name, id=s.id, arguments={**s.arguments, "phone_number": task.metadata["phone_number"]})
              if isinstance(s, ToolCall) else s for s in agent_says]
    episode, _ = run(task, ChatScript(script))
    assert episode.status == "ok" and episode.stop_reason == reason
    assert episode.user_termination == marker and episode.user_simulator == "scripted"
    assert all(marker not in (m.content or "") for m in episode.messages)  # markers are stripped from text
    assert episode.reward == (1.0 if reason == "user_stop" else 0.0)


def test_the_transfer_task_ends_in_transfer_after_the_reseat_fails() -> None:
    task = dual_task("dual_sim_damaged_transfer")
    episode, env = run(task, InstructingOraclePolicy())
    reseat = next(line for line in user_lines(episode) if "SIM card out" in line)
    assert "SIM card error" in reseat and "still not fixed" in reseat
    assert episode.stop_reason == "user_transfer" and episode.reward == 1.0
    assert env.db().execute("SELECT COUNT(*) FROM escalations WHERE created_on = ?",
                            (task.env_variables["CURRENT_DATE"],)).fetchone()[0] == 1


# ---------------------------------------------------------------- determinism and isolation


def test_the_scripted_user_is_deterministic() -> None:
    task = dual_task("dual_mms_broken")
    first, _ = run(task, InstructingOraclePolicy())
    second, _ = run(task, InstructingOraclePolicy())
    assert [m.model_dump() for m in first.messages] == [m.model_dump() for m in second.messages]


def test_one_simulator_serves_concurrent_episodes_without_sharing_state() -> None:
    tasks = [dual_task("dual_no_data_switch"), dual_task("dual_no_service_sim"), dual_task("dual_no_data_apn")]
    simulator = ScriptedUserSimulator()
    envs = [make_env(t.env) for t in tasks]

    async def all_of_them() -> list[Episode]:
        return await asyncio.gather(*[run_episode(t, e, InstructingOraclePolicy(), SAMPLING, user_simulator=simulator)
                                      for t, e in zip(tasks, envs, strict=True)])

    episodes = asyncio.run(all_of_them())
    assert [e.reward for e in episodes] == [1.0, 1.0, 1.0]
    assert all(e.stop_reason == "user_stop" for e in episodes)


def test_a_user_with_no_phone_goal_ends_the_conversation_once_answered() -> None:
    """Imported tasks (e.g. tau2's) carry a scenario but no device goal: an answer that asks nothing ends it."""
    task = dual_task("dual_no_data_switch")
    task = task.model_copy(update={"metadata": {k: v for k, v in task.metadata.items() if k != "user_goal"}})
    session = ScriptedUserSimulator().for_episode(task, make_env(task.env))
    asked = session.reply([Message(role="assistant", content="Could you tell me what your phone shows?")])
    assert STOP_MARKER not in asked
    answered = session.reply([Message(role="assistant", content="Your booking is cancelled and refunded.")])
    assert answered.endswith(STOP_MARKER)


def test_an_unbound_scripted_user_says_how_to_bind_it() -> None:
    with pytest.raises(UserSimulatorError, match="for_episode"):
        asyncio.run(ScriptedUserSimulator().respond([]))
    task = dual_task("dual_no_data_switch").model_copy(update={"user_scenario": None})
    with pytest.raises(UserSimulatorError, match="no user_scenario"):
        ScriptedUserSimulator().for_episode(task, make_env("phone_support"))


# ---------------------------------------------------------------- the instruction vocabulary


@pytest.mark.parametrize(("text", "calls"), [
    ("Please turn airplane mode off and then turn on mobile data.",
     [("toggle_airplane_mode", {"enabled": False}), ("toggle_mobile_data", {"enabled": True})]),
    ("Could you disable flight mode?", [("toggle_airplane_mode", {"enabled": False})]),
    ("Make sure data roaming is enabled in Settings.", [("toggle_data_roaming", {"enabled": True})]),
    ("Go to Settings > Apps > Messages and grant it the SMS and Storage permissions.",
     [("grant_app_permission", {"app": "messages", "permission": "sms"}),
      ("grant_app_permission", {"app": "messages", "permission": "storage"})]),
    ("Switch your preferred network mode from 2G only to LTE.", [("set_network_mode", {"mode": "4g_3g"})]),
    ("Set the network mode to 5G/4G/3G, then run a speed test.",
     [("set_network_mode", {"mode": "5g_4g_3g"}), ("run_speed_test", {})]),
    ("Power off, remove the SIM card and reinsert it.", [("reseat_sim_card", {})]),
    ("Please reset your APN settings to default.", [("reset_apn_settings", {})]),
    ("What does your status bar show?", [("check_device_status", {})]),
    ("I've enabled roaming on your line.", []),  # the agent's own action, not an instruction
    ("Please grant the permission.", []),  # which app? not actionable
])
def test_instructions_map_to_user_side_calls(text: str, calls: list) -> None:
    assert [(c.name, c.arguments) for c in parse_instructions(ACTIONS, text)] == calls


def test_every_user_action_round_trips_through_its_own_phrasing() -> None:
    user_tools = {t.name for t in APP.tools if t.owner == "user"}
    assert {a.tool for a in ACTIONS} == user_tools  # every device tool can be asked for
    for action in ACTIONS:
        slot_names = sorted(action.slots)
        for values in itertools.product(*[sorted(action.slots[s]) for s in slot_names]):
            arguments = {**action.arguments, **dict(zip(slot_names, values, strict=True))}
            if action.tool == "grant_app_permission" and arguments["permission"] not in {
                    "messages": ("sms", "storage"), "camera": ("camera", "storage"),
                    "maps": ("location",)}[arguments["app"]]:
                continue
            call = ToolCall(name=action.tool, arguments=arguments)
            text = instruction_for(ACTIONS, call)
            assert text is not None, call
            parsed = parse_instructions(ACTIONS, text)
            assert [(c.name, c.arguments) for c in parsed] == [(call.name, call.arguments)], text
