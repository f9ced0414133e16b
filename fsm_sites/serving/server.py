"""The site server: an agent-facing aiohttp app plus a control app on a separate port.

Agent app (``site_url``; the only origin the agent's browser may visit):
    GET  /s/{session}/          the page of the session's current state (also under any route
                                path, e.g. /s/{session}/pets/rex, which the page shows as its URL)
    POST /s/{session}/event     a UI event {page, element, event, value[, expect][, shown]}
                                -> {"ok", "seq", "digest"[, "html" | "body"]}
    POST /s/{session}/next      the pages the current state's events lead to (the page's prefetch)
    GET  /s/{session}/view      the current page as data {"seq", "view"} (the Tk app's page)
Control app (``control_url``; never handed to the browser; behind ``admin_token`` and
per-session tokens): see ``fsm_sites.serving.control``. The site app is all a page, and so the
agent, may use: nothing there reads another session, jumps, resets or adds a site.

Both bind to ``host`` (127.0.0.1 by default; a container or a remote browser needs an
address it can reach). Sessions live in a ``SessionStore``; ``SiteServer`` also exposes
every control operation as a plain Python method. Code outside ``fsm_sites`` drives it
through a site client (``fsm_sites.serving.client``): in-process or over the control API. See
docs/fsm_server.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import secrets
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiohttp import web

from fsm_sites import library
from fsm_sites.engine.machine import Edge, Machine
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.render import render_page
from fsm_sites.render.page_model import describe_page
from fsm_sites.serving.control import control_app, error_body, error_response
from fsm_sites.serving.sessions import (
    BadRequest,
    EventRecord,
    SessionError,
    SessionStore,
    SiteSession,
    parse_event,
)
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.validate import load_and_validate

_RENDER_CACHE = 4096


class SiteServer:
    """Serves many sites and many concurrent sessions; start with ``await start()``."""

    def __init__(self, sites: Iterable[SiteSpec], *, host: str = "127.0.0.1", site_port: int = 0,
                 control_port: int = 0, admin_token: str | None = None) -> None:
        self.store = SessionStore()
        # What the control API's writes need (docs/security.md): held by whoever made the
        # server, never handed to a page or a sandbox.
        self.admin_token = admin_token or secrets.token_urlsafe(32)
        for spec in sites:
            self.store.add_site(spec)
        self.host = host
        self._ports = (site_port, control_port)
        self._runners: list[web.AppRunner] = []
        self._urls: list[str] = []
        self._html: OrderedDict[tuple[Machine, State, int], tuple[str, str]] = OrderedDict()
        # the pages of _html by digest as (their frame: ``page_digest`` of the head without
        # the title and of the closing script, the title and the body; ``_page_parts``)
        self._by_digest: dict[str, tuple[str, str] | None] = {}

    # ---- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        """Bind both apps (port 0 picks free ports). Idempotent."""
        if self._runners:
            return
        for app, port in ((self._site_app(), self._ports[0]), (control_app(self), self._ports[1])):
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, self.host, port)
            await site.start()
            bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self._runners.append(runner)
            self._urls.append(f"http://{self.host}:{bound}")

    async def close(self) -> None:
        """Stop both apps and drop every session. Idempotent."""
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
        self._urls.clear()
        self.store.sessions.clear()

    async def __aenter__(self) -> SiteServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def site_url(self) -> str:
        """Origin of the agent-facing app, e.g. http://127.0.0.1:41234."""
        return self._started()[0]

    @property
    def control_url(self) -> str:
        """Origin of the control app (keep it away from the agent's browser)."""
        return self._started()[1]

    def _started(self) -> list[str]:
        if not self._urls:
            raise RuntimeError("expected a started SiteServer, got one not started; call `await server.start()`")
        return self._urls

    # ---- control operations (also served over HTTP by fsm_sites.serving.control) ----------------
    def add_site(self, spec: SiteSpec) -> None:
        """Serve one more site (replaces a site of the same name)."""
        self.store.add_site(spec)

    def sites(self) -> list[SiteSpec]:
        return [m.spec for m in self.store.machines.values()]

    def create_session(self, site: str, *, goal: str, start_state: str | None = None, seed: int = 0) -> SiteSession:
        """A new session at ``start_state`` (default: the site's initial state)."""
        return self.store.create(site, goal=goal, start_state=start_state, seed=seed)

    def session_url(self, session_id: str) -> str:
        """Where the agent's browser opens the session."""
        self.store.get(session_id)
        return f"{self.site_url}/s/{session_id}/"

    def state(self, session_id: str) -> State:
        return self.store.get(session_id).state

    def reset(self, session_id: str) -> State:
        return self.store.reset(session_id).state

    def jump(self, session_id: str, state_key: str) -> State:
        """Put the session straight into a reachable state (restores a tree node without replay)."""
        return self.store.jump(session_id, state_key).state

    def events(self, session_id: str, since: int = 0) -> list[EventRecord]:
        """The session's accepted events with seq > ``since``, each with its verdict."""
        return self.store.events(session_id, since)

    def send_event(self, session_id: str, event: UIEvent) -> EventRecord:
        """Apply a UI event as if the page had sent it (tests, benchmarks, headless replays)."""
        return self.store.apply(session_id, event)

    def delete_session(self, session_id: str) -> None:
        self.store.delete(session_id)

    def oracle_edge(self, session_id: str) -> Edge | None:
        """The first edge of a shortest path from the session's state to its goal; None
        when the goal holds already or cannot be reached."""
        session = self.store.get(session_id)
        if session.goal_fn(session.state):
            return None
        paths = session.machine.shortest_paths(session.state, session.goal_fn, limit=1)
        return paths[0][0] if paths else None

    def page_view(self, session_id: str) -> dict[str, Any]:
        """The session's current page as data, for native renderers (the Tk app)."""
        session = self.store.get(session_id)
        return {"seq": session.seq, "state": session.state.key(),
                "view": describe_page(session.machine, session.state)}

    def render(self, session: SiteSession) -> str:
        """The session's current page (cached by machine, state and seed: a site replaced by
        ``add_site`` has a new machine, so its pages are rendered anew)."""
        return self._page(session.machine, session.state, session.seed)[0]

    def page_digest(self, session_id: str) -> tuple[int, str]:
        """The session's seq and the digest of its current page (``page_digest``): a page
        that names the same digest shows exactly what a GET would return."""
        session = self.store.get(session_id)
        return session.seq, self._page(session.machine, session.state, session.seed)[1]

    def next_pages(self, session_id: str) -> dict[str, Any]:
        """What the page prefetches: for every event its elements can send with a value
        known in advance (clicks, options, checkboxes; not typed text) and that fires a
        transition, the page of the state it leads to, as ``{"seq", "events": {key:
        digest}, "pages": {digest: html}}`` (``event_key``; each page once). The page
        shows one at once when its event happens, and the event's answer confirms it."""
        session = self.store.get(session_id)
        events: dict[str, str] = {}
        pages: dict[str, str] = {}
        for edge, _ in session.machine.enabled(session.state):
            if edge.event == "input":
                continue  # free text: the value is the agent's, not one known in advance
            value = None if edge.value is None else str(edge.value)
            key = event_key(edge.element, edge.event, value)
            if key in events:
                continue
            # The event exactly as the page sends it, through the checks `apply` makes.
            after = self.store.preview(session, UIEvent(edge.page, edge.element, edge.event, value))
            if after is not None:
                html, digest = self._page(session.machine, after, session.seed)
                events[key] = digest
                pages[digest] = html
        return {"seq": session.seq, "events": events, "pages": pages}

    def _page(self, machine: Machine, state: State, seed: int) -> tuple[str, str]:
        """The page of (state, seed) and its digest, rendered once (LRU)."""
        key = (machine, state, seed)
        entry = self._html.get(key)
        if entry is not None:
            self._html.move_to_end(key)
        else:
            html = render_page(machine.spec, state, seed=seed, machine=machine)
            entry = self._html[key] = (html, page_digest(html))
            parts = _page_parts(html)
            self._by_digest[entry[1]] = (page_digest(parts[0] + parts[3]), parts[1] + parts[2]) if parts else None
            if len(self._html) > _RENDER_CACHE:
                _, (_, dropped) = self._html.popitem(last=False)
                self._by_digest.pop(dropped, None)
        return entry

    # ---- the agent-facing app ----------------------------------------------------------
    def _site_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024)
        app.router.add_get("/s/{sid}", self._redirect_slash)
        app.router.add_get("/s/{sid}/", self._page_request)
        app.router.add_post("/s/{sid}/event", self._event)
        app.router.add_post("/s/{sid}/next", self._next)
        app.router.add_get("/s/{sid}/view", self._view)
        app.router.add_get("/s/{sid}/{route:.+}", self._page_request)  # a page's route, e.g. /s/<id>/pets/rex
        return app

    async def _redirect_slash(self, request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(f"/s/{request.match_info['sid']}/")

    async def _page_request(self, request: web.Request) -> web.StreamResponse:
        try:
            session = self.store.get(request.match_info["sid"])
        except SessionError as exc:
            return web.Response(text=f"<h1>Session not found</h1><p>{exc}</p>", status=exc.status,
                                content_type="text/html")
        return web.Response(text=self.render(session), content_type="text/html",
                            headers={"Cache-Control": "no-store"})

    async def _event(self, request: web.Request) -> web.StreamResponse:
        status, answer = self.page_event(request.match_info["sid"], await request.text())
        return web.json_response(answer, status=status)

    def page_event(self, session_id: str, body: str) -> tuple[int, dict[str, Any]]:
        """The answer to a page's event message ``body`` (JSON ``{page, element, event,
        value[, expect]}``) as (HTTP status, JSON object): what ``POST /s/{sid}/event``
        answers, and what a page whose events the task takes in its settle gets
        (``fsm_sites.serving.client.LocalSiteClient.page_event``, ``harness.tasks.fsm_settle``), so
        both apply it alike."""
        try:
            try:
                payload = json.loads(body)
            except ValueError as exc:
                raise BadRequest(f"expected a JSON body {{page, element, event, value}}, got invalid JSON: {exc}") from exc
            # `expect`: the digest of the page the page already shows for this event (a
            # prefetched one, see next_pages), or absent; `shown`: the digest of the page it
            # showed when it sent the event (as an earlier answer told it), or absent.
            expect = payload.pop("expect", None) if isinstance(payload, dict) else None
            shown = payload.pop("shown", None) if isinstance(payload, dict) else None
            record = self.store.apply(session_id, parse_event(payload))
        except SessionError as exc:
            return exc.status, error_body(exc)
        # The page learns that its event was taken and gets the page of the new state (what
        # a GET would return next), saving a round trip, unless it already shows exactly that
        # page; the verdict stays on the control side.
        session = self.store.get(session_id)
        html, digest = self._page(session.machine, session.state, session.seed)
        answer: dict[str, Any] = {"ok": True, "seq": record.seq, "digest": digest}
        if expect != digest:
            only = self._body_only(digest, shown)
            if only is not None:
                answer["body"] = only
            else:
                answer["html"] = html
        return 200, answer

    def _body_only(self, digest: str, shown: object) -> str | None:
        """The ``<title>`` and the ``<body ...>`` up to the closing script of the page
        ``digest`` names (one of ``_page``'s), when the page that ``shown`` names holds the
        very same head (but for its title) and closing script: site.js then keeps its own
        head and script and swaps in the title and the body only (most of a page's bytes are
        the stylesheet and the script every page of a site holds); else None (the answer
        carries the whole page)."""
        shown_parts = self._by_digest.get(shown) if isinstance(shown, str) else None
        parts = self._by_digest.get(digest)
        if parts is None or shown_parts is None or parts[0] != shown_parts[0]:
            return None
        return parts[1]

    async def _view(self, request: web.Request) -> web.StreamResponse:
        """The page as data for a native page (the Tk app), without the state key (it may
        hold variables the page does not show)."""
        try:
            data = self.page_view(request.match_info["sid"])
        except SessionError as exc:
            return error_response(exc)
        return web.json_response({"seq": data["seq"], "view": data["view"]})

    async def _next(self, request: web.Request) -> web.StreamResponse:
        try:
            return web.json_response(pack_pages(self.next_pages(request.match_info["sid"])))
        except SessionError as exc:
            return error_response(exc)


_TITLE = re.compile(r"<title>[^<]*</title>")
_BODY_START = "</head><body"
_TAIL = "</script></body></html>"


def _page_parts(html: str) -> tuple[str, str, str, str] | None:
    """A page as (its head without the title, the ``<title>`` element, its body up to the
    closing script, the closing ``<script>...</script></body></html>``); None for a page
    not in that form."""
    start, script = html.find(_BODY_START), html.rfind("<script")
    title = _TITLE.search(html, 0, max(start, 0))
    if start < 0 or script < start or title is None or not html.endswith(_TAIL):
        return None
    head = html[:title.start()] + html[title.end():start + len("</head>")]
    return head, title.group(0), html[start + len("</head>"):script], html[script:]


def event_key(element: str, event: str, value: str | None) -> str:
    """How ``next_pages`` names an event; site.js builds the same string
    (``JSON.stringify([element, event, value])``)."""
    return json.dumps([element, event, value], ensure_ascii=False, separators=(",", ":"))


_RAW_TEXT = re.compile(r"<(style|script)\b[^>]*>(.*?)</\1>", re.S)
_SHARED_MIN = 512  # shorter texts are not worth a part of their own


def pack_pages(prefetch: dict[str, Any]) -> dict[str, Any]:
    """``next_pages`` for the wire: the texts of the stylesheets and scripts that every page
    holds (most of each page) go once, in ``parts``, and each page names part i as
    ``\\u0000i\\u0000`` (no HTML page holds a NUL); ``unpack_pages`` (and site.js) undo it."""
    pages: dict[str, str] = prefetch["pages"]
    htmls = list(pages.values())
    if not htmls or any("\0" in html for html in htmls):
        return {**prefetch, "parts": []}
    parts = [m.group(2) for m in _RAW_TEXT.finditer(htmls[0])
             if len(m.group(2)) >= _SHARED_MIN and all(m.group(2) in html for html in htmls[1:])]
    packed = {}
    for digest, html in pages.items():
        for i, part in enumerate(parts):
            html = html.replace(part, f"\0{i}\0")
        packed[digest] = html
    answer = {**prefetch, "pages": packed, "parts": parts}
    # A page must come back byte for byte (its digest vouches for it): else send them whole.
    return answer if unpack_pages(answer) == pages else {**prefetch, "parts": []}


def unpack_pages(packed: dict[str, Any]) -> dict[str, str]:
    """The pages of a ``pack_pages`` answer, whole again."""
    pages = {}
    for digest, html in packed["pages"].items():
        for i, part in enumerate(packed["parts"]):
            html = html.replace(f"\0{i}\0", part)
        pages[digest] = html
    return pages


def page_digest(html: str) -> str:
    """A short digest that tells two pages apart."""
    return hashlib.blake2b(html.encode(), digest_size=9).hexdigest()


def resolve_sites(names: Iterable[str | Path | SiteSpec]) -> list[SiteSpec]:
    """Specs from SiteSpec objects, spec file paths (validated: ``SpecInvalid`` lists every
    problem), or library site names (empty: the whole library)."""
    names = list(names)
    if not names:
        return [library.load_site(n) for n in library.list_sites()]
    out: list[SiteSpec] = []
    for item in names:
        if isinstance(item, SiteSpec):
            out.append(item)
        elif Path(item).suffix in (".yaml", ".yml", ".json") or Path(item).is_file():
            out.append(load_and_validate(item))
        else:
            out.append(library.load_site(str(item)))
    return out


ADMIN_TOKEN_ENV = "CUA_SITES_TOKEN"


def serve(sites: Iterable[str | Path | SiteSpec] = (), host: str = "127.0.0.1", port: int = 8900) -> None:
    """Run a SiteServer until interrupted: site app on ``port``, control app on ``port + 1``,
    whose admin token is ``$CUA_SITES_TOKEN`` (or a fresh one, printed once)."""
    chosen = os.environ.get(ADMIN_TOKEN_ENV) or None

    async def run() -> None:
        server = SiteServer(resolve_sites(sites), host=host, site_port=port, control_port=port + 1,
                            admin_token=chosen)
        await server.start()
        told = f"${ADMIN_TOKEN_ENV}" if chosen else server.admin_token
        print(f"serving {len(server.sites())} site(s): pages at {server.site_url}, control at "
              f"{server.control_url} (admin token: {told})", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await server.close()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
