"""The site client: the one interface through which anything outside ``fsm_sites`` drives
a site server's sessions.

``LocalSiteClient(server)`` calls a ``SiteServer`` in the same process (no HTTP);
``HttpSiteClient(control_url, site_url, token=...)`` speaks the server's control API, so
the server may live in another process, container or machine; its token is the server's
admin token (every call) or one session's capability token (reading that session only).
Both answer the same typed values, and both raise ``SessionError`` subclasses for refused
requests (4xx) and ``SiteUnavailable`` when the server cannot be reached or fails.
``SitePage`` is what a page may do, over the agent-facing site app: a native page (the
Tk app) uses it, and needs no token.

    client = LocalSiteClient(server)
    view = await client.create_session("shop", goal="add_lamp", seed=3)
    ...  # the browser opens view.url and sends events
    for record in await client.events(view.id, since=0):
        print(record.verdict)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import aiohttp

from fsm_sites.engine.machine import Edge
from fsm_sites.engine.state import UIEvent
from fsm_sites.errors import FsmSiteError
from fsm_sites.serving.sessions import (
    BadRequest,
    EventRecord,
    Forbidden,
    SessionError,
    SiteSession,
    StaleEvent,
    Unauthorized,
    UnknownSession,
)
from fsm_sites.spec.site import SiteSpec

if TYPE_CHECKING:
    from fsm_sites.serving.server import SiteServer


class SiteUnavailable(FsmSiteError):
    """The site server could not be reached, or answered with a server error."""


@dataclass(frozen=True)
class SessionView:
    """What a client knows about a session at one moment."""

    id: str
    site: str
    url: str  # where the agent's browser opens it
    state: str  # the current state key
    page: str
    seq: int  # events accepted so far
    distance: int | None  # shortest distance to the goal; None where it cannot be reached
    goal_reached: bool

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionView:
        return cls(id=data["session_id"], site=data["site"], url=data["url"], state=data["state"],
                   page=data["page"], seq=data["seq"], distance=data["distance"],
                   goal_reached=data["goal_reached"])


def session_view(session: SiteSession, url: str) -> SessionView:
    """The view of a live session (what the control API's session description says)."""
    return SessionView.from_dict({**session.describe(), "url": url})


@runtime_checkable
class SiteClient(Protocol):
    """Sessions of one site server, in-process or over HTTP."""

    @property
    def site_url(self) -> str:
        """Origin of the agent-facing site app (the only origin the browser may visit)."""

    @property
    def control_url(self) -> str:
        """Origin of the control API (the harness's; never handed to the agent or its apps)."""

    async def has_site(self, name: str) -> bool:
        """Whether the server serves a site of this name."""

    async def add_site(self, spec: SiteSpec) -> None:
        """Serve ``spec`` (replacing a site of the same name)."""

    async def create_session(self, site: str, *, goal: str, start_state: str | None = None,
                             seed: int = 0) -> SessionView:
        """A new session at ``start_state`` (default: the site's initial state)."""

    async def session(self, session_id: str) -> SessionView:
        """The session now."""

    async def events(self, session_id: str, since: int = 0) -> list[EventRecord]:
        """Accepted events with seq > ``since``, each with its verdict."""

    async def jump(self, session_id: str, state_key: str) -> SessionView:
        """Put the session straight into a reachable state."""

    async def page_html(self, session_id: str) -> str:
        """The HTML of the session's current page (what the site app serves)."""

    async def page_digest(self, session_id: str) -> tuple[int, str]:
        """The session's seq and the digest of its current page (``server.page_digest``)."""

    async def oracle_edge(self, session_id: str) -> Edge | None:
        """The first edge of a shortest path to the goal; None at the goal or with no path."""

    async def page_view(self, session_id: str) -> dict[str, Any]:
        """The current page as data: {"seq", "state", "view"} (``fsm_sites.render.page_model``)."""

    async def send_event(self, session_id: str, event: UIEvent) -> EventRecord:
        """Apply a UI event as the page would (native apps, such as the Tk app, report theirs)."""

    async def delete_session(self, session_id: str) -> None:
        """End the session."""

    async def close(self) -> None:
        """Release the client's own resources (the server stays up)."""


class LocalSiteClient:
    """A ``SiteServer`` in this process, called directly."""

    def __init__(self, server: SiteServer) -> None:
        self.server = server

    @property
    def site_url(self) -> str:
        return self.server.site_url

    @property
    def control_url(self) -> str:
        return self.server.control_url

    async def has_site(self, name: str) -> bool:
        return name in self.server.store.machines

    async def add_site(self, spec: SiteSpec) -> None:
        self.server.add_site(spec)

    async def create_session(self, site: str, *, goal: str, start_state: str | None = None,
                             seed: int = 0) -> SessionView:
        session = self.server.create_session(site, goal=goal, start_state=start_state, seed=seed)
        return self._view(session)

    async def session(self, session_id: str) -> SessionView:
        return self._view(self.server.store.get(session_id))

    async def events(self, session_id: str, since: int = 0) -> list[EventRecord]:
        return self.server.events(session_id, since)

    async def jump(self, session_id: str, state_key: str) -> SessionView:
        self.server.jump(session_id, state_key)
        return await self.session(session_id)

    async def page_html(self, session_id: str) -> str:
        return self.server.render(self.server.store.get(session_id))

    async def page_digest(self, session_id: str) -> tuple[int, str]:
        return self.server.page_digest(session_id)

    async def oracle_edge(self, session_id: str) -> Edge | None:
        return self.server.oracle_edge(session_id)

    async def page_view(self, session_id: str) -> dict[str, Any]:
        return self.server.page_view(session_id)

    async def send_event(self, session_id: str, event: UIEvent) -> EventRecord:
        return self.server.send_event(session_id, event)

    async def delete_session(self, session_id: str) -> None:
        if session_id in self.server.store.sessions:
            self.server.delete_session(session_id)

    async def close(self) -> None:
        return None

    def page_event(self, session_id: str, body: str) -> tuple[int, dict[str, Any]]:
        """Answer a page's event message as ``POST /s/<id>/event`` would, without HTTP: for
        a task that takes the page's events in its settle (``harness.tasks.fsm_settle``).
        In-process only: a remote server's page posts its events."""
        return self.server.page_event(session_id, body)

    def _view(self, session: SiteSession) -> SessionView:
        return session_view(session, self.server.session_url(session.id))


_ERRORS: dict[str, type[SessionError]] = {
    "BadRequest": BadRequest, "StaleEvent": StaleEvent, "UnknownSession": UnknownSession,
    "Unauthorized": Unauthorized, "Forbidden": Forbidden,
}


async def _request(http: aiohttp.ClientSession, method: str, url: str, *, what: str,
                   body: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Any:
    """One JSON call; a 4xx answer raises its ``SessionError``, no answer or a 5xx
    ``SiteUnavailable`` (``what`` names the API in its message)."""
    try:
        async with http.request(method, url, json=body, headers=headers) as response:
            data = await response.json(content_type=None)
            status = response.status
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise SiteUnavailable(f"expected {what} to answer {method} {url}, got "
                              f"{type(exc).__name__}: {exc}") from exc
    if status >= 500 or not isinstance(data, dict | list):
        raise SiteUnavailable(f"expected an answer from {url}, got status {status}: {data!r:.200}")
    if status >= 400:
        kind = data.get("kind", "") if isinstance(data, dict) else ""
        message = data.get("error", "") if isinstance(data, dict) else str(data)
        raise _ERRORS.get(kind, BadRequest)(message)
    return data


def _new_http(timeout_s: float) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s))


class HttpSiteClient:
    """A site server's control API over HTTP (``control_url``), e.g. one in a container.

    ``token``: the server's admin token (``SiteServer.admin_token``; every call), or one
    session's capability token (``session_token``; only the reads of that session)."""

    def __init__(self, control_url: str, site_url: str, *, token: str, timeout_s: float = 30.0) -> None:
        if not token:
            raise Unauthorized("expected the site server's admin token (or a session's capability "
                             "token) for HttpSiteClient(token=...), got none")
        self.control_url = control_url.rstrip("/")
        self._site_url = site_url.rstrip("/")
        self.timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {token}"}
        self._session_tokens: dict[str, str] = {}
        self._http: aiohttp.ClientSession | None = None

    @property
    def site_url(self) -> str:
        return self._site_url

    def session_token(self, session_id: str) -> str:
        """The capability token of a session this client created: it lets its holder read
        that session and nothing else (keep it from the agent all the same)."""
        if session_id not in self._session_tokens:
            raise KeyError(f"expected a session this client created, got {session_id!r}")
        return self._session_tokens[session_id]

    async def has_site(self, name: str) -> bool:
        sites = await self._call("GET", "/sites")
        return any(site["name"] == name for site in sites)

    async def add_site(self, spec: SiteSpec) -> None:
        await self._call("POST", "/sites", {"spec": spec.model_dump(mode="json")})

    async def create_session(self, site: str, *, goal: str, start_state: str | None = None,
                             seed: int = 0) -> SessionView:
        body = {"site": site, "goal": goal, "start_state": start_state, "seed": seed}
        data = await self._call("POST", "/sessions", body)
        self._session_tokens[data["session_id"]] = data["token"]
        return SessionView.from_dict(data)

    async def session(self, session_id: str) -> SessionView:
        return SessionView.from_dict(await self._call("GET", f"/sessions/{session_id}"))

    async def events(self, session_id: str, since: int = 0) -> list[EventRecord]:
        data = await self._call("GET", f"/sessions/{session_id}/events?since={int(since)}")
        return [EventRecord.from_dict(item) for item in data["events"]]

    async def jump(self, session_id: str, state_key: str) -> SessionView:
        await self._call("POST", f"/sessions/{session_id}/jump", {"state": state_key})
        return await self.session(session_id)

    async def page_html(self, session_id: str) -> str:
        return str((await self._call("GET", f"/sessions/{session_id}/html"))["html"])

    async def page_digest(self, session_id: str) -> tuple[int, str]:
        data = await self._call("GET", f"/sessions/{session_id}/digest")
        return int(data["seq"]), str(data["digest"])

    async def oracle_edge(self, session_id: str) -> Edge | None:
        data = await self._call("GET", f"/sessions/{session_id}/oracle")
        return Edge.from_dict(data["edge"]) if data.get("edge") else None

    async def page_view(self, session_id: str) -> dict[str, Any]:
        return dict(await self._call("GET", f"/sessions/{session_id}/view"))

    async def send_event(self, session_id: str, event: UIEvent) -> EventRecord:
        body = {"page": event.page, "element": event.element, "event": event.event, "value": event.value}
        return EventRecord.from_dict(await self._call("POST", f"/sessions/{session_id}/event", body))

    async def delete_session(self, session_id: str) -> None:
        try:
            await self._call("DELETE", f"/sessions/{session_id}")
        except UnknownSession:
            pass
        self._session_tokens.pop(session_id, None)

    async def close(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.close()

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        if self._http is None:
            self._http = _new_http(self.timeout_s)
        return await _request(self._http, method, self.control_url + path, body=body, headers=self._headers,
                              what=f"the site server's control API at {self.control_url}")


class SitePage:
    """One session's page over the agent-facing site app: its page as data and the events
    it shows, exactly what the browser's page may do (the session id is all it holds).
    A native page, the Tk app, uses it, so nothing the agent's apps run needs the control
    API or a token."""

    def __init__(self, site_url: str, session_id: str, *, timeout_s: float = 30.0) -> None:
        self.url = f"{site_url.rstrip('/')}/s/{session_id}"
        self.timeout_s = timeout_s
        self._http: aiohttp.ClientSession | None = None

    async def view(self) -> dict[str, Any]:
        """``{"seq", "view"}``: the current page as data (``fsm_sites.render.page_model``)."""
        return dict(await self._call("GET", "/view"))

    async def send_event(self, event: UIEvent) -> int:
        """Send a UI event as the page does; the seq the server gave it (a refused one
        raises its ``SessionError``)."""
        body = {"page": event.page, "element": event.element, "event": event.event, "value": event.value}
        return int((await self._call("POST", "/event", body))["seq"])

    async def close(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.close()

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        if self._http is None:
            self._http = _new_http(self.timeout_s)
        return await _request(self._http, method, self.url + path, body=body, what="the site app")


__all__ = ["HttpSiteClient", "LocalSiteClient", "SessionView", "SiteClient", "SitePage",
           "SiteUnavailable", "session_view"]
