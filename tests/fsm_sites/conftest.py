"""Fixtures of the FSM site tests that render pages in a real browser."""

from __future__ import annotations

import pytest
from playwright.async_api import async_playwright

from sandboxes.browser.chromium import CHROMIUM_FLAGS, find_chromium


@pytest.fixture(scope="module")
async def browser():
    """A bare Chromium (no sandbox around it), one per test module: pages are loaded in
    contexts of their own at the viewport each test asks for."""
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=find_chromium(), args=list(CHROMIUM_FLAGS))
        yield chromium
        await chromium.close()
