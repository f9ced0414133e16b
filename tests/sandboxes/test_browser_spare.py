"""The next episode's context, prepared while an episode runs (``BrowserConfig.prepare_next``)
once two fresh resets in a row opened the same URL: used when the guess was right, closed when
it was wrong, never shared between episodes, and never left open. The background work (the
old context's close, the spare) starts after the new episode's first screenshot, as an env
takes one after every reset (``start`` below)."""

from __future__ import annotations

import pytest

from tests.conftest import SANDBOX_PAGES, wait_until

STORAGE = "storage.html"


async def start(sandbox, url: str, **kwargs) -> None:
    """A reset and its first screenshot, as the env makes them."""
    await sandbox.reset(url, **kwargs)
    await sandbox.screenshot()


async def contexts(provider) -> int:
    """Browser contexts open in the shared Chromium now."""
    return len((await provider.host.ensure_browser()).contexts)


def loads(static_server, path: str) -> int:
    """How often the server has been asked for ``path``."""
    return static_server.requests.count(f"/{path}")


async def test_the_next_episode_runs_in_the_prepared_fresh_context(provider, static_server):
    before = await contexts(provider)
    sandbox = await provider.new_browser()
    try:
        url = static_server.url(STORAGE)
        served = loads(static_server, STORAGE)
        await start(sandbox, url)
        assert sandbox._spare is None  # noqa: SLF001 - one reset is no pattern to guess from
        await start(sandbox, url)  # the URL repeats: the next episode's context is prepared
        assert sandbox._spare is not None  # noqa: SLF001
        first = sandbox.page
        await sandbox.evaluate("window.mark('first')")
        # The spare loads the same URL in a context of its own, while this episode runs.
        assert await wait_until(lambda: loads(static_server, STORAGE) == served + 3, timeout=30)
        assert await wait_until(lambda: _count_is(provider, before + 2), timeout=30)
        await start(sandbox, url)
        assert loads(static_server, STORAGE) == served + 3  # shown at once: no load of its own
        assert sandbox.page is not first and sandbox.page.context is not first.context
        assert await sandbox.evaluate("[document.cookie, localStorage.getItem('mark')]") == ["", None]
        assert await sandbox.evaluate("document.title") == "storage"
        # The first episode's context closes in the background; the next spare opens.
        assert await wait_until(first.is_closed, timeout=30)
        assert await wait_until(lambda: loads(static_server, STORAGE) == served + 4, timeout=30)
        assert await wait_until(lambda: _count_is(provider, before + 2), timeout=30)
    finally:
        await sandbox.close()
    assert await contexts(provider) == before


@pytest.mark.parametrize("change", ["another URL", "other origins"])
async def test_a_wrong_guess_is_closed_and_the_reset_loads_its_own_page(
    provider, static_server, static_server_factory, change
):
    other = await static_server_factory(SANDBOX_PAGES)
    before = await contexts(provider)
    sandbox = await provider.new_browser()
    try:
        served = loads(static_server, STORAGE)
        for _ in range(2):
            await start(sandbox, static_server.url(STORAGE))
        assert await wait_until(lambda: loads(static_server, STORAGE) == served + 3, timeout=30)
        if change == "another URL":
            url, origins, path = static_server.url("links.html"), (), "links.html"
        else:
            url, origins, path = static_server.url(STORAGE), (other.origin,), STORAGE
        served = loads(static_server, path)
        await start(sandbox, url, allowed_origins=origins)
        assert loads(static_server, path) >= served + 1  # loaded for this reset, not before
        assert sandbox.url == url
        assert await sandbox.evaluate("document.title") == path.split(".")[0]
        # The wrong spare and the earlier context are closed. After another URL, no new
        # guess until a URL repeats; the same URL with other origins is guessed again.
        expected = before + (1 if change == "another URL" else 2)
        assert await wait_until(lambda: _count_is(provider, expected), timeout=30)
    finally:
        await sandbox.close()
    assert await contexts(provider) == before


async def test_closing_while_the_spare_loads_leaves_no_context(provider, static_server):
    before = await contexts(provider)
    sandbox = await provider.new_browser()
    for _ in range(2):
        await sandbox.reset(static_server.url(STORAGE))
    await sandbox.close()  # the spare has only just begun
    assert await contexts(provider) == before


async def test_a_kept_page_drops_the_spare(provider, static_server):
    before = await contexts(provider)
    sandbox = await provider.new_browser()
    try:
        for _ in range(2):
            await start(sandbox, static_server.url(STORAGE))
        page = sandbox.page
        await start(sandbox, static_server.url(STORAGE + "?kept"), keep_page=True)
        assert sandbox.page is page
        assert sandbox._spare is None  # noqa: SLF001
        assert await wait_until(lambda: _count_is(provider, before + 1), timeout=30)
    finally:
        await sandbox.close()


async def test_without_prepare_next_every_reset_loads_in_a_new_context(provider, static_server):
    before = await contexts(provider)
    sandbox = await provider.new_browser(prepare_next=False)
    try:
        served = loads(static_server, STORAGE)
        for episode in range(1, 3):
            await start(sandbox, static_server.url(STORAGE))
            assert loads(static_server, STORAGE) == served + episode
            assert await wait_until(lambda: _count_is(provider, before + 1), timeout=30)
    finally:
        await sandbox.close()
    assert await contexts(provider) == before


async def test_background_work_waits_for_the_first_screenshot(provider, static_server):
    """Neither the spare nor the old context's close competes with the reset itself."""
    before = await contexts(provider)
    sandbox = await provider.new_browser()
    try:
        url = static_server.url(STORAGE)
        await start(sandbox, url)
        served = loads(static_server, STORAGE)
        first = sandbox.page
        await sandbox.reset(url)  # the URL repeats: a spare is due, but no screenshot yet
        assert sandbox._spare is not None  # noqa: SLF001
        # Nothing starts before the screenshot (a bounded wait for what must not happen).
        assert not await wait_until(lambda: loads(static_server, STORAGE) > served + 1 or first.is_closed(),
                                    timeout=1.5)
        await sandbox.screenshot()
        assert await wait_until(first.is_closed, timeout=30)
        assert await wait_until(lambda: loads(static_server, STORAGE) == served + 2, timeout=30)
        assert await wait_until(lambda: _count_is(provider, before + 2), timeout=30)
    finally:
        await sandbox.close()
    assert await contexts(provider) == before


async def _count_is(provider, expected: int) -> bool:
    return await contexts(provider) == expected
