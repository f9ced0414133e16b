"""Every action type drives real Chromium on a local page; the page records events in
JS globals that we read back with ``evaluate``."""

from __future__ import annotations

import pytest

from sandboxes.actions import (
    MODIFIER_KEYS,
    NAMED_KEYS,
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
)
from sandboxes.base import Sandbox
from sandboxes.browser.actions import PLAYWRIGHT_KEYS


@pytest.fixture
async def actions_page(browser_sandbox, static_server):
    await browser_sandbox.reset(static_server.url("actions.html"))
    return browser_sandbox


async def events(sandbox, type_: str) -> list[dict]:
    return [e for e in await sandbox.evaluate("window.events") if e["type"] == type_]


def test_sandbox_implements_protocol(browser_sandbox):
    assert isinstance(browser_sandbox, Sandbox)


def test_every_canonical_key_has_a_playwright_name():
    assert set(MODIFIER_KEYS + NAMED_KEYS) <= set(PLAYWRIGHT_KEYS)


async def test_click_lands_at_pixel(actions_page):
    assert await actions_page.execute(Click(x=120, y=80)) is None
    clicks = await events(actions_page, "click")
    assert [(c["x"], c["y"], c["button"]) for c in clicks] == [(120, 80, 0)]


async def test_double_click(actions_page):
    assert await actions_page.execute(DoubleClick(x=50, y=60)) is None
    assert [(e["x"], e["y"]) for e in await events(actions_page, "dblclick")] == [(50, 60)]


async def test_right_click(actions_page):
    assert await actions_page.execute(RightClick(x=30, y=40)) is None
    menus = await events(actions_page, "contextmenu")
    assert [(e["x"], e["y"], e["button"]) for e in menus] == [(30, 40, 2)]
    assert await events(actions_page, "click") == []


async def test_move_hovers_without_clicking(actions_page):
    assert await actions_page.execute(Move(x=200, y=150)) is None
    assert await actions_page.evaluate("window.lastMove") == {"x": 200, "y": 150}
    assert await events(actions_page, "mousedown") == []


async def test_drag_presses_moves_releases(actions_page):
    assert await actions_page.execute(Drag(x=10, y=10, to_x=300, to_y=250)) is None
    downs, ups = await events(actions_page, "mousedown"), await events(actions_page, "mouseup")
    assert [(e["x"], e["y"]) for e in downs] == [(10, 10)]
    assert [(e["x"], e["y"]) for e in ups] == [(300, 250)]


async def test_scroll_at_point_scrolls_that_element(actions_page):
    assert await actions_page.execute(Scroll(x=600, y=100, dy=300)) is None
    wheels = await events(actions_page, "wheel")
    assert [(e["x"], e["y"], e["dy"]) for e in wheels] == [(600, 100, 300)]
    scrolled = await actions_page.evaluate("document.getElementById('scroller').scrollTop")
    assert scrolled > 0
    assert await actions_page.evaluate("window.scrollY") == 0


async def test_type_text_into_focused_field(actions_page):
    await actions_page.execute(Click(x=100, y=415))
    assert await actions_page.execute(TypeText(text="héllo world")) is None
    assert await actions_page.evaluate("document.getElementById('field').value") == "héllo world"


async def test_key_combination_and_named_keys(actions_page):
    await actions_page.execute(Click(x=100, y=415))
    await actions_page.execute(TypeText(text="abc"))
    assert await actions_page.execute(Key(keys=("ctrl", "a"))) is None
    assert await actions_page.execute(Key(keys=("backspace",))) is None
    assert await actions_page.evaluate("document.getElementById('field').value") == ""
    await actions_page.execute(Key(keys=("shift", "+")))
    downs = await events(actions_page, "keydown")
    ctrl_a = [e for e in downs if e["key"] == "a" and e["ctrl"]]
    assert ctrl_a and not ctrl_a[0]["shift"]
    assert any(e["key"] == "Backspace" for e in downs)
    assert any(e["key"] == "+" and e["shift"] for e in downs)


async def test_wait_and_done_change_nothing(actions_page):
    before = await actions_page.evaluate("window.events.length")
    assert await actions_page.execute(Wait(seconds=0.05)) is None
    assert await actions_page.execute(Done(answer="42")) is None
    assert await actions_page.evaluate("window.events.length") == before


@pytest.mark.parametrize(
    "action",
    [Click(x=1024, y=10), Move(x=5, y=768), Drag(x=5, y=5, to_x=5000, to_y=5), Scroll(x=2000, y=1)],
)
async def test_points_outside_viewport_are_agent_errors(actions_page, action):
    error = await actions_page.execute(action)
    assert error is not None and "outside the 1024x768 viewport" in error
    assert await actions_page.evaluate("window.events") == []
