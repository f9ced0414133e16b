"""report.html: a per-task table and, per episode, its screenshots with the actions drawn.

The page is ``harness/templates/eval_report.html.jinja`` (autoescaped). Screenshots are the
JPEGs the runner saved under ``episodes/<episode>/``, referenced by relative path (the
report lives next to them). Each action is an SVG overlay in the screenshot's own pixel
space (``viewBox``), so it lines up however the JPEG was downscaled: a crosshair for clicks
and hovers, an arrow for drags and scrolls, a text label for typing, keys, waits and done;
agent errors (per step, and an exception that ended the episode) are red. Beside each step
is its verdict in words and its reward in the run's reward mode (the overlay and the words
come from ``harness.step_display``, which the store's viewer shares). A thumbnail opens full size with its action drawn (a dialog; without script, the bare
JPEG), and a checkbox hides the solved episodes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from markupsafe import Markup

from harness.actions import describe_action
from harness.evaluation.stats import summary_rate
from harness.evaluation.summary import Summary
from harness.records import EpisodeRecord, StepRecord
from harness.step_display import action_svg, verdict_words
from harness.templating import render

MAX_EPISODES = 200  # beyond this the page gets too heavy to open; the table still lists all
THUMB_WIDTH = 200


class ShownFrame(TypedDict):
    """What the template draws of one step."""

    step: int
    src: str
    width: int
    height: int
    thumb_height: int
    overlay: Markup
    caption: str
    reward: str | None
    verdict: str
    verdict_kind: str
    error: str | None


class ShownEpisode(TypedDict):
    """One episode on the page: its record and the frames drawn of it."""

    record: EpisodeRecord
    frames: list[ShownFrame]


def _frame(step: StepRecord, width: int, height: int) -> ShownFrame | None:
    """What the template draws of one step: its thumbnail, overlay, caption and verdict."""
    if step.screenshot is None:
        return None
    final = step.action_text == "final"
    caption = (step.action_text or describe_action(step.action))[:80]
    kind, words = verdict_words(step.verdict)
    return {"step": step.step, "src": step.screenshot, "width": width, "height": height,
            "thumb_height": round(THUMB_WIDTH * height / width) if width else THUMB_WIDTH,
            "overlay": Markup(action_svg(step.action, width, height)), "caption": caption,
            "reward": None if final else f"{step.reward:+.2f}", "verdict": words,
            "verdict_kind": kind, "error": step.error}


def _episode(record: EpisodeRecord) -> ShownEpisode:
    frames = [_frame(s, record.width, record.height) for s in record.trajectory]
    if record.final_screenshot:
        final = StepRecord(step=record.steps, action=None, reward=record.reward,
                           raw_reward=record.raw_reward, screenshot=record.final_screenshot,
                           action_text="final")
        frames.append(_frame(final, record.width, record.height))
    return {"record": record, "frames": [f for f in frames if f is not None]}


def render_report(summary: Summary, records: list[EpisodeRecord], title: str) -> str:
    """The whole report page as a string."""
    shown = records[:MAX_EPISODES]
    rows = [*summary["per_task"].items(), ("all", summary)]
    sampled = summary.get("sampled")
    temperatures = ", ".join(f"{t:g}" for t in sampled["temperatures"]) if sampled else ""
    return render(
        "harness", "eval_report.html.jinja", title=title, rows=rows, sampled=sampled,
        temperatures=temperatures,
        episodes=[_episode(r) for r in shown], hidden=len(records) - len(shown),
        total=len(records), unsolved=sum(1 for r in records if not r.success),
        infra_failed=sum(1 for r in records if r.error), raised=sum(1 for r in records if r.agent_error),
        thumb_width=THUMB_WIDTH, rate=summary_rate)


def write_report(path: Path, summary: Summary, records: list[EpisodeRecord],
                 title: str = "cua eval") -> Path:
    """Write report.html; screenshot paths in ``records`` are relative to its folder."""
    path.write_text(render_report(summary, records, title), encoding="utf-8")
    return path
