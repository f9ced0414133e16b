"""The env server's HTTP and WebSocket API (aiohttp), in OpenEnv's protocol.

OpenEnv's endpoints::

    GET  /health      {"status": "healthy"} (open: no token); with the token, also
                      "active_sessions" and "max_sessions"
    GET  /schema      {"action": ..., "observation": ..., "state": ...} (JSON schemas)
    GET  /metadata    name, description, version
    GET  /ws          WebSocket: one session per connection; {"type": "reset" | "step" |
                      "state" | "close", "data": ...} -> {"type": "observation" | "state" |
                      "error", "data": ...}
    POST /reset       {"seed", "episode_id", "task", "options"} -> envelope; stateless, as
                      OpenEnv's: its env is handed back before the answer
    POST /step        {"action", "session_id"} -> envelope
    GET  /state       ?session_id=... -> state

OpenEnv's HTTP calls hold no session (its ``/step`` runs on a fresh env); a browser episode
needs one, so ours add an HTTP session: ``/reset`` with ``"open_session": true`` opens one
(its id in ``X-Session-Id`` and ``observation.metadata.session_id``), which ``/step``,
``/state`` and the rest name by ``session_id``, and ``/reset`` with that ``session_id``
resets again.

Ours, beyond the protocol (HTTP, and as WebSocket message types of the same names):
``POST /oracle`` (the task's oracle action, for data collection) and ``POST /jump``
(``{"state_key", "steps"}``: move the live FSM episode to a stored state), trainer-only
and refused (403 ``NOT_EXPOSED``) unless the pool exposes them (``--expose oracle,jump``),
``POST /observe`` (a fresh observation without a step), ``POST /close`` (end an HTTP
session) and ``GET /tasks`` (what the server serves).

Every call but ``GET /health`` needs the token: ``Authorization: Bearer TOKEN``, or Basic auth with the token
as password (so an unchanged OpenEnv client reaches it as ``http://user:TOKEN@host:port``).
Errors are JSON: ``{"detail": message, "code": CODE}`` over HTTP, ``{"type": "error",
"data": {"message", "code"}}`` on the WebSocket; a ``VALIDATION_ERROR`` of a body also
carries pydantic's ``errors`` list, as OpenEnv's does. A body over the size limit gets 413
``PAYLOAD_TOO_LARGE``. Infrastructure failures carry the code
``INFRASTRUCTURE_ERROR`` (HTTP 503) with ``error_type`` and, for crashes, ``shared``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hmac
import json
from importlib.metadata import PackageNotFoundError, version

from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.typedefs import Handler
from pydantic import BaseModel, ValidationError

from harness.errors import ConfigError, InfrastructureError
from harness.server.protocol import (
    MAX_MESSAGE_BYTES,
    JumpBody,
    ResetBody,
    SessionBody,
    StepBody,
    describe_body,
    schemas,
    validation_errors,
)
from harness.server.sessions import ServerError, Session, SessionPool
from sandboxes.errors import SandboxCrashed

#: how long a socket refused for capacity waits for the client's first message
CAPACITY_ANSWER_S = 10.0
AUTH_HINT = ("send Authorization: Bearer TOKEN (or Basic auth with the token as password, "
             "e.g. http://user:TOKEN@host:port)")


def token_of(header: str) -> str | None:
    """The token an Authorization header carries (Bearer, or Basic's password)."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            return base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return None
    return None


def error_data(exc: BaseException) -> tuple[int, dict[str, object]]:
    """(HTTP status, error body) for an exception raised while serving a call."""
    if isinstance(exc, ServerError):
        refusal: dict[str, object] = {"message": str(exc), "code": exc.code}
        if exc.errors is not None:
            refusal["errors"] = exc.errors
        return exc.status, refusal
    if isinstance(exc, ValidationError):
        return 422, {"message": describe_body(exc, "body"), "code": "VALIDATION_ERROR",
                     "errors": validation_errors(exc)}
    if isinstance(exc, ConfigError):
        return 422, {"message": str(exc), "code": "VALIDATION_ERROR"}
    if isinstance(exc, InfrastructureError):
        data: dict[str, object] = {"message": str(exc), "code": "INFRASTRUCTURE_ERROR",
                "error_type": type(exc).__name__}
        if isinstance(exc, SandboxCrashed):
            data["shared"] = exc.shared
        return 503, data
    return 500, {"message": f"{type(exc).__name__}: {exc}", "code": "EXECUTION_ERROR"}


def _json(model: BaseModel | dict[str, object], status: int = 200) -> web.Response:
    text = model.model_dump_json() if isinstance(model, BaseModel) else json.dumps(model)
    return web.Response(text=text, status=status, content_type="application/json")


class EnvServer:
    """The routes over one session pool, behind one token."""

    def __init__(self, pool: SessionPool, token: str, *,
                 max_body_bytes: int = MAX_MESSAGE_BYTES) -> None:
        if not token:
            raise ConfigError("expected a token for the env server, got none; pass --token "
                              "or set CUA_ENV_TOKEN")
        self.pool = pool
        self.token = token
        self.max_body_bytes = max_body_bytes
        self._sockets: set[web.WebSocketResponse] = set()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=self.max_body_bytes)
        app.router.add_get("/health", self.health)
        app.router.add_get("/schema", self.schema)
        app.router.add_get("/metadata", self.metadata)
        app.router.add_get("/tasks", self.tasks)
        app.router.add_get("/ws", self.websocket)
        app.router.add_get("/state", self.state)
        for name in ("reset", "step", "close", "oracle", "jump", "observe"):
            app.router.add_post(f"/{name}", getattr(self, f"http_{name}"))
        app.on_startup.append(lambda _: self.pool.start())
        app.on_shutdown.append(self._close_sockets)
        app.on_cleanup.append(lambda _: self.pool.close())
        return app

    def _missing_token(self, request: web.Request) -> str | None:
        """What the request carries instead of the server's token; None: the token."""
        given = token_of(request.headers.get("Authorization", ""))
        if given is None:
            return "none"
        return None if hmac.compare_digest(given.encode(), self.token.encode()) else \
            "a token it does not know"

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        is_health = request.method == "GET" and request.path == "/health"
        if not is_health and (what := self._missing_token(request)) is not None:
            return _json({"detail": f"expected the server's token, got {what}; {AUTH_HINT}",
                          "code": "UNAUTHORIZED"}, 401)
        try:
            return await handler(request)
        except web.HTTPRequestEntityTooLarge:
            size = request.content_length
            got = f"{size} bytes" if size else "more (a chunked body)"
            return _json({"detail": f"expected a body of at most {self.max_body_bytes} bytes, "
                          f"got {got}; send a smaller body (screenshots travel from the "
                          "server, never to it)", "code": "PAYLOAD_TOO_LARGE"}, 413)
        except web.HTTPException as exc:
            return _json({"detail": f"expected an endpoint of the env server, got {request.method} "
                          f"{request.path} ({exc.reason}); see GET /schema", "code": "UNKNOWN_TYPE"},
                         exc.status)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error body
            status, data = error_data(exc)
            return _json({"detail": data.pop("message"), **data}, status)

    # ---- OpenEnv's endpoints -------------------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        """Open, as OpenEnv's (a load balancer's probe has no token); the session counts
        only for a caller with the token."""
        if self._missing_token(request) is not None:
            return _json({"status": "healthy"})
        return _json({"status": "healthy", "active_sessions": len(self.pool.sessions),
                      "max_sessions": self.pool.max_sessions})

    async def schema(self, request: web.Request) -> web.Response:
        return _json(schemas())

    async def metadata(self, request: web.Request) -> web.Response:
        try:
            own_version = version("cua-harness")
        except PackageNotFoundError:
            own_version = None
        return _json({"name": "cua-harness", "version": own_version,
                      "description": "GUI/web computer-use tasks in a browser sandbox, with "
                                     "step verdicts from the site's state machine"})

    async def tasks(self, request: web.Request) -> web.Response:
        return _json({"tasks": self.pool.tasks})

    async def http_reset(self, request: web.Request) -> web.Response:
        body = ResetBody.model_validate(await _body(request, empty_ok=True))
        if body.session_id is not None:
            session = self.pool.get(body.session_id)
            return _with_session(await self.pool.reset(session, body), session)
        session = self.pool.open("http")
        try:
            envelope = await self.pool.reset(session, body)
        except BaseException:
            await self.pool.end(session)
            raise
        if body.open_session:
            return _with_session(envelope, session)
        # stateless, as OpenEnv's: the env goes back before the answer, nothing is held
        await self.pool.end(session)
        envelope.observation.metadata.session_id = None
        return _json(envelope)

    async def http_step(self, request: web.Request) -> web.Response:
        body = StepBody.model_validate(await _body(request))
        return _json(await self.pool.step(self.pool.get(body.session_id), body.action))

    async def state(self, request: web.Request) -> web.Response:
        session_id = request.query.get("session_id")
        if not session_id:
            raise ServerError(422, "VALIDATION_ERROR", "expected ?session_id= (from /reset), got "
                              "none; a WebSocket client asks {'type': 'state'} instead")
        return _json(self.pool.state(self.pool.get(session_id)))

    # ---- ours ----------------------------------------------------------------------------

    async def http_close(self, request: web.Request) -> web.Response:
        body = SessionBody.model_validate(await _body(request))
        await self.pool.end(self.pool.get(body.session_id))
        return _json({"closed": body.session_id})

    async def http_oracle(self, request: web.Request) -> web.Response:
        body = SessionBody.model_validate(await _body(request))
        return _json({"action": await self.pool.oracle(self.pool.get(body.session_id))})

    async def http_jump(self, request: web.Request) -> web.Response:
        body = JumpBody.model_validate(await _body(request))
        if body.session_id is None:
            raise ServerError(422, "VALIDATION_ERROR", "session_id: expected the session from "
                              "/reset, got none")
        return _json(await self.pool.jump(self.pool.get(body.session_id), body))

    async def http_observe(self, request: web.Request) -> web.Response:
        body = SessionBody.model_validate(await _body(request))
        return _json(await self.pool.observe(self.pool.get(body.session_id)))

    # ---- the WebSocket -------------------------------------------------------------------

    async def websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE_BYTES)
        await ws.prepare(request)
        self._sockets.add(ws)
        try:
            session = self.pool.open("ws")
        except ServerError as exc:
            # the refusal answers the client's first message: sent at once, it would race
            # the client's send into a closed socket (ConnectionClosed instead of the code)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ws.receive(), CAPACITY_ANSWER_S)
            await ws.send_str(json.dumps({"type": "error", "data": error_data(exc)[1]}))
            await ws.close()
            self._sockets.discard(ws)
            return ws
        try:
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    break
                reply = await self._ws_reply(session, message.data)
                if reply is None:
                    break
                await ws.send_str(reply)
        finally:
            self._sockets.discard(ws)
            await self.pool.end(session)
            await ws.close()
        return ws

    async def _close_sockets(self, app: web.Application) -> None:
        """On shutdown: a client learns at once that its session is gone."""
        for ws in list(self._sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"env server shutting down")

    async def _ws_reply(self, session: Session, raw: str) -> str | None:
        """The reply to one WebSocket message (None: the client closed the session)."""
        try:
            message = json.loads(raw)
        except json.JSONDecodeError as exc:
            return _ws_error("INVALID_JSON", f"expected a JSON message, got invalid JSON ({exc})")
        if not isinstance(message, dict) or set(message) - {"type", "data"}:
            return _ws_error("VALIDATION_ERROR", "expected {'type': ..., 'data': ...}, got "
                             f"{str(message)[:80]!r}")
        kind, data = message.get("type"), message.get("data", {})
        try:
            if kind == "close":
                return None
            result_type, result = await self._ws_call(session, kind, data)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error message
            return json.dumps({"type": "error", "data": error_data(exc)[1]})
        return json.dumps({"type": result_type, "data": result})

    async def _ws_call(self, session: Session, kind: object, data: object) -> tuple[str, object]:
        if kind == "reset":
            body = ResetBody.model_validate(data or {})
            if body.session_id is not None or body.open_session:
                raise ServerError(422, "VALIDATION_ERROR", "session_id, open_session: expected "
                                  "none on a WebSocket (the connection is its session)")
            return "observation", (await self.pool.reset(session, body)).model_dump(mode="json")
        if kind == "step":
            return "observation", (await self.pool.step(session, data)).model_dump(mode="json")
        if kind == "state":
            return "state", self.pool.state(session).model_dump(mode="json")
        if kind == "oracle":
            return "oracle", {"action": await self.pool.oracle(session)}
        if kind == "jump":
            jump = JumpBody.model_validate(data)
            return "observation", (await self.pool.jump(session, jump)).model_dump(mode="json")
        if kind == "observe":
            return "observation", (await self.pool.observe(session)).model_dump(mode="json")
        raise ServerError(400, "UNKNOWN_TYPE", f"expected a message type in reset, step, state, "
                          f"close, oracle, jump, observe; got {kind!r}")


def _with_session(envelope: BaseModel, session: Session) -> web.Response:
    response = _json(envelope)
    response.headers["X-Session-Id"] = session.id
    return response


def _ws_error(code: str, message: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


async def _body(request: web.Request, *, empty_ok: bool = False) -> object:
    raw = await request.read()
    if not raw.strip() and empty_ok:
        return {}
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ServerError(400, "INVALID_JSON", f"expected a JSON body, got invalid JSON "
                          f"({exc})") from None
