"""The UI-TARS text DSL: ``Thought: ...`` then ``Action: click(start_box='(x,y)')``.

Spellings follow ByteDance's prompts and ``codes/ui_tars/action_parser.py``: click,
left_double, right_single, drag(start_box, end_box), hotkey(key='ctrl c'),
type(content='...'), scroll(start_box, direction='down'), wait(), finished(content=...).
Boxes may be written ``'(x,y)'``, ``'<point>x y</point>'``,
``'<|box_start|>(x,y)<|box_end|>'`` or as a box ``'[x1, y1, x2, y2]'`` (its centre);
``point=``/``start_point=``/``end_point=`` are read as ``start_box``/``end_box``.

Extensions so that every action round-trips: ``hover(start_box=...)`` for a move;
``scroll(..., distance=N)`` when the distance is not DEFAULT_SCROLL_PX and
``scroll(start_box=..., dx=.., dy=..)`` for a diagonal scroll; ``wait(seconds=s)`` when
s is not the Wait default. The call text is parsed with ``ast`` and never executed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness.actions import (
    AgentAction,
    ClickElement,
    Done,
    Drag,
    Key,
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
    parse_error,
)
from harness.codecs.prompt import build_prompt
from harness.codecs.pyliteral import (
    WAIT_DEFAULT,
    Literal_,
    NotLiteral,
    ParsedCall,
    call_of,
    parse_module,
    plain,
    quote,
)

DEFAULT_SCROLL_PX = 300  # what a bare scroll(direction=...) means in pixels
_POINT_FUNCS = {
    "click": "click", "left_single": "click", "left_double": "double_click",
    "double_click": "double_click", "right_single": "right_click", "right_click": "right_click",
    "hover": "move", "mouse_move": "move", "move_to": "move",
}
_ENCODE_NAMES = {"click": "click", "double_click": "left_double",
                 "right_click": "right_single", "move": "hover"}
_KEY_FUNCS = ("hotkey", "press", "key")
SUPPORTED = (*_POINT_FUNCS, "drag", "select", "scroll", "type", *_KEY_FUNCS, "wait", "finished")
_ALIASES = {"point": "start_box", "start_point": "start_box", "end_point": "end_box"}
_DIRECTIONS = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}
_BOX_TOKENS = re.compile(r"<\|box_start\|>|<\|box_end\|>|</?point>|</?bbox>")
_NUMBER = r"\s*(-?\d+(?:\.\d+)?)\s*"
_BOX = re.compile(rf"[\[(]?{_NUMBER}(?:,|\s){_NUMBER}(?:(?:,|\s){_NUMBER}(?:,|\s){_NUMBER})?[\])]?")
_LOOSE_TEXT = re.compile(r"(type|finished)\(content=(['\"])(.*)\2\)\s*$", re.DOTALL)
_UNESCAPE = re.compile(r"\\(['\"\\nrt])")
MAX_CANDIDATES = 8
MAX_BOX_CHARS = 120  # the box regex backtracks; real boxes are a few dozen characters


class UITarsCodec:
    """UI-TARS ``Action: func(arg='...')`` lines."""

    name = "uitars"

    def __init__(self, options: CodecOptions | None = None) -> None:
        self.options = options or CodecOptions()

    def encode(self, action: AgentAction, *, size: Size | None = None) -> str:
        return f"Action: {_encode_call(action, encode_fields(action, self.options, size))}"

    def decode(self, text: str, *, size: Size | None = None) -> AgentAction:
        text = check_length(self.name, text)
        starts = [m.end() for m in re.finditer(r"Action:", text)][:MAX_CANDIDATES] or [0]
        problem = ""
        for start in starts:
            try:
                data = _fields(_parse_call(text[start:]))
            except NotLiteral as err:
                problem = str(err)
                continue
            return finish(self.name, data, self.options, size, text)
        raise parse_error(
            self.name, "'Action: ' and one call such as click(start_box='(x,y)')", text, problem,
        )

    def prompt(self) -> str:
        header = (
            "Reply in two lines: 'Thought: ' with your reasoning, then 'Action: ' with "
            "exactly one call from the list below. Inside quoted arguments escape ', \\ and "
            "newlines as \\', \\\\ and \\n."
        )
        notes = f"scroll(direction=...) without distance scrolls {DEFAULT_SCROLL_PX} pixels."
        return build_prompt(header, self.encode, self.options, notes)


def _box(x: object, y: object) -> str:
    return f"'({x},{y})'"


def _encode_call(action: AgentAction, f: dict[str, object]) -> str:
    if isinstance(action, ClickElement):
        return f"click(element={quote(action.element)})"
    if action.type in _ENCODE_NAMES:
        return f"{_ENCODE_NAMES[action.type]}(start_box={_box(f['x'], f['y'])})"
    if isinstance(action, Drag):
        return f"drag(start_box={_box(f['x'], f['y'])}, end_box={_box(f['to_x'], f['to_y'])})"
    if isinstance(action, Scroll):
        return f"scroll(start_box={_box(f['x'], f['y'])}, {_scroll_args(action.dx, action.dy)})"
    if isinstance(action, TypeText):
        return f"type(content={quote(action.text)})"
    if isinstance(action, Key):
        return f"hotkey(key={quote(' '.join(action.keys))})"
    if isinstance(action, Wait):
        return "wait()" if action.seconds == WAIT_DEFAULT else f"wait(seconds={action.seconds!r})"
    assert isinstance(action, Done)
    return "finished()" if action.answer is None else f"finished(content={quote(action.answer)})"


def _scroll_args(dx: int, dy: int) -> str:
    if dx and dy:
        return f"dx={dx}, dy={dy}"
    direction = ("left" if dx < 0 else "right") if dx else ("up" if dy < 0 else "down")
    amount = abs(dx or dy)
    return f"direction='{direction}'" + (f", distance={amount}" if amount != DEFAULT_SCROLL_PX else "")


def _parse_call(source: str) -> ParsedCall:
    source = source.strip()
    if source.endswith("```"):
        source = source[:-3].rstrip()
    try:
        statements = parse_module(source)
    except NotLiteral:
        loose = _LOOSE_TEXT.match(source)
        if loose is None:
            # Prose after the call: keep the first call, as UI-TARS's parser splits on ")\n".
            if ")\n" not in source:
                raise
            return _parse_call(source.split(")\n", 1)[0] + ")")
        # Models often leave quotes unescaped inside content: take everything between
        # the outer quotes, as UI-TARS's own parser does.
        content = _UNESCAPE.sub(lambda m: {"n": "\n", "r": "\r", "t": "\t"}.get(m[1], m[1]), loose[3])
        return ParsedCall(func=loose[1], owner=None, kwargs={"content": content})
    if not statements:
        raise NotLiteral("expected a call after 'Action:', got nothing")
    call = call_of(statements[0], source)
    if isinstance(call, str):
        raise NotLiteral(f"expected a call like click(...), got the bare name {short_repr(call, 40)}")
    return call


def _fields(call: ParsedCall) -> dict[str, object]:
    kw = {_ALIASES.get(k, k): v for k, v in call.kwargs.items()}
    func = call.func
    if func == "click" and "element" in kw and "start_box" not in kw:
        return {"type": "click_element", "element": kw["element"]}
    if func in _POINT_FUNCS:
        x, y = _point(kw, "start_box")
        return {"type": _POINT_FUNCS[func], "x": x, "y": y}
    if func in ("drag", "select"):
        (x, y), (to_x, to_y) = _point(kw, "start_box"), _point(kw, "end_box")
        return {"type": "drag", "x": x, "y": y, "to_x": to_x, "to_y": to_y}
    if func == "scroll":
        return _scroll_fields(kw)
    if func == "type":
        return {"type": "type_text", "text": kw.get("content")}
    if func in _KEY_FUNCS:
        return {"type": "key", "keys": _split_keys(kw.get("key", kw.get("hotkey")))}
    if func == "wait":
        return {"type": "wait", **({"seconds": plain(kw["seconds"])} if "seconds" in kw else {})}
    if func == "finished":
        return {"type": "done", "answer": kw.get("content")}
    raise NotLiteral(f"expected one of {', '.join(SUPPORTED)}, got {func}()")


def _scroll_fields(kw: Mapping[str, Literal_]) -> dict[str, object]:
    x, y = _point(kw, "start_box")
    if "dx" in kw or "dy" in kw:
        return {"type": "scroll", "x": x, "y": y, "dx": plain(kw.get("dx", 0)),
                "dy": plain(kw.get("dy", 0))}
    direction = kw.get("direction")
    if not isinstance(direction, str) or direction not in _DIRECTIONS:
        raise NotLiteral(f"expected direction='down'|'up'|'left'|'right', got {short_repr(direction, 40)}")
    amount = plain(kw.get("distance", DEFAULT_SCROLL_PX))
    if isinstance(amount, str | tuple):
        raise NotLiteral(f"expected a number for distance, got {short_repr(amount, 40)}")
    sx, sy = _DIRECTIONS[direction]
    return {"type": "scroll", "x": x, "y": y, "dx": sx * amount, "dy": sy * amount}


def _point(kw: Mapping[str, object], name: str) -> tuple[float | int, float | int]:
    value = kw.get(name)
    if not isinstance(value, str) or len(value) > MAX_BOX_CHARS:
        raise NotLiteral(f"expected {name}='(x,y)', got {short_repr(value, 40)}")
    match = _BOX.fullmatch(_BOX_TOKENS.sub(" ", value).strip())
    if match is None:
        raise NotLiteral(f"expected {name} as '(x,y)' or '<point>x y</point>', got {short_repr(value, 40)}")
    # int() where possible: float() would round pixel values beyond 2**53.
    nums = [float(g) if "." in g else int(g) for g in match.groups() if g is not None]
    if len(nums) == 4:
        return (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2
    return nums[0], nums[1]


def _split_keys(value: object) -> object:
    if not isinstance(value, str):
        return value  # validation names the bad value
    keys = []
    for token in value.split():
        keys.extend([token] if token == "+" or "+" not in token else [k for k in token.split("+") if k])
    return keys
