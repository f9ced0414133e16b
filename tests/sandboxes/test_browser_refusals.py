"""What the browser refuses of a valid action is the agent's mistake, and what takes time
by design runs to the end: neither is ever an infrastructure error (real Chromium)."""

from __future__ import annotations

import time

import pytest

from sandboxes.actions import Click, Key, Scroll, TypeText, Wait


@pytest.fixture
async def actions_page(browser_sandbox, static_server):
    await browser_sandbox.reset(static_server.url("actions.html"))
    return browser_sandbox


async def keydowns(sandbox) -> list[dict]:
    return [e for e in await sandbox.evaluate("window.events") if e["type"] == "keydown"]


@pytest.mark.parametrize("keys", [("é",), ("ctrl", "日"), ("ctrl", "é", "a"), ("🙂",)])
async def test_a_key_the_browser_does_not_know_is_the_agents_error(actions_page, keys):
    error = await actions_page.execute(Key(keys=keys))
    assert error is not None and "refused by the browser" in error and "Unknown key" in error
    # The modifiers pressed before the refused key are released again: typing afterwards
    # is plain typing, not ctrl+letter.
    await actions_page.execute(Click(x=10, y=410))
    assert await actions_page.execute(TypeText(text="a")) is None
    assert [(e["key"], e["ctrl"]) for e in (await keydowns(actions_page))[-1:]] == [("a", False)]
    assert await actions_page.evaluate("document.getElementById('field').value") == "a"


async def test_typing_a_long_text_is_not_a_timeout(provider, static_server):
    """Typing sends every character as key events (milliseconds each): a long text gets
    the time it needs on top of the action timeout."""
    sandbox = await provider.new_browser(action_timeout_s=0.5)
    try:
        await sandbox.reset(static_server.url("actions.html"))
        await sandbox.execute(Click(x=10, y=410))
        text = "abcdefghij" * 25
        assert await sandbox.execute(TypeText(text=text)) is None
        assert await sandbox.evaluate("document.getElementById('field').value") == text
        started = time.perf_counter()
        assert await sandbox.execute(Wait(seconds=0.8)) is None  # a wait is no timeout either
        assert time.perf_counter() - started >= 0.8
    finally:
        await sandbox.close()


async def test_a_navigation_during_the_action_is_no_error(browser_sandbox, static_server):
    """history.back() navigates without the renderer announcing it; the calls the sandbox
    makes after an action (a flush, a wait for frames) then find their document gone."""
    await browser_sandbox.reset(static_server.url("fuzz.html"))
    for _ in range(8):
        assert await browser_sandbox.execute(Click(x=300, y=200)) is None  # same-origin link
        assert await browser_sandbox.execute(Click(x=300, y=600)) is None  # history.back()
        assert await browser_sandbox.execute(Scroll(x=100, y=300, dy=100)) is None
    assert await browser_sandbox.health()
