"""Qwen2.5-VL's ``computer_use`` tool call.

Follows the function definition in QwenLM's cookbook (``cookbooks/utils/
agent_function_call.py``): ``{"name": "computer_use", "arguments": {"action": ...}}``
inside ``<tool_call>`` tags, with actions ``key`` (``keys``), ``type`` (``text``),
``mouse_move``/``left_click``/``right_click``/``double_click`` (``coordinate``),
``left_click_drag``, ``scroll`` (``pixels``, positive = up), ``wait`` (``time``) and
``terminate`` (``status``), plus Qwen3-VL's ``answer`` (``text``). An element action is
``left_click`` with ``element`` (the label) instead of ``coordinate``.

Extensions, because the upstream tool keeps a cursor that a stateless codec lacks:
- ``left_click_drag`` carries ``start_coordinate``; without it, a preceding
  ``mouse_move`` tool call in the same reply supplies the start point;
- ``scroll`` carries ``coordinate`` (the point under the wheel; the screen centre when
  omitted and the size is known) and ``pixels_x`` for horizontal scrolling (positive =
  right), written only when non-zero.
"""

from __future__ import annotations

import json
import re

from harness.actions import (
    AgentAction,
    Click,
    ClickElement,
    Done,
    DoubleClick,
    Drag,
    Key,
    Move,
    RightClick,
    Scroll,
    TypeText,
    Wait,
    short_repr,
)
from harness.codecs.base import (
    CodecOptions,
    Size,
    check_length,
    encode_fields,
    finish,
    number,
    parse_error,
    screen_centre,
)
from harness.codecs.prompt import build_prompt

TOOL_NAME = "computer_use"
_POINT_ACTIONS = {
    "left_click": "click", "double_click": "double_click",
    "right_click": "right_click", "mouse_move": "move",
}
_ACTION_NAMES = {v: k for k, v in _POINT_ACTIONS.items()}
SUPPORTED = (*_POINT_ACTIONS, "left_click_drag", "scroll", "type", "key", "wait",
             "terminate", "answer")
_DECODER = json.JSONDecoder()
MAX_CALLS = 8


class QwenCodec:
    """Qwen2.5-VL computer_use tool calls."""

    name = "qwen"

    def __init__(self, options: CodecOptions | None = None) -> None:
        self.options = options or CodecOptions()

    def encode(self, action: AgentAction, *, size: Size | None = None) -> str:
        f = encode_fields(action, self.options, size)
        call = {"name": TOOL_NAME, "arguments": _arguments(action, f)}
        return f"<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>"

    def decode(self, text: str, *, size: Size | None = None) -> AgentAction:
        text = check_length(self.name, text)
        calls = _tool_calls(text)
        if not calls:
            raise parse_error(
                self.name,
                f'<tool_call>{{"name": "{TOOL_NAME}", "arguments": {{"action": ...}}}}</tool_call>',
                text, "reply with one tool call holding a JSON object",
            )
        data = self._fields(calls, size, text)
        return finish(self.name, data, self.options, size, text)

    def prompt(self) -> str:
        header = (
            f"Act by calling the {TOOL_NAME} tool exactly once per reply: one JSON object "
            f'{{"name": "{TOOL_NAME}", "arguments": {{"action": ..., ...}}}} inside '
            "<tool_call></tool_call> tags, as in the examples below. In scroll, positive "
            "pixels scroll up and negative pixels scroll down."
        )
        return build_prompt(header, self.encode, self.options)

    def _fields(self, calls: list[dict[str, object]], size: Size | None, text: str) -> dict[str, object]:
        args = calls[0]
        action = args.get("action")
        if not isinstance(action, str):
            raise parse_error(self.name, f"a string action among {', '.join(SUPPORTED)}", text,
                              f"action was {short_repr(action, 60)}")
        if action == "left_click" and "element" in args and "coordinate" not in args:
            return {"type": "click_element", "element": args["element"]}
        if action in _POINT_ACTIONS:
            if action == "mouse_move" and len(calls) > 1 and _is_bare_drag(calls[1]):
                start = _point(self.name, args, "coordinate", text)
                end = _point(self.name, calls[1], "coordinate", text)
                return {"type": "drag", "x": start[0], "y": start[1], "to_x": end[0], "to_y": end[1]}
            x, y = _point(self.name, args, "coordinate", text)
            return {"type": _POINT_ACTIONS[action], "x": x, "y": y}
        if action == "left_click_drag":
            if "start_coordinate" not in args:
                raise parse_error(
                    self.name, "start_coordinate [x, y] in left_click_drag", text,
                    "add start_coordinate, or a mouse_move call to the start point before it",
                )
            x, y = _point(self.name, args, "start_coordinate", text)
            to_x, to_y = _point(self.name, args, "coordinate", text)
            return {"type": "drag", "x": x, "y": y, "to_x": to_x, "to_y": to_y}
        if action == "scroll":
            return self._scroll(args, size, text)
        return _simple(self.name, action, args, text)

    def _scroll(self, args: dict[str, object], size: Size | None, text: str) -> dict[str, object]:
        centre = screen_centre(self.options, size)
        if "coordinate" in args:
            x, y = _point(self.name, args, "coordinate", text)
        elif centre is not None:
            x, y = centre
        else:
            raise parse_error(self.name, "coordinate [x, y] in scroll", text,
                              "say where to scroll")
        dx = number(self.name, "pixels_x", args.get("pixels_x", 0), text)
        dy = -number(self.name, "pixels", args.get("pixels", 0), text)
        return {"type": "scroll", "x": x, "y": y, "dx": dx, "dy": dy}


def _arguments(action: AgentAction, f: dict[str, object]) -> dict[str, object]:
    if isinstance(action, ClickElement):
        return {"action": "left_click", "element": action.element}
    if isinstance(action, Drag):
        return {"action": "left_click_drag", "start_coordinate": [f["x"], f["y"]],
                "coordinate": [f["to_x"], f["to_y"]]}
    if isinstance(action, Scroll):
        args = {"action": "scroll", "coordinate": [f["x"], f["y"]], "pixels": -action.dy}
        return args | ({"pixels_x": action.dx} if action.dx else {})
    if isinstance(action, Click | DoubleClick | RightClick | Move):
        return {"action": _ACTION_NAMES[action.type], "coordinate": [f["x"], f["y"]]}
    if isinstance(action, TypeText):
        return {"action": "type", "text": action.text}
    if isinstance(action, Key):
        return {"action": "key", "keys": list(action.keys)}
    if isinstance(action, Wait):
        return {"action": "wait", "time": action.seconds}
    assert isinstance(action, Done)
    if action.answer is None:
        return {"action": "terminate", "status": "success"}
    return {"action": "answer", "text": action.answer}


def _simple(codec: str, action: object, args: dict[str, object], text: str) -> dict[str, object]:
    if action == "type":
        return {"type": "type_text", "text": args.get("text")}
    if action == "key":
        keys = args.get("keys", args.get("text"))
        if isinstance(keys, str):
            keys = [keys] if keys == "+" else [k for k in re.split(r"[+\s]+", keys) if k]
        return {"type": "key", "keys": keys}
    if action == "wait":
        return {"type": "wait", **({"seconds": args["time"]} if "time" in args else {})}
    if action == "terminate":
        return {"type": "done"}
    if action == "answer":
        return {"type": "done", "answer": args.get("text")}
    raise parse_error(codec, f"an action among {', '.join(SUPPORTED)}", text,
                      f"action was {short_repr(action, 60)}")


def _is_bare_drag(args: dict[str, object]) -> bool:
    return args.get("action") == "left_click_drag" and "start_coordinate" not in args


def _point(codec: str, args: dict[str, object], key: str, text: str) -> tuple[object, object]:
    value = args.get(key)
    if not isinstance(value, list) or len(value) != 2:
        raise parse_error(codec, f"{key} as [x, y]", text, f"{key} was {short_repr(value, 60)}")
    return value[0], value[1]


def _tool_calls(text: str) -> list[dict[str, object]]:
    """The arguments of each computer_use call, in order.

    The JSON decoder, not a regex, finds where each call ends, so a "</tool_call>"
    inside a typed string does not cut the call short.
    """
    calls: list[dict[str, object]] = []
    tagged = "<tool_call>" in text
    pos = text.find("<tool_call>") if tagged else 0
    while pos != -1 and len(calls) < MAX_CALLS:
        obj, end = _first_object(text, pos)
        if obj is None:
            break
        args = obj.get("arguments", obj if "action" in obj else None)
        if isinstance(args, str):
            args = _first_object(args, 0)[0]
        if isinstance(args, dict) and obj.get("name", TOOL_NAME) == TOOL_NAME:
            calls.append(args)
        pos = text.find("<tool_call>", end) if tagged else end
    return calls


def _first_object(text: str, start: int) -> tuple[dict[str, object] | None, int]:
    """The first JSON object at or after ``start`` (a few tries), and where it ends."""
    start = text.find("{", start)
    for _ in range(MAX_CALLS):
        if start == -1:
            break
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            value, end = None, start
        if isinstance(value, dict):
            return value, end
        start = text.find("{", start + 1)
    return None, -1
