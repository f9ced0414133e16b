"""System-prompt text generated from the action models themselves.

Each action type contributes its docstring, its fields' descriptions, and an example
produced by *encoding* a sample instance with the codec at hand, so the prompt can
never drift from what the decoder accepts. Adding an action or a field to
``harness/actions.py`` changes every prompt; a field without a sample value here fails
loudly (and in the tests) instead of silently dropping out.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel

from harness.actions import (
    ACTION_TYPES,
    ELEMENT_ACTIONS,
    MODIFIER_KEYS,
    NAMED_KEYS,
    NORMALIZED_MAX,
    POINTER_ACTIONS,
    AgentAction,
    Scroll,
    parse_agent_action,
)
from harness.codecs.base import CodecOptions, Size

# Distinct values so that a reader can match each field to its place in the syntax.
EXAMPLE_VALUES: dict[str, object] = {
    "x": 640, "y": 360, "to_x": 900, "to_y": 420, "dx": 0, "dy": 300,
    "text": "hello world", "keys": ("ctrl", "c"), "seconds": 1.0, "answer": "42",
    "element": "Add to cart",
}
# Encoding the examples in normalized mode against this size keeps the numbers as written.
EXAMPLE_SIZE: Size = (NORMALIZED_MAX, NORMALIZED_MAX)
_PIXEL_WORDS = "screenshot pixels"
_NORMALIZED_WORDS = f"normalized 0-{NORMALIZED_MAX} units"


def offered_types(options: CodecOptions) -> tuple[type[BaseModel], ...]:
    """The action types a prompt offers in the codec's action space."""
    if options.action_space == "pixels":
        return ACTION_TYPES
    if options.action_space == "elements":
        point_free = [c for c in ACTION_TYPES if c not in POINTER_ACTIONS or c is Scroll]
        return (*ELEMENT_ACTIONS, *point_free)
    return (*ACTION_TYPES, *ELEMENT_ACTIONS)


def example_actions(options: CodecOptions | None = None) -> list[AgentAction]:
    """One sample instance of every action type offered, built from EXAMPLE_VALUES."""
    examples = []
    for cls in offered_types(options or CodecOptions()):
        fields = {}
        for name in cls.model_fields:
            if name == "type":
                continue
            if name not in EXAMPLE_VALUES:
                raise ValueError(
                    f"expected an example value for field {cls.__name__}.{name} in "
                    "harness/codecs/prompt.py EXAMPLE_VALUES, got none; add one"
                )
            fields[name] = EXAMPLE_VALUES[name]
        examples.append(parse_agent_action({"type": cls.model_fields["type"].default, **fields}))
    return examples


def describe_fields(cls: type, options: CodecOptions) -> str:
    """``name=value (description)`` for every field but the tag, from the model."""
    parts = []
    for name, info in cls.model_fields.items():  # type: ignore[attr-defined]
        if name == "type":
            continue
        text = info.description or ""
        if options.coordinates == "normalized":
            text = text.replace(_PIXEL_WORDS, _NORMALIZED_WORDS)
        if not info.is_required():
            text += f"; optional, default {info.default!r}"
        parts.append(f"{name}={EXAMPLE_VALUES[name]!r} ({text})")
    return "; ".join(parts)


ELEMENT_SENTENCE = (
    "An element action names an element of the Elements list as listed: its label, and where "
    "the list says where it sits, that too (Archive in row \"Lunch on Friday?\"); to type "
    "into a field, click it, then type the text."
)


def coordinate_sentence(options: CodecOptions) -> str:
    if options.coordinates == "normalized":
        return (
            f"Coordinates are normalized to 0-{NORMALIZED_MAX} on both axes: (0, 0) is the "
            f"top-left corner of the screenshot and ({NORMALIZED_MAX}, {NORMALIZED_MAX}) "
            "the bottom-right."
        )
    return (
        "Coordinates are integer pixels of the screenshot: (0, 0) is the top-left corner, "
        "x grows to the right and y grows downwards."
    )


class Encode(Protocol):
    """A codec's ``encode``."""

    def __call__(self, action: AgentAction, *, size: Size | None = None) -> str: ...


def build_prompt(
    header: str, encode: Encode, options: CodecOptions, notes: str = ""
) -> str:
    """The action-space description: header, coordinates, one entry per action type."""
    lines = [header.strip(), "", coordinate_sentence(options)]
    if options.action_space != "pixels":
        lines.append(ELEMENT_SENTENCE)
    lines += ["", "Available actions:"]
    for action in example_actions(options):
        cls = type(action)
        example = encode(action, size=EXAMPLE_SIZE)
        doc = (cls.__doc__ or cls.__name__).strip()
        lines.append(f"- {cls.__name__}: {doc}")
        lines.append(f"  Fields: {describe_fields(cls, options)}.")
        lines.extend("    " + line for line in example.splitlines())
    lines += [
        "",
        f"Key names: {', '.join(MODIFIER_KEYS + NAMED_KEYS)}, or any single printable "
        "character; modifiers come first in a combination.",
    ]
    if notes:
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"
