"""The control app of a ``SiteServer``: sessions, state, reset, jump, event log.

Served on its own port, which the agent's browser is never allowed to reach (the
browser sandbox confines navigation to the site origin), and behind tokens, since an
agent's process (an xterm on a local desktop) may reach the port anyway:

- the server's **admin token** (``SiteServer.admin_token``) grants every call;
- a session's **capability token** (``token`` in the answer to ``POST /sessions``) grants
  only the reads of that session (its GETs below other than ``oracle``);
- ``GET /health`` needs none.

A call sends ``Authorization: Bearer TOKEN``; without one it is refused with 401, with a
token that does not grant it with 403. Every error is JSON ``{"error": "...", "kind":
"..."}`` with a 4xx status. See docs/fsm_server.md and docs/security.md.

    GET    /health                       {"ok": true}                                    (open)
    GET    /sites                        [{"name", "title", "pages", "goals"}]           (admin)
    POST   /sites                        {spec} -> serve one more site (replaces a namesake) (admin)
    POST   /sessions                     {site, goal, start_state?, seed?} -> 201 session + token (admin)
    GET    /sessions/{id}                the session: state, distance, goal_reached, seq, ... (session)
    GET    /sessions/{id}/state          {"state", "page", "vars", "distance", "goal_reached"} (session)
    POST   /sessions/{id}/reset          back to the start state -> state                (admin)
    POST   /sessions/{id}/jump           {state} -> state                                (admin)
    POST   /sessions/{id}/event          {page, element, event, value} -> the event record (admin)
    GET    /sessions/{id}/events?since=N {"events": [record...]} with seq > N            (session)
    GET    /sessions/{id}/html           {"html": the page of the current state}         (session)
    GET    /sessions/{id}/digest         {"seq", "digest"} of the current page           (session)
    GET    /sessions/{id}/view           {"seq", "state", "view": the page as data (fsm_sites.render.page_model)} (session)
    GET    /sessions/{id}/oracle         {"edge": first edge of a shortest path, or null} (admin)
    DELETE /sessions/{id}                {"deleted": id}                                 (admin)

(The page itself sends its events to the site app, ``POST /s/{id}/event``, which takes
only the events its page shows; see ``fsm_sites.serving.server``.)
"""

from __future__ import annotations

import hmac
import json
from typing import Any, Protocol

from aiohttp import web

from fsm_sites.engine.machine import Edge
from fsm_sites.errors import SpecInvalid
from fsm_sites.serving.sessions import (
    BadRequest,
    Forbidden,
    SessionError,
    SessionStore,
    SiteSession,
    Unauthorized,
    parse_event,
)
from fsm_sites.spec.site import SiteSpec
from fsm_sites.spec.types import to_json
from fsm_sites.validation.validate import validate_spec_data

_CREATE_FIELDS = {"site", "goal", "start_state", "seed"}


def error_response(exc: SessionError) -> web.Response:
    """The JSON 4xx answer of a refused request (the site app answers the same way)."""
    return web.json_response(error_body(exc), status=exc.status)


def error_body(exc: SessionError) -> dict[str, str]:
    """What a refused request's answer says: the message and the error's kind."""
    return {"error": str(exc), "kind": type(exc).__name__}


def _state_json(session: SiteSession) -> dict[str, Any]:
    state = session.state
    return {"state": state.key(), "page": state.page,
            "vars": {k: to_json(v) for k, v in state.vars},
            "distance": session.distance(state), "goal_reached": session.goal_fn(state), "seq": session.seq}


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.text() or "{}")
    except ValueError as exc:
        raise BadRequest(f"expected a JSON object body, got invalid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest(f"expected a JSON object body, got {type(body).__name__}")
    return body


def bearer_token(header: str) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header; None without one."""
    scheme, _, value = header.partition(" ")
    return (value.strip() or None) if scheme.lower() == "bearer" else None


def _same(given: str, secret: str) -> bool:
    return hmac.compare_digest(given.encode(), secret.encode())


def _check_access(request: web.Request, store: SessionStore, admin_token: str, access: str) -> None:
    """Raise Unauthorized/Forbidden unless the request's token grants ``access``: "open",
    "admin" (the admin token) or "session" (the admin token or the session's own token)."""
    if access == "open":
        return
    call = f"{request.method} {request.path}"
    need = ("the site server's admin token (SiteServer.admin_token; `cua sites serve` prints it "
            "or takes $CUA_SITES_TOKEN)" if access == "admin" else
            "the admin token or this session's capability token (the 'token' of POST /sessions)")
    given = bearer_token(request.headers.get("Authorization", ""))
    if given is None:
        raise Unauthorized(f"expected an 'Authorization: Bearer <token>' header for {call}, got "
                           f"none; it needs {need}")
    if _same(given, admin_token):
        return
    if access == "session":
        session = store.sessions.get(request.match_info["sid"])
        if session is not None and _same(given, session.token):
            return
    raise Forbidden(f"expected {need} for {call}, got a token that does not grant it")


def _guard(handler, store: SessionStore, admin_token: str, access: str):
    """``handler`` behind the token check; a SessionError becomes its JSON 4xx answer."""
    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            _check_access(request, store, admin_token, access)
            return await handler(request)
        except SessionError as exc:
            return error_response(exc)

    return wrapped


class SessionHost(Protocol):
    """What the control app drives (``fsm_sites.serving.server.SiteServer`` is one)."""

    store: SessionStore
    admin_token: str

    def sites(self) -> list[SiteSpec]: ...
    def add_site(self, spec: SiteSpec) -> None: ...
    def create_session(self, site: str, *, goal: str, start_state: str | None = None,
                       seed: int = 0) -> SiteSession: ...
    def session_url(self, session_id: str) -> str: ...
    def render(self, session: SiteSession) -> str: ...
    def page_digest(self, session_id: str) -> tuple[int, str]: ...
    def oracle_edge(self, session_id: str) -> Edge | None: ...
    def page_view(self, session_id: str) -> dict[str, Any]: ...


def control_app(server: SessionHost) -> web.Application:
    """The aiohttp app of the control API over ``server``."""
    store = server.store

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"ok": True, "sessions": len(store.sessions)})

    async def sites(_: web.Request) -> web.Response:
        return web.json_response([
            {"name": s.name, "title": s.title, "pages": len(s.pages), "goals": [g.id for g in s.goals]}
            for s in server.sites()
        ])

    async def add_site(request: web.Request) -> web.Response:
        body = await _json_body(request)
        if set(body) != {"spec"} or not isinstance(body["spec"], dict):
            raise BadRequest("expected a body {\"spec\": {...a site spec...}}, got "
                             f"fields {sorted(body)}")
        try:
            spec = validate_spec_data(body["spec"], source="POST /sites")
        except SpecInvalid as exc:
            raise BadRequest(str(exc)) from exc
        server.add_site(spec)
        return web.json_response({"name": spec.name}, status=201)

    async def html(request: web.Request) -> web.Response:
        return web.json_response({"html": server.render(store.get(request.match_info["sid"]))})

    async def digest(request: web.Request) -> web.Response:
        seq, page_digest = server.page_digest(request.match_info["sid"])
        return web.json_response({"seq": seq, "digest": page_digest})

    async def view(request: web.Request) -> web.Response:
        return web.json_response(server.page_view(request.match_info["sid"]))

    async def oracle(request: web.Request) -> web.Response:
        edge = server.oracle_edge(request.match_info["sid"])
        return web.json_response({"edge": edge.to_dict() if edge is not None else None})

    async def create(request: web.Request) -> web.Response:
        body = await _json_body(request)
        extra = sorted(set(body) - _CREATE_FIELDS)
        if extra:
            raise BadRequest(f"expected only fields {sorted(_CREATE_FIELDS)}, got extra {extra}")
        for name in ("site", "goal"):
            if not isinstance(body.get(name), str):
                raise BadRequest(f"expected field {name!r} to be a string, got {body.get(name)!r}")
        seed, start = body.get("seed", 0), body.get("start_state")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise BadRequest(f"expected field 'seed' to be an integer, got {seed!r}")
        if start is not None and not isinstance(start, str):
            raise BadRequest(f"expected field 'start_state' to be a state key string, got {start!r}")
        session = server.create_session(body["site"], goal=body["goal"], start_state=start, seed=seed)
        return web.json_response({**session.describe(), "url": server.session_url(session.id),
                                  "token": session.token}, status=201)

    async def describe(request: web.Request) -> web.Response:
        session = store.get(request.match_info["sid"])
        return web.json_response({**session.describe(), "url": server.session_url(session.id)})

    async def state(request: web.Request) -> web.Response:
        return web.json_response(_state_json(store.get(request.match_info["sid"])))

    async def reset(request: web.Request) -> web.Response:
        return web.json_response(_state_json(store.reset(request.match_info["sid"])))

    async def jump(request: web.Request) -> web.Response:
        body = await _json_body(request)
        if set(body) != {"state"} or not isinstance(body["state"], str):
            raise BadRequest(f"expected a body {{\"state\": \"<state key>\"}}, got {body!r}")
        return web.json_response(_state_json(store.jump(request.match_info["sid"], body["state"])))

    async def event(request: web.Request) -> web.Response:
        record = store.apply(request.match_info["sid"], parse_event(await _json_body(request)))
        return web.json_response(record.to_dict())

    async def events(request: web.Request) -> web.Response:
        raw = request.query.get("since", "0")
        if not raw.isdigit():
            raise BadRequest(f"expected query 'since' to be a non-negative integer, got {raw!r}")
        records = store.events(request.match_info["sid"], int(raw))
        return web.json_response({"events": [r.to_dict() for r in records]})

    async def delete(request: web.Request) -> web.Response:
        store.delete(request.match_info["sid"])
        return web.json_response({"deleted": request.match_info["sid"]})

    app = web.Application(client_max_size=256 * 1024)
    routes = [  # (method, path, handler, who may call it: see _check_access)
        ("GET", "/health", health, "open"),
        ("GET", "/sites", sites, "admin"),
        ("POST", "/sites", add_site, "admin"),
        ("GET", "/sessions/{sid}/html", html, "session"),
        ("GET", "/sessions/{sid}/oracle", oracle, "admin"),
        ("GET", "/sessions/{sid}/view", view, "session"),
        ("GET", "/sessions/{sid}/digest", digest, "session"),
        ("POST", "/sessions", create, "admin"),
        ("GET", "/sessions/{sid}", describe, "session"),
        ("GET", "/sessions/{sid}/state", state, "session"),
        ("POST", "/sessions/{sid}/reset", reset, "admin"),
        ("POST", "/sessions/{sid}/jump", jump, "admin"),
        ("POST", "/sessions/{sid}/event", event, "admin"),
        ("GET", "/sessions/{sid}/events", events, "session"),
        ("DELETE", "/sessions/{sid}", delete, "admin"),
    ]
    for method, path, handler, access in routes:
        app.router.add_route(method, path, _guard(handler, store, server.admin_token, access))
    return app
