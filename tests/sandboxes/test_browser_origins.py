"""Origin confinement: each episode may only reach its allowed origins."""

from __future__ import annotations

import asyncio

import pytest

from harness.actions import Click
from harness.errors import ConfigError
from sandboxes.origins import is_allowed, normalize_origins, origin_of
from tests.conftest import SANDBOX_PAGES

# Pixel targets on links.html (each link is a 300x40 block; see its stylesheet).
SAME, OTHER, SCRIPTED, POPUP, FRAGMENT, JSURL = (Click(x=20, y=20 + 60 * i) for i in range(6))


@pytest.fixture(scope="module")
async def other_server(static_server_factory):
    """A second origin (another port on 127.0.0.1) serving the same pages."""
    return await static_server_factory(SANDBOX_PAGES)


def links_url(static_server, other_server) -> str:
    return static_server.url(f"links.html?other={other_server.origin}")


async def wait_for(sandbox, expression: str, timeout: float = 5.0) -> object:
    deadline = asyncio.get_running_loop().time() + timeout
    while (value := await sandbox.evaluate(expression)) in (None, False, "pending"):
        if asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.05)
    return value


def test_origin_normalisation():
    assert origin_of("HTTP://LocalHost/x?y") == "http://localhost:80"
    assert origin_of("https://a.b:8443/") == "https://a.b:8443"
    assert origin_of("about:blank") is None
    allowed = normalize_origins(("http://127.0.0.1:8000",), "http://127.0.0.1:9000/start")
    assert allowed == {"http://127.0.0.1:8000", "http://127.0.0.1:9000"}
    assert is_allowed("data:text/html,hi", allowed) and not is_allowed(
        "http://127.0.0.1:8001/", allowed
    )
    with pytest.raises(ConfigError, match="allowed_origins"):
        normalize_origins(("127.0.0.1:8000",), "about:blank")


async def test_blocked_navigation_is_reported_by_the_action(
    browser_sandbox, static_server, other_server
):
    start = links_url(static_server, other_server)
    served_before = len(other_server.requests)
    await browser_sandbox.reset(start)
    error = await browser_sandbox.execute(OTHER)
    assert error == (
        f"navigation to {other_server.url('storage.html')} blocked; "
        f"allowed origins: {static_server.origin}"
    )
    assert browser_sandbox.url == start
    assert await browser_sandbox.evaluate("document.title") == "links"
    assert "/storage.html" not in other_server.requests[served_before:]


async def test_scripted_navigation_is_blocked_too(browser_sandbox, static_server, other_server):
    await browser_sandbox.reset(links_url(static_server, other_server))
    error = await browser_sandbox.execute(SCRIPTED)
    assert error is not None and "actions.html blocked" in error
    assert await browser_sandbox.evaluate("document.title") == "links"


async def test_allowed_navigation_loads_before_execute_returns(
    browser_sandbox, static_server, other_server
):
    await browser_sandbox.reset(
        links_url(static_server, other_server), allowed_origins=(other_server.origin,)
    )
    assert await browser_sandbox.execute(SAME) is None
    assert await browser_sandbox.evaluate("document.title") == "storage"
    await browser_sandbox.reset(
        links_url(static_server, other_server), allowed_origins=(other_server.origin,)
    )
    assert await browser_sandbox.execute(OTHER) is None
    assert browser_sandbox.url == other_server.url("storage.html")


async def test_third_party_subresource_is_aborted(browser_sandbox, static_server, other_server):
    served_before = len(other_server.requests)
    await browser_sandbox.reset(links_url(static_server, other_server))
    assert await wait_for(browser_sandbox, "window.imageStatus") == "error"
    assert other_server.url("pixel.png") in browser_sandbox.blocked_requests
    assert "/pixel.png" not in other_server.requests[served_before:]
    # The same image from an allowed origin loads: the block is the confinement, not the page.
    await browser_sandbox.reset(
        links_url(static_server, other_server), allowed_origins=(other_server.origin,)
    )
    assert await wait_for(browser_sandbox, "window.imageStatus") == "loaded"


async def test_in_page_links_that_do_not_load_are_fine(
    browser_sandbox, static_server, other_server
):
    await browser_sandbox.reset(links_url(static_server, other_server))
    assert await browser_sandbox.execute(FRAGMENT) is None
    assert browser_sandbox.url.endswith("#section")
    assert await browser_sandbox.execute(JSURL) is None
    assert await browser_sandbox.evaluate("window.jsurlClicked") is True


async def test_popup_is_closed_and_reported(browser_sandbox, static_server, other_server):
    await browser_sandbox.reset(links_url(static_server, other_server))
    error = await browser_sandbox.execute(POPUP)
    if error is None:  # the popup's page event can trail the click by a few ms
        await asyncio.sleep(0.5)
        error = await browser_sandbox.execute(Click(x=900, y=700))
    assert error is not None and "new window" in error
    assert len(browser_sandbox.page.context.pages) == 1
