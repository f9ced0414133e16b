"""Input through XTEST (python-xlib, in this process): pointer, wheel, keys and typing.

Typing handles the keyboard layout: each character maps to a keysym, the keysym to the
keycode and shift level the server's current keymap gives it; a character the layout
lacks (``é`` on a US layout, ``€``, CJK) is bound to a spare keycode (one with no keysym)
(bindings are kept, least recently used rebound first), the way xdotool does it. All of
a text's bindings are made before its first key press, so clients see every
``MappingNotify`` before any of its keys and refresh to one keymap that holds them all.
"""

from __future__ import annotations

from collections import OrderedDict

from Xlib import XK, X
from Xlib.display import Display
from Xlib.ext import xtest

#: Canonical key names (sandboxes.actions) -> X keysym names.
KEYSYM_NAMES: dict[str, str] = {
    "enter": "Return", "tab": "Tab", "escape": "Escape", "backspace": "BackSpace",
    "delete": "Delete", "space": "space", "insert": "Insert", "up": "Up", "down": "Down",
    "left": "Left", "right": "Right", "home": "Home", "end": "End", "pageup": "Prior",
    "pagedown": "Next", "ctrl": "Control_L", "shift": "Shift_L", "alt": "Alt_L", "meta": "Super_L",
    **{f"f{i}": f"F{i}" for i in range(1, 13)},
}
#: Characters typed as named keys.
CHAR_KEYSYMS = {"\n": XK.XK_Return, "\r": XK.XK_Return, "\t": XK.XK_Tab}
#: Steps a drag moves through between press and release (apps look for motion events).
DRAG_STEPS = 8


def char_keysym(char: str) -> int:
    """The X keysym of one character (Latin-1 as itself, the rest as Unicode keysyms)."""
    if char in CHAR_KEYSYMS:
        return CHAR_KEYSYMS[char]
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


class XInput:
    """Fake input on one X display. Not thread-safe: use it from one thread at a time."""

    def __init__(self, display_name: str) -> None:
        self.display = Display(display_name)
        self._keymap: dict[int, tuple[int, int]] = {}
        self._spares: list[int] = []
        self._bound: OrderedDict[int, int] = OrderedDict()  # keysym -> spare keycode, LRU first
        self.reload_keymap()

    def close(self) -> None:
        self.display.close()

    def reload_keymap(self) -> None:
        """Read the server's keymap: keysym -> (keycode, shift level 0/1), and spare keycodes."""
        first = self.display.display.info.min_keycode
        count = self.display.display.info.max_keycode - first + 1
        mapping = self.display.get_keyboard_mapping(first, count)
        self._keymap.clear()
        self._spares = []
        for offset, syms in enumerate(mapping):
            keycode = first + offset
            if not any(syms):
                self._spares.append(keycode)
            for level in (0, 1):
                if level < len(syms) and syms[level] and syms[level] not in self._keymap:
                    self._keymap[syms[level]] = (keycode, level)
        self._bound.clear()

    # ---- pointer ----------------------------------------------------------------------
    def move(self, x: int, y: int) -> None:
        xtest.fake_input(self.display, X.MotionNotify, x=x, y=y)

    def click(self, x: int, y: int, *, button: int = 1, count: int = 1) -> None:
        self.move(x, y)
        for _ in range(count):
            xtest.fake_input(self.display, X.ButtonPress, button)
            xtest.fake_input(self.display, X.ButtonRelease, button)
        self.sync()

    def drag(self, x: int, y: int, to_x: int, to_y: int) -> None:
        self.move(x, y)
        xtest.fake_input(self.display, X.ButtonPress, 1)
        self.sync()
        for step in range(1, DRAG_STEPS + 1):
            self.move(x + (to_x - x) * step // DRAG_STEPS, y + (to_y - y) * step // DRAG_STEPS)
            self.sync()
        xtest.fake_input(self.display, X.ButtonRelease, 1)
        self.sync()

    def scroll(self, x: int, y: int, dx: int, dy: int, pixels_per_tick: int) -> None:
        """Wheel clicks at (x, y): buttons 4/5 (up/down) and 6/7 (left/right)."""
        self.move(x, y)
        for delta, minus, plus in ((dy, 4, 5), (dx, 6, 7)):
            ticks = max(1, round(abs(delta) / pixels_per_tick)) if delta else 0
            for _ in range(ticks):
                button = plus if delta > 0 else minus
                xtest.fake_input(self.display, X.ButtonPress, button)
                xtest.fake_input(self.display, X.ButtonRelease, button)
        self.sync()

    # ---- keyboard ---------------------------------------------------------------------
    def key_combo(self, keys: tuple[str, ...]) -> None:
        """Press canonical keys in order (modifiers first), release them in reverse."""
        codes: list[int] = []
        for key in keys:
            if key in KEYSYM_NAMES:
                keycode, level = self._keycode(XK.string_to_keysym(KEYSYM_NAMES[key]))
            else:
                keycode, level = self._keycode(char_keysym(key))
            if level == 1 and self._shift() not in codes:
                codes.append(self._shift())
            codes.append(keycode)
        for code in codes:
            xtest.fake_input(self.display, X.KeyPress, code)
        for code in reversed(codes):
            xtest.fake_input(self.display, X.KeyRelease, code)
        self.sync()

    def type_text(self, text: str) -> None:
        """Type ``text`` character by character, with shift where the layout needs it.

        Every character the layout lacks is bound before the first key is sent: a client
        then refreshes its keymap once, to one that holds them all (rebinding between key
        presses raced with Tk, which dropped some of those characters)."""
        shift = self._shift()
        for keysym in dict.fromkeys(char_keysym(c) for c in text):
            self._keycode(keysym)
        for char in text:
            keycode, level = self._keycode(char_keysym(char))
            if level == 1:
                xtest.fake_input(self.display, X.KeyPress, shift)
            xtest.fake_input(self.display, X.KeyPress, keycode)
            xtest.fake_input(self.display, X.KeyRelease, keycode)
            if level == 1:
                xtest.fake_input(self.display, X.KeyRelease, shift)
        self.sync()

    def sync(self) -> None:
        """Round trip: the server has processed every request sent so far."""
        self.display.sync()

    def _shift(self) -> int:
        return self._keycode(XK.XK_Shift_L)[0]

    def _keycode(self, keysym: int) -> tuple[int, int]:
        """(keycode, level) of ``keysym``, binding it to a spare keycode if the layout lacks it."""
        found = self._keymap.get(keysym)
        if found is not None:
            return found
        keycode = self._bound.get(keysym)
        if keycode is not None:
            self._bound.move_to_end(keysym)
            return keycode, 0
        if len(self._bound) < len(self._spares):
            keycode = self._spares[len(self._bound)]
        else:
            _, keycode = self._bound.popitem(last=False)
        self.display.change_keyboard_mapping(keycode, [(keysym, keysym)])
        self.display.sync()
        self._bound[keysym] = keycode
        return keycode, 0
