"""``BrowserSandbox``: one isolated browser context per episode; it implements the sandbox
core and the ``Browser`` interface (``sandboxes.base``). The context itself, and the next
episode's prepared in the background, are ``sandboxes.browser.context``'s.

Every operation runs under a timeout. A failure is classified before it leaves:
the browser died -> ``SandboxCrashed`` (after the host restarted it); ran too long
-> ``SandboxTimeout``; anything else from Playwright -> another ``SandboxError``.
Only agent mistakes (a point outside the viewport, a blocked navigation, parameters the
browser refuses) come back from ``execute`` as a string.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from sandboxes.actions import Action, duration_s
from sandboxes.base import Screenshot, UIElement
from sandboxes.browser.actions import outside_viewport, perform
from sandboxes.browser.config import BrowserConfig
from sandboxes.browser.context import EpisodeContext, SpareContext, load
from sandboxes.browser.elements import ELEMENTS_JS, parse_elements
from sandboxes.browser.host import BrowserHost, first_line
from sandboxes.browser.nav import NOT_READ
from sandboxes.errors import (
    SandboxClosed,
    SandboxCrashed,
    SandboxError,
    SandboxEvaluationError,
    SandboxNavigationError,
    SandboxTimeout,
)
from sandboxes.origins import normalize_origins

__all__ = ["BrowserConfig", "BrowserHost", "BrowserSandbox"]

_BLANK = "about:blank"

T = TypeVar("T")
_CONTEXT_DESTROYED = "Execution context was destroyed"
#: Playwright messages meaning the page (or everything under it) is gone. The events
#: that say so (page crash, browser disconnect) may still be in flight.
_GONE_MARKERS = ("Target crashed", "has been closed", "Target closed", "Connection closed")
_VERDICT_WAIT_S = 1.0
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
        self._episode: EpisodeContext | None = None
        self._generation = 0
        self._page_crashed = False
        self._closed = False
        #: The next episode's context, prepared while this one runs (config.prepare_next).
        self._spare: SpareContext | None = None
        #: Earlier episodes' contexts being closed in the background.
        self._retiring: set[asyncio.Task[None]] = set()
        self._last_url: str | None = None  # of the last fresh reset: the guess for the next
        #: Set by the first screenshot after a fresh reset; the spare's preparation waits for it.
        self._shown = asyncio.Event()
        self._after_read: str | None = None  # see read_after_actions
        self._read_value: object = NOT_READ
        #: (the address the page reports, the page's URL when it did): see show_address
        self._address: tuple[str, str] | None = None

    @property
    def blocked_requests(self) -> list[str]:
        """URLs of subresource requests aborted by origin confinement this episode."""
        return self._episode.blocked_requests if self._episode is not None else []

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

        With ``config.prepare_next`` the fresh context may have been opened, and ``url``
        loaded in it, in the background while the previous episode ran (see
        ``_prepare_next``): no episode ever used it, and a guess that turns out wrong (another
        URL or other origins) is closed unused.

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
        self._after_read, self._read_value = None, NOT_READ
        self._address = None
        if url is None:
            url, allowed_origins, keep_page = _BLANK, (), False
        allowed = normalize_origins(tuple(allowed_origins), url)
        if keep_page and self._can_keep(allowed):
            await self._drop_spare()
            await self._guarded(
                "reset", lambda: self._reuse_page(url, content), self.config.navigation_timeout_s
            )
            return
        browser = await self.host.ensure_browser()
        generation = self.host.generation
        spare, self._spare = self._spare, None
        episode = await spare.take(url, allowed, generation) if spare is not None else None
        self._shown.set()  # the last episode's background work may start, if it has not
        self._shown = asyncio.Event()
        retired = self._retire(self._shown)
        self._generation, self._page_crashed = generation, False
        if episode is not None:
            self._episode = episode
        else:
            self._episode = await self._guarded(
                "reset", lambda: EpisodeContext.open(browser, self.config, allowed, generation),
                self.config.navigation_timeout_s,
            )
            await self._guarded("reset", lambda: self._goto(url), self.config.navigation_timeout_s)
        if not keep_page:
            self._prepare_next(url, allowed, retired)

    async def screenshot(self) -> Screenshot:
        """Capture the viewport through CDP ``Page.captureScreenshot``."""
        self._require_page()
        self._read_value = NOT_READ
        data = await self._guarded("screenshot", self._capture, self.config.action_timeout_s)
        self._shown.set()
        cfg = self.config  # every context is created with this viewport
        return Screenshot(
            data=data, format=cfg.image_format, width=cfg.viewport_width, height=cfg.viewport_height
        )

    async def execute(self, action: Action) -> str | None:
        """Perform ``action``; None on success, or the agent's error as a message."""
        page = self._require_page()
        self._read_value = NOT_READ
        error = outside_viewport(action, self.config.viewport_width, self.config.viewport_height)
        if error is not None:
            return error
        limit = self.config.action_timeout_s + duration_s(action)
        refused = await self._guarded(action.type, lambda: perform(page, action), limit)
        if refused is not None:
            return refused
        assert self._episode is not None  # _guarded raised if the page went away
        nav, read = self._episode.nav, self._after_read
        self._read_value = await self._guarded(
            action.type, lambda: nav.after_action(action.type, read),
            self.config.navigation_timeout_s,
        )
        if self.config.settle_ms:
            await asyncio.sleep(self.config.settle_ms / 1000)
        return self._agent_error()

    async def evaluate(self, expression: str) -> object:
        """Evaluate a JavaScript expression in the page and return its JSON value."""
        page = self._require_page()
        value, self._read_value = self._read_value, NOT_READ
        if value is not NOT_READ and expression == self._after_read:
            return value  # read by the action's own last round trip (read_after_actions)
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

    def read_after_actions(self, expression: str | None) -> None:
        """Evaluate ``expression`` (read-only, with a JSON value) in the round trip that ends
        every action (the navigation flush), and answer ``evaluate(expression)`` from it
        when that is the next call after the action: a task that judges each step by
        reading the page (MiniWoB's reward globals) saves a round trip per step. The value
        is read again when the action ran a script URL or navigated. None, or the next
        ``reset``, stops it."""
        self._after_read, self._read_value = expression, NOT_READ

    async def elements(self) -> list[UIElement]:
        """The interactive elements the viewport shows (``sandboxes.browser.elements``)."""
        return parse_elements(await self.evaluate(ELEMENTS_JS))

    def show_address(self, url: str) -> None:
        """Report ``url`` as the page's URL from now on: a page that shows its pages in
        place may leave the browser's URL as it is, since each change of it is a
        same-document navigation that costs the browser's main thread about 10 ms (the FSM
        sites' site.js, told so by ``FSMTask``), and say where it is instead. ``url``
        holds until the page's own URL changes (a navigation) or the next reset."""
        if self._episode is not None and not self._episode.page.is_closed():
            self._address = (url, self._episode.page.url)

    @property
    def url(self) -> str:
        """The page's current URL ("about:blank" before the first reset), or the address
        it reported since its URL last changed (``show_address``)."""
        if self._episode is None or self._episode.page.is_closed():
            return "about:blank"
        url = self._episode.page.url
        if self._address is not None and self._address[1] == url:
            return self._address[0]
        return url

    @property
    def page(self) -> Page:
        """The episode's Playwright page, for tasks that need richer access."""
        return self._require_page()

    async def health(self) -> bool:
        """True while the sandbox can serve an episode (browser up, page responsive)."""
        if self._closed or not self.host.is_alive():
            return False
        if self._episode is None:
            return True
        page = self._episode.page
        if self._crashed() or page.is_closed():
            return False
        try:
            return await asyncio.wait_for(page.evaluate("1"), 2.0) == 1
        except (TimeoutError, PlaywrightError):
            return False

    async def close(self) -> None:
        """Close this sandbox's contexts (the episode's, a prepared one, retired ones).
        Idempotent; the host stays up."""
        if self._closed:
            return
        self._closed = True
        self._shown.set()  # no screenshot comes any more: retiring contexts close now
        await self._drop_spare()
        await self._close_context()
        while self._retiring:
            await asyncio.gather(*self._retiring)

    # ---- internals -------------------------------------------------------------------

    def _prepare_next(self, url: str, allowed: frozenset[str], after: asyncio.Task[None] | None) -> None:
        """Once two fresh resets in a row opened ``url`` (every episode of a MiniWoB task
        does), guess that the next one opens it again and prepare its context now, once
        ``after`` (the previous context closing) is done. A sandbox used for one episode,
        or for a new URL each time, never prepares one."""
        guess = self.config.prepare_next and url != _BLANK and url == self._last_url
        self._last_url = url
        if guess:
            self._spare = SpareContext(self.host, self.config, url, allowed, after, self._shown)

    async def _drop_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            await spare.close()

    def _retire(self, gate: asyncio.Event | None = None) -> asyncio.Task[None] | None:
        """Close the previous episode's context in the background, once ``gate`` is set
        (the new episode's first screenshot: the close's browser work then does not
        compete with the reset); the new episode runs in another context, so nothing of
        the old one can reach it meanwhile."""
        episode, self._episode = self._episode, None
        if episode is None:
            return None

        async def close() -> None:
            if gate is not None:
                await gate.wait()
            await episode.close(self.config.action_timeout_s)

        task = asyncio.ensure_future(close())
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)
        return task

    def _can_keep(self, allowed: frozenset[str]) -> bool:
        return (
            self._episode is not None
            and self._episode.usable(allowed, self.host.generation)
            and not self._crashed()
        )

    async def _reuse_page(self, url: str, content: str | None) -> None:
        assert self._episode is not None
        page = self._episode.page
        await self._episode.start_over()
        try:
            shown = await page.evaluate(_SOFT_NAVIGATE, [url, content])
        except PlaywrightError as exc:
            if _CONTEXT_DESTROYED not in str(exc):
                raise
            shown = False  # the page fell back to a full load of its own
        if shown is not True:
            await self._goto(url)

    async def _goto(self, url: str) -> None:
        assert self._episode is not None
        try:
            await load(self._episode.page, url)
        except PlaywrightError as exc:
            if self._crashed():
                raise
            raise SandboxNavigationError(
                f"expected {url} to load, got {first_line(exc)}; is the site server running?"
            ) from exc

    async def _capture(self) -> bytes:
        assert self._episode is not None
        return await self._episode.capture(self.config)

    def _agent_error(self) -> str | None:
        """What the agent did wrong since the previous action, if anything."""
        assert self._episode is not None
        nav = self._episode.nav
        blocked, opened = nav.take_blocked(), nav.take_opened()
        if blocked:
            allowed = ", ".join(sorted(self._episode.allowed)) or "(none)"
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
            or (self._episode is not None and self._episode.crashed)
            or self._generation != self.host.generation
            or not self.host.is_alive()
        )

    async def _guarded(self, what: str, op: Callable[[], Awaitable[T]], timeout: float) -> T:
        """Run ``op`` under ``timeout`` and turn every failure into a typed SandboxError."""
        if self._crashed():
            await self._raise_crashed(what, None)
        try:
            async with asyncio.timeout(timeout):  # no task per call, unlike wait_for
                return await op()
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
        episode, self._episode = self._episode, None
        if episode is not None:
            await episode.close(self.config.action_timeout_s)

    def _check_open(self) -> None:
        if self._closed or self.host.closed:
            raise SandboxClosed(
                "expected an open sandbox, got a closed one; create one with host.new_sandbox()"
            )

    def _require_page(self) -> Page:
        self._check_open()
        if self._episode is None:
            if self._generation and self._generation != self.host.generation:
                raise SandboxCrashed("the browser restarted since this episode began; call reset", shared=True)
            raise SandboxError(
                "expected reset() before using the sandbox, got no episode; call reset(url)"
            )
        return self._episode.page

