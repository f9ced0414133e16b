"""report.html: a per-task table and, per episode, its screenshots with the actions drawn.

The page is ``harness/templates/eval_report.html.jinja`` (autoescaped). Screenshots are the
JPEGs the runner saved under ``episodes/<episode>/``, referenced by relative path (the
report lives next to them). Each action is an SVG overlay in the screenshot's own pixel
space (``viewBox``), so it lines up however the JPEG was downscaled: a crosshair for clicks
and hovers, an arrow for drags and scrolls, a text label for typing, keys, waits and done;
agent errors (per step, and an exception that ended the episode) are red. Beside each step
is its verdict in words (``verdict_words``) and its reward in the run's reward mode. A
thumbnail opens full size with its action drawn (a dialog; without script, the bare
JPEG), and a checkbox hides the solved episodes.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from markupsafe import Markup

from harness.actions import describe_action
from harness.evaluation.stats import summary_rate
from harness.records import EpisodeRecord, StepRecord
from harness.templating import render

MAX_EPISODES = 200  # beyond this the page gets too heavy to open; the table still lists all
THUMB_WIDTH = 200


def _label(x: float, y: float, text: str, size: float, color: str = "#d500f9") -> str:
    return (
        f'<text x="{x}" y="{y}" font-size="{size}" fill="{color}" stroke="white" '
        f'stroke-width="{size / 6}" paint-order="stroke">{escape(text)}</text>'
    )


def action_svg(action: dict | None, width: int, height: int) -> str:
    """SVG shapes (no <svg> wrapper) drawing ``action`` in a width x height screenshot."""
    if not action:
        return ""
    unit = max(width, height) / 40  # marker size relative to the image
    kind = str(action.get("type"))
    x, y = action.get("x"), action.get("y")
    color = {"click": "#ff1744", "double_click": "#ff9100", "right_click": "#2979ff"}.get(kind, "#00b0ff")
    if kind in ("click", "double_click", "right_click", "move") and x is not None and y is not None:
        r = unit
        return (
            f'<circle cx="{x}" cy="{y}" r="{r}" fill="none" stroke="{color}" stroke-width="{unit / 4}"/>'
            f'<line x1="{x - 2 * r}" y1="{y}" x2="{x + 2 * r}" y2="{y}" stroke="{color}" stroke-width="{unit / 5}"/>'
            f'<line x1="{x}" y1="{y - 2 * r}" x2="{x}" y2="{y + 2 * r}" stroke="{color}" stroke-width="{unit / 5}"/>'
            + ("" if kind == "click" else _label(x + r, y - r, kind.replace("_click", ""), unit * 1.5))
        )
    if kind in ("drag", "scroll") and x is not None and y is not None:
        to_x = action.get("to_x", x + action.get("dx", 0) / 4)
        to_y = action.get("to_y", y + action.get("dy", 0) / 4)
        label = "" if kind == "drag" else _label(x + unit, y, f"scroll {action.get('dy', 0)}", unit * 1.5)
        return (
            f'<line x1="{x}" y1="{y}" x2="{to_x}" y2="{to_y}" stroke="#00c853" '
            f'stroke-width="{unit / 3}" marker-end="url(#arrow)"/>'
            f'<circle cx="{x}" cy="{y}" r="{unit / 2}" fill="#00c853"/>' + label
        )
    text = {
        "type_text": f"type {action.get('text', '')!r}",
        "key": "key " + "+".join(action.get("keys", ())),
        "wait": f"wait {action.get('seconds', '')}s",
        "done": f"done {action.get('answer') or ''}".strip(),
    }.get(kind, str(kind))
    return _label(unit / 2, height - unit, text[:40], unit * 1.6)


def _frame(step: StepRecord, width: int, height: int) -> dict[str, Any] | None:
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


def verdict_words(verdict: dict | None) -> tuple[str, str]:
    """The step's verdict in words, with its kind (ok, bad, idle) for its colour: the
    transition it fired, whether that was on the shortest path (or a dead end, or nothing
    fired), and the steps still to go before and after, e.g. ``fired add_to_cart · on the
    shortest path · 3 → 2 steps to go``; ("", "") without a verdict."""
    if not verdict:
        return "", ""
    before, after = verdict.get("distance_before"), verdict.get("distance_after")
    fired = f"fired {verdict.get('transition_id') or 'a transition'}"
    if not verdict.get("transition_fired"):
        kind = "idle"
        what = ("acted on a disabled control; nothing fired" if verdict.get("control_disabled")
                else "nothing fired")
    elif after is None:
        kind, what = "bad", f"{fired} · a dead end: the goal is out of reach"
    elif verdict.get("on_shortest_path"):
        kind, what = "ok", f"{fired} · on the shortest path"
    else:
        kind, what = "bad", f"{fired} · off the shortest path"
    to_go = f"{_steps(before)} → {_steps(after)} steps to go"
    if verdict.get("goal_reached"):
        to_go += " · goal reached"
    mark = {"ok": "✓", "bad": "✗", "idle": "·"}[kind]
    return kind, f"{mark} {what} · {to_go}"


def _steps(distance: int | None) -> str:
    return "∞" if distance is None else str(distance)


def _episode(record: EpisodeRecord) -> dict[str, Any]:
    frames = [_frame(s, record.width, record.height) for s in record.trajectory]
    if record.final_screenshot:
        final = StepRecord(step=record.steps, action=None, reward=record.reward,
                           raw_reward=record.raw_reward, screenshot=record.final_screenshot,
                           action_text="final")
        frames.append(_frame(final, record.width, record.height))
    return {"record": record, "frames": [f for f in frames if f is not None]}


def render_report(summary: dict[str, Any], records: list[EpisodeRecord], title: str) -> str:
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


def write_report(path: Path, summary: dict[str, Any], records: list[EpisodeRecord],
                 title: str = "cua eval") -> Path:
    """Write report.html; screenshot paths in ``records`` are relative to its folder."""
    path.write_text(render_report(summary, records, title), encoding="utf-8")
    return path
