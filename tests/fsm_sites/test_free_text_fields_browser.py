"""Issue 23's expressiveness in real Chromium: a pet added under the name typed shows that
name in its row, and a select over an optional enum reads "Choose…" until a pet is chosen."""

from __future__ import annotations

import re

import pytest
import yaml

from fsm_sites.serving.server import SiteServer
from fsm_sites.spec.site import SiteSpec
from tests.fsm_sites.test_free_text_fields import PETS
from tests.fsm_sites.test_optional_enum import VET

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_typed_names_in_rows_and_nothing_chosen_in_a_select(browser) -> None:
    specs = [SiteSpec.model_validate(yaml.safe_load(text)) for text in (PETS, VET)]
    async with SiteServer(specs) as server:
        context = await browser.new_context(viewport={"width": 1024, "height": 720})
        try:
            page = await context.new_page()
            session = server.create_session("pets", goal="mochi", seed=3)
            await page.goto(server.session_url(session.id))
            await page.click('[data-el="add"]')
            await page.wait_for_url(re.compile(r"\?v=1$"), timeout=30000)
            await page.click('[data-el="name"]')
            await page.keyboard.type("Biscuit")
            await page.keyboard.press("Enter")
            await page.wait_for_url(re.compile(r"\?v=2$"), timeout=30000)
            await page.click('[data-el="save"]')
            await page.wait_for_url(re.compile(r"\?v=3$"), timeout=30000)
            main = await page.text_content("main") or ""
            assert "Biscuit" in main and "Bella" not in main  # the typed name, not its stand-in
            assert await page.locator('[data-el="open_row"]').all_text_contents() == ["Open Biscuit"]
            assert server.events(session.id)[-1].verdict.on_shortest_path is False  # Biscuit is not Mochi

            vet = server.create_session("vet", goal="rex_booked", seed=3)
            await page.goto(server.session_url(vet.id))
            assert (await page.text_content('[data-el="pet"] .dd-toggle') or "").startswith("Choose")
            assert await page.get_attribute('[data-el="next"]', "aria-disabled") == "true"
            await page.click('[data-el="pet"] .dd-toggle')
            assert await page.locator('[data-el="pet"] .dd-option').all_text_contents() == ["Rex", "Milo"]
            await page.click('[data-el="pet"] [data-value="rex"]')
            await page.wait_for_url(re.compile(r"\?v=1$"), timeout=30000)
            await page.click('[data-el="next"]')
            await page.wait_for_url(re.compile(r"/book/rex\?v=2$"), timeout=30000)
            assert server.state(vet.id).page == "book(rex)"
        finally:
            await context.close()
