"""The report as a document: titled sections holding HTML and Markdown side by side, and their rendering."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgym.eval.report_page import page
from toolgym.eval.tables import TextTable


@dataclass
class Section:
    anchor: str
    title: str
    lead: str = ""
    html_parts: list[str] = field(default_factory=list)
    md_parts: list[str] = field(default_factory=list)

    def table(self, table: TextTable) -> None:
        self.html_parts.append(table.to_html())
        self.md_parts.append(table.to_markdown())

    def text(self, text: str, css: str = "") -> None:
        css_attr = f' class="{css}"' if css else ""
        self.html_parts.append(f"<p{css_attr}>{html.escape(text)}</p>")
        self.md_parts.append(text + "\n")

    def callout(self, text: str, tone: str = "") -> None:
        self.html_parts.append(f'<div class="callout {tone}">{html.escape(text)}</div>')
        self.md_parts.append(f"> **{text}**\n")

    def heading(self, text: str) -> None:
        self.html_parts.append(f"<h3>{html.escape(text)}</h3>")
        self.md_parts.append(f"### {text}\n")


@dataclass
class Report:
    title: str
    run_dir: Path
    sections: list[Section] = field(default_factory=list)
    charts: dict[str, str] = field(default_factory=dict)  # file stem → svg
    cards: list[tuple[str, str, str]] = field(default_factory=list)  # label, value, sub
    episodes: list[dict[str, Any]] = field(default_factory=list)
    episode_ids: dict[tuple[str, str], str] = field(default_factory=dict)  # (run, path:line) → viewer id
    meta: dict[str, str] = field(default_factory=dict)
    teacher: dict[str, Any] | None = None  # summary.json's teacher numbers (pass rate, mistake mix)

    def chart(self, section: Section, stem: str, svg: str, caption: str) -> None:
        stem = re.sub(r"[^a-z0-9_-]+", "-", stem.lower()).strip("-")
        self.charts[stem] = svg
        section.html_parts.append(f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>")
        section.md_parts.append(f"![{caption}](report-charts/{stem}.svg)\n")


def render_html(report: Report) -> str:
    cards = "".join(
        f'<div class="card"><div class="label">{html.escape(label)}</div><div class="value">{html.escape(value)}</div>'
        f'<div class="sub">{html.escape(sub)}</div></div>' for label, value, sub in report.cards
    )
    body = [f'<section class="cards">{cards}</section>'] if cards else []
    for section in report.sections:
        lead = f'<p class="lead">{html.escape(section.lead)}</p>' if section.lead else ""
        body.append(f'<section class="block" id="{section.anchor}"><h2>{html.escape(section.title)}</h2>{lead}'
                    + "".join(section.html_parts) + "</section>")
    meta = " · ".join(f"{html.escape(k)} <code>{html.escape(v)}</code>" for k, v in report.meta.items())
    nav = [(s.anchor, s.title) for s in report.sections]
    return page(report.title, meta, nav, "".join(body), {"episodes": report.episodes})


def render_markdown(report: Report) -> str:
    lines = [f"# {report.title}", ""]
    lines += [f"- {k}: `{v}`" for k, v in report.meta.items()]
    lines.append("")
    if report.cards:
        lines += ["| " + " | ".join(c[0] for c in report.cards) + " |", "|" + "---|" * len(report.cards),
                  "| " + " | ".join(f"{c[1]} ({c[2]})" if c[2] else c[1] for c in report.cards) + " |", ""]
    for section in report.sections:
        lines += [f"## {section.title}", ""]
        if section.lead:
            lines += [section.lead, ""]
        lines += section.md_parts
        lines.append("")
    return "\n".join(lines)
