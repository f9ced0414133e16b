"""Pictures, icons and templates in real Chromium: pictures that are pictures, icons with no
request, and the grid's cards, the table's buttons and the switches still sending their events."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from fsm_sites.library import load_site
from fsm_sites.render.look import choose_look
from fsm_sites.serving.server import SiteServer
from sandboxes.browser.elements import ELEMENTS_JS, parse_elements

pytestmark = pytest.mark.asyncio(loop_scope="session")

SITES = ("shop", "clinic", "settings")


@pytest.fixture(scope="module")
async def server():
    async with SiteServer([load_site(name) for name in SITES]) as srv:
        yield srv


def _session(server, site: str, *, seed: int, start: str | None = None, page: str | None = None) -> str:
    spec = load_site(site)
    session = server.create_session(site, goal=spec.goals[0].id, seed=seed, start_state=start)
    if page:
        state = server.state(session.id)
        server.jump(session.id, state.with_page(page).key())
    return session.id


async def _open(browser, server, session_id: str):
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    await page.goto(server.session_url(session_id), wait_until="load")
    return context, page, requests


async def test_card_pictures_are_drawn_not_flat_and_icons_need_no_request(browser, server) -> None:
    session_id = _session(server, "shop", seed=2, page="products")
    context, page, requests = await _open(browser, server, session_id)
    try:
        media = page.locator('[data-el="lamp"] .card-media')
        box = await media.bounding_box()
        assert box and box["width"] >= 60 and box["height"] >= 50
        shot = Image.open(io.BytesIO(await media.screenshot())).convert("RGB")
        colours = shot.getcolors(maxcolors=1 << 16) or []
        assert len(colours) > 20  # a gradient and an object, not a grey square
        assert max(count for count, _ in colours) < 0.6 * shot.width * shot.height
        assert await page.locator("svg.icon").count() > 0  # icons are in the page ...
        assert requests == [server.session_url(session_id)]  # ... and nothing else was fetched
        named = {e.id: e.label for e in parse_elements(await page.evaluate(ELEMENTS_JS))}
        assert [named.get(i) for i in ("lamp", "mug", "chair")] == ["Desk lamp", "Coffee mug", "Office chair"]
        await page.click('[data-el="lamp"] .card-media')  # the picture is part of the card
        await page.wait_for_url(re.compile(r"\?v=1$"), timeout=30000)
        assert server.state(session_id).page == "products_item(lamp)"
        assert await page.locator(".hero svg.img").count() == 1
        await page.wait_for_function("!window.__fsm.pending")
        buttons = [e for e in parse_elements(await page.evaluate(ELEMENTS_JS)) if e.role == "button"]
        assert [e.label for e in buttons if e.id == "act"] == ["Add to cart"]  # an icon adds no text
        assert choose_look(2, "shop").button_icons  # this seed draws icons in buttons:
        assert await page.locator('[data-el="act"] svg.icon').count() == 1
    finally:
        await context.close()


async def test_a_table_row_button_and_a_switch_send_their_events(browser, server) -> None:
    session_id = _session(server, "clinic", seed=1, start="busy_week")
    context, page, _ = await _open(browser, server, session_id)
    try:
        assert await page.locator("table.data-table th").first.inner_text() in ("PET", "Pet")
        await page.click('table [data-el="cancel_row"][data-value="0"]')
        await page.wait_for_url(re.compile(r"\?v=1$"), timeout=30000)
        assert len(server.state(session_id).get("bookings")) == 2
        assert await page.locator("table.data-table tbody tr").count() == 2
    finally:
        await context.close()
    spec = load_site("settings")
    seed = next(s for s in range(40) if choose_look(s, spec.domain).toggles)
    session_id = _session(server, "settings", seed=seed, page="cfg_privacy")
    context, page, _ = await _open(browser, server, session_id)
    try:
        switch = page.locator(".settings-list label.switch").first
        name = await switch.get_attribute("data-el")
        await switch.click()
        await page.wait_for_url(re.compile(r"\?v=1$"), timeout=30000)
        fired = server.events(session_id)[-1]
        assert fired.verdict.transition_id is not None and name in fired.verdict.transition_id
        assert await page.locator(".settings-list input:checked").count() == 1
    finally:
        await context.close()
