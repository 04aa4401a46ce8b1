"""The report's comparison sections: before / after, the trace diff with its flipped tasks, stage by stage."""

from __future__ import annotations

import html

from toolgym.eval.records import RunRecords
from toolgym.eval.report_document import Report, Section
from toolgym.eval.report_sources import CONTROL_STAGES, names_stage
from toolgym.eval.stage_flips import stage_flips, stage_flips_table
from toolgym.eval.summary import SPLIT_GROUPS, EvalSummary
from toolgym.eval.tables import TextTable, format_estimate, format_rate
from toolgym.eval.traces import TraceDiff, behaviour_table, success_table, tool_calls_table


def before_after_section(report: Report, before: EvalSummary, after: EvalSummary, diff: TraceDiff) -> None:
    section = Section("before-after", "Before / after",
                      f"A = {before.name} (before), B = {after.name} (after), on the same tasks.")
    k_max = max(before.ks)
    for split, title in SPLIT_GROUPS:
        group_a, group_b = before.group(split), after.group(split)
        if group_a is None or group_b is None:
            continue
        header = ["Environment", "Before: passes", "After: passes", "Δ"]
        if k_max > 1:
            header += [f"Before pass@{k_max}", f"After pass@{k_max}"]
        table = TextTable(title=title, header=header)
        cells_a = {c.label: c for c in [*group_a.rows, group_a.total]}
        cells_b = {c.label: c for c in [*group_b.rows, group_b.total]}
        labels = [c.label for c in group_a.rows if c.label in cells_b]
        if len(labels) > 1:
            labels.append(group_a.total.label)
        for label in labels:
            a, b = cells_a[label], cells_b[label]
            delta = "—"
            if a.scored and b.scored:
                delta = f"{100 * (b.pass_rate.value - a.pass_rate.value):+.1f} pp"
            row = [label, format_rate(a.pass_rate), format_rate(b.pass_rate), delta]
            if k_max > 1:
                row += [format_estimate(a.pass_at[k_max]), format_estimate(b.pass_at[k_max])]
            table.rows.append(row)
            if label == group_a.total.label:
                table.emphasis.add(len(table.rows) - 1)
        table.notes = ["Δ: difference of passes / scored episodes. Both runs scored the same tasks, so their "
                       "rates are not independent samples: the paired test is in the trace diff."]
        section.table(table)
    report.sections.append(section)
    measure = "their greedy passes" if diff.measure == "greedy" else "their sampled episodes"
    trace = Section("trace-diff", "Trace diff",
                    f"How behaviour changed between the two runs ({measure}), and which tasks flipped.")
    trace.table(success_table(diff))
    trace.table(behaviour_table(diff))
    trace.table(tool_calls_table(diff))
    flips_table(trace, diff, report.episode_ids)
    report.sections.append(trace)
    report.meta["compared"] = f"{before.name} → {after.name}"


def is_control(name: str) -> bool:
    return any(names_stage(name, word) for word in CONTROL_STAGES)


def stage_flips_section(report: Report, runs: list[RunRecords]) -> None:
    """With three or more runs of the same tasks: what each one won and lost against the one before it."""
    chain = stage_flips(runs)
    if len(chain) < 2:
        return
    section = Section("stage-flips", "Stage by stage", "Which tasks each run won and lost against the one before it, "
                      "by task family.")
    section.table(stage_flips_table(chain))
    report.sections.append(section)


def _episode_link(episode_id: str | None, text: str) -> str:
    if episode_id is None:  # not among the episodes embedded in the viewer
        return f'<span class="muted">{html.escape(text)}</span>'
    return f'<a href="#ep={html.escape(episode_id, quote=True)}">{html.escape(text)}</a>'


def flips_table(section: Section, diff: TraceDiff, episode_ids: dict[tuple[str, str], str]) -> None:
    title = f"Tasks that flipped ({len(diff.fail_to_pass)} fail→pass, {len(diff.pass_to_fail)} pass→fail)"
    section.heading(title)
    if not diff.flips:
        section.text("No task flipped between the two runs.", "empty")
        return
    rows_html, rows_md = [], ["| Task | Env | Split | Direction | A passes | B passes | Episodes |", "|---|---|---|---|---:|---:|---|"]
    for flip in sorted(diff.flips, key=lambda f: (f.direction, f.env, f.task_id)):
        links = " ".join(
            _episode_link(episode_ids.get((run, r.location)), f"{side}{'·' + r.trial if r.trial else ''}#{r.sample_index}")
            for side, run, records in (("A", diff.a.name, flip.a_records), ("B", diff.b.name, flip.b_records))
            for r in records
        )
        rows_html.append(
            f'<tr><td class="l"><code>{html.escape(flip.task_id)}</code></td><td class="l">{html.escape(flip.env)}</td>'
            f'<td class="l">{html.escape(flip.split)}</td><td class="l">{flip.direction}</td>'
            f'<td class="r">{flip.a_passes}/{flip.pairs}</td><td class="r">{flip.b_passes}/{flip.pairs}</td>'
            f'<td class="l">{links}</td></tr>'
        )
        where = ", ".join(r.location for r in flip.a_records + flip.b_records)
        rows_md.append(f"| {flip.task_id} | {flip.env} | {flip.split} | {flip.direction} | "
                       f"{flip.a_passes}/{flip.pairs} | {flip.b_passes}/{flip.pairs} | {where} |")
    section.html_parts.append(
        '<div class="table-wrap"><table><thead><tr><th class="l">Task</th><th class="l">Env</th><th class="l">Split</th>'
        '<th class="l">Direction</th><th class="r">A passes</th><th class="r">B passes</th><th class="l">Episodes</th>'
        "</tr></thead><tbody>" + "".join(rows_html) + "</tbody></table>"
        '<ul class="notes"><li>Solved = at least one paired sample passed. Links open the episode in the '
        "trajectory viewer (A = before, B = after, with the sample index).</li></ul></div>"
    )
    section.md_parts.append("\n".join(rows_md) + "\n")
