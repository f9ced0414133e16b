"""A pyautogui-call subset, as OSWorld-style agents write it; parsed with ``ast``, never run.

Accepted calls (``pyautogui.`` prefix required): click (``button='right'`` / ``clicks=2``
too), doubleClick, rightClick, moveTo, dragTo (after a moveTo: the drag starts at the
pointer), scroll / hscroll (in wheel clicks of SCROLL_CLICK_PX pixels; positive scroll
is up, positive hscroll right), write / typewrite, press, hotkey; ``time.sleep(s)``;
the OSWorld sentinels ``WAIT``, ``DONE`` and ``FAIL`` (read as done without an answer),
and ``DONE(answer='...')`` for an answer. ``import`` lines are skipped; a click or
scroll without coordinates uses the point of the preceding moveTo. The first action
that is not a moveTo decides the result; a lone moveTo is a move.
"""

from __future__ import annotations

import re
from decimal import Decimal, localcontext

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
    screen_centre,
)
from harness.codecs.prompt import build_prompt
from harness.codecs.pyliteral import (
    WAIT_DEFAULT,
    NotLiteral,
    ParsedCall,
    call_of,
    decimal_literal,
    parse_module,
    plain,
    quote,
)

SCROLL_CLICK_PX = 100  # one wheel click, as Chromium reports it (WheelEvent.deltaY)
_CLICKS = {"click": "click", "doubleClick": "double_click", "rightClick": "right_click"}
_ENCODE = {"click": "click", "double_click": "doubleClick", "right_click": "rightClick",
           "move": "moveTo"}
_KEY_OUT = {"meta": "win"}
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
_CODE_LINE = re.compile(r"^\s*(pyautogui\.|time\.sleep|import |WAIT\b|DONE\b|FAIL\b)")
SUPPORTED = ("click", "doubleClick", "rightClick", "moveTo", "dragTo", "scroll", "hscroll",
             "write", "typewrite", "press", "hotkey", "time.sleep", "WAIT", "DONE", "FAIL")


class PyAutoGUICodec:
    """pyautogui calls such as ``pyautogui.click(x=10, y=20)``."""

    name = "pyautogui"

    def __init__(self, options: CodecOptions | None = None) -> None:
        self.options = options or CodecOptions()

    def encode(self, action: AgentAction, *, size: Size | None = None) -> str:
        f = encode_fields(action, self.options, size)
        if isinstance(action, ClickElement):
            return f"pyautogui.click(element={quote(action.element)})"
        if action.type in _ENCODE:
            return f"pyautogui.{_ENCODE[action.type]}(x={f['x']}, y={f['y']})"
        if isinstance(action, Drag):
            return (f"pyautogui.moveTo(x={f['x']}, y={f['y']})\n"
                    f"pyautogui.dragTo(x={f['to_x']}, y={f['to_y']}, button='left')")
        if isinstance(action, Scroll):
            return _encode_scroll(action, f)
        if isinstance(action, TypeText):
            return f"pyautogui.write({quote(action.text)})"
        if isinstance(action, Key):
            keys = ", ".join(quote(_KEY_OUT.get(k, k)) for k in action.keys)
            return f"pyautogui.{'press' if len(action.keys) == 1 else 'hotkey'}({keys})"
        if isinstance(action, Wait):
            return "WAIT" if action.seconds == WAIT_DEFAULT else f"time.sleep({action.seconds!r})"
        assert isinstance(action, Done)
        return "DONE" if action.answer is None else f"DONE(answer={quote(action.answer)})"

    def decode(self, text: str, *, size: Size | None = None) -> AgentAction:
        text = check_length(self.name, text)
        try:
            data = _Interpreter(self.options, size).run(_statements(text))
        except NotLiteral as err:
            raise parse_error(
                self.name, "pyautogui calls with literal arguments, e.g. pyautogui.click(x=10, y=20)",
                text, str(err),
            ) from None
        return finish(self.name, data, self.options, size, text)

    def prompt(self) -> str:
        header = (
            "Reply with Python code made only of the pyautogui calls shown below, with "
            "literal arguments (the code is parsed, not run). Write WAIT to wait and DONE "
            "when the task is complete."
        )
        notes = (f"scroll/hscroll count wheel clicks of {SCROLL_CLICK_PX} pixels; positive "
                 "scroll goes up, positive hscroll right.")
        return build_prompt(header, self.encode, self.options, notes)


def _encode_scroll(action: Scroll, f: dict[str, object]) -> str:
    at = f"x={f['x']}, y={f['y']}"
    lines = []
    if action.dy or not action.dx:
        lines.append(f"pyautogui.scroll({decimal_literal(-action.dy, SCROLL_CLICK_PX)}, {at})")
    if action.dx:
        lines.append(f"pyautogui.hscroll({decimal_literal(action.dx, SCROLL_CLICK_PX)}, {at})")
    return "\n".join(lines)


def _statements(text: str) -> list[ParsedCall | str]:
    fence = _FENCE.search(text)
    source = fence.group(1) if fence else text
    try:
        body = parse_module(source)
    except NotLiteral:
        # Prose around bare code: keep only the lines that look like calls.
        lines = [ln.strip() for ln in source.splitlines() if _CODE_LINE.match(ln)]
        if not lines:
            raise
        source = "\n".join(lines)
        body = parse_module(source)
    import_nodes = ("Import", "ImportFrom")
    return [call_of(s, source) for s in body if type(s).__name__ not in import_nodes]


class _Interpreter:
    """Walks the calls in order, tracking the pointer that moveTo sets; runs nothing."""

    def __init__(self, options: CodecOptions, size: Size | None) -> None:
        self.options, self.size = options, size
        self.cursor: tuple[object, object] | None = None

    def run(self, calls: list[ParsedCall | str]) -> dict[str, object]:
        for index, call in enumerate(calls):
            if isinstance(call, str):
                return _sentinel(call)
            if call.owner == "time" and call.func == "sleep":
                return {"type": "wait", "seconds": plain(_arg(call, 0, "seconds"))}
            if call.owner is None and call.func == "DONE":
                return {"type": "done", "answer": _arg(call, 0, "answer", None)}
            if call.owner != "pyautogui":
                raise NotLiteral(f"expected one of {', '.join(SUPPORTED)}, got "
                                 f"{call.owner + '.' if call.owner else ''}{call.func}()")
            if call.func == "moveTo":
                self.cursor = self._point(call, required=True)
                continue
            return self._action(call, calls[index + 1:])
        if self.cursor is None:
            raise NotLiteral("expected at least one pyautogui call, got none")
        return {"type": "move", "x": self.cursor[0], "y": self.cursor[1]}

    def _action(self, call: ParsedCall, rest: list[ParsedCall | str]) -> dict[str, object]:
        func = call.func
        if func == "click" and "element" in call.kwargs and "x" not in call.kwargs:
            return {"type": "click_element", "element": call.kwargs["element"]}
        if func in _CLICKS:
            x, y = self._point(call, required=True)
            return {"type": _click_type(call), "x": x, "y": y}
        if func == "dragTo":
            if self.cursor is None:
                raise NotLiteral("expected pyautogui.moveTo(start) before dragTo, got dragTo alone")
            (x, y), (to_x, to_y) = self.cursor, self._point(call, required=True)
            return {"type": "drag", "x": x, "y": y, "to_x": to_x, "to_y": to_y}
        if func in ("scroll", "hscroll"):
            return self._scroll(call, rest)
        if func in ("write", "typewrite"):
            text = _arg(call, 0, "message")
            if not isinstance(text, str):
                raise NotLiteral(f"expected a string to {func}, got {short_repr(text, 40)}")
            return {"type": "type_text", "text": text}
        if func == "press":
            key = _arg(call, 0, "keys")
            if not isinstance(key, str):
                raise NotLiteral(f"expected one key name for press, got {short_repr(key, 40)}; use hotkey")
            return {"type": "key", "keys": [key]}
        if func == "hotkey":
            return {"type": "key", "keys": list(call.args)}
        raise NotLiteral(f"expected one of {', '.join(SUPPORTED)}, got pyautogui.{func}()")

    def _scroll(self, call: ParsedCall, rest: list[ParsedCall | str]) -> dict[str, object]:
        x, y = self._point(call, required=False)
        delta = {"dx": 0, "dy": 0}
        for part in [call, *rest[:1]]:
            if not isinstance(part, ParsedCall) or part.func not in ("scroll", "hscroll"):
                break
            if part is not call and (part.func == call.func or self._point(part, False) != (x, y)):
                break  # only a scroll + hscroll pair at one point merges into one action
            amount = _clicks_to_px(_arg(part, 0, "clicks"))
            if part.func == "scroll":
                delta["dy"] = -amount
            else:
                delta["dx"] = amount
        return {"type": "scroll", "x": x, "y": y, **delta}

    def _point(self, call: ParsedCall, required: bool) -> tuple[object, object]:
        args, kw = call.args, call.kwargs
        if "x" in kw or "y" in kw:
            return plain(kw.get("x")), plain(kw.get("y"))
        if args and isinstance(args[0], tuple) and len(args[0]) == 2:
            return plain(args[0][0]), plain(args[0][1])
        if call.func not in ("scroll", "hscroll") and len(args) >= 2:
            return plain(args[0]), plain(args[1])
        if self.cursor is not None:
            return self.cursor
        centre = screen_centre(self.options, self.size)
        if not required and centre is not None:
            return centre
        raise NotLiteral(f"expected x= and y= in pyautogui.{call.func}(), got none")


def _sentinel(name: str) -> dict[str, object]:
    if name == "WAIT":
        return {"type": "wait"}
    if name in ("DONE", "FAIL"):
        return {"type": "done"}
    raise NotLiteral(f"expected WAIT, DONE or FAIL, got the name {short_repr(name, 40)}")


def _click_type(call: ParsedCall) -> str:
    kind = _CLICKS[call.func]
    if call.func == "click":
        button, clicks = call.kwargs.get("button", "left"), call.kwargs.get("clicks", 1)
        if button not in ("left", "right") or clicks not in (1, 2):
            raise NotLiteral(f"expected button='left'|'right' and clicks=1|2, got {short_repr(button, 20)}, {short_repr(clicks, 20)}")
        kind = "right_click" if button == "right" else ("double_click" if clicks == 2 else "click")
    return kind


_MISSING = object()


def _arg(call: ParsedCall, index: int, name: str, default: object = _MISSING) -> object:
    if name in call.kwargs:
        return call.kwargs[name]
    if len(call.args) > index:
        return call.args[index]
    if default is _MISSING:
        raise NotLiteral(f"expected argument {name} in {call.func}(), got none")
    return default


def _clicks_to_px(clicks: object) -> int:
    if not isinstance(clicks, int | float | Decimal):
        raise NotLiteral(f"expected a number of wheel clicks, got {short_repr(clicks, 40)}")
    if isinstance(clicks, int):
        return clicks * SCROLL_CLICK_PX
    with localcontext() as ctx:
        ctx.prec = 1000  # literals are capped at 1e400, so this product is exact
        return int(round(Decimal(clicks) * SCROLL_CLICK_PX))
