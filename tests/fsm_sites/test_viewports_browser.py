"""The rendered sites respond to the viewport in real Chromium, as real sites do: on a phone
the navigation collapses into a menu button (pure CSS: opening it sends no event), card
grids have one column, sidebars stack and every control is a touch target."""

from __future__ import annotations

import re

import pytest

from fsm_sites.engine.machine import Machine
from fsm_sites.library import load_site
from fsm_sites.render import choose_style
from fsm_sites.serving.server import SiteServer
from sandboxes.viewports import VIEWPORTS
from tests.fsm_sites.widgets_spec import widgets_spec

pytestmark = pytest.mark.asyncio(loop_scope="session")

#: Layout seeds with a top navbar and with a side menu.
TOP_SEED = next(s for s in range(50) if choose_style(s)[1].nav == "top")
LEFT_SEED = next(s for s in range(50) if choose_style(s)[1].nav == "left")
#: Visible boxes of the live elements an agent clicks or types into (text shows only).
_TARGETS = """() => [...document.querySelectorAll('[data-el]:not([data-kind=text])')]
  .flatMap(el => el.matches('.radio-group, .dropdown') ? [...el.querySelectorAll('.radio, .dd-toggle')] : [el])
  .filter(el => el.getClientRects().length)
  .map(el => { const r = el.getBoundingClientRect();
               return {id: el.closest('[data-el]').dataset.el, w: r.width, h: r.height}; })"""
_BOX = "(sel) => { const el = document.querySelector(sel); if (!el || !el.getClientRects().length) return null;" \
       " const r = el.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; }"


@pytest.fixture(scope="module")
async def server():
    async with SiteServer([load_site("shop"), widgets_spec()]) as srv:
        yield srv


async def _open(browser, server, site: str, seed: int, viewport: str, state_key: str | None = None):
    session = server.create_session(site, goal=server_goal(server, site), seed=seed)
    if state_key:
        server.jump(session.id, state_key)
    width, height = VIEWPORTS[viewport]
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    await page.goto(server.session_url(session.id), wait_until="load")
    return session, context, page


def server_goal(server, site: str) -> str:
    return next(spec for spec in server.sites() if spec.name == site).goals[0].id


@pytest.mark.parametrize("seed", [TOP_SEED, LEFT_SEED])
async def test_phone_navigation_is_a_menu_that_opens_without_an_event(browser, server, seed) -> None:
    session, context, page = await _open(browser, server, "shop", seed, "phone")
    try:
        assert await page.evaluate(_BOX, '[data-el="nav_cart"]') is None  # collapsed: not drawn
        toggle = await page.evaluate(_BOX, ".hamburger")
        assert toggle is not None and toggle["w"] >= 44 and toggle["h"] >= 44
        await page.mouse.click(toggle["x"] + toggle["w"] / 2, toggle["y"] + toggle["h"] / 2)
        link = await page.evaluate(_BOX, '[data-el="nav_cart"]')
        assert link is not None and link["h"] >= 44  # open, with touch-sized links
        assert server.events(session.id) == []  # opening the menu is the page's own business
        await page.mouse.click(link["x"] + link["w"] / 2, link["y"] + link["h"] / 2)
        await page.wait_for_url(re.compile(r"\?v=1$"), timeout=30000)
        assert server.state(session.id).page == "cart"
        assert await page.evaluate(_BOX, '[data-el="nav_home"]') is None  # the new page's menu is shut
    finally:
        await context.close()


@pytest.mark.parametrize("viewport", ["desktop", "laptop"])
async def test_wide_viewports_show_the_navigation_links(browser, server, viewport) -> None:
    for seed in (TOP_SEED, LEFT_SEED):
        _, context, page = await _open(browser, server, "shop", seed, viewport)
        try:
            assert await page.evaluate(_BOX, ".hamburger") is None
            link = await page.evaluate(_BOX, '[data-el="nav_cart"]')
            assert link is not None and link["w"] > 0
        finally:
            await context.close()


async def test_phone_controls_are_touch_targets(browser, server) -> None:
    machine = Machine(widgets_spec())
    items = next(s for s in machine.graphs.graph().states if s.page == "items")
    for seed in range(6):  # several families and layouts
        for state in (None, items.key()):
            _, context, page = await _open(browser, server, "widgets", seed, "phone", state)
            try:
                targets = await page.evaluate(_TARGETS)
                assert targets, (seed, state)
                small = [t for t in targets if t["h"] < 44 or t["w"] < 44]
                assert small == [], (seed, state, small)
                assert await page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scroll
            finally:
                await context.close()


async def test_card_grids_have_one_column_on_a_phone_and_stacked_sidebars(browser, server) -> None:
    grid_seed = next(s for s in range(50) if choose_style(s)[1].collection == "grid"
                     and choose_style(s)[1].columns == 3)
    lefts = ("() => [...document.querySelectorAll('.collection.grid > .card')]"
             ".map(c => Math.round(c.getBoundingClientRect().left))")
    columns = {}
    for viewport in ("desktop", "tablet", "phone"):
        _, context, page = await _open(browser, server, "shop", grid_seed, viewport, _products_key())
        try:
            columns[viewport] = len(set(await page.evaluate(lefts)))
            if viewport == "phone":
                main = await page.evaluate(_BOX, "main")
                side = await page.evaluate(_BOX, "aside.sidebar")
                assert side is None or side["y"] >= main["y"] + main["h"] - 1 or side["x"] == main["x"]
        finally:
            await context.close()
    assert columns == {"desktop": 3, "tablet": 2, "phone": 1}


def _products_key() -> str:
    machine = Machine(load_site("shop"))
    return next(s for s in machine.graphs.graph().states if s.page == "products").key()
