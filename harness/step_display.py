"""How a page shows one step: the action drawn over its screenshot, and the verdict in words.

The eval report (``harness.evaluation.report``), the store's viewer (``harness.store.viewer``)
and the GRPO report's filmstrips draw steps the same way, so the drawing lives here, below
all of them. Each action is SVG shapes in the screenshot's own pixel space: a crosshair for
clicks and hovers, an arrow for drags and scrolls, a text label for typing, keys, waits and
done.
"""

from __future__ import annotations

from html import escape


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
