"""The widget kinds drawn in real Chromium in every theme family, on a phone and on a
desktop: with everything open (the account menu, an accordion, the tooltip, the combobox's
suggestions) nothing leaves the viewport sideways, a phone's widget parts are touch
targets, and the open parts show the state's content."""

from __future__ import annotations

import pytest

from fsm_sites.engine.machine import compile_site
from fsm_sites.engine.state import UIEvent
from fsm_sites.library import load_site
from fsm_sites.render import choose_style
from fsm_sites.serving.server import SiteServer
from sandboxes.viewports import VIEWPORTS

pytestmark = pytest.mark.asyncio(loop_scope="session")

#: One layout seed of each theme family.
FAMILY_SEEDS = sorted({choose_style(s)[0].family: s for s in range(40)}.values())
_PARTS = """() => [...document.querySelectorAll(
    '.menu-toggle, .menu-pop > [data-el], .acc-head, .acc-body [data-el], .tip-trigger, .tip-close, .combo-option')]
  .filter(el => el.getClientRects().length)
  .map(el => { const r = el.getBoundingClientRect();
               return {cls: el.className, text: el.textContent.trim(), left: r.left, right: r.right, h: r.height}; })"""


@pytest.fixture(scope="module")
async def server():
    async with SiteServer([load_site("account_center")]) as srv:
        yield srv


def _all_open() -> str:
    machine = compile_site(load_site("account_center"))
    state = machine.initial
    for element in ("account", "faq", "fee"):
        event = "hover" if element == "fee" else "click"
        fired = machine.step(state, UIEvent("home", element, event))
        assert fired is not None
        state = fired[1]
    return state.key()


@pytest.mark.parametrize("viewport", ["phone", "desktop"])
async def test_open_widgets_fit_the_viewport_in_every_family(browser, server, viewport) -> None:
    width, height = VIEWPORTS[viewport]
    key = _all_open()
    assert len(FAMILY_SEEDS) == 5
    for seed in FAMILY_SEEDS:
        session = server.create_session("account_center", goal="sign_out", seed=seed)
        server.jump(session.id, key)
        context = await browser.new_context(viewport={"width": width, "height": height})
        try:
            page = await context.new_page()
            await page.goto(server.session_url(session.id), wait_until="load")
            await page.focus("[data-el=city] input")  # shows the suggestions
            parts = await page.evaluate(_PARTS)
            texts = {p["text"] for p in parts}
            assert {"Profile", "Sign out", "Change plan", "Paris", "Oslo", "Lisbon"} <= texts, (seed, texts)
            bubble = await page.text_content(".tip-bubble")
            assert bubble is not None and "Express delivery costs $5 more." in bubble
            assert all(p["left"] >= 0 and p["right"] <= width for p in parts), (seed, parts)
            assert await page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scroll
            if viewport == "phone":
                small = [p for p in parts if p["h"] < 44]
                assert small == [], (seed, small)
        finally:
            await context.close()
