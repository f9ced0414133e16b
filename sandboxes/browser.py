"""``BrowserSandbox``: one isolated browser context per episode; it implements the sandbox
core and the ``Browser`` interface (``sandboxes.base``).

Every operation runs under a timeout. A failure is classified before it leaves:
the browser died -> ``SandboxCrashed`` (after the host restarted it); ran too long
-> ``SandboxTimeout``; anything else from Playwright -> another ``SandboxError``.
Only agent mistakes (a point outside the viewport, a blocked navigation, parameters the
browser refuses) come back from ``execute`` as a string.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    Page,
    Request,
    Route,
)
from playwright.async_api import (
    Error as PlaywrightError,
)

from sandboxes.actions import Action, duration_s
from sandboxes.base import Screenshot, UIElement
from sandboxes.browser_actions import outside_viewport, perform
from sandboxes.browser_config import BrowserConfig
from sandboxes.browser_elements import ELEMENTS_JS, parse_elements
from sandboxes.browser_host import BrowserHost, first_line
from sandboxes.browser_nav import NavigationWatcher
from sandboxes.errors import (
    SandboxClosed,
    SandboxCrashed,
    SandboxError,
    SandboxEvaluationError,
    SandboxNavigationError,
    SandboxTimeout,
)
from sandboxes.origins import (
    is_allowed,
    normalize_origins,
    outside_pattern,
    web_origin,
)

__all__ = ["BrowserConfig", "BrowserHost", "BrowserSandbox"]

_BLANK = "about:blank"

T = TypeVar("T")
_CONTEXT_DESTROYED = "Execution context was destroyed"
#: Playwright messages meaning the page (or everything under it) is gone. The events
#: that say so (page crash, browser disconnect) may still be in flight.
_GONE_MARKERS = ("Target crashed", "has been closed", "Target closed", "Connection closed")
_VERDICT_WAIT_S = 1.0
_NOT_PAINTED = "Unable to capture screenshot"
_CAPTURE_ATTEMPTS = 5
#: Asks a page that can show another URL of its origin in place to do so (see reset).
_SOFT_NAVIGATE = (
    "([url, content]) => (typeof window.__softNavigate === 'function'"
    " ? window.__softNavigate(url, content) : false)"
)


class BrowserSandbox:
    """One episode at a time in a fresh BrowserContext of a shared ``BrowserHost``."""

    kind: Literal["browser"] = "browser"

    def __init__(self, host: BrowserHost, config: BrowserConfig) -> None:
        self.host = host
        host.register(self)
        self.config = config
        self._context: BrowserContext | None = None
        self._page: Page | None = None
        self._cdp: CDPSession | None = None
        self._generation = 0
        self._allowed: frozenset[str] = frozenset()
        self._nav: NavigationWatcher | None = None
        #: Popups being closed, held so that their tasks are not garbage-collected.
        self._closing_popups: set[asyncio.Task[None]] = set()
        self._page_crashed = False
        self._closed = False
        #: URLs of subresource requests aborted by origin confinement this episode.
        self.blocked_requests: list[str] = []

    # ---- Sandbox protocol ------------------------------------------------------------

    async def start(self) -> None:
        """Start the host's browser if needed. Idempotent."""
        self._check_open()
        await self.host.start()

    async def reset(
        self,
        url: str | None = None,
        *,
        allowed_origins: tuple[str, ...] = (),
        keep_page: bool = False,
        content: str | None = None,
    ) -> None:
        """Close the previous episode's context and open ``url`` (None: a blank page) in a
        fresh one.

        ``keep_page=True`` reuses the previous episode's context and page instead, when
        they are healthy and confined to the same origins: cookies and storage are
        cleared, the episode's bookkeeping (blocked requests, popups) starts over, and
        the page shows ``url`` in place if it offers ``window.__softNavigate(url, content)``
        (a promise of true once shown), else it navigates there. ``content``, when the
        caller already has the HTML at ``url``, spares the page fetching it. Only for pages
        that keep no other client-side state, such as the FSM sites; it skips the new
        context and renderer a fresh reset pays for (see docs/sandboxes.md).
        """
        self._check_open()
        if url is None:
            url, allowed_origins, keep_page = _BLANK, (), False
        allowed = normalize_origins(tuple(allowed_origins), url)
        if keep_page and self._can_keep(allowed):
            await self._guarded(
                "reset", lambda: self._reuse_page(url, content), self.config.navigation_timeout_s
            )
            return
        await self._close_context()
        browser = await self.host.ensure_browser()
        self._generation = self.host.generation
        self._allowed = allowed
        self._page_crashed = False
        self.blocked_requests = []
        await self._guarded(
            "reset", lambda: self._open_context(browser), self.config.navigation_timeout_s
        )
        await self._guarded("reset", lambda: self._goto(url), self.config.navigation_timeout_s)

    async def screenshot(self) -> Screenshot:
        """Capture the viewport through CDP ``Page.captureScreenshot``."""
        self._require_page()
        data = await self._guarded("screenshot", self._capture, self.config.action_timeout_s)
        cfg = self.config  # every context is created with this viewport
        return Screenshot(
            data=data, format=cfg.image_format, width=cfg.viewport_width, height=cfg.viewport_height
        )

    async def execute(self, action: Action) -> str | None:
        """Perform ``action``; None on success, or the agent's error as a message."""
        page = self._require_page()
        error = outside_viewport(action, self.config.viewport_width, self.config.viewport_height)
        if error is not None:
            return error
        limit = self.config.action_timeout_s + duration_s(action)
        refused = await self._guarded(action.type, lambda: perform(page, action), limit)
        if refused is not None:
            return refused
        assert self._nav is not None
        nav = self._nav
        await self._guarded(
            action.type, lambda: nav.after_action(action.type), self.config.navigation_timeout_s
        )
        if self.config.settle_ms:
            await asyncio.sleep(self.config.settle_ms / 1000)
        return self._agent_error()

    async def evaluate(self, expression: str) -> object:
        """Evaluate a JavaScript expression in the page and return its JSON value."""
        page = self._require_page()
        try:
            return await self._guarded(
                "evaluate", lambda: page.evaluate(expression), self.config.action_timeout_s
            )
        except SandboxEvaluationError as exc:
            if _CONTEXT_DESTROYED not in str(exc):
                raise
        # The page navigated under us: wait for the new document once and retry.
        await self._guarded(
            "evaluate",
            lambda: page.wait_for_load_state("domcontentloaded"),
            self.config.navigation_timeout_s,
        )
        return await self._guarded(
            "evaluate", lambda: page.evaluate(expression), self.config.action_timeout_s
        )

    async def elements(self) -> list[UIElement]:
        """The interactive elements the viewport shows (``sandboxes.browser_elements``)."""
        return parse_elements(await self.evaluate(ELEMENTS_JS))

    @property
    def url(self) -> str:
        """The page's current URL ("about:blank" before the first reset)."""
        if self._page is None or self._page.is_closed():
            return "about:blank"
        return self._page.url

    @property
    def page(self) -> Page:
        """The episode's Playwright page, for tasks that need richer access."""
        return self._require_page()

    async def health(self) -> bool:
        """True while the sandbox can serve an episode (browser up, page responsive)."""
        if self._closed or not self.host.is_alive():
            return False
        if self._page is None:
            return True
        if self._page_crashed or self._generation != self.host.generation or self._page.is_closed():
            return False
        try:
            return await asyncio.wait_for(self._page.evaluate("1"), 2.0) == 1
        except (TimeoutError, PlaywrightError):
            return False

    async def close(self) -> None:
        """Close this sandbox's context. Idempotent; the host stays up."""
        if self._closed:
            return
        self._closed = True
        await self._close_context()

    # ---- internals -------------------------------------------------------------------

    async def _open_context(self, browser: Browser) -> None:
        cfg = self.config
        context = await browser.new_context(
            viewport={"width": cfg.viewport_width, "height": cfg.viewport_height},
            device_scale_factor=1,
            accept_downloads=False,
            # Service workers would fetch outside our route interception.
            service_workers="block",
        )
        self._context = context
        context.set_default_timeout(cfg.action_timeout_s * 1000)
        context.set_default_navigation_timeout(cfg.navigation_timeout_s * 1000)
        # Only URLs that may leave the episode's origins pay for a round trip to Python.
        await context.route(outside_pattern(self._allowed), self._route)
        page = await context.new_page()
        page.on("crash", self._on_crash)
        cdp = await context.new_cdp_session(page)
        nav = NavigationWatcher(cdp, self._allowed)
        await nav.attach()
        # Published together, so a page is never seen without its CDP session and watcher.
        self._page, self._cdp, self._nav = page, cdp, nav
        context.on("page", self._on_new_page)  # after new_page: only popups reach it

    def _can_keep(self, allowed: frozenset[str]) -> bool:
        return (
            self._page is not None
            and not self._page.is_closed()
            and allowed == self._allowed
            and not self._crashed()
        )

    async def _reuse_page(self, url: str, content: str | None) -> None:
        assert self._page is not None and self._context is not None and self._cdp is not None
        assert self._nav is not None  # published together with the page
        page, cdp = self._page, self._cdp
        self.blocked_requests = []
        self._nav.take_blocked()
        self._nav.take_opened()
        await asyncio.gather(
            self._context.clear_cookies(),
            *(
                cdp.send(
                    "Storage.clearDataForOrigin",
                    {"origin": web_origin(origin), "storageTypes": "all"},
                )
                for origin in sorted(self._allowed)
                if origin != "file://"
            ),
        )
        try:
            shown = await page.evaluate(_SOFT_NAVIGATE, [url, content])
        except PlaywrightError as exc:
            if _CONTEXT_DESTROYED not in str(exc):
                raise
            shown = False  # the page fell back to a full load of its own
        if shown is not True:
            await self._goto(url)

    async def _goto(self, url: str) -> None:
        assert self._page is not None
        try:
            await self._page.goto(url, wait_until="domcontentloaded")
        except PlaywrightError as exc:
            if self._crashed():
                raise
            raise SandboxNavigationError(
                f"expected {url} to load, got {first_line(exc)}; is the site server running?"
            ) from exc

    async def _capture(self) -> bytes:
        assert self._cdp is not None
        params: dict[str, object] = {
            "format": self.config.image_format,
            "captureBeyondViewport": False,
            "optimizeForSpeed": self.config.fast_encoding,
        }
        if self.config.image_format == "jpeg":
            params["quality"] = self.config.jpeg_quality
        for attempt in range(_CAPTURE_ATTEMPTS):
            try:
                result = await self._cdp.send("Page.captureScreenshot", params)
                return base64.b64decode(result["data"])
            except PlaywrightError as exc:
                # A page that has not painted its first frame yet (right after a
                # navigation, on a loaded machine) refuses the capture; it paints soon.
                if _NOT_PAINTED not in str(exc) or attempt == _CAPTURE_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    async def _route(self, route: Route, request: Request) -> None:
        url = request.url
        try:
            if is_allowed(url, self._allowed):
                await route.continue_()
            elif request.is_navigation_request() and request.frame.parent_frame is None:
                # "aborted" cancels the navigation and keeps the current page, where
                # other error codes would commit an error page.
                if self._nav is not None:
                    self._nav.note_blocked(url)
                await route.abort("aborted")
            else:
                self.blocked_requests.append(url)
                await route.abort("blockedbyclient")
        except PlaywrightError:
            pass  # the context closed while the request was in flight

    def _on_new_page(self, page: Page) -> None:
        if page is self._page:
            return
        # One page per episode: the agent only ever sees the main page. The watcher has
        # already reported the window, from Page.windowOpen.
        task = asyncio.ensure_future(_close_quietly(page))
        self._closing_popups.add(task)
        task.add_done_callback(self._closing_popups.discard)

    def _on_crash(self, _page: Page) -> None:
        self._page_crashed = True

    def _agent_error(self) -> str | None:
        """What the agent did wrong since the previous action, if anything."""
        assert self._nav is not None
        blocked, opened = self._nav.take_blocked(), self._nav.take_opened()
        if blocked:
            allowed = ", ".join(sorted(self._allowed)) or "(none)"
            return f"navigation to {', '.join(blocked)} blocked; allowed origins: {allowed}"
        if opened:
            return (
                f"a new window ({', '.join(opened)}) was opened and closed; "
                "this sandbox shows one page"
            )
        return None

    def _crashed(self) -> bool:
        return (
            self._page_crashed
            or self._generation != self.host.generation
            or not self.host.is_alive()
        )

    async def _guarded(self, what: str, op: Callable[[], Awaitable[T]], timeout: float) -> T:
        """Run ``op`` under ``timeout`` and turn every failure into a typed SandboxError."""
        if self._crashed():
            await self._raise_crashed(what, None)
        try:
            return await asyncio.wait_for(op(), timeout)
        except TimeoutError as exc:
            if self._crashed():
                await self._raise_crashed(what, exc)
            raise SandboxTimeout(
                f"expected {what} to finish within {timeout:g}s, it did not; "
                "raise action_timeout_s/navigation_timeout_s if the page is just slow"
            ) from exc
        except PlaywrightError as exc:
            if any(marker in str(exc) for marker in _GONE_MARKERS):
                await self._await_verdict()
                self._page_crashed = True
            if self._crashed():
                await self._raise_crashed(what, exc)
            if what == "evaluate":
                raise SandboxEvaluationError(
                    f"evaluate raised in the page: {first_line(exc)}"
                ) from exc
            raise SandboxError(f"{what} failed: {first_line(exc)}") from exc

    async def _await_verdict(self) -> None:
        """Give a dying browser a moment to show up as dead, so that a lost page is
        reported as the browser crash it is part of, and the browser restarted."""
        deadline = asyncio.get_running_loop().time() + _VERDICT_WAIT_S
        while self.host.is_alive() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)

    async def _raise_crashed(self, what: str, cause: BaseException | None) -> None:
        generation, renderer_only = (
            self._generation,
            self.host.is_alive() and self._generation == self.host.generation,
        )
        await self._close_context()
        if not renderer_only:
            await self.host.recover(generation)
        part = "the page (its renderer crashed or it closed)" if renderer_only else "Chromium"
        raise SandboxCrashed(
            f"{part} died during {what}; the browser is running again, call reset to start a new episode",
            shared=not renderer_only,
        ) from cause

    async def _close_context(self) -> None:
        context, self._context, self._page, self._cdp = self._context, None, None, None
        self._nav = None
        if context is None:
            return
        try:
            await asyncio.wait_for(context.close(), self.config.action_timeout_s)
        except (TimeoutError, PlaywrightError):
            pass  # the browser is gone or wedged; the host cleans up the process

    def _check_open(self) -> None:
        if self._closed or self.host.closed:
            raise SandboxClosed(
                "expected an open sandbox, got a closed one; create one with host.new_sandbox()"
            )

    def _require_page(self) -> Page:
        self._check_open()
        if self._page is None:
            if self._generation and self._generation != self.host.generation:
                raise SandboxCrashed("the browser restarted since this episode began; call reset", shared=True)
            raise SandboxError(
                "expected reset() before using the sandbox, got no episode; call reset(url)"
            )
        return self._page


async def _close_quietly(page: Page) -> None:
    try:
        await page.close()
    except PlaywrightError:
        pass
