"""Text tables shared by the terminal, report.md and report.html: every rate with numerator/denominator.

A `TextTable` is plain data (title, header, rows of strings, footnotes); `to_markdown`, `to_rich`
and `to_html` render it, so the three outputs can never disagree on a number.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

from rich.markup import escape
from rich.table import Table

from toolgym.eval.stats import Rate
from toolgym.eval.summary import CellStats, Estimate, EvalSummary

RATE_NOTE = "x/y · p% [lo–hi]: x successes of y, with the Wilson 95% confidence interval in brackets."
PASSES_NOTE = (
    "Passes: successful episodes / scored episodes. Errored episodes (infrastructure failures: env, "
    "verifier, policy server) are left out of every denominator and counted in Errored, over all episodes."
)
ESTIMATE_NOTE = (
    "pass@k, pass^k: unbiased estimators averaged over tasks, shown as expected tasks solved / tasks "
    "(e.g. 12.6/20). With n scored samples and c successes per task, pass@k = 1 − C(n−c,k)/C(n,k) "
    "(at least one of k succeeds) and pass^k = C(c,k)/C(n,k) (all k succeed); the interval is Wilson's "
    "on that expected count (approximate for a mean of per-task probabilities)."
)
SHORT_NOTE = "†: tasks with fewer than k scored samples are left out of that estimate (count after †)."
NA_NOTE = "n/a (n=m < k): no task has k scored samples, so pass@k is not estimated (m = the most any task has)."
ERRORS_NOTE = (
    "Errored: an infrastructure fault (environment, policy server, verifier, user simulator, time limit) "
    "stopped the episode before it could be scored. Such episodes are in no denominator, so each is listed "
    "here by cause; a mistake of the model is a failure, never an error."
)
EXAMPLE_CHARS = 160
UNSCORED_NOTE = "Tasks \"x (y all errored)\": y tasks had only errored episodes and are in no pass@k denominator."


SPLIT_SHORT = {"train": "train", "heldout_tasks": "held-out tasks", "heldout_env": "held-out env"}


@dataclass
class TextTable:
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    emphasis: set[int] = field(default_factory=set)  # row indexes shown bold (totals)
    left: set[int] = field(default_factory=lambda: {0})  # text columns (the rest are numbers, right-aligned)

    def _align(self, index: int) -> str:
        return "l" if index in self.left else "r"

    def to_markdown(self) -> str:
        lines = [f"#### {self.title}", ""] if self.title else []
        lines.append("| " + " | ".join(_md(h) for h in self.header) + " |")
        lines.append("|" + "|".join("---" if i in self.left else "---:" for i in range(len(self.header))) + "|")
        for index, row in enumerate(self.rows):
            cells = [_md(c) for c in row]
            if index in self.emphasis and cells[0]:
                cells[0] = f"**{cells[0]}**"
            lines.append("| " + " | ".join(cells) + " |")
        if self.notes:
            lines.append("")
            lines += [f"> {_md(n)}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def to_rich(self) -> Table:
        table = Table(title=escape(self.title) or None, title_justify="left", show_lines=False)
        for index, name in enumerate(self.header):
            table.add_column(escape(name), justify="left" if index in self.left else "right", overflow="fold")
        for index, row in enumerate(self.rows):
            # Terminal cells break at " · ": the count on one line, percent and interval under it.
            table.add_row(*(escape(c.replace(" · ", "\n")) for c in row),
                          style="bold" if index in self.emphasis else None)
        if self.notes:
            table.caption = escape("\n".join(self.notes))
            table.caption_justify = "left"
        return table

    def to_html(self, table_id: str = "") -> str:
        attribute = f' id="{html.escape(table_id)}"' if table_id else ""
        parts = [f'<div class="table-wrap"{attribute}>']
        if self.title:
            parts.append(f"<h4>{html.escape(self.title)}</h4>")
        parts.append("<table><thead><tr>")
        parts += [f'<th class="{self._align(i)}">{html.escape(h)}</th>' for i, h in enumerate(self.header)]
        parts.append("</tr></thead><tbody>")
        for index, row in enumerate(self.rows):
            css = ' class="total"' if index in self.emphasis else ""
            cells = "".join(
                f'<td class="{self._align(i)}">{_html_cell(c)}</td>' for i, c in enumerate(row)
            )
            parts.append(f"<tr{css}>{cells}</tr>")
        parts.append("</tbody></table>")
        if self.notes:
            parts.append('<ul class="notes">' + "".join(f"<li>{html.escape(n)}</li>" for n in self.notes) + "</ul>")
        parts.append("</div>")
        return "".join(parts)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _html_cell(text: str) -> str:
    """Numbers first, the interval muted, so the eye finds x/y quickly."""
    escaped = html.escape(text)
    if " · " in escaped:
        head, _, tail = escaped.partition(" · ")
        return f'<span class="num">{head}</span> <span class="muted">{tail}</span>'
    return escaped


def _percent(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.1f}%"


def format_rate(rate: Rate) -> str:
    """'24/180 · 13.3% [9.1–19.1]' — never a bare percentage."""
    if not rate.total:
        return f"{rate.successes}/0 · n/a"
    low, high = rate.interval
    return f"{rate.successes}/{rate.total} · {100 * rate.value:.1f}% [{100 * low:.1f}–{100 * high:.1f}]"


def format_count(count: int, total: int) -> str:
    """A count over its total without an interval (used for errored episodes)."""
    return f"{count}/{total}"


def format_estimate(value: Estimate) -> str:
    """'12.6/20 · 63.0% [41.1–80.6]'; 'n/a (needs n ≥ 4 …)' when no task has k scored samples."""
    if not value.available:
        return f"n/a ({value.unavailable_reason})"  # compact; NA_NOTE explains
    low, high = value.interval
    text = f"{value.expected:.1f}/{value.tasks} · {_percent(value.value)} [{100 * low:.1f}–{100 * high:.1f}]"
    if value.short_tasks:
        text += f" †{value.short_tasks}"
    return text


def estimate_columns(ks: list[int]) -> list[str]:
    return [f"pass@{k}" for k in ks] + [f"pass^{k}" for k in ks if k > 1]


def _estimate_cells(stats: CellStats, ks: list[int]) -> list[str]:
    cells = [format_estimate(stats.pass_at[k]) if k in stats.pass_at else "—" for k in ks]
    cells += [format_estimate(stats.pass_hat[k]) if k in stats.pass_hat else "—" for k in ks if k > 1]
    return cells


def format_tasks(stats: CellStats) -> str:
    return f"{stats.tasks} ({stats.unscored_tasks} all errored)" if stats.unscored_tasks else str(stats.tasks)


def stats_row(stats: CellStats, ks: list[int]) -> list[str]:
    return [
        stats.label, format_tasks(stats), str(stats.episodes), format_count(stats.errored, stats.episodes),
        format_rate(stats.pass_rate), *_estimate_cells(stats, ks),
    ]


def _cells(summary: EvalSummary) -> list[CellStats]:
    return [c for g in summary.groups for c in [*g.rows, g.total]] + [t.stats for t in summary.trials]


def _estimates(summary: EvalSummary) -> list[Estimate]:
    return [e for c in _cells(summary) for e in [*c.pass_at.values(), *c.pass_hat.values()]]


def summary_tables(summary: EvalSummary) -> list[TextTable]:
    """One table per split group (env rows, all-env row, greedy row), then the per-trial breakdown."""
    ks = summary.ks
    header = ["Environment", "Tasks", "Episodes", "Errored", "Passes", *estimate_columns(ks)]
    notes = [RATE_NOTE, PASSES_NOTE, ESTIMATE_NOTE]
    if any(e.short_tasks for e in _estimates(summary)):
        notes.append(SHORT_NOTE)
    if any(not e.available for e in _estimates(summary)):
        notes.append(NA_NOTE)
    if any(c.unscored_tasks for c in _cells(summary)):
        notes.append(UNSCORED_NOTE)
    tables: list[TextTable] = []
    for group in summary.groups:
        table = TextTable(title=group.title, header=header)
        for stats in group.rows:
            table.rows.append(stats_row(stats, ks))
        if len(group.rows) > 1:
            table.emphasis.add(len(table.rows))
            table.rows.append(stats_row(group.total, ks))
        if group.greedy is not None:
            greedy = group.greedy
            table.rows.append([
                "greedy pass@1 (T=0, 1 sample)", format_tasks(greedy), str(greedy.episodes),
                format_count(greedy.errored, greedy.episodes), format_rate(greedy.pass_rate),
                *["—"] * len(estimate_columns(ks)),
            ])
        tables.append(table)
    if tables:
        tables[-1].notes = notes
        if any(g.greedy for g in summary.groups):
            tables[-1].notes.append("greedy pass@1: a separate temperature-0 run, one sample per task.")
    errors = errors_table(summary)
    if errors is not None:
        tables.append(errors)
    spread = spread_table(summary)
    if spread is not None:
        tables.append(spread)
    if summary.trials:
        table = TextTable(
            title="Per-trial breakdown",
            left={0, 1},
            header=["Trial", "Split", "Tasks", "Episodes", "Errored", "Passes", *estimate_columns(ks)],
            notes=["Each trial is its own rollout sub-run with its own seed; the tables above pool all trials "
                   "(n = samples × trials per task)."],
        )
        for trial in summary.trials:
            stats = trial.stats
            table.rows.append([
                trial.trial, SPLIT_SHORT.get(trial.split, trial.split), format_tasks(stats), str(stats.episodes),
                format_count(stats.errored, stats.episodes), format_rate(stats.pass_rate),
                *_estimate_cells(stats, ks),
            ])
        tables.append(table)
    return tables


def format_causes(causes: dict[str, int]) -> str:
    """'env error 2, verifier error 1' (or '' when nothing errored)."""
    return ", ".join(f"{cause} {count}" for cause, count in causes.items())


def errors_table(summary: EvalSummary) -> TextTable | None:
    """Errored episodes by cause, each with one error text and the row it is in; None when none errored."""
    if not summary.errors:
        return None
    total = sum(e.episodes for e in summary.errors)
    table = TextTable(title="Errored episodes by cause", header=["Cause", "Errored episodes", "Example error", "Row"],
                      left={0, 2, 3}, notes=[ERRORS_NOTE])
    for error in summary.errors:
        example = error.example if len(error.example) <= EXAMPLE_CHARS else error.example[: EXAMPLE_CHARS - 1] + "…"
        table.rows.append([error.cause, format_count(error.episodes, total), example, error.location])
    return table


def spread_table(summary: EvalSummary) -> TextTable | None:
    """Tasks by sampled success (never / sometimes / always), crossed with the greedy pass: GRPO's signal."""
    groups = [g for g in summary.groups if g.spread is not None]
    if not groups:
        return None
    crossed = any(g.spread.by_greedy for g in groups if g.spread)
    header = ["Split", "Tasks", "Never", "Sometimes", "Always"]
    if crossed:
        header += ["Greedy fails, sometimes", "Greedy passes, not always"]
    table = TextTable(title="Tasks by sampled success", header=header, notes=[
        "Never / sometimes / always: tasks none, some or all of whose scored samples succeed. GRPO learns only "
        "from tasks whose samples sometimes succeed (a group with reward variance)."
        + (" Greedy fails, sometimes: what sharpening can lift; greedy passes, not always: what it can lose."
           if crossed else "")])
    for group in groups:
        spread = group.spread
        assert spread is not None
        row = [SPLIT_SHORT.get(group.split, group.split), str(spread.tasks),
               *[format_count(spread.counts[k], spread.tasks) for k in ("never", "sometimes", "always")]]
        if crossed:
            fails, passes = spread.by_greedy.get("fails", {}), spread.by_greedy.get("passes", {})
            row += [str(fails.get("sometimes", 0)), str(passes.get("sometimes", 0) + passes.get("never", 0))]
        table.rows.append(row)
    return table


def summary_markdown(summary: EvalSummary) -> str:
    return "\n".join(t.to_markdown() for t in summary_tables(summary))
