"""The typed action space (defined in ``sandboxes.actions``, which executes it; re-exported
here so that harness code and users import actions from the harness), and a short
human label for an action."""

from __future__ import annotations

from typing import Any

from sandboxes.actions import (
    ACTION_TYPES,
    KEY_ALIASES,
    MAX_COORDINATE,
    MAX_SCROLL,
    MAX_TEXT_CHARS,
    MODIFIER_KEYS,
    NAMED_KEYS,
    NORMALIZED_MAX,
    POINTER_ACTIONS,
    Action,
    Click,
    Done,
    DoubleClick,
    Drag,
    Float,
    Int,
    Key,
    Move,
    RightClick,
    Scroll,
    TypeText,
    Wait,
    action_adapter,
    canonical_key,
    from_normalized,
    outside,
    parse_action,
    rescale,
    rescale_action,
    to_normalized,
)


def describe_action(action: Action | dict[str, Any] | None, text: str | None = None) -> str:
    """A short human label for an action, e.g. ``click(12, 40)`` or ``type_text("hi")``;
    for text that did not parse, the start of the text."""
    if action is None:
        return f"(unparsed) {text[:60]!r}" if text else "(no action)"
    action = (parse_action(action) if isinstance(action, dict) else action).model_dump()
    kind = action["type"]
    if "x" in action:
        extra = f", to=({action['to_x']}, {action['to_y']})" if kind == "drag" else ""
        extra += f", dy={action['dy']}" if kind == "scroll" else ""
        return f"{kind}({action['x']}, {action['y']}{extra})"
    if kind == "type_text":
        return f"type_text({action['text']!r})"
    if kind == "key":
        return "key(" + "+".join(action["keys"]) + ")"
    if kind == "done":
        return f"done({action['answer']!r})" if action.get("answer") else "done()"
    return f"wait({action.get('seconds', 1.0)})"


__all__ = [
    "ACTION_TYPES", "KEY_ALIASES", "MAX_COORDINATE", "MAX_SCROLL", "MAX_TEXT_CHARS",
    "MODIFIER_KEYS", "NAMED_KEYS", "NORMALIZED_MAX", "POINTER_ACTIONS", "Action", "Click",
    "Done", "DoubleClick", "Drag", "Float", "Int", "Key", "Move", "RightClick", "Scroll",
    "TypeText", "Wait", "action_adapter", "canonical_key", "describe_action", "from_normalized", "outside",
    "parse_action", "rescale", "rescale_action", "to_normalized",
]
