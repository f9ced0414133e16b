"""What every codec shares: the interface, the coordinate space, and error shaping.

A codec turns an :data:`~harness.actions.Action` into the text a model is trained to
emit and back. Decoders work in two stages so that every codec treats coordinates,
validation and errors the same way:

1. a codec-specific parser turns text into a plain dict shaped like the action model
   (``{"type": "click", "x": 12.0, "y": 40}``) with coordinates still in *model space*;
2. :func:`finish` maps the coordinates into screenshot pixels and validates the dict
   into an action, turning every failure into :class:`ActionParseError`.
"""

from __future__ import annotations

import math
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.actions import (
    ACTION_TYPES,
    ELEMENT_ACTIONS,
    NORMALIZED_MAX,
    AgentAction,
    from_normalized,
    parse_agent_action,
    short_repr,
    to_normalized,
)
from harness.errors import ActionParseError, ConfigError

Size = tuple[int, int]

# Longer model outputs are refused before parsing: no real action needs this much text,
# and it bounds the work an adversarial string can cause.
MAX_INPUT_CHARS = 32_768
EXCERPT_CHARS = 120
MAX_HINT_CHARS = 240
ACTION_NAMES: tuple[str, ...] = tuple(
    cls.model_fields["type"].default for cls in (*ACTION_TYPES, *ELEMENT_ACTIONS))
ActionSpace = Literal["pixels", "pixels+elements", "elements"]
COORDINATE_FIELDS = (("x", "y"), ("to_x", "to_y"))


class CodecOptions(BaseModel):
    """Options shared by every codec."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    coordinates: Literal["pixel", "normalized"] = Field(
        default="pixel",
        description="'pixel': screenshot pixels; 'normalized': 0-1000 on both axes "
        "(needs the screenshot size at encode and decode time)",
    )
    action_space: ActionSpace = Field(
        default="pixels",
        description="the actions the prompt offers: 'pixels' (pointer actions at points), "
        "'elements' (click_element by label, no point actions but scroll), or both; every "
        "codec decodes every action whatever this says",
    )


@runtime_checkable
class ActionCodec(Protocol):
    """Model text <-> action. ``size`` is the screenshot's (width, height)."""

    name: str
    options: CodecOptions

    def encode(self, action: AgentAction, *, size: Size | None = None) -> str: ...

    def decode(self, text: str, *, size: Size | None = None) -> AgentAction: ...

    def prompt(self) -> str: ...


#: What a codec parameter takes: a codec, a codec's name ("qwen", "uitars", ...), or None
#: for the default (``harness.env.resolve_codec`` makes the object).
CodecLike: TypeAlias = ActionCodec | str | None


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A quoted, truncated view of model text for error messages."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} chars)"


def parse_error(codec: str, expected: str, text: str, hint: str = "") -> ActionParseError:
    """Build the one error every decoder raises: what was expected and what arrived."""
    message = f"{codec} codec: expected {expected}, got {excerpt(text)}"
    if len(hint) > MAX_HINT_CHARS:
        hint = hint[:MAX_HINT_CHARS] + "..."
    return ActionParseError(f"{message}; {hint}" if hint else message)


def check_length(codec: str, text: object) -> str:
    """Refuse non-strings and oversized input before any parsing."""
    if not isinstance(text, str):
        raise ActionParseError(
            f"{codec} codec: expected model output as str, got {type(text).__name__}"
        )
    if len(text) > MAX_INPUT_CHARS:
        raise parse_error(
            codec, f"at most {MAX_INPUT_CHARS} characters", text, "emit one short action"
        )
    return text


def _need_size(size: Size | None, what: str) -> Size:
    if size is None:
        raise ConfigError(
            f"expected size=(width, height) to {what} normalized coordinates, got None; "
            "pass the screenshot size"
        )
    return size


def encode_fields(action: AgentAction, options: CodecOptions, size: Size | None) -> dict[str, object]:
    """The action as a dict with its coordinates in the codec's model space."""
    data = action.model_dump()
    if options.coordinates == "pixel":
        return data
    width, height = _need_size(size, "encode")
    for fx, fy in COORDINATE_FIELDS:
        if fx in data:
            data[fx], data[fy] = to_normalized(data[fx], data[fy], width, height)
    return data


def screen_centre(options: CodecOptions, size: Size | None) -> tuple[int, int] | None:
    """The middle of the screen in the codec's model space; None when that needs the
    screenshot size and none was given."""
    if options.coordinates == "normalized":
        return NORMALIZED_MAX // 2, NORMALIZED_MAX // 2
    if size is not None:
        return size[0] // 2, size[1] // 2
    return None


def number(codec: str, field: str, value: object, text: str) -> float:
    """``value`` if it is a finite int or float (not a bool, not a string), else a parse error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise parse_error(codec, f"a number for {field}", text, f"{field} was {short_repr(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise parse_error(codec, f"a finite number for {field}", text, f"{field} was {short_repr(value)}")
    return value


def _to_pixels(
    codec: str, data: dict[str, object], fields: tuple[str, str], options: CodecOptions,
    size: Size | None, text: str,
) -> None:
    fx, fy = fields
    nx = number(codec, fx, data[fx], text)
    ny = number(codec, fy, data[fy], text)
    if options.coordinates == "normalized":
        width, height = _need_size(size, "decode")
        for name, value in ((fx, nx), (fy, ny)):
            if not 0 <= value <= NORMALIZED_MAX:
                raise parse_error(
                    codec, f"{name} in 0..{NORMALIZED_MAX} (normalized)", text,
                    f"{name} was {short_repr(value)}",
                )
        data[fx], data[fy] = from_normalized(nx, ny, width, height)
        return
    for name, value, limit in ((fx, nx, size and size[0]), (fy, ny, size and size[1])):
        if value < 0 or (limit is not None and value >= limit):
            bound = f"0..{limit - 1}" if limit is not None else ">= 0"
            raise parse_error(
                codec, f"{name} in {bound} (screenshot pixels)", text,
                f"{name} was {short_repr(value)}; point inside the screenshot",
            )
    data[fx], data[fy] = round(nx), round(ny)


def finish(
    codec: str, data: dict[str, object], options: CodecOptions, size: Size | None, text: str
) -> AgentAction:
    """Map model-space coordinates to pixels and validate into an action."""
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in ACTION_NAMES:
        raise parse_error(codec, f"a type among {', '.join(ACTION_NAMES)}", text,
                          f"type was {short_repr(kind, 60)}")
    for fields in COORDINATE_FIELDS:
        if fields[0] in data or fields[1] in data:
            missing = [f for f in fields if f not in data]
            if missing:
                raise parse_error(codec, f"field {missing[0]}", text)
            _to_pixels(codec, data, fields, options, size, text)
    try:
        return parse_agent_action(data)
    except ValidationError as err:
        raise parse_error(
            codec, f"a valid {data.get('type', 'action')!s} action", text,
            describe_validation(err),
        ) from None


def describe_validation(err: ValidationError) -> str:
    """Pydantic's errors in one line: the field, what was wrong, the value."""
    parts = []
    for item in err.errors(include_url=False)[:3]:
        where = ".".join(str(p) for p in item["loc"]) or "action"
        value = short_repr(item.get("input"))
        parts.append(f"{where}: {item['msg']} (got {value})")
    return "; ".join(parts)
