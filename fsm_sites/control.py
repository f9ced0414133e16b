"""The control app of a ``SiteServer``: sessions, state, reset, jump, event log.

Served on its own port, which the agent's browser is never allowed to reach (the
browser sandbox confines navigation to the site origin). Every error is JSON
``{"error": "...", "kind": "..."}`` with a 4xx status. See docs/fsm_server.md.

    GET    /health                       {"ok": true}
    GET    /sites                        [{"name", "title", "pages", "goals"}]
    POST   /sites                        {spec} -> serve one more site (replaces a namesake)
    POST   /sessions                     {site, goal, start_state?, seed?} -> 201 session
    GET    /sessions/{id}                the session: state, distance, goal_reached, seq, ...
    GET    /sessions/{id}/state          {"state", "page", "vars", "distance", "goal_reached"}
    POST   /sessions/{id}/reset          back to the start state -> state
    POST   /sessions/{id}/jump           {state} -> state
    POST   /sessions/{id}/event          {page, element, event, value} -> the event record
    GET    /sessions/{id}/events?since=N {"events": [record...]} with seq > N
    GET    /sessions/{id}/html           {"html": the page of the current state}
    GET    /sessions/{id}/view           {"seq", "state", "view": the page as data (fsm_sites.page_model)}
    GET    /sessions/{id}/oracle         {"edge": first edge of a shortest path, or null}
    DELETE /sessions/{id}                {"deleted": id}
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from aiohttp import web

from fsm_sites.engine import Edge
from fsm_sites.errors import SpecInvalid
from fsm_sites.sessions import BadRequest, Session, SessionError, SessionStore, parse_event
from fsm_sites.spec import SiteSpec
from fsm_sites.types import to_json
from fsm_sites.validate import validate_spec_data

_CREATE_FIELDS = {"site", "goal", "start_state", "seed"}


def error_response(exc: SessionError) -> web.Response:
    """The JSON 4xx answer of a refused request (the site app answers the same way)."""
    return web.json_response(error_body(exc), status=exc.status)


def error_body(exc: SessionError) -> dict[str, str]:
    """What a refused request's answer says: the message and the error's kind."""
    return {"error": str(exc), "kind": type(exc).__name__}


def _state_json(session: Session) -> dict[str, Any]:
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


def _guard(handler):  # turns SessionError into its JSON 4xx answer
    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except SessionError as exc:
            return error_response(exc)

    return wrapped


class SessionHost(Protocol):
    """What the control app drives (``fsm_sites.server.SiteServer`` is one)."""

    store: SessionStore

    def sites(self) -> list[SiteSpec]: ...
    def add_site(self, spec: SiteSpec) -> None: ...
    def create_session(self, site: str, *, goal: str, start_state: str | None = None,
                       seed: int = 0) -> Session: ...
    def session_url(self, session_id: str) -> str: ...
    def render(self, session: Session) -> str: ...
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
        return web.json_response({**session.describe(), "url": server.session_url(session.id)}, status=201)

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
    app.router.add_get("/health", _guard(health))
    app.router.add_get("/sites", _guard(sites))
    app.router.add_post("/sites", _guard(add_site))
    app.router.add_get("/sessions/{sid}/html", _guard(html))
    app.router.add_get("/sessions/{sid}/oracle", _guard(oracle))
    app.router.add_get("/sessions/{sid}/view", _guard(view))
    app.router.add_get("/sessions/{sid}/digest", _guard(digest))
    app.router.add_post("/sessions", _guard(create))
    app.router.add_get("/sessions/{sid}", _guard(describe))
    app.router.add_get("/sessions/{sid}/state", _guard(state))
    app.router.add_post("/sessions/{sid}/reset", _guard(reset))
    app.router.add_post("/sessions/{sid}/jump", _guard(jump))
    app.router.add_post("/sessions/{sid}/event", _guard(event))
    app.router.add_get("/sessions/{sid}/events", _guard(events))
    app.router.add_delete("/sessions/{sid}", _guard(delete))
    return app
