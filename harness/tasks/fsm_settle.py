"""How ``FSMTask`` knows that the page shows the state of the session's last event.

site.js (``fsm_sites/render/static/site.js``) swaps in the new state's page after each
event, at the address ``<route>?v=<seq>`` (``?v=<marker>`` after a jump). ``settle`` waits
for that, so the screenshot that follows is current. A sandbox that can report the address
itself (``BrowserSandbox.show_address``) is told it after each settle, and the page then
leaves the browser's URL as it is when it swaps a page in (``setAddressing(false)``):
changing it is a same-document navigation, about 10 ms of the browser's main thread per
step. With an in-process site server the page hands its events over instead of posting
them (``prepare_page``): the settle's first read, which rides on the action's own last round
trip (``read_after_actions``), returns them, and ``hand_back`` applies them here and hands
the page their answers (docs/fsm_server.md).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Mapping
from typing import TypedDict, TypeVar
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from fsm_sites.serving.client import LocalSiteClient, SiteClient, SiteUnavailable
from harness.errors import PageLeft, TaskError
from harness.tasks.base import ClosablePage, PageReader
from sandboxes.base import ReadsAfterActions, ReportsAddress
from sandboxes.errors import SandboxError, SandboxEvaluationError
from sandboxes.origins import origin_of

T = TypeVar("T")

SETTLE_TIMEOUT_S = 5.0
# What the harness reads of the page (site.js's window.__fsm): `swapped` says the page shows
# a DOM that a capture renders as it is (swapped in, or loaded and painted); `outbox`, the
# events the page hands over to the harness (``take_events``), if any; `address`, the URL
# of the page shown (the browser's may lag behind it, see ``prepare_page``).
_FIELDS = ("{pending: f.pending, swapped: f.swapped || f.painted, speculating: f.speculating || null,"
           " outbox: f.outbox && f.outbox.length ? f.outbox : null, ready: document.readyState,"
           " address: f.address || location.href}")
# Waits for the page's in-flight event or swap (or an event handed over), then says what
# the page shows.
_STATUS = ("(async () => { const f = window.__fsm; if (!f) return null;"
           f" await (f.settled ? f.settled() : f.idle); return {_FIELDS}; }})()")
_FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"
# What the page shows now, without waiting: read by the action's own last round trip
# (``read_after_actions``), so a step whose page needs no waiting costs no extra trip.
_NOW = f"(() => {{ const f = window.__fsm; if (!f) return null; return {_FIELDS}; }})()"
# Whether the document is one of the site's pages (site.js sets window.__fsm as it runs).
_BARE = "({ready: document.readyState, fsm: Boolean(window.__fsm)})"
# While a prefetched page waits for the server to take its event, how often (in polls of
# the server, 1 ms apart) it also asks the page whether its answer came meanwhile (a refused
# event, an error): then the settle falls back to the page's own answer.
_PAGE_EVERY = 10


# Whether the page has no event of its own still waiting for an answer (none in flight, none
# in the outbox); a page that is not an FSM page has none.
_IDLE = ("(() => { const f = window.__fsm;"
         " return !f || (!f.pending && !(f.outbox && f.outbox.length)); })()")


async def page_idle(browser: PageReader) -> bool:
    """Whether the page the browser shows may show the next episode in place: a page still
    waiting for the answer to an event (the episode before crashed while applying it) would
    queue the next episode's page behind that answer, which never comes, so it may not.
    True when there is no page yet (the reset opens one)."""
    try:
        return await browser.evaluate(_IDLE) is not False
    except SandboxError:
        return True  # no page to keep: the reset makes a fresh one anyway


async def prepare_page(browser: PageReader, sites: SiteClient, *, take_events: bool, prefetch: bool) -> None:
    """Set up a freshly shown episode page: the settle's first read rides on each action's
    last round trip, the page hands its events over (only to an in-process server) and
    prefetches as asked, and a page swapped in leaves the browser's URL as it is when the
    sandbox reports the page's address itself (``show_address``). A kept page keeps what
    it had, so all are set every time."""
    if isinstance(browser, ReadsAfterActions):
        browser.read_after_actions(_NOW)
    take = "true" if take_events and isinstance(sites, LocalSiteClient) else "false"
    addressing = "false" if isinstance(browser, ReportsAddress) else "true"
    also = " window.__fsm.setPrefetch(true);" if prefetch else ""
    await _read(browser, "(() => { const f = window.__fsm; if (!f) return false;"
                         f" if (f.handOver) f.handOver({take}); if (f.setAddressing) f.setAddressing({addressing});"
                         f"{also} return true; }})()")


async def settle(browser: PageReader, sites: SiteClient, sid: str, *, task_id: str,
                 jump_view: tuple[str, int] | None = None, marker: str | None = None) -> None:
    """Wait until the page shows the state of the session's last event (``marker``: the
    jump's marker instead; ``jump_view``: the (marker, seq) of the last jump, which the page
    legitimately shows until the next event). A page that showed a prefetched page at once
    needs no waiting once the server took its event and has that very page (``_confirmed``)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    status = await _read(browser, _NOW)
    while isinstance(status, dict) and status["outbox"]:
        status = await hand_back(browser, sites, status["outbox"])
    if isinstance(status, dict) and status["pending"]:
        if status["speculating"] and await _confirmed(browser, status, sites, sid):
            # The page's answer, still on its way, gives the address the seq its event got.
            _report_address(browser, _with_marker(status["address"], str(status["speculating"]["seq"])))
            return
        status = None  # an event or a swap in flight: wait for it below
    last: object = None
    while time.monotonic() < deadline:
        if status is None:
            status = await _read(browser, _STATUS)
        if status is None:
            await _require_site_page(browser, sites)
        last = status if status is not None else last
        if isinstance(status, dict) and status["outbox"]:
            status = await hand_back(browser, sites, status["outbox"])
            continue
        if isinstance(status, dict) and not status["pending"] and status["ready"] == "complete":
            seen = _shown_marker(status["address"])
            seq = (await site_call(sites.session(sid))).seq
            if marker is not None:
                current = seen == marker
            else:
                current = (seen in (str(seq), "x") or (seen is None and seq == 0)
                           or (seen, seq) == jump_view)
            if current and status["swapped"]:
                # A capture renders a swapped-in DOM (tests/harness/test_fsm_task.py), and
                # a loaded one that has painted (``swapped`` says either).
                _report_address(browser, status["address"])
                return
            if current:
                # A freshly loaded document may not have painted yet; wait for two
                # frames so the screenshot that follows captures it.
                try:
                    await browser.evaluate(_FRAMES)
                except SandboxEvaluationError:  # navigated again meanwhile; look again
                    status = None
                    continue
                _report_address(browser, status["address"])
                return
        status = None
        await asyncio.sleep(0.02)
    await _require_site_page(browser, sites)
    if isinstance(last, dict) and not last["pending"] and last["ready"] == "complete":
        # A loaded, idle page of the site that shows another step's address: the agent went
        # back or forward in the history, or typed an old address. Its next event shows the
        # session's page again.
        raise PageLeft(f"the page shows {last['address']}, an earlier step of the session (went back "
                       "in the history?); the site's state is the session's, act on the page to go on")
    raise TaskError(f"expected the page of {task_id} to show the new state within "
                    f"{SETTLE_TIMEOUT_S}s, got a page still loading at {browser.url}")


async def _require_site_page(browser: PageReader, sites: SiteClient) -> None:
    """Raise ``PageLeft`` when the page is not one of the site's any more: closed, off the
    site's origin (a blocked or failed navigation shows ``chrome-error://``), or a loaded
    document without site.js (one the agent broke). Only the agent's actions do that."""
    site = sites.site_url
    if isinstance(browser, ClosablePage) and browser.closed:
        raise PageLeft(f"the task's page was closed (its tab or window); the site was at {site}")
    url = browser.url
    if origin_of(url) != origin_of(site):
        raise PageLeft(f"the page left the site for {url} (a blocked, failed or outside address); "
                       f"only {site} is reachable: go back (alt+Left) or open it again")
    bare = await _read(browser, _BARE)
    if isinstance(bare, dict) and bare["ready"] == "complete" and not bare["fsm"]:
        raise PageLeft(f"the page at {url} is not one of the site's pages; go back (alt+Left)")


async def _confirmed(browser: PageReader, status: Mapping[str, object], sites: SiteClient, sid: str) -> bool:
    """Whether the server took the event of the prefetched page the page shows (the
    session's seq reached the one that event gets) and has exactly that page as the
    session's (same digest): then its verdict is recorded and the page is current, and
    the page's answer, still on its way, changes nothing it shows. False (the caller
    waits for the page's answer instead) as soon as that answer came anyway."""
    speculating = status["speculating"]
    if not isinstance(speculating, dict):
        return False
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    for poll in itertools.count(1):
        seq, digest = await site_call(sites.page_digest(sid))
        if seq == speculating.get("seq"):
            return bool(digest == speculating.get("digest"))
        if seq > int(speculating.get("seq") or 0) or time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.001)  # the page's POST is on its way to the server
        if poll % _PAGE_EVERY == 0:
            now = await _read(browser, _NOW)
            if not isinstance(now, dict) or now["speculating"] != speculating:
                return False
    return False


class HandedOver(TypedDict):
    """One event the page handed over instead of posting it (site.js ``post``)."""

    id: int
    session: str
    body: str


async def hand_back(browser: PageReader, sites: SiteClient, outbox: list[HandedOver]) -> object:
    """Apply the events the page handed over (``outbox``: site.js ``post`` with
    ``handOver(true)``) in this process, exactly as the site app's ``POST /s/<id>/event``
    would (``page_event``: the same checks, verdicts and refusals), and hand the page their
    answers in the same round trip that reads what it shows once it has shown them (the
    swap runs there; the frame that renders it is left to the screenshot)."""
    if not isinstance(sites, LocalSiteClient):
        raise TaskError(f"expected the page's events to go to the site server, got them handed over to a "
                        f"task whose site client is a {type(sites).__name__}; only an in-process one takes them")
    receives = []
    for message in outbox:
        _, answer = sites.page_event(str(message["session"]), str(message["body"]))
        receives.append(f" f.receive({int(message['id'])}, {json.dumps(answer)});")
    return await _read(browser, "(async () => { const f = window.__fsm; if (!f) return null;"
                                f"{''.join(receives)} await f.settled(); return {_FIELDS}; }})()")


async def _read(browser: PageReader, expression: str) -> object:
    """The page's answer to ``expression``; None when the page navigated under us."""
    try:
        return await browser.evaluate(expression)
    except SandboxEvaluationError:  # the page navigated twice under us; look again
        return None


def _shown_marker(address: str) -> str | None:
    """The ``v`` of a page's address (``...?v=<seq>``), or None."""
    return parse_qs(urlsplit(address).query).get("v", [None])[0]


def _with_marker(address: str, marker: str) -> str:
    """``address`` with ``?v=<marker>``."""
    return urlunsplit(urlsplit(address)._replace(query=urlencode({"v": marker})))


def _report_address(browser: PageReader, address: object) -> None:
    """Tell a sandbox that reports the page's address itself (``show_address``) what the
    page shows, since the browser's own URL stays behind (``prepare_page``)."""
    if isinstance(browser, ReportsAddress) and isinstance(address, str):
        browser.show_address(address)


async def site_call(call: Awaitable[T]) -> T:
    """Await a site-client call; a server that cannot be reached is an infrastructure error."""
    try:
        return await call
    except SiteUnavailable as exc:
        raise TaskError(f"expected the FSM site server to answer, got: {exc}") from exc
