"""The rendered sites in real Chromium: pixel-identical screenshots, and every element
kind's event reaching the server and changing the session's state."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Route

from fsm_sites.engine.machine import Machine
from fsm_sites.serving.server import SiteServer
from tests.conftest import wait_until
from tests.fsm_sites.widgets_spec import tiny_shop, widgets_spec

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
async def server():
    async with SiteServer([tiny_shop(), widgets_spec()]) as srv:
        yield srv


async def _screenshot(browser, url: str, viewport: tuple[int, int] = (1024, 720)) -> bytes:
    context = await browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    try:
        page = await context.new_page()
        await page.goto(url, wait_until="load")
        return await page.screenshot(type="png")
    finally:
        await context.close()


@pytest.mark.parametrize("viewport", [(1024, 720), (390, 844)])
async def test_same_state_and_seed_give_identical_screenshots(browser, server, viewport) -> None:
    machine = Machine(tiny_shop())
    target = next(s for s in machine.graphs.graph().states if s.page == "checkout")
    shots = []
    for seed in (5, 5, 6):
        session = server.create_session("tiny_shop", goal="lamp_in_cart", seed=seed)
        server.jump(session.id, target.key())
        shots.append(await _screenshot(browser, server.session_url(session.id), viewport))
    assert shots[0] == shots[1]  # two sessions, two fresh browser contexts, same pixels
    assert shots[0] != shots[2]  # another layout seed looks different


async def test_every_element_kind_sends_its_event(browser, server) -> None:
    session = server.create_session("widgets", goal="oslo_dark", seed=11)
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    await page.goto(server.session_url(session.id))
    seq = 0

    async def settled(expect: dict[str, object], page_id: str | None = None) -> None:
        nonlocal seq
        seq += 1
        await page.wait_for_url(re.compile(rf"\?v={seq}$"), timeout=30000)
        state = server.state(session.id)
        assert {k: state.get(k) for k in expect} == expect
        if page_id:
            assert state.page == page_id and await page.get_attribute("body", "data-page") == page_id

    try:
        await page.click('[data-el="newsletter"]')
        await settled({"newsletter": True})
        await page.click('[data-el="city"]')
        await page.keyboard.type("Oslo")
        await page.keyboard.press("Enter")
        await settled({"city": "Oslo"})
        await page.click('[data-el="size"] .dd-toggle')
        await page.click('[data-el="size"] [data-value="l"]')
        await settled({"size": "l"})
        await page.click('[data-el="theme"] [data-value="dark"]')
        await settled({"theme": "dark"})
        assert server.events(session.id)[-1].verdict.goal_reached
        await page.click('[data-el="newsletter"]')
        await settled({"newsletter": False})
        await page.click('[data-el="city"]', click_count=3)
        await page.keyboard.type("Paris")
        await page.click("h1")  # blur after a change also sends the input event
        await settled({"city": "Paris"})
        await page.click('[data-el="tab_items"]')
        await settled({}, "items")
        await page.click('[data-el="pg2"]')
        await settled({"page_no": 2}, "items")
        await page.click('[data-el="beta"]')
        await settled({}, "details")
        await page.click('[data-el="close"]')
        await settled({}, "items")
        fired = [r.verdict.transition_id for r in server.events(session.id)]
        assert fired == ["sub", "type_city", "pick_size", "pick_theme", "unsub", "type_city",
                         "to_items", "page2", "open_beta", "close"]
    finally:
        await context.close()


@pytest.mark.parametrize("held", [False, True])
async def test_click_right_after_typing_sends_both_events(browser, server, held) -> None:
    """The click blurs the field, whose `change` sends `input` first; the click waits its turn.
    Held: the typed text's answer comes while the pointer is still pressed on the tab, and the
    page waits for the release before it swaps the new page in (a swap under the pressed
    pointer would take the tab away, and the click would be lost)."""
    session = server.create_session("widgets", goal="see_beta", seed=4)
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = await context.new_page()
        await page.goto(server.session_url(session.id))
        await page.click('[data-el="city"]')
        await page.keyboard.type("Oslo")
        if held:
            box = await page.locator('[data-el="tab_items"]').bounding_box()
            assert box is not None
            await page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            await page.evaluate("window.__tab = document.querySelector('[data-el=\"tab_items\"]')")
            await page.mouse.down()  # the field's text is sent now
            await page.wait_for_function("window.__fsm.last !== null")  # its answer came, pressed still
            assert [r.verdict.transition_id for r in server.events(session.id)] == ["type_city"]
            assert await page.evaluate("window.__tab.isConnected && window.__fsm.pending")  # not swapped yet
            await page.mouse.up()
        else:
            await page.click('[data-el="tab_items"]')  # no Enter, no blur first
        await page.wait_for_url(re.compile(r"\?v=2$"), timeout=30000)
        assert [r.verdict.transition_id for r in server.events(session.id)] == ["type_city", "to_items"]
        state = server.state(session.id)
        assert (state.page, state.get("city")) == ("items", "Oslo")
        assert await page.get_attribute("body", "data-page") == "items"
    finally:
        await context.close()


async def test_second_click_of_a_double_click_on_a_page_gone_is_refused(browser, server) -> None:
    """A queued event names the page it came from: once the first click leaves that page, the
    server refuses the second (409, not logged) even though the new page has an element of the
    same id, and the page shows the current state."""
    session = server.create_session("widgets", goal="see_beta", seed=4)
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = await context.new_page()
        await page.goto(server.session_url(session.id))
        await page.click('[data-el="tab_items"]', click_count=2)  # no prefetch: both hit this page
        await page.wait_for_url(re.compile(r"\?v=x$"), timeout=30000)
        await page.evaluate("window.__fsm.idle")
        assert [r.verdict.transition_id for r in server.events(session.id)] == ["to_items"]
        assert await page.get_attribute("body", "data-page") == "items"
    finally:
        await context.close()


async def test_a_prefetched_page_shows_at_once_and_the_answer_confirms_it(browser, server) -> None:
    """With the pages of its events prefetched, a click shows the next page inside its own
    handler, before the server has the event; the event then carries that page's digest and
    the answer confirms it without a page. A second click of a double click lands on the new
    page, as on any site that changes its page at once."""
    session = server.create_session("widgets", goal="see_beta", seed=4)
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = await context.new_page()
        await page.goto(server.session_url(session.id))
        await page.evaluate("window.__fsm.setPrefetch(true)")
        await page.wait_for_function("window.__fsm.next !== null")
        held: list[Route] = []
        await page.route(re.compile(r"/event$"), lambda route: held.append(route))
        await page.click('[data-el="tab_items"]')
        assert await page.get_attribute("body", "data-page") == "items"
        assert await wait_until(lambda: bool(held))
        assert server.events(session.id) == [] and "?v=" not in page.url  # the server has nothing yet
        response = await held[0].fetch()
        answer = await response.json()
        assert answer["seq"] == 1 and "html" not in answer  # confirmed: the page shows it already
        await held[0].fulfill(response=response)
        await page.wait_for_url(re.compile(r"/items\?v=1$"), timeout=30000)
        assert (await page.evaluate("window.__fsm.last"))["local"] is True
        assert [r.verdict.transition_id for r in server.events(session.id)] == ["to_items"]
        await page.unroute(re.compile(r"/event$"))
        await page.wait_for_function("window.__fsm.next !== null")
        await page.click('[data-el="tab_items"]', click_count=2)  # both on the items page
        await page.wait_for_url(re.compile(r"\?v=3$"), timeout=30000)
        assert [r.verdict.transition_id for r in server.events(session.id)] == ["to_items", "stay_items",
                                                                                 "stay_items"]
    finally:
        await context.close()


async def test_a_prefetched_page_the_server_refuses_is_replaced(browser, server) -> None:
    """The session moved behind the page's back: the prefetched page shown at the click is
    wrong, the server refuses the stale event, and the page shows the session's state."""
    session = server.create_session("widgets", goal="see_beta", seed=4)
    details = next(s for s in Machine(widgets_spec()).graphs.graph().states if s.page == "details")
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = await context.new_page()
        await page.goto(server.session_url(session.id))
        await page.evaluate("window.__fsm.setPrefetch(true)")
        await page.wait_for_function("window.__fsm.next !== null")
        server.jump(session.id, details.key())
        await page.click('[data-el="tab_items"]')
        await page.wait_for_url(re.compile(r"\?v=x$"), timeout=30000)
        await page.evaluate("window.__fsm.idle")
        assert await page.get_attribute("body", "data-page") == "details"
        assert server.events(session.id) == []
    finally:
        await context.close()
