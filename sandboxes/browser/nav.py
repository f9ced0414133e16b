"""Watching the main frame's navigations over CDP, so that ``execute`` can report a
blocked navigation from the very action that caused it and wait for an allowed one
to load before the next screenshot.

Playwright's ``mouse.click`` returns once the renderer handled the input, but the
navigation it started reaches our route handler tens of milliseconds later. The
renderer emits ``Page.frameRequestedNavigation`` while it handles the input, so one
cheap round trip on our own CDP session after the action has, in practice, let every
navigation the action requested reach us. Should one ever trail, the route handler
still blocks it and the next ``execute`` reports it. New windows are reported the same
way: the renderer emits ``Page.windowOpen`` while it handles the input, long before
Playwright announces the new page.

A ``javascript:`` URL (a link's href) loads no document: the renderer queues a task that
runs it, announced by ``Page.frameScheduledNavigation`` while it handles the input. The
renderer may answer our next calls before that task runs (often a frame later, after an
input), so when the flush has seen one, the watcher also waits for a task queued after it
(``setTimeout(0)`` in the page), and the script's effects are visible to the next call.

The flush can carry a read: a read-only expression the caller evaluates after every action
(a task's reward globals) is evaluated by the flush itself, saving that read its own round
trip; the value counts only when nothing (a javascript: URL, a navigation) ran after it.
"""

from __future__ import annotations

import asyncio

from playwright.async_api import CDPSession
from playwright.async_api import Error as PlaywrightError

from sandboxes.origins import is_allowed

#: Action types that cannot start a navigation and so skip the CDP round trip.
NON_NAVIGATING = frozenset({"done", "wait", "move", "scroll"})
#: The cheapest round trip to the renderer's main thread: a flush of the events before it.
_FLUSH: dict[str, object] = {"expression": "0"}
#: Settles once the page has run the tasks queued before it (a javascript: URL's among them).
_NEXT_TASK = {"expression": "new Promise(resolve => setTimeout(resolve, 0))", "awaitPromise": True}
#: What ``after_action`` returns when it read nothing that still holds.
NOT_READ = object()
#: What a call into the page says when its document was replaced under it (by a
#: navigation the renderer does not announce, ``history.back()``): the action worked, and
#: every event of the old document has arrived before this answer, which is all a flush is for.
_NAVIGATED_MARKERS = ("Inspected target navigated or closed", "Execution context was destroyed")


def navigated_away(exc: PlaywrightError) -> bool:
    """Whether ``exc`` only says that the page's document was replaced during the call."""
    return any(marker in str(exc) for marker in _NAVIGATED_MARKERS)


class NavigationWatcher:
    """Tracks navigations requested in the main frame of one page."""

    def __init__(self, cdp: CDPSession, allowed: frozenset[str]) -> None:
        self._cdp = cdp
        self._allowed = allowed
        self._main_frame_id: str | None = None
        self._requested: str | None = None
        self._script_url_queued = False
        self._settled = asyncio.Event()
        self._settled.set()
        #: Disallowed main-frame navigations seen since the last ``take_blocked``.
        self.blocked: list[str] = []
        #: URLs of windows the page opened since the last ``take_opened``.
        self.opened: list[str] = []

    async def attach(self) -> None:
        """Subscribe to the page's navigation events."""
        self._cdp.on("Page.frameRequestedNavigation", self._on_requested)
        self._cdp.on("Page.frameScheduledNavigation", self._on_scheduled)
        self._cdp.on("Page.windowOpen", lambda params: self.opened.append(params.get("url", "")))
        for event in (
            "Page.domContentEventFired",
            "Page.navigatedWithinDocument",
            "Page.frameStoppedLoading",
        ):
            self._cdp.on(event, self._on_settled)
        await self._cdp.send("Page.enable")
        tree = await self._cdp.send("Page.getFrameTree")
        self._main_frame_id = tree["frameTree"]["frame"]["id"]

    def note_blocked(self, url: str) -> None:
        """Record a main-frame navigation the route handler aborted."""
        if url not in self.blocked:
            self.blocked.append(url)

    async def after_action(self, action_type: str, read: str | None = None) -> object:
        """Flush events the action caused, then wait for a javascript: URL it queued to
        run, and for an allowed navigation to settle (its new document's
        DOMContentLoaded, a same-document change, or a stop).

        ``read``, a read-only expression, is evaluated by the flush; its JSON value is
        returned, or ``NOT_READ`` when the page ran a script URL or navigated after it, or
        when it threw or has no JSON value."""
        if action_type in NON_NAVIGATING:
            return NOT_READ
        answer = await self._round_trip(
            _FLUSH if read is None else {"expression": read, "returnByValue": True})
        value = NOT_READ if read is None else _json_value(answer)
        if self._script_url_queued:
            self._script_url_queued, value = False, NOT_READ
            await self._round_trip(_NEXT_TASK)
        if self._requested is not None:
            self._requested, value = None, NOT_READ
            await self._settled.wait()
        return value

    async def _round_trip(self, params: dict[str, object]) -> dict[str, object] | None:
        try:
            return await self._cdp.send("Runtime.evaluate", params)
        except PlaywrightError as exc:
            if not navigated_away(exc):
                raise
            return None

    def take_blocked(self) -> list[str]:
        """The blocked navigations since the last call, oldest first."""
        blocked, self.blocked = self.blocked, []
        return blocked

    def take_opened(self) -> list[str]:
        """The windows opened since the last call, oldest first."""
        opened, self.opened = self.opened, []
        return opened

    def _on_requested(self, params: dict[str, object]) -> None:
        if (
            params.get("frameId") != self._main_frame_id
            or params.get("disposition") != "currentTab"
        ):
            return
        url = str(params.get("url", ""))
        if url.lower().startswith("javascript:"):
            self._script_url_queued = True  # runs script in place; no document load follows
            return
        if is_allowed(url, self._allowed):
            self._requested = url
            self._settled.clear()
        else:
            self.note_blocked(url)

    def _on_scheduled(self, params: dict[str, object]) -> None:
        url = str(params.get("url", ""))
        if params.get("frameId") == self._main_frame_id and url.lower().startswith("javascript:"):
            self._script_url_queued = True

    def _on_settled(self, params: dict[str, object]) -> None:
        frame = params.get("frameId")
        if frame is None or frame == self._main_frame_id:
            self._settled.set()


def _json_value(answer: dict[str, object] | None) -> object:
    """The value of a ``Runtime.evaluate`` answer made with ``returnByValue``, or NOT_READ."""
    if answer is None or "exceptionDetails" in answer:
        return NOT_READ
    result = answer["result"]
    if not isinstance(result, dict):
        return NOT_READ
    if result.get("type") == "undefined":
        return None
    return result["value"] if "value" in result else NOT_READ  # NaN, Infinity, -0, bigint
