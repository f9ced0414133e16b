"""Origin confinement: each episode may only reach its allowed origins."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandboxes.actions import Click
from sandboxes.errors import ConfigError
from sandboxes.origins import is_allowed, normalize_origins, origin_of, outside_pattern
from tests.conftest import SANDBOX_PAGES, wait_until

# Pixel targets on links.html (each link is a 300x40 block; see its stylesheet).
SAME, OTHER, SCRIPTED, POPUP, FRAGMENT, JSURL, JSURL_BUSY = (
    Click(x=20, y=20 + 60 * i) for i in range(7)
)


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
    # The renderer runs a javascript: URL in a task of its own, often a frame after the
    # click, and may answer calls that arrive meanwhile first: execute waits for it. Clicked
    # again and again in one page (about half of these failed before it waited), and once
    # behind a busy task the link's click handler queues.
    for link in [JSURL] * 20 + [JSURL_BUSY]:
        await browser_sandbox.evaluate("window.jsurlClicked = undefined")
        assert await browser_sandbox.execute(link) is None
        assert await browser_sandbox.evaluate("window.jsurlClicked") is True


async def test_popup_is_reported_by_the_action_that_opened_it_and_closed(
    browser_sandbox, static_server, other_server
):
    await browser_sandbox.reset(links_url(static_server, other_server))
    error = await browser_sandbox.execute(POPUP)
    assert error is not None and "new window" in error, error
    assert static_server.url("storage.html") in error
    assert await browser_sandbox.execute(Click(x=900, y=700)) is None  # reported once
    # The renderer reports the window long before Playwright announces its page (which is
    # when the sandbox closes it), so ask the browser itself which pages the context has.
    page = browser_sandbox.page
    session = await page.context.new_cdp_session(page)
    context_id = (await session.send("Target.getTargetInfo"))["targetInfo"]["browserContextId"]
    browser = await page.context.browser.new_browser_cdp_session()

    async def one_page() -> bool:
        targets = (await browser.send("Target.getTargets"))["targetInfos"]
        ours = [t for t in targets if t.get("browserContextId") == context_id]
        return [t["url"] for t in ours if t["type"] == "page"] == [page.url]

    assert await wait_until(one_page, timeout=30), await browser.send("Target.getTargets")
    assert len(page.context.pages) == 1


_HOSTS = st.sampled_from(["127.0.0.1", "localhost", "example.com", "[::1]", "EXAMPLE.com", "a-b.c"])
_URLS = st.builds(
    lambda scheme, user, host, port, path: f"{scheme}://{user}{host}{port}{path}",
    st.sampled_from(["http", "https", "HTTP", "ws", "file", "ftp"]),
    st.sampled_from(["", "u@", "127.0.0.1:8000@", "x:y@"]),
    _HOSTS,
    st.sampled_from(["", ":80", ":443", ":8000", ":8001"]),
    st.sampled_from(["", "/", "/a?b#c", "@evil.com/", ".evil.com/"]),
) | st.sampled_from(["about:blank", "data:text/html,x", "blob:http://e.com/1", "javascript:0"])


@settings(max_examples=400, deadline=None)
@given(url=_URLS, origins=st.sets(st.sampled_from([
    "http://127.0.0.1:8000", "http://example.com", "https://example.com:443", "http://[::1]:8001",
    "file://",
]), max_size=3))
def test_the_route_pattern_catches_every_url_the_confinement_refuses(url, origins):
    """Only URLs the pattern matches reach the route handler, so it must match every one
    that is_allowed refuses."""
    allowed = normalize_origins(tuple(origins), "about:blank")
    if not is_allowed(url, allowed):
        assert outside_pattern(allowed).search(url), (url, sorted(allowed))


def test_the_route_pattern_lets_the_episodes_own_origin_through():
    allowed = normalize_origins(("http://127.0.0.1:8000",), "http://example.com/")
    pattern = outside_pattern(allowed)
    assert not pattern.search("http://127.0.0.1:8000/s/abc/event")
    assert not pattern.search("http://example.com/x") and not pattern.search("http://example.com:80/")
    assert pattern.search("http://127.0.0.1:8000@evil.com/")
    assert pattern.search("http://127.0.0.1:8001/")
