"""What one browser episode runs in: a fresh ``BrowserContext`` with its one page, a CDP
session on it and a navigation watcher, confined to the episode's origins.

``BrowserSandbox`` holds one ``EpisodeContext`` per episode. With
``BrowserConfig.prepare_next`` it also prepares the next one in the background
(:class:`SpareContext`): a new context that has already loaded the URL the sandbox
guesses comes next, so that a fresh ``reset`` to that URL only swaps contexts. Each
episode still gets a context that no earlier episode used.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import TYPE_CHECKING

from playwright.async_api import Browser, BrowserContext, CDPSession, Page, Request, Route
from playwright.async_api import Error as PlaywrightError

from sandboxes.browser.config import BrowserConfig
from sandboxes.browser.nav import NavigationWatcher
from sandboxes.errors import SandboxCrashed
from sandboxes.origins import is_allowed, outside_pattern, web_origin

if TYPE_CHECKING:
    from sandboxes.browser.host import BrowserHost

_NOT_PAINTED = "Unable to capture screenshot"
_CAPTURE_ATTEMPTS = 5


class EpisodeContext:
    """A browser context, its page, CDP session and navigation watcher (made by ``open``)."""

    def __init__(self, context: BrowserContext, allowed: frozenset[str], generation: int) -> None:
        self.context = context
        #: The origins the page may reach (``sandboxes.origins``).
        self.allowed = allowed
        #: The host's browser generation the context belongs to.
        self.generation = generation
        #: URLs of subresource requests aborted by origin confinement in this context.
        self.blocked_requests: list[str] = []
        #: Set when the page's renderer crashed.
        self.crashed = False
        self.page: Page
        self.cdp: CDPSession
        self.nav: NavigationWatcher
        #: Popups being closed, held so that their tasks are not garbage-collected.
        self._closing_popups: set[asyncio.Task[None]] = set()

    @classmethod
    async def open(cls, browser: Browser, config: BrowserConfig, allowed: frozenset[str],
                   generation: int) -> EpisodeContext:
        """A new context with one page, confined to ``allowed``."""
        context = await browser.new_context(
            viewport={"width": config.viewport_width, "height": config.viewport_height},
            device_scale_factor=1,
            accept_downloads=False,
            # Service workers would fetch outside our route interception.
            service_workers="block",
        )
        episode = cls(context, allowed, generation)
        try:
            await episode._setup(config)
        except BaseException:
            await episode.close(config.action_timeout_s)
            raise
        return episode

    async def _setup(self, config: BrowserConfig) -> None:
        context = self.context
        context.set_default_timeout(config.action_timeout_s * 1000)
        context.set_default_navigation_timeout(config.navigation_timeout_s * 1000)
        # Only URLs that may leave the episode's origins pay for a round trip to Python.
        await context.route(outside_pattern(self.allowed), self._route)
        page = await context.new_page()
        page.on("crash", self._on_crash)
        cdp = await context.new_cdp_session(page)
        nav = NavigationWatcher(cdp, self.allowed)
        await nav.attach()
        self.page, self.cdp, self.nav = page, cdp, nav
        context.on("page", self._on_new_page)  # after new_page: only popups reach it

    async def capture(self, config: BrowserConfig) -> bytes:
        """The viewport through CDP ``Page.captureScreenshot``, encoded as ``config`` says."""
        params: dict[str, object] = {
            "format": config.image_format,
            "captureBeyondViewport": False,
            "optimizeForSpeed": config.fast_encoding,
        }
        if config.image_format == "jpeg":
            params["quality"] = config.jpeg_quality
        for attempt in range(_CAPTURE_ATTEMPTS):
            try:
                result = await self.cdp.send("Page.captureScreenshot", params)
                return base64.b64decode(result["data"])
            except PlaywrightError as exc:
                # A page that has not painted its first frame yet (right after a
                # navigation, on a loaded machine) refuses the capture; it paints soon.
                if _NOT_PAINTED not in str(exc) or attempt == _CAPTURE_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    async def start_over(self) -> None:
        """Begin another episode in this context: clear its cookies and the storage of its
        origins, and forget the last episode's blocked requests, navigations and popups."""
        self.blocked_requests = []
        self.nav.take_blocked()
        self.nav.take_opened()
        await asyncio.gather(
            self.context.clear_cookies(),
            *(
                self.cdp.send(
                    "Storage.clearDataForOrigin",
                    {"origin": web_origin(origin), "storageTypes": "all"},
                )
                for origin in sorted(self.allowed)
                if origin != "file://"
            ),
        )

    async def close(self, timeout: float) -> None:
        """Close the context (its page and renderer with it); errors mean it is gone."""
        try:
            await asyncio.wait_for(self.context.close(), timeout)
        except (TimeoutError, PlaywrightError):
            pass  # the browser is gone or wedged; the host cleans up the process

    def usable(self, allowed: frozenset[str], generation: int) -> bool:
        """Whether this context can serve an episode confined to ``allowed`` now."""
        return (self.allowed == allowed and self.generation == generation and not self.crashed
                and not self.page.is_closed())

    async def _route(self, route: Route, request: Request) -> None:
        url = request.url
        try:
            if is_allowed(url, self.allowed):
                await route.continue_()
            elif request.is_navigation_request() and request.frame.parent_frame is None:
                # "aborted" cancels the navigation and keeps the current page, where
                # other error codes would commit an error page.
                self.nav.note_blocked(url)
                await route.abort("aborted")
            else:
                self.blocked_requests.append(url)
                await route.abort("blockedbyclient")
        except PlaywrightError:
            pass  # the context closed while the request was in flight

    def _on_new_page(self, page: Page) -> None:
        if page is self.page:
            return
        # One page per episode: the agent only ever sees the main page. The watcher has
        # already reported the window, from Page.windowOpen.
        task = asyncio.ensure_future(_close_quietly(page))
        self._closing_popups.add(task)
        task.add_done_callback(self._closing_popups.discard)

    def _on_crash(self, _page: Page) -> None:
        self.crashed = True


class SpareContext:
    """The next episode's context, prepared in the background for one (URL, origins).

    ``take`` hands it over when the next fresh reset asks for exactly that URL and those
    origins (waiting for it if it is still loading), else closes it. A spare that failed
    to prepare is never handed over: the reset then opens a context the usual way and
    reports any error itself. The preparation is never cancelled half-way (a context being
    created would leak); closing a spare closes its context, which stops a load at once.
    """

    def __init__(self, host: BrowserHost, config: BrowserConfig, url: str,
                 allowed: frozenset[str], after: asyncio.Task[None] | None,
                 gate: asyncio.Event | None = None) -> None:
        """Start preparing once ``after`` (the previous context closing) is done and
        ``gate`` is set: the sandbox sets it after the episode's first screenshot, so that
        the preparation's browser work does not compete with the reset it follows."""
        self.url, self.allowed, self._timeout = url, allowed, config.navigation_timeout_s
        self._opened: EpisodeContext | None = None
        self._closed = self._creating = False
        self._gate = gate
        self._task = asyncio.ensure_future(self._prepare(host, config, after))
        self._task.add_done_callback(_retrieve)

    async def take(self, url: str, allowed: frozenset[str], generation: int) -> EpisodeContext | None:
        """The prepared context if it fits ``url`` and ``allowed`` and is healthy; else None
        (and the spare is closed)."""
        if self._gate is not None:
            self._gate.set()  # a reset before any screenshot: prepare now, or never
        if (url, allowed) == (self.url, self.allowed):
            with contextlib.suppress(Exception):
                episode = await asyncio.wait_for(asyncio.shield(self._task), self._timeout)
                if episode.usable(allowed, generation):
                    self._closed = True  # handed over: no longer ours to close
                    return episode
        await self.close()
        return None

    async def close(self) -> None:
        """Close what was prepared, stopping a load in flight. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._creating:  # still waiting to start: nothing exists to leak
            self._task.cancel()
            return
        if self._opened is not None:
            await self._opened.close(self._timeout)
        # Still opening: the preparation closes the context itself once it exists.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._task), self._timeout)

    async def _prepare(self, host: BrowserHost, config: BrowserConfig,
                       after: asyncio.Task[None] | None) -> EpisodeContext:
        generation = host.generation
        if after is not None:
            await asyncio.shield(after)  # a closed spare must not cancel the old context's close
        if self._gate is not None:
            await self._gate.wait()
        self._creating = True
        if host.generation != generation or not host.is_alive():
            raise SandboxCrashed("the browser died; the next reset restarts it", shared=True)
        browser = await host.ensure_browser()  # alive: never a relaunch from here
        episode = await EpisodeContext.open(browser, config, self.allowed, generation)
        if self._closed:
            await episode.close(self._timeout)
            raise _SpareClosed
        self._opened = episode
        await load(episode.page, self.url)
        return episode


class _SpareClosed(Exception):
    """The spare was closed while its context was being made."""


def _retrieve(task: asyncio.Task[EpisodeContext]) -> None:
    """Mark a spare's failure as seen: ``take`` and ``close`` treat it as no spare."""
    if not task.cancelled():
        task.exception()


async def load(page: Page, url: str) -> None:
    """Navigate ``page`` to ``url`` and wait for its DOMContentLoaded."""
    await page.goto(url, wait_until="domcontentloaded")


async def _close_quietly(page: Page) -> None:
    try:
        await page.close()
    except PlaywrightError:
        pass
