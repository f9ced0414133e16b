"""Screenshots, per-episode isolation, configuration and lifecycle of the browser sandbox."""

from __future__ import annotations

import asyncio
import io

import pytest
from PIL import Image

from sandboxes.browser.config import BrowserConfig, load_browser_config
from sandboxes.browser.sandbox import BrowserHost, BrowserSandbox
from sandboxes.errors import ConfigError, SandboxClosed, SandboxError, SandboxNavigationError
from tests.conftest import wait_until


@pytest.mark.parametrize("image_format, magic", [("png", b"\x89PNG"), ("jpeg", b"\xff\xd8\xff")])
async def test_screenshot_is_viewport_sized_image(provider, static_server, image_format, magic):
    sandbox = await provider.new_browser(
        image_format=image_format, viewport_width=640, viewport_height=480
    )
    try:
        await sandbox.reset(static_server.url("actions.html"))
        shot = await sandbox.screenshot()
    finally:
        await sandbox.close()
    assert shot.format == image_format and shot.data.startswith(magic)
    image = Image.open(io.BytesIO(shot.data))
    assert image.format == image_format.upper()
    assert image.size == (shot.width, shot.height) == (640, 480)
    # The page paints #pad (400x300 at the origin) light blue: the capture shows pixels.
    red, green, blue = image.convert("RGB").getpixel((10, 10))
    assert (abs(red - 0xCC) < 8, abs(green - 0xDD) < 8, abs(blue - 0xEE) < 8) == (True, True, True)


async def test_jpeg_quality_changes_size(provider, static_server):
    sizes = []
    for quality in (10, 95):
        sandbox = await provider.new_browser(image_format="jpeg", jpeg_quality=quality)
        await sandbox.reset(static_server.url("links.html"))
        sizes.append(len((await sandbox.screenshot()).data))
        await sandbox.close()
    assert sizes[0] < sizes[1]


async def test_sandboxes_do_not_share_cookies_or_storage(provider, static_server):
    first, second = await provider.new_browser(), await provider.new_browser()
    try:
        await first.reset(static_server.url("storage.html"))
        await second.reset(static_server.url("storage.html"))
        await first.evaluate("window.mark('first')")
        assert await first.evaluate("document.cookie") == "mark=first"
        assert await second.evaluate("[document.cookie, localStorage.getItem('mark')]") == [
            "",
            None,
        ]
        # A reset is a new episode: the sandbox's own earlier storage is gone too.
        await first.reset(static_server.url("storage.html"))
        assert await first.evaluate("window.seen") == {"cookie": "", "local": None}
    finally:
        await first.close()
        await second.close()


async def test_url_tracks_navigation_and_page_is_exposed(browser_sandbox, static_server):
    assert browser_sandbox.url == "about:blank"
    await browser_sandbox.reset(static_server.url("storage.html"))
    assert browser_sandbox.url == static_server.url("storage.html")
    assert await browser_sandbox.page.title() == "storage"
    assert await browser_sandbox.health() is True


async def test_a_reported_address_is_the_url_until_the_page_navigates_or_resets(browser_sandbox, static_server):
    """A page that shows its pages in place may report where it is instead of changing its
    URL (``show_address``); that address is the sandbox's URL until the page's own URL
    changes, and a reset forgets it."""
    storage, links = static_server.url("storage.html"), static_server.url("links.html")
    await browser_sandbox.reset(storage)
    browser_sandbox.show_address(storage + "#in-place")
    assert browser_sandbox.url == storage + "#in-place"
    await browser_sandbox.page.goto(links)  # a navigation: the page's URL changed
    assert browser_sandbox.url == links
    browser_sandbox.show_address(links + "?v=2")
    await browser_sandbox.reset(links)  # the same URL again, but another episode
    assert browser_sandbox.url == links


async def test_unreachable_start_url_is_an_infrastructure_error(browser_sandbox):
    with pytest.raises(SandboxNavigationError, match="expected http://127.0.0.1:9/ to load"):
        await browser_sandbox.reset("http://127.0.0.1:9/")


async def test_use_before_reset_and_after_close(provider):
    sandbox = await provider.new_browser()
    with pytest.raises(SandboxError, match="reset"):
        await sandbox.screenshot()
    await sandbox.close()
    await sandbox.close()  # idempotent
    with pytest.raises(SandboxClosed):
        await sandbox.reset("about:blank")


def test_bad_config_names_the_field():
    with pytest.raises(ConfigError) as info:
        load_browser_config({"viewport_width": 10, "image_format": "gif", "colour": "red"})
    message = str(info.value)
    for field in ("viewport_width", "image_format", "colour"):
        assert field in message


async def test_bad_sandbox_overrides_are_rejected(provider):
    with pytest.raises(ConfigError, match="jpeg_quality"):
        await provider.new_browser(jpeg_quality=0)
    with pytest.raises(ConfigError, match="host setting.*headless"):
        await provider.new_browser(headless=False)
    with pytest.raises(ConfigError, match="extra_flags"):
        await provider.new_browser(BrowserConfig(extra_flags=("--mute-audio",)))


async def test_missing_chromium_is_a_clear_start_error(tmp_path):
    from sandboxes.errors import SandboxStartError

    host = BrowserHost(BrowserConfig(executable_path=str(tmp_path / "no-chromium")))
    with pytest.raises(SandboxStartError, match="no-chromium"):
        await host.start()
    await host.close()


async def test_concurrent_sandboxes_on_one_host(provider, static_server):
    from sandboxes.actions import Click

    sandboxes = [await provider.new_browser() for _ in range(4)]

    async def episode(index: int, sandbox: BrowserSandbox) -> list:
        await sandbox.reset(static_server.url("actions.html"))
        await sandbox.execute(Click(x=10 + index, y=20))
        await sandbox.screenshot()
        return await sandbox.evaluate("window.events.filter(e => e.type === 'click')")

    try:
        results = await asyncio.gather(*(episode(i, s) for i, s in enumerate(sandboxes)))
    finally:
        await asyncio.gather(*(s.close() for s in sandboxes))
    assert [[(e["x"], e["y"]) for e in clicks] for clicks in results] == [
        [(10 + i, 20)] for i in range(4)
    ]


async def test_keep_page_reset_clears_cookies_and_storage_and_reuses_the_page(
    browser_sandbox, static_server
):
    await browser_sandbox.reset(static_server.url("storage.html"))
    page = browser_sandbox.page
    await browser_sandbox.evaluate("window.mark('before')")
    # storage.html offers no __softNavigate, so the kept page navigates to the URL.
    await browser_sandbox.reset(static_server.url("storage.html?again"), keep_page=True)
    assert browser_sandbox.page is page
    assert await browser_sandbox.evaluate("window.seen") == {"cookie": "", "local": None}
    assert browser_sandbox.url == static_server.url("storage.html?again")


async def test_keep_page_uses_the_pages_soft_navigation(browser_sandbox, static_server):
    await browser_sandbox.reset(static_server.url("storage.html"))
    await browser_sandbox.evaluate(
        "window.__softNavigate = (url) => { history.replaceState(null, '', url);"
        " window.softly = url; return Promise.resolve(true); }"
    )
    target = static_server.url("storage.html?soft")
    await browser_sandbox.reset(target, keep_page=True)
    assert await browser_sandbox.evaluate("window.softly") == target  # same document
    assert browser_sandbox.url == target


async def test_keep_page_falls_back_to_a_fresh_context_when_origins_change(
    browser_sandbox, static_server, static_server_factory
):
    from tests.conftest import SANDBOX_PAGES

    other = await static_server_factory(SANDBOX_PAGES)
    await browser_sandbox.reset(static_server.url("storage.html"))
    page = browser_sandbox.page
    await browser_sandbox.reset(other.url("storage.html"), keep_page=True)
    assert browser_sandbox.page is not page
    await browser_sandbox.screenshot()  # as the env takes one: the old context's close starts
    assert await wait_until(page.is_closed)  # the old context closes in the background
