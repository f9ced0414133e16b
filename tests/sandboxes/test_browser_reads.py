"""``read_after_actions``: the read a task makes after every action rides on the action's
last round trip, and is asked again whenever the page may have changed since."""

from __future__ import annotations

from sandboxes.actions import Click, Move
from tests.conftest import SANDBOX_PAGES

# Counts its own evaluations in the page, so a test sees how often the page was asked.
COUNTED = "window.reads = (window.reads || 0) + 1"


async def test_the_read_after_an_action_costs_no_round_trip(browser_sandbox, static_server):
    await browser_sandbox.reset(static_server.url("actions.html"))
    browser_sandbox.read_after_actions(COUNTED)
    assert await browser_sandbox.execute(Click(x=10, y=10)) is None
    assert await browser_sandbox.evaluate("window.reads") == 1  # read by the action
    await browser_sandbox.execute(Click(x=20, y=10))
    assert await browser_sandbox.evaluate(COUNTED) == 2  # the action's read, handed over
    assert await browser_sandbox.evaluate("window.reads") == 2  # the page was not asked again


async def test_only_the_next_call_after_the_action_gets_it(browser_sandbox, static_server):
    await browser_sandbox.reset(static_server.url("actions.html"))
    browser_sandbox.read_after_actions(COUNTED)
    await browser_sandbox.execute(Click(x=10, y=10))
    await browser_sandbox.screenshot()
    assert await browser_sandbox.evaluate(COUNTED) == 2  # asked again after the screenshot
    await browser_sandbox.execute(Move(x=30, y=30))  # no flush after a move: nothing read
    assert await browser_sandbox.evaluate(COUNTED) == 3
    await browser_sandbox.execute(Click(x=10, y=10))
    assert await browser_sandbox.evaluate(COUNTED) == 4
    assert await browser_sandbox.evaluate(COUNTED) == 5  # the second call asks the page


async def test_a_script_url_or_a_navigation_after_the_read_is_read_again(
    browser_sandbox, static_server, static_server_factory
):
    other = await static_server_factory(SANDBOX_PAGES)
    await browser_sandbox.reset(static_server.url(f"links.html?other={other.origin}"))
    read = "[document.title, window.jsurlClicked === true]"
    browser_sandbox.read_after_actions(read)
    for _ in range(20):  # the script often runs after the flush (test_browser_origins.py)
        await browser_sandbox.evaluate("window.jsurlClicked = undefined")
        await browser_sandbox.execute(Click(x=20, y=320))  # the javascript: link
        assert await browser_sandbox.evaluate(read) == ["links", True]
    await browser_sandbox.execute(Click(x=20, y=20))  # a same-origin link to storage.html
    assert await browser_sandbox.evaluate(read) == ["storage", False]


async def test_a_reset_forgets_the_read(browser_sandbox, static_server):
    await browser_sandbox.reset(static_server.url("actions.html"))
    browser_sandbox.read_after_actions(COUNTED)
    await browser_sandbox.reset(static_server.url("actions.html"))
    await browser_sandbox.execute(Click(x=10, y=10))
    assert await browser_sandbox.evaluate("window.reads") is None
