"""Draw an action on a screenshot (for the viewer): crosshairs, drag arrows, key labels."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageDraw

_RED = (230, 30, 30)
_POINT_TYPES = {"click", "double_click", "right_click", "move", "drag", "scroll"}


def draw_action(image: Image.Image, action: dict[str, Any] | None) -> Image.Image:
    """A copy of ``image`` with ``action`` drawn on it; no-op for the root (no action)."""
    out = image.convert("RGB").copy()
    if action is None:
        return out
    draw = ImageDraw.Draw(out)
    kind = action.get("type", "")
    if kind in _POINT_TYPES:
        x, y = int(action["x"]), int(action["y"])
        r = max(6, min(out.size) // 40)
        draw.line((x - 2 * r, y, x + 2 * r, y), fill=_RED, width=2)
        draw.line((x, y - 2 * r, x, y + 2 * r), fill=_RED, width=2)
        draw.ellipse((x - r, y - r, x + r, y + r), outline=_RED, width=2)
        if kind == "double_click":
            draw.ellipse((x - 2 * r, y - 2 * r, x + 2 * r, y + 2 * r), outline=_RED, width=2)
        if kind == "drag":
            draw.line((x, y, int(action["to_x"]), int(action["to_y"])), fill=_RED, width=3)
        if kind == "scroll":
            dx, dy = int(action.get("dx", 0)), int(action.get("dy", 0))
            norm = max(abs(dx), abs(dy), 1)
            end = (x + 4 * r * dx // norm, y + 4 * r * dy // norm)
            draw.line((x, y, *end), fill=_RED, width=3)
    label = _label(action)
    if label:
        box = draw.textbbox((4, 4), label)
        draw.rectangle((box[0] - 3, box[1] - 3, box[2] + 3, box[3] + 3), fill=(255, 255, 200))
        draw.text((4, 4), label, fill=_RED)
    return out


def _label(action: dict[str, Any]) -> str:
    kind = action.get("type", "")
    if kind == "type_text":
        return f"type: {action.get('text', '')!s}"[:80]
    if kind == "key":
        return "key: " + "+".join(action.get("keys", ()))
    if kind == "done":
        return "done" + (f": {action['answer']}" if action.get("answer") else "")
    if kind == "wait":
        return f"wait {action.get('seconds', 1.0)}s"
    return kind
