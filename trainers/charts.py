"""The charts of the training reports and benchmarks: matplotlib figures as inline SVG.

The SFT/DPO and the GRPO reports share ``curve`` (one logged metric) and ``eval_chart``
(success and progress before and after training), so both packages import them from here.

Every chart is drawn by matplotlib on the Agg backend (no display, no network) and comes
back as an ``<svg>`` element to embed in a page, self-contained: text stays text
(``svg.fonttype: none``), so tick labels and legends are readable and searchable in the
page. A chart has axes with ticks, a grid and a legend; a series with several runs (seeds)
is drawn as their mean with a band from the lowest to the highest run, and a series may
carry its own band (e.g. a 95% Wilson interval of a success rate).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import matplotlib
from markupsafe import Markup

matplotlib.use("Agg")  # before pyplot: never a display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: one colour per series, in order (matplotlib's tab10, colour-blind friendlier than its default)
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
STYLE: dict[Any, Any] = {"svg.fonttype": "none", "svg.hashsalt": "cua", "font.size": 9, "axes.titlesize": 10,
         "axes.spines.top": False, "axes.spines.right": False, "grid.color": "#ddd"}
SIZE = (4.6, 2.5)  # inches: two charts side by side in a 70rem page


@dataclass(frozen=True)
class Series:
    """One line of a chart: ``runs`` holds one curve per seed (x, y points); ``band``, where
    given, is a (x, low, high) interval drawn around the line (e.g. a Wilson interval)."""

    label: str
    runs: Sequence[Sequence[tuple[float, float]]]
    band: Sequence[tuple[float, float, float]] | None = None


@dataclass(frozen=True)
class Bar:
    """One bar: its group on the x axis (e.g. a metric), its colour key (e.g. before or
    after), its value and optionally a (low, high) interval drawn as an error bar."""

    group: str
    key: str
    value: float
    interval: tuple[float, float] | None = None


@contextmanager
def figure(columns: int = 1) -> Iterator[tuple[Figure, list[Axes]]]:
    """A figure of ``columns`` charts side by side, drawn in the report style inside the
    block (``to_svg`` it there); closed after."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, columns, figsize=(SIZE[0] * columns, SIZE[1]), squeeze=False)
        try:
            yield fig, list(axes[0])
        finally:
            plt.close(fig)


def to_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element (no XML prolog)."""
    buffer = io.StringIO()
    fig.tight_layout()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def draw_lines(ax: Axes, title: str, series: Sequence[Series], *, x_label: str = "step",
               y_label: str = "", percent: bool = False) -> None:
    """``series`` on ``ax``: each the mean of its runs, with a band from the lowest to the
    highest run where there are several, and its own band where it has one."""
    for k, s in enumerate(series):
        color = COLORS[k % len(COLORS)]
        xs, mean, low, high = _mean_and_range(s.runs)
        label = s.label + (f" (mean of {len(s.runs)} seeds; shaded: their range)" if len(s.runs) > 1 else "")
        ax.plot(xs, mean, color=color, linewidth=1.8, marker="o" if len(xs) < 12 else None,
                markersize=3, label=label)
        if len(s.runs) > 1:
            ax.fill_between(xs, low, high, color=color, alpha=0.18, linewidth=0)
        if s.band:
            bx, blow, bhigh = zip(*s.band, strict=True)
            ax.fill_between(bx, blow, bhigh, color=color, alpha=0.2, linewidth=0, label=f"{s.label}: 95% CI")
    _finish(ax, title, x_label, y_label, percent)


def line_chart(title: str, series: Sequence[Series] | Series, *, x_label: str = "step",
               y_label: str = "", percent: bool = False) -> str:
    """One line chart as an ``<svg>`` element."""
    with figure() as (fig, (ax,)):
        draw_lines(ax, title, [series] if isinstance(series, Series) else series, x_label=x_label,
                   y_label=y_label, percent=percent)
        return to_svg(fig)


def bar_chart(title: str, bars: Sequence[Bar], *, percent: bool = True) -> str:
    """Grouped bars (a colour per key, a legend of the keys), each labelled with its value,
    with an error bar where it has an interval; the y axis from 0 to 1 when ``percent``."""
    with figure() as (fig, (ax,)):
        _draw_bars(ax, bars, percent)
        _finish(ax, title, "", "", percent)
        return to_svg(fig)


def eval_chart(evals: dict[str, dict[str, Any]]) -> Markup:
    """Bars of success rate (with its 95% Wilson interval where logged) and progress, before
    and after training."""
    bars = [Bar(metric, phase, float(e[metric]), tuple(e["success_ci"])
                if metric == "success_rate" and "success_ci" in e else None)
            for metric in ("success_rate", "progress") for phase, e in evals.items()]
    return Markup(bar_chart("Evaluation (95% CI on success)", bars))


def curve(title: str, points: Sequence[tuple[float, float]], x_label: str = "step") -> Markup:
    """A line chart of one logged metric."""
    return Markup(line_chart(title, Series(title, [points]), x_label=x_label))


def _draw_bars(ax: Any, bars: Sequence[Bar], percent: bool) -> None:
    groups = list(dict.fromkeys(b.group for b in bars))
    keys = list(dict.fromkeys(b.key for b in bars))
    width = 0.8 / max(len(keys), 1)
    for k, key in enumerate(keys):
        mine = [b for b in bars if b.key == key]
        xs = [groups.index(b.group) + (k - (len(keys) - 1) / 2) * width for b in mine]
        values = [b.value for b in mine]
        drawn = ax.bar(xs, values, width * 0.9, color=COLORS[k % len(COLORS)], label=key)
        for x, b in zip(xs, mine, strict=True):
            if b.interval:
                ax.errorbar([x], [b.value], yerr=[[b.value - b.interval[0]], [b.interval[1] - b.value]],
                            fmt="none", ecolor="#333", capsize=3, linewidth=1)
        ax.bar_label(drawn, labels=[f"{v:.0%}" if percent else f"{v:.3g}" for v in values],
                     fontsize=8, padding=2)
    ax.set_xticks(range(len(groups)), [g.replace("_", " ") for g in groups])
    if percent:
        ax.set_ylim(0, 1.12)


def _mean_and_range(runs: Sequence[Sequence[tuple[float, float]]]) -> tuple[list[float], ...]:
    """The runs' x values, mean, minimum and maximum, over the steps every run reached."""
    n = min(len(r) for r in runs)
    xs = [sum(r[i][0] for r in runs) / len(runs) for i in range(n)]
    ys = [[r[i][1] for r in runs] for i in range(n)]
    return xs, [sum(y) / len(y) for y in ys], [min(y) for y in ys], [max(y) for y in ys]


def _finish(ax: Any, title: str, x_label: str, y_label: str, percent: bool) -> None:
    ax.set_title(title, loc="left")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.grid(True, linewidth=0.6)
    ax.set_axisbelow(True)
    if percent:
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.legend(loc="best", fontsize=7, framealpha=0.85, edgecolor="#ddd")

