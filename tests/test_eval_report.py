"""report.md / report.html of real runs: sections, numbers with denominators, self-contained page."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from test_eval_support import episode, report_run, write_results
from toolgym.cli.main import app
from toolgym.eval.report import ReportOptions, build_report, render_html, write_report

# an attribute or CSS url() that points outside the page (fragments and data: URIs stay inside)
EXTERNAL_REFERENCE = re.compile(
    r"""(?:[\s:](?:src|href|action|poster|srcset)\s*=\s*["'](?!#|data:))|url\((?!["']?(?:#|data:))|@import"""
)


def _episodes(html: str) -> list[dict]:
    match = re.search(r'<script id="episodes-data" type="application/json">(.*?)</script>', html, re.S)
    assert match is not None
    return json.loads(match.group(1))["episodes"]


def test_report_of_a_pipeline_like_run(tmp_path: Path) -> None:
    run = report_run()
    markdown_path, html_path = write_report(run, tmp_path / "out", ReportOptions(ks=[1, 2]))
    html = html_path.read_text()
    markdown = markdown_path.read_text()
    # self-contained: a CSP that forbids fetching, and no reference to anything outside the page
    assert "default-src 'none'" in html and "connect-src 'none'" in html
    assert EXTERNAL_REFERENCE.findall(html) == []
    assert html.count('<svg class="chart"') == 3  # stage times, training curves, pass by env
    for anchor in ("dataset", "stages", "training", "results", "before-after", "trace-diff", "leakage",
                   "trajectories", "provenance"):
        assert f'id="{anchor}"' in html
    # the numbers: before (answer-only) fails everything, after (oracle) fails only the unreachable task
    assert "| Wilcoxon signed-rank over 14 tasks (13 better, 0 worse) | 0/28 · 0.0% [0.0–12.1] | 26/28 · 92.9% [77.4–98.0] |" in markdown
    assert "two-proportion z-test" not in markdown  # the same tasks scored twice are never tested as independent
    assert "Tasks that flipped (13 fail→pass, 0 pass→fail)" in html
    assert "leakage check passed" in markdown
    assert "| eval untrained | done |" in markdown and "tool_call_rate" in html
    assert (tmp_path / "out" / "report-charts" / "pass-by-env.svg").read_text().startswith("<?xml")
    # every rate cell in every markdown table has its numerator and denominator
    for line in markdown.splitlines():
        if line.startswith("|"):
            for cell in line.strip("|").split("|"):
                if re.search(r"\d\.\d%", cell):  # a printed rate (headers say "95% CI")
                    assert re.search(r"\d+(\.\d)?/\d+", cell), cell
    # the viewer's data: every embedded episode of the errored task carries its cause, flips link to it
    episodes = _episodes(html)
    errored = [e for e in episodes if e["outcome"] == "errored"]
    assert errored and all("verifier" in e["error"] for e in errored)
    assert all(e["checks"] == [] for e in errored)
    passed = next(e for e in episodes if e["run"] == "sft" and e["tool_call_count"] >= 2)
    assert [c["name"] for m in passed["messages"] for c in m["tool_calls"]] and all(c["passed"] for c in passed["checks"])
    linked = set(re.findall(r'href="#ep=(e\d+)"', html))
    assert linked and linked <= {e["id"] for e in episodes}


def test_single_rollout_with_collapsing_tool_calls(tmp_path: Path) -> None:
    run = tmp_path / "rollout"
    write_results(run / "results.jsonl", [
        episode("a", split="heldout_tasks", tools={"search": 1}),
        episode("b", split="heldout_tasks", outcome="fail", final_answer="x" * 5000),
        episode("c", split="heldout_tasks", outcome="error"),
    ])
    with open(run / "metrics.jsonl", "w") as handle:
        for step, rate in enumerate([0.9, 0.8, 0.5, 0.3, 0.2]):
            handle.write(json.dumps({"step": step, "tool_call_rate": rate, "kl": 0.01 * step, "note": "text"}) + "\n")
    report = build_report(run)
    titles = [s.title for s in report.sections]
    assert "Before / after" not in titles and "Trace diff" not in titles  # one run: nothing to compare
    html = render_html(report)
    assert "possible turn collapse" in html
    assert "No tasks.jsonl found" in html  # the dataset table falls back to the tasks in the runs
    card = dict((label, value) for label, value, _ in report.cards)
    assert card["Held-out tasks · passes"] == "1/2" and card["Errored episodes"] == "1/3"
    long_answer = next(e for e in _episodes(html) if e["task"] == "b")["final_answer"]
    assert long_answer.endswith("(1000 more characters in the results row)")


def test_report_of_a_checkpoint_sweep_compares_first_and_last_step(tmp_path: Path) -> None:
    run = tmp_path / "grpo"
    for step, outcome in ((0, "fail"), (5, "fail"), (10, "pass")):
        write_results(run / "evals" / f"step-{step}" / "results.jsonl",
                      [episode("m1", env="mail", split="heldout_env", outcome=outcome, tools={"send": 1})])
    report = build_report(run)
    assert report.meta["compared"] == "evals/step-0 → evals/step-10"
    markdown = "\n".join(p for s in report.sections for p in s.md_parts)
    assert "| mail | 0.0/1 · 0.0% [0.0–79.3] | 1.0/1 · 100.0% [20.7–100.0] | 10 |" in markdown
    assert "pass@1 by step" in render_html(report)


def test_report_cli(tmp_path: Path) -> None:
    run = tmp_path / "rollout"
    write_results(run / "results.jsonl", [episode("a"), episode("b", outcome="fail")])
    result = CliRunner().invoke(app, ["report", str(run), "--title", "Smoke"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "<title>Smoke</title>" in (run / "report.html").read_text()
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "nope")], env={"COLUMNS": "300"})
    assert missing.exit_code == 2 and "no such run folder" in missing.output
    bad = CliRunner().invoke(app, ["report", str(run), "--before", "nowhere"], env={"COLUMNS": "300"})
    assert bad.exit_code == 2 and "not a run folder" in bad.output


def test_report_limited_to_named_runs(tmp_path: Path) -> None:
    write_results(tmp_path / "base" / "results.jsonl", [episode("a", outcome="fail")])
    write_results(tmp_path / "sft" / "results.jsonl", [episode("a")])
    both = build_report(tmp_path)
    assert both.meta["compared"] == "base → sft"
    only = build_report(tmp_path, ReportOptions(runs=["sft"]))
    assert "compared" not in only.meta and {e["run"] for e in only.episodes} == {"sft"}
    result = CliRunner().invoke(app, ["report", str(tmp_path), "--run", "rft"], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "rft: not run folders" in result.output


def test_errored_episodes_are_listed_by_cause_in_every_output(tmp_path: Path) -> None:
    """Errored episodes are out of the pass rate but never out of sight: report.md, report.html and
    eval.json count them by cause, each cause with one error text and the row it came from."""
    from toolgym.eval.evaluate import summarize_eval_dir

    causes = {
        "p": "policy error: PolicyError: server returned 502",
        "v": "verifier crashed at verifier line 2: RuntimeError: no such table",
        "t": "timeout: the episode was still running 150s after it started",
        "u": "user simulator error: TimeoutError: ",
        "l": "episode loop error: KeyError: 'x'",
    }
    episodes = [episode("ok", split="heldout_tasks"), episode("bad", split="heldout_tasks", outcome="fail")]
    episodes += [episode(f"env{i}", split="heldout_tasks", outcome="error") for i in range(2)]
    for task_id, error in causes.items():
        episodes.append(episode(task_id, split="heldout_tasks", outcome="error").model_copy(update={"error": error}))
    run = tmp_path / "rollout"
    write_results(run / "results.jsonl", episodes)
    markdown_path, html_path = write_report(run, tmp_path / "out")
    markdown, html = markdown_path.read_text(), html_path.read_text()
    expected = {"env error": 2, "policy error": 1, "verifier error": 1, "timeout": 1, "user simulator error": 1,
                "internal error": 1}
    assert "#### Errored episodes by cause" in markdown and "<h4>Errored episodes by cause</h4>" in html
    for cause, count in expected.items():
        assert re.search(rf"\| {cause} \| {count}/7 \| .+ \| .+results\.jsonl:\d+ \|", markdown), cause
        assert f'<td class="l">{cause}</td><td class="r">{count}/7</td>' in html, cause
    assert "verifier crashed at verifier line 2" in markdown  # the example names what broke
    assert "env error 2, " in html  # the overview card lists the causes too
    assert "| heldout_tasks" not in markdown and "1/2 · 50.0%" in markdown  # 2 scored: errors stay out
    summary = summarize_eval_dir(run, [1])
    data = json.loads((run / "eval.json").read_text())
    assert {e["cause"]: e["episodes"] for e in data["errored_by_cause"]} == expected
    assert summary.groups[0].total.errored_by_cause == expected


def test_report_cli_reads_a_config_file_then_set_overrides(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_results(run / "base" / "results.jsonl", [episode("a", outcome="fail")])
    write_results(run / "sft" / "results.jsonl", [episode("a")])
    config = tmp_path / "report.yaml"
    config.write_text(f"out: {tmp_path / 'out'}\ntitle: From the file\nruns: [sft]\n")
    result = CliRunner().invoke(app, ["report", str(run), "--config", str(config), "--set", "title=From --set"],
                                env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<title>From --set</title>" in html  # the override won over the file's title
    assert {e["run"] for e in _episodes(html)} == {"sft"}  # the file's runs reached the report
    config.write_text("title: t\nmax_episodes: 3\n")
    bad = CliRunner().invoke(app, ["report", str(run), "--config", str(config)], env={"COLUMNS": "300"})
    assert bad.exit_code == 2
    assert f"{config}: field max_episodes: unknown setting" in bad.output and "(line 2)" in bad.output
