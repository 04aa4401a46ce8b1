"""Report charts drawn with matplotlib and returned as inline SVG (no file, no network, text stays text).

Every bar carries its numerator/denominator label and a Wilson 95% whisker: a chart never shows
a bare percentage either.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f"]
INK = "#1f2933"
MUTED = "#7b8794"
GRID = "#e4e7eb"


@dataclass(frozen=True)
class Bar:
    """One bar: value in [0, 1], its interval, and the label drawn on it (e.g. '24/180')."""

    value: float
    low: float
    high: float
    label: str


def _style() -> dict[str, object]:
    return {
        "font.family": "sans-serif",
        "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
        "font.size": 10,
        "axes.edgecolor": MUTED,
        "axes.labelcolor": INK,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "axes.axisbelow": True,
        "grid.color": GRID,
        "grid.linewidth": 0.8,
        "xtick.color": INK,
        "ytick.color": INK,
        "svg.fonttype": "none",
        "svg.hashsalt": "toolgym",  # stable ids: the same data gives the same SVG
    }


def to_svg(figure: Figure, title: str) -> str:
    """The figure as an inline <svg> element (XML prolog, DOCTYPE and metadata stripped)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    svg = buffer.getvalue()
    svg = re.sub(r"<\?xml[^>]*\?>\s*", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>\s*", "", svg)
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = svg.replace("<svg ", f'<svg class="chart" role="img" aria-label="{_attr(title)}" ', 1)
    return svg.strip()


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


@dataclass(frozen=True)
class BarPanel:
    """One panel of grouped bars: categories (environments) × series (runs)."""

    title: str
    categories: list[str]
    series: dict[str, list[Bar | None]]


def _draw_bars(axes: plt.Axes, panel: BarPanel, names: list[str]) -> None:
    count = max(1, len(names))
    bar_width = 0.8 / count
    for index, name in enumerate(names):
        colour = PALETTE[index % len(PALETTE)]
        for position, bar in enumerate(panel.series.get(name, [])):
            if bar is None or math.isnan(bar.value):
                continue
            x = position - 0.4 + bar_width * (index + 0.5)
            axes.bar(x, 100 * bar.value, bar_width * 0.9, color=colour)
            axes.errorbar(x, 100 * bar.value,
                          yerr=[[max(0.0, 100 * (bar.value - bar.low))], [max(0.0, 100 * (bar.high - bar.value))]],
                          fmt="none", ecolor=INK, elinewidth=1, capsize=2.5)
            axes.text(x, 100 * bar.high + 2, bar.label, ha="center", va="bottom", fontsize=7, color=INK,
                      rotation=90 if count * len(panel.categories) > 10 else 0)
    many = len(panel.categories) > 4
    axes.set_xticks(range(len(panel.categories)), panel.categories, rotation=30 if many else 0,
                    ha="right" if many else "center", fontsize=8.5)
    axes.set_xlim(-0.6, len(panel.categories) - 0.4)
    axes.set_ylim(0, 118)
    axes.set_yticks([0, 25, 50, 75, 100])
    axes.grid(axis="x", visible=False)
    axes.set_title(panel.title, loc="left", fontsize=9.5, color=INK)


def bar_panels(title: str, panels: list[BarPanel], ylabel: str) -> str:
    """Side-by-side panels (one per split) sharing the y axis; each bar has its x/y label and whisker."""
    from matplotlib.patches import Patch

    names = list(dict.fromkeys(n for p in panels for n in p.series))
    widths = [max(1.2, len(p.categories) * (0.5 + 0.28 * len(names))) for p in panels]
    with plt.rc_context(_style()):
        figure, grid = plt.subplots(1, len(panels), figsize=(min(12.5, 1.2 + sum(widths)), 3.8), squeeze=False,
                                    sharey=True, gridspec_kw={"width_ratios": widths})
        for axes, panel in zip(grid[0], panels, strict=True):
            _draw_bars(axes, panel, names)
        grid[0][0].set_ylabel(ylabel)
        handles = [Patch(color=PALETTE[i % len(PALETTE)]) for i in range(len(names))]
        figure.legend(handles, names, frameon=False, fontsize=8.5, loc="upper right", ncol=min(len(names), 6),
                      bbox_to_anchor=(1.0, 1.02))
        figure.suptitle(title, x=0.01, y=1.02, ha="left", fontsize=11, color=INK)
        figure.tight_layout()
        return to_svg(figure, title)


def line_panels(title: str, panels: dict[str, dict[str, list[tuple[float, float]]]], columns: int = 3) -> str:
    """Small multiples: one panel per metric, one line per source (e.g. sft, grpo)."""
    names = list(panels)
    rows = math.ceil(len(names) / columns)
    with plt.rc_context(_style()):
        figure, grid = plt.subplots(rows, columns, figsize=(11, 2.5 * rows), squeeze=False)
        sources = sorted({s for lines in panels.values() for s in lines})
        for index, axes in enumerate(grid.flat):
            if index >= len(names):
                axes.set_visible(False)
                continue
            metric = names[index]
            for source, points in panels[metric].items():
                xs = [p[0] for p in points]
                ys = [p[1] for p in points]
                colour = PALETTE[sources.index(source) % len(PALETTE)]
                axes.plot(xs, ys, color=colour, linewidth=1.6, marker="o" if len(xs) < 25 else None,
                          markersize=3, label=source)
            axes.set_title(metric, loc="left", fontsize=9.5, color=INK)
            axes.tick_params(labelsize=8)
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            axes.set_xlabel("step", fontsize=8, color=MUTED)
        if len(sources) > 1:
            handles, labels = next(a for a in grid.flat if a.get_visible()).get_legend_handles_labels()
            figure.legend(handles, labels, frameon=False, fontsize=8.5, loc="upper right", ncol=len(sources))
        figure.suptitle(title, x=0.01, ha="left", fontsize=11, color=INK)
        figure.tight_layout()
        return to_svg(figure, title)


def step_curve(title: str, series: dict[str, list[tuple[int, Bar]]], ylabel: str) -> str:
    """pass@k by training step, one line per split, with the interval as a band and x/y labels."""
    with plt.rc_context(_style()):
        figure, axes = plt.subplots(figsize=(8, 3.4))
        for index, (name, points) in enumerate(series.items()):
            colour = PALETTE[index % len(PALETTE)]
            xs = [s for s, _ in points]
            axes.plot(xs, [100 * b.value for _, b in points], color=colour, marker="o", markersize=4, label=name)
            axes.fill_between(xs, [100 * b.low for _, b in points], [100 * b.high for _, b in points],
                              color=colour, alpha=0.08, linewidth=0)
            for step, bar in points:
                axes.annotate(bar.label, (step, 100 * bar.value), textcoords="offset points", xytext=(0, 6),
                              ha="center", fontsize=7, color=colour)
        axes.set_ylim(0, 105)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_xlabel("step")
        axes.set_ylabel(ylabel)
        axes.set_title(title, loc="left", fontsize=11, color=INK, pad=10)
        axes.legend(frameon=False, fontsize=8.5, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return to_svg(figure, title)


def stage_bars(title: str, stages: list[tuple[str, float]]) -> str:
    """Horizontal bars of seconds per pipeline stage."""
    with plt.rc_context(_style()):
        figure, axes = plt.subplots(figsize=(8, 0.45 * len(stages) + 1.0))
        names = [n for n, _ in stages][::-1]
        seconds = [s for _, s in stages][::-1]
        axes.barh(names, seconds, color=PALETTE[0], height=0.6)
        top = max(seconds, default=0) or 1
        for y, value in enumerate(seconds):
            axes.text(value + top * 0.01, y, duration_text(value), va="center", fontsize=8.5, color=INK)
        axes.set_xlim(0, top * 1.18)
        axes.set_xlabel("seconds")
        axes.grid(axis="y", visible=False)
        axes.set_title(title, loc="left", fontsize=11, color=INK, pad=10)
        return to_svg(figure, title)


def duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"
