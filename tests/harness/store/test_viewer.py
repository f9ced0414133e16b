"""The static viewer in real headless Chromium: it renders, and a click shows a node."""

from __future__ import annotations

import io

import pytest
from PIL import Image
from playwright.async_api import async_playwright

from harness.store import TrajectoryStore
from harness.store.viewer import write_viewer
from tests.harness.store.helpers import click, screenshot, trajectory

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def viewer(tmp_path):
    store = TrajectoryStore(tmp_path / "store")
    store.insert_trajectory(trajectory([("a", click(20, 30)), ("b", click(40, 50))], success=True))
    store.insert_trajectory(trajectory([("a", click(20, 30)), ("c", {"type": "type_text", "text": "hi"})]))
    return write_viewer(store, tmp_path / "view"), store


async def _open(pw, index):
    browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_FLAGS)
    page = await browser.new_page(viewport={"width": 1200, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(index.as_uri())
    return browser, page, errors


def test_each_distinct_screenshot_is_copied_once(viewer):
    index, store = viewer
    blobs = {n.obs_blob for n in store.nodes()}
    assert len(blobs) == 4  # home, a, b, c
    assert sorted(p.name for p in (index.parent / "img").iterdir()) == sorted(f"{d}.png" for d in blobs)


async def test_viewer_renders_and_clicking_a_node_shows_its_screenshot(viewer):
    index, store = viewer
    leaf = next(n for n in store.nodes() if n.state_key == "fsm:b")
    async with async_playwright() as pw:
        browser, page, errors = await _open(pw, index)
        try:
            assert await page.locator(".node").count() == 4
            assert await page.locator("details[open]").count() == 2  # root and a have children
            assert await page.locator("#panel").is_hidden()

            await page.locator(f'.node[data-id="{leaf.id}"]').click()
            await page.wait_for_function(
                "document.getElementById('shot').complete && document.getElementById('shot').naturalWidth > 0")
            assert await page.locator("#panel").is_visible()
            assert await page.eval_on_selector("#shot", "img => img.naturalWidth") == 160
            assert (await page.get_attribute("#shot", "src")) == f"img/{leaf.obs_blob}.png"
            assert "fsm:b" in await page.locator("#title").inner_text()
            assert await page.locator("#filmstrip figure").count() == 3  # root -> a -> b
            assert await page.locator("#filmstrip figure svg").count() == 2  # the two actions
            assert await page.locator(f'.node.selected[data-id="{leaf.id}"]').count() == 1

            await page.locator("#filmstrip figure").first.click()  # jump to the root
            root = store.node(store.trees()[0].root_id)
            assert await page.get_attribute("#shot", "src") == f"img/{root.obs_blob}.png"
            assert await page.locator("#action-fig").is_hidden()
            assert errors == []
        finally:
            await browser.close()


async def test_the_action_is_drawn_on_the_previous_screenshot(viewer):
    index, store = viewer
    a = next(n for n in store.nodes() if n.state_key == "fsm:a")
    home = store.node(a.parent_id)
    async with async_playwright() as pw:
        browser, page, errors = await _open(pw, index)
        try:
            await page.locator(f'.node[data-id="{a.id}"]').click()
            frame = page.locator("#action-frame")
            assert await frame.locator("img").get_attribute("src") == f"img/{home.obs_blob}.png"
            await page.wait_for_function(
                "document.querySelector('#action-frame img').naturalWidth > 0")
            image_box = await frame.locator("img").bounding_box()
            assert image_box == await frame.locator("svg").bounding_box()  # overlay lines up
            assert (image_box["width"], image_box["height"]) == (160, 120)  # shown 1:1
            drawn = Image.open(io.BytesIO(await frame.locator("img").screenshot())).convert("RGB")
            plain = Image.open(io.BytesIO(screenshot("home"))).convert("RGB")
            assert drawn.getpixel((20, 30)) != plain.getpixel((20, 30))  # the crosshair centre
            assert drawn.getpixel((150, 110)) == plain.getpixel((150, 110))  # far from it: untouched
            assert errors == []
        finally:
            await browser.close()
