"""Mapping typed actions (sandboxes.actions) onto Playwright's mouse and keyboard.

Coordinates are viewport CSS pixels (screenshots are taken at device scale 1, so
screenshot pixels and viewport pixels coincide).
"""

from __future__ import annotations

import asyncio

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from sandboxes.actions import (
    Action,
    Click,
    Done,
    DoubleClick,
    Drag,
    Key,
    Move,
    RightClick,
    Scroll,
    TypeText,
    Wait,
    outside,
)
from sandboxes.browser.nav import navigated_away

#: Canonical key names (sandboxes.actions) -> Playwright key names.
PLAYWRIGHT_KEYS: dict[str, str] = {
    "ctrl": "Control",
    "shift": "Shift",
    "alt": "Alt",
    "meta": "Meta",
    "enter": "Enter",
    "tab": "Tab",
    "escape": "Escape",
    "backspace": "Backspace",
    "delete": "Delete",
    "space": " ",
    "insert": "Insert",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "home": "Home",
    "end": "End",
    "pageup": "PageUp",
    "pagedown": "PageDown",
    **{f"f{i}": f"F{i}" for i in range(1, 13)},
}

#: Intermediate mouse moves of a drag, so pages that track mousemove (jQuery UI,
#: HTML5 drag and drop) see a gesture rather than a teleport.
DRAG_STEPS = 8

#: How often a wheel still waiting for its acknowledgement looks whether the page navigated.
WHEEL_LOOK_S = 0.25
_TWO_FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
#: Playwright messages meaning the browser refused an action's parameters (a character
#: that is no key of its keyboard layout, a value the protocol cannot carry): the agent's
#: mistake, reported in the observation, never a failure of the browser.
REFUSED_MARKERS = ("Unknown key", "Invalid parameters")


def playwright_key(name: str) -> str:
    """The Playwright name of a canonical key (single characters pass through)."""
    return PLAYWRIGHT_KEYS.get(name, name)


def outside_viewport(action: Action, width: int, height: int) -> str | None:
    """An agent-error message if any point of ``action`` lies outside the viewport."""
    return outside(action, width, height, "viewport")


async def perform(page: Page, action: Action) -> str | None:
    """Execute ``action`` on ``page``: None, or the agent's error when the browser refused
    the action's parameters. Other Playwright errors (the browser failing) raise."""
    try:
        await _perform(page, action)
    except PlaywrightError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if not any(marker in first for marker in REFUSED_MARKERS):
            raise
        hint = ("press keys of a US keyboard, or type other characters with type_text"
                if isinstance(action, Key) else "use values the browser accepts")
        return f"{action.type} refused by the browser: {first}; {hint}"
    return None


async def _perform(page: Page, action: Action) -> None:
    mouse, keyboard = page.mouse, page.keyboard
    if isinstance(action, Click):
        await mouse.click(action.x, action.y)
    elif isinstance(action, DoubleClick):
        await mouse.dblclick(action.x, action.y)
    elif isinstance(action, RightClick):
        await mouse.click(action.x, action.y, button="right")
    elif isinstance(action, Move):
        await mouse.move(action.x, action.y)
    elif isinstance(action, Drag):
        await mouse.move(action.x, action.y)
        await mouse.down()
        await mouse.move(action.to_x, action.to_y, steps=DRAG_STEPS)
        await mouse.up()
    elif isinstance(action, Scroll):
        await mouse.move(action.x, action.y)
        await _wheel(page, action.dx, action.dy)
        # The wheel scrolls on the compositor's next frame, after wheel() returns;
        # wait two frames so the next screenshot (and the page's scroll offsets) see it.
        try:
            await page.evaluate(_TWO_FRAMES)
        except PlaywrightError as exc:
            if not navigated_away(exc):
                raise  # else the page navigated meanwhile: no frames of it to wait for
    elif isinstance(action, TypeText):
        await keyboard.type(action.text)
    elif isinstance(action, Key):
        await press_combo(page, action.keys)
    elif isinstance(action, Wait):
        await asyncio.sleep(action.seconds)
    elif isinstance(action, Done):
        return
    else:  # a new action type was added to the union without a mapping here
        raise TypeError(f"expected one of the harness action types, got {type(action).__name__}")


async def _wheel(page: Page, dx: int, dy: int) -> None:
    """``mouse.wheel``, which waits for the renderer to acknowledge the event. A document
    that leaves while the event is on its way (``history.back()`` from the previous action,
    committing now) may never acknowledge it; once the page's URL has changed, the wait
    ends: the wheel went to a page that is gone, as a real wheel would have."""
    url = page.url
    wheel = asyncio.ensure_future(page.mouse.wheel(dx, dy))
    while not (await asyncio.wait({wheel}, timeout=WHEEL_LOOK_S))[0]:
        if page.url != url:
            wheel.cancel()
            await asyncio.gather(wheel, return_exceptions=True)
            return
    wheel.result()


async def press_combo(page: Page, keys: tuple[str, ...]) -> None:
    """Hold every key but the last, press the last, release in reverse order.

    Done by hand rather than with "Control+a" strings so that "+" itself is a key.
    """
    keyboard = page.keyboard
    held: list[str] = []
    try:
        for key in keys[:-1]:
            await keyboard.down(playwright_key(key))
            held.append(playwright_key(key))
        await keyboard.press(playwright_key(keys[-1]))
    finally:  # a key the browser refused must not leave the others held down
        for key in reversed(held):
            await keyboard.up(key)
