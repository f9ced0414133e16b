"""report.html: a summary table and, per episode, its screenshots with the actions drawn.

Screenshots are the JPEGs the runner saved under ``episodes/<episode>/``, referenced by
relative path (the report lives next to them). Each action is an SVG overlay in the
screenshot's own pixel space (``viewBox``), so it lines up however the JPEG was
downscaled: a crosshair for clicks and hovers, an arrow for drags and scrolls, a text
label for typing, keys, waits and done; agent errors (per step, and an exception that
ended the episode) are red. Beside each step is its verdict (on the shortest path, off
it, no transition, a dead end; distance to the goal before and after) and its reward in
the run's reward mode; a screenshot opens full size on click.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.actions import describe_action
from harness.evaluation.stats import format_rate
from harness.records import EpisodeRecord, StepRecord

MAX_EPISODES = 200  # beyond this the page gets too heavy to open; the table still lists all
THUMB_WIDTH = 200

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.ok { color: #08a045; font-weight: bold; } .bad { color: #c62828; font-weight: bold; }
.episode { border-top: 2px solid #ddd; padding-top: .6em; margin-top: 1em; }
.steps { display: flex; flex-wrap: wrap; gap: 8px; }
.frame { position: relative; display: inline-block; }
.frame img, .frame svg { display: block; }
.frame svg { position: absolute; top: 0; left: 0; }
.cap { font-size: 11px; max-width: 200px; overflow-wrap: anywhere; }
.err { color: #c62828; }
.verdict.ok { color: #08a045; font-weight: normal; } .verdict.bad { color: #c62828; font-weight: normal; }
.verdict.idle { color: #777; }
"""


def _table(summary: dict[str, Any]) -> str:
    head = "<tr><th>task</th><th>episodes</th><th>success [95% CI]</th><th>progress</th><th>mean reward</th>" \
           "<th>steps</th><th>wall s</th><th>steps/s</th></tr>"
    rows = [(task, figs) for task, figs in summary["per_task"].items()]
    rows.append(("all", summary))
    body = "".join(
        f"<tr><td>{escape(name)}</td><td>{f['episodes']}</td>"
        f"<td>{format_rate(f['success_rate'], f['success_ci'])}</td>"
        f"<td>{f['progress']:.1%}</td>"
        f"<td>{f['mean_reward']:.3f}</td><td>{f['steps']}</td><td>{f['wall_seconds']:.1f}</td>"
        f"<td>{f['steps_per_second']:.2f}</td></tr>"
        for name, f in rows
    )
    return f"<table>{head}{body}</table>"


def _sampled_table(sampled: dict[str, Any] | None) -> str:
    if not sampled:
        return ""
    temperatures = ", ".join(f"{t:g}" for t in sampled["temperatures"])
    return f"<h2>Sampled at temperature {escape(temperatures)}</h2>{_table(sampled)}"


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


def _frame(step: StepRecord, width: int, height: int) -> str:
    if step.screenshot is None:
        return ""
    shown_h = round(THUMB_WIDTH * height / width) if width else THUMB_WIDTH
    marker = (
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="8" refY="5" markerWidth="4" '
        'markerHeight="4" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#00c853"/></marker></defs>'
    )
    overlay = action_svg(step.action, width, height)
    caption = escape(step.action_text or describe_action(step.action))
    error = f'<div class="cap err">{escape(step.error)}</div>' if step.error else ""
    reward = f" · r={step.reward:+.2f}" if step.action_text != "final" else ""
    src = escape(quote(step.screenshot))
    return (
        f'<div><a class="frame" href="{src}" target="_blank" title="open full size">'
        f'<img src="{src}" width="{THUMB_WIDTH}" height="{shown_h}" loading="lazy" alt="step {step.step}">'
        f'<svg width="{THUMB_WIDTH}" height="{shown_h}" viewBox="0 0 {width} {height}" '
        f'preserveAspectRatio="none">{marker}{overlay}</svg></a>'
        f'<div class="cap">{step.step}. {caption[:80]}{reward}</div>{verdict_badge(step.verdict)}'
        f'{error}</div>'
    )


def verdict_badge(verdict: dict | None) -> str:
    """The step's verdict as a short coloured line: on the shortest path, off it, a step that
    fired nothing, or a dead end, with the distance to the goal before and after."""
    if not verdict:
        return ""
    before, after = verdict.get("distance_before"), verdict.get("distance_after")
    if after is None:
        kind, text = "bad", "✗ dead end"
    elif not verdict.get("transition_fired"):
        kind, text = "idle", "· no transition"
    elif verdict.get("on_shortest_path"):
        kind, text = "ok", "✓ on shortest path"
    else:
        kind, text = "bad", "✗ off the shortest path"
    goal = " · goal" if verdict.get("goal_reached") else ""
    distance = f"d {before}→{after if after is not None else '∞'}"
    return f'<div class="cap verdict {kind}">{text} · {distance}{goal}</div>'


def _episode(record: EpisodeRecord) -> str:
    status = '<span class="ok">success</span>' if record.success else '<span class="bad">fail</span>'
    error = f'<div class="err">infrastructure error: {escape(record.error)}</div>' if record.error else ""
    if record.agent_error:
        error += f'<div class="err">the agent raised: {escape(record.agent_error)}</div>'
    sampled = f" · sampled at T={record.temperature:g}" if record.temperature is not None else ""
    frames = "".join(_frame(s, record.width, record.height) for s in record.trajectory)
    if record.final_screenshot:
        final = StepRecord(step=record.steps, action=None, reward=record.reward,
                           raw_reward=record.raw_reward, screenshot=record.final_screenshot,
                           action_text="final")
        frames += _frame(final, record.width, record.height)
    return (
        f'<div class="episode" id="{escape(record.episode)}"><h3>{escape(record.task)} '
        f"· seed {record.seed} · #{record.index}{sampled} · {status} · reward {record.reward:.3f} "
        f"({escape(record.reward_mode)}) · progress {record.progress:.0%} "
        f"· {record.steps} steps · {record.wall_seconds:.1f}s</h3>"
        f"<div>{escape(record.instruction)}</div>{error}<div class=\"steps\">{frames}</div></div>"
    )


def render_report(summary: dict[str, Any], records: list[EpisodeRecord], title: str) -> str:
    """The whole report page as a string."""
    shown = records[:MAX_EPISODES]
    more = (f"<p>{len(records) - len(shown)} more episodes are in results.jsonl.</p>"
            if len(records) > len(shown) else "")
    failed = sum(1 for r in records if r.error)
    raised = sum(1 for r in records if r.agent_error)
    note = f"<p class='err'>{failed} episode(s) failed on infrastructure errors and are not scored.</p>" if failed else ""
    if raised:
        note += f"<p class='err'>{raised} episode(s) ended when the agent raised; scored as failures.</p>"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{escape(title)}</h1>{_table(summary)}"
        f"{_sampled_table(summary.get('sampled'))}{note}"
        f"{''.join(_episode(r) for r in shown)}{more}</body></html>"
    )


def write_report(path: Path, summary: dict[str, Any], records: list[EpisodeRecord],
                 title: str = "cua eval") -> Path:
    """Write report.html; screenshot paths in ``records`` are relative to its folder."""
    path.write_text(render_report(summary, records, title), encoding="utf-8")
    return path
