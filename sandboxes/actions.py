"""The typed action space: a pydantic discriminated union.

Every action is frozen data. Coordinates are integer pixels in *screenshot*
space; use the helpers at the bottom to move between screenshot pixels, the
0-1000 normalized space many VLMs emit, and viewport pixels when a screenshot
is resized before it reaches the model.

It lives in ``sandboxes`` because sandboxes execute it and import nothing of the
harness; ``harness.actions`` re-exports every name. Every field is bounded here
(coordinates, scroll deltas, text length, wait), so a model's absurd numbers are
refused as the agent's mistake before they reach a sandbox.
"""

from __future__ import annotations

import re
import reprlib
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
)

NORMALIZED_MAX = 1000
#: Largest coordinate any action may carry (screens are smaller; the env also checks
#: every point against the screenshot it showed).
MAX_COORDINATE = 16_384
#: Largest wheel delta per scroll action, in pixels (Chromium refuses far larger ones).
MAX_SCROLL = 10_000
#: Longest text one type_text action may type (or a done action may answer).
MAX_TEXT_CHARS = 4_096
#: Longest wait one action may ask for, in seconds.
MAX_WAIT_S = 60.0
#: Time allowed per typed character on top of a sandbox's action timeout: typing sends
#: each character as its own key events (about 8 ms each in Chromium here; 3x for a
#: loaded machine), so 4096 characters legitimately take half a minute.
TYPE_SECONDS_PER_CHAR = 0.025

# Canonical key names. Codecs map their own spellings onto these; sandboxes map
# these onto their input backend (Playwright key names, X keysyms).
MODIFIER_KEYS = ("ctrl", "shift", "alt", "meta")
NAMED_KEYS = (
    "enter", "tab", "escape", "backspace", "delete", "space", "insert",
    "up", "down", "left", "right", "home", "end", "pageup", "pagedown",
    *(f"f{i}" for i in range(1, 13)),
)
KEY_ALIASES = {
    "return": "enter", "esc": "escape", "del": "delete", "control": "ctrl",
    "cmd": "meta", "command": "meta", "super": "meta", "win": "meta", "option": "alt",
    "arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right",
    "page_up": "pageup", "page_down": "pagedown", "pgup": "pageup", "pgdn": "pagedown",
    "spacebar": "space", " ": "space", "back_space": "backspace", "escape_key": "escape",
}


def canonical_key(name: str) -> str:
    """Map a key spelling onto its canonical name; raise ValueError if unknown."""
    if len(name) == 1 and name.isprintable() and name != " ":
        # Some letters lower-case to two code points ("İ" -> "i̇"); keep those as they
        # are so that canonical_key(canonical_key(k)) == canonical_key(k).
        lowered = name.lower()
        return lowered if name.isalpha() and len(lowered) == 1 else name
    lowered = name.strip().lower()
    lowered = KEY_ALIASES.get(lowered, lowered)
    if lowered in MODIFIER_KEYS or lowered in NAMED_KEYS:
        return lowered
    if len(lowered) == 1 and lowered.isprintable():
        return lowered
    raise ValueError(
        f"expected a single printable character or one of {', '.join(MODIFIER_KEYS + NAMED_KEYS)}, "
        f"got {name!r}"
    )


def _number(value: object) -> object:
    """Refuse what pydantic's lax mode would turn into a number (``true`` -> 1, ``"7"`` -> 7)."""
    if isinstance(value, bool | str | bytes):
        raise ValueError(f"expected a number, got {type(value).__name__} {value!r:.20}")
    return value


_SURROGATES = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD: what the env does to a model's
    raw text before anything stores, prints or serializes it (UTF-8 cannot carry them)."""
    return text if text.isascii() else _SURROGATES.sub("\ufffd", text)


def _unicode(text: str) -> str:
    """Refuse lone surrogates: no browser, store or file can carry them."""
    for index, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            raise ValueError(f"expected text of valid Unicode, got a lone surrogate {char!r} at "
                             f"index {index}; send characters, not halves of UTF-16 pairs")
    return text


#: Numeric action fields take numbers only; integral floats (3.0) still count as ints.
Int = Annotated[int, BeforeValidator(_number)]
Float = Annotated[float, BeforeValidator(_number)]
#: Text fields hold valid Unicode only.
Text = Annotated[str, AfterValidator(_unicode)]


class _ShortRepr(reprlib.Repr):
    """reprlib's bounded repr (depth, items, string lengths), and an integer Python will
    not print (more than 4300 digits; a model can write one) described by its size."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 256:
            return f"<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_SHORT = _ShortRepr()
_SHORT.maxstring = _SHORT.maxother = _SHORT.maxlong = 160


def short_repr(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages about a model's
    output; never raises, whatever the value holds."""
    try:
        text = _SHORT.repr(value)
    except (ValueError, RecursionError):
        return f"<a {type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[:limit] + "..."


class _Action(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Point(_Action):
    x: Int = Field(ge=0, le=MAX_COORDINATE, description="x in screenshot pixels")
    y: Int = Field(ge=0, le=MAX_COORDINATE, description="y in screenshot pixels")


class Click(_Point):
    """Left-click at a point."""

    type: Literal["click"] = "click"


class DoubleClick(_Point):
    """Double-click at a point."""

    type: Literal["double_click"] = "double_click"


class RightClick(_Point):
    """Right-click at a point."""

    type: Literal["right_click"] = "right_click"


class Move(_Point):
    """Move the pointer to a point without clicking (hover)."""

    type: Literal["move"] = "move"


class Drag(_Point):
    """Press at (x, y), move to (to_x, to_y), release."""

    type: Literal["drag"] = "drag"
    to_x: Int = Field(ge=0, le=MAX_COORDINATE, description="end x in screenshot pixels")
    to_y: Int = Field(ge=0, le=MAX_COORDINATE, description="end y in screenshot pixels")


class Scroll(_Point):
    """Scroll the wheel at a point; positive dy scrolls down, positive dx right."""

    type: Literal["scroll"] = "scroll"
    dx: Int = Field(default=0, ge=-MAX_SCROLL, le=MAX_SCROLL,
                    description="horizontal wheel delta in pixels")
    dy: Int = Field(default=0, ge=-MAX_SCROLL, le=MAX_SCROLL,
                    description="vertical wheel delta in pixels")


class TypeText(_Action):
    """Type text into the focused element."""

    type: Literal["type_text"] = "type_text"
    text: Text = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="the text to type")


class Key(_Action):
    """Press a key or a combination, e.g. ("ctrl", "a"); modifiers first."""

    type: Literal["key"] = "key"
    keys: tuple[str, ...] = Field(min_length=1, max_length=4, description="canonical key names")

    @field_validator("keys")
    @classmethod
    def _canonical(cls, keys: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(canonical_key(k) for k in keys)


class Wait(_Action):
    """Do nothing for a while (let the page settle)."""

    type: Literal["wait"] = "wait"
    seconds: Float = Field(default=1.0, ge=0.0, le=MAX_WAIT_S, description="how long to wait")


class Done(_Action):
    """Declare the task finished, optionally with an answer."""

    type: Literal["done"] = "done"
    answer: Text | None = Field(default=None, max_length=MAX_TEXT_CHARS,
                               description="the answer, for question tasks")


Action = Annotated[
    Click | DoubleClick | RightClick | Move | Drag | Scroll | TypeText | Key | Wait | Done,
    Field(discriminator="type"),
]
ACTION_TYPES: tuple[type[_Action], ...] = (
    Click, DoubleClick, RightClick, Move, Drag, Scroll, TypeText, Key, Wait, Done,
)
POINTER_ACTIONS: tuple[type[_Point], ...] = (Click, DoubleClick, RightClick, Move, Drag, Scroll)
action_adapter: TypeAdapter[Action] = TypeAdapter(Action)


def parse_action(data: object) -> Action:
    """Validate a dict (or JSON-like object) into an Action."""
    return action_adapter.validate_python(data)


def duration_s(action: Action) -> float:
    """The time executing ``action`` takes by design (a wait's seconds, typing's characters);
    sandboxes and the env add it to their time limits, so that no valid action can run past
    them."""
    if isinstance(action, Wait):
        return action.seconds
    if isinstance(action, TypeText):
        return len(action.text) * TYPE_SECONDS_PER_CHAR
    return 0.0


def outside(action: Action, width: int, height: int, area: str = "screenshot") -> str | None:
    """An agent-error message if a point of ``action`` lies outside a width x height
    ``area`` (the env checks the screenshot, the browser sandbox its viewport); else None."""
    if not isinstance(action, POINTER_ACTIONS):
        return None
    points = [("", action.x, action.y)]
    if isinstance(action, Drag):
        points.append(("end ", action.to_x, action.to_y))
    for label, x, y in points:
        if not (0 <= x < width and 0 <= y < height):
            return (
                f"{action.type} {label}point ({x}, {y}) is outside the {width}x{height} {area}; "
                f"expected 0 <= x < {width} and 0 <= y < {height}"
            )
    return None


# ---- coordinate spaces ---------------------------------------------------------------------


def to_normalized(x: int, y: int, width: int, height: int) -> tuple[int, int]:
    """Screenshot pixels -> 0..1000 normalized coordinates."""
    _check_size(width, height)
    return (round(x * NORMALIZED_MAX / width), round(y * NORMALIZED_MAX / height))


def from_normalized(nx: float, ny: float, width: int, height: int) -> tuple[int, int]:
    """0..1000 normalized coordinates -> screenshot pixels, clamped inside the image."""
    _check_size(width, height)
    x = min(max(round(nx * width / NORMALIZED_MAX), 0), width - 1)
    y = min(max(round(ny * height / NORMALIZED_MAX), 0), height - 1)
    return (x, y)


def rescale(x: int, y: int, src: tuple[int, int], dst: tuple[int, int]) -> tuple[int, int]:
    """Map a point from an image of size src=(w, h) to one of size dst=(w, h)."""
    _check_size(*src)
    _check_size(*dst)
    return (round(x * dst[0] / src[0]), round(y * dst[1] / src[1]))


def rescale_action(action: Action, src: tuple[int, int], dst: tuple[int, int]) -> Action:
    """Rescale every coordinate of a pointer action from src size to dst size."""
    if not isinstance(action, POINTER_ACTIONS):
        return action
    x, y = rescale(action.x, action.y, src, dst)
    update: dict[str, int] = {"x": x, "y": y}
    if isinstance(action, Drag):
        update["to_x"], update["to_y"] = rescale(action.to_x, action.to_y, src, dst)
    return action.model_copy(update=update)


def _check_size(width: int, height: int) -> None:
    if width <= 0 or height <= 0:
        raise ValueError(f"expected a positive image size, got {width}x{height}")
