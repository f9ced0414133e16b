"""The static viewer in real headless Chromium: it renders, and a click shows a node."""

from __future__ import annotations

import pytest
from playwright.async_api import async_playwright

from harness.store import TrajectoryStore
from harness.store.viewer import write_viewer
from tests.harness.store.helpers import click, trajectory

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def viewer(tmp_path):
    store = TrajectoryStore(tmp_path / "store")
    store.insert_trajectory(trajectory([("a", click(20, 30)), ("b", click(40, 50))], success=True))
    store.insert_trajectory(trajectory([("a", click(20, 30)), ("c", {"type": "type_text", "text": "hi"})]))
    return write_viewer(store, tmp_path / "view"), store


async def test_viewer_renders_and_clicking_a_node_shows_its_screenshot(viewer):
    index, store = viewer
    leaf = next(n for n in store.nodes() if n.state_key == "fsm:b")
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_FLAGS)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(index.as_uri())
            assert await page.locator(".node").count() == 4
            assert await page.locator("details[open]").count() == 2  # root and a have children
            assert await page.locator("#panel").is_hidden()

            await page.locator(f'.node[data-id="{leaf.id}"]').click()
            await page.wait_for_function(
                "document.getElementById('shot').complete && document.getElementById('shot').naturalWidth > 0")
            assert await page.locator("#panel").is_visible()
            assert await page.eval_on_selector("#shot", "img => img.naturalWidth") == 160
            assert (await page.get_attribute("#shot", "src")) == f"img/{leaf.id}.png"
            assert "fsm:b" in await page.locator("#title").inner_text()
            assert await page.locator("#filmstrip figure").count() == 3  # root -> a -> b
            assert await page.locator(f'.node.selected[data-id="{leaf.id}"]').count() == 1

            await page.locator("#filmstrip figure").first.click()  # jump to the root
            assert await page.get_attribute("#shot", "src") == f"img/{store.trees()[0].root_id}.png"
            assert await page.locator("#action-fig").is_hidden()
            assert errors == []
        finally:
            await browser.close()


def test_the_action_is_drawn_on_the_previous_screenshot(viewer):
    from PIL import Image

    index, store = viewer
    a = next(n for n in store.nodes() if n.state_key == "fsm:a")
    drawn = Image.open(index.parent / "img" / f"{a.id}-action.png").convert("RGB")
    plain = Image.open(index.parent / "img" / f"{a.parent_id}.png").convert("RGB")
    assert drawn.getpixel((20, 30)) != plain.getpixel((20, 30))  # the crosshair centre
    assert drawn.getpixel((150, 110)) == plain.getpixel((150, 110))  # far from it: untouched
