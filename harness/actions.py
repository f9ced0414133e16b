"""The typed action space (defined in ``sandboxes.actions``, which executes it; re-exported
here so that harness code and users import actions from the harness)."""

from __future__ import annotations

from sandboxes.actions import (
    ACTION_TYPES,
    KEY_ALIASES,
    MAX_COORDINATE,
    MAX_SCROLL,
    MAX_TEXT_CHARS,
    MAX_WAIT_S,
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
    Text,
    TypeText,
    Wait,
    action_adapter,
    canonical_key,
    duration_s,
    from_normalized,
    outside,
    parse_action,
    replace_surrogates,
    rescale,
    rescale_action,
    short_repr,
    to_normalized,
)

__all__ = [
    "ACTION_TYPES", "KEY_ALIASES", "MAX_COORDINATE", "MAX_SCROLL", "MAX_TEXT_CHARS", "MAX_WAIT_S",
    "MODIFIER_KEYS", "NAMED_KEYS", "NORMALIZED_MAX", "POINTER_ACTIONS", "Action", "Click",
    "Done", "DoubleClick", "Drag", "Float", "Int", "Key", "Move", "RightClick", "Scroll", "Text",
    "TypeText", "Wait", "action_adapter", "canonical_key", "duration_s", "from_normalized",
    "outside", "parse_action", "replace_surrogates", "rescale", "rescale_action", "short_repr", "to_normalized",
]
