"""The env server's client: ``RemoteEnv`` (an ``Env``) and ``RemoteEnvs`` (``remote:URL``).

``RemoteEnv`` holds one session (one WebSocket) of an env server and implements
``harness.env.Env``: it rebuilds typed ``Observation``, ``ResetInfo`` and ``StepInfo``
(verdicts included) from the server's JSON, so the rollout, the store and the report see
no difference between a local and a served env. Text from an agent with a codec of its own
is decoded here, with that codec object, against the last screenshot's size (as a local env
does), and sent with the action it decoded into; text without one is decoded on the server
with the options' codec.

Failures map onto the runner's two channels (``harness.server.errors``): the server's
infrastructure errors, a dead connection and a call without an answer in time raise
``InfrastructureError`` subclasses (the runner retries the episode); a request the server
refuses raises ``EnvServerRequestError`` (recorded, not retried).

``RemoteEnvs`` is the ``remote`` env provider: ``--provider remote:http://host:8000`` (or
``remote:unix:/path/env.sock``), with the token from ``$CUA_ENV_TOKEN``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os

import aiohttp
from pydantic import ValidationError

from harness.actions import Action, AgentAction, duration_s, parse_action, parse_agent_action
from harness.codecs.base import CodecLike
from harness.env import Env, StepResult, dict_error, resolve_codec
from harness.env_providers import EnvOptions, ProviderContext
from harness.errors import ActionParseError, ConfigError
from harness.observation import Observation, ResetInfo
from harness.server.errors import (
    EnvServerError,
    EnvServerTimeout,
    EnvServerUnreachable,
    error_from_wire,
)
from harness.server.protocol import (
    MAX_MESSAGE_BYTES,
    MAX_TEXT_CHARS,
    Envelope,
    decode_observation,
)
from sandboxes.actions import TypeText, Wait

TOKEN_ENV = "CUA_ENV_TOKEN"
#: seconds a client waits beyond the server's own limit before it calls the server hung
GRACE_S = 10.0
#: allowance for text decoded on the server, whose action (a wait, typing) is not known here
TEXT_ALLOWANCE_S = 60.0


class Connection:
    """HTTP and WebSocket access to one env server, at ``http://...`` or ``unix:/path``."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        if url.startswith("unix:"):
            path = url.removeprefix("unix:").removeprefix("//")
            self.base = "http://localhost"
            self._connector: aiohttp.BaseConnector = aiohttp.UnixConnector(path=path)
        elif url.startswith(("http://", "https://")):
            self.base = url.rstrip("/")
            self._connector = aiohttp.TCPConnector(limit=0)
        else:
            raise ConfigError(f"expected an env server URL (http://host:port or unix:/path), "
                              f"got {url!r}")
        self.http = aiohttp.ClientSession(connector=self._connector,
                                          headers={"Authorization": f"Bearer {token}"})

    async def call(self, method: str, path: str, body: object = None, *,
                   timeout_s: float = 30.0) -> object:
        """One HTTP call; its JSON answer, or the error it stands for."""
        try:
            async with self.http.request(method, self.base + path, json=body,
                                         timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
                data = await resp.json(content_type=None)
        except TimeoutError as exc:
            raise EnvServerTimeout(f"expected an answer from the env server at {self.url} "
                                   f"within {timeout_s}s, got none; is it hung?") from exc
        except (aiohttp.ClientError, OSError, json.JSONDecodeError) as exc:
            raise self.unreachable(exc) from exc
        if resp.status != 200:
            raise error_from_wire(data if isinstance(data, dict) else {}, status=resp.status)
        return data

    async def websocket(self, timeout_s: float) -> aiohttp.ClientWebSocketResponse:
        try:
            return await self.http.ws_connect(self.base + "/ws", max_msg_size=MAX_MESSAGE_BYTES,
                                              timeout=aiohttp.ClientWSTimeout(ws_close=5.0),
                                              autoping=True)
        except aiohttp.WSServerHandshakeError as exc:
            if exc.status == 401:
                raise error_from_wire({"code": "UNAUTHORIZED", "message": "the env server "
                                       f"at {self.url} refused the token in ${TOKEN_ENV}"}) from exc
            raise self.unreachable(exc) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise self.unreachable(exc) from exc

    def unreachable(self, exc: BaseException) -> EnvServerUnreachable:
        return EnvServerUnreachable(f"expected the env server at {self.url} to answer, got "
                                    f"{type(exc).__name__}: {exc}; is it running?")

    async def close(self) -> None:
        await self.http.close()


class RemoteEnv:
    """One session of an env server, as an ``Env`` (see the module docstring)."""

    def __init__(self, connection: Connection, task_id: str, options: EnvOptions) -> None:
        self.connection = connection
        self.options = options
        self._task_id = task_id
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._lock = asyncio.Lock()
        self._last: Observation | None = None
        self._can_jump = False
        self.session_id: str | None = None

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def can_jump(self) -> bool:
        return self._can_jump

    async def reset(self, *, seed: int | None = None,
                    options: dict[str, object] | None = None) -> tuple[Observation, ResetInfo]:
        if options:
            raise ConfigError(f"expected no reset options, got {sorted(options)}; seed the "
                              "episode with seed=")
        data = {"seed": seed, "task": self.task_id, "options": self.options.model_dump()}
        envelope = await self._observation("reset", data, self.options.reset_timeout_s)
        meta = envelope.observation.metadata
        if meta.reset_info is None:
            raise EnvServerError("expected a reset's info from the env server, got none")
        self.session_id = meta.session_id
        return self._keep(envelope), meta.reset_info

    async def step(self, action: AgentAction | str | dict, *, codec: CodecLike = None) -> StepResult:
        payload, allowance = self._payload(action, codec)
        envelope = await self._observation("step", payload, self.options.step_timeout_s + allowance)
        meta = envelope.observation.metadata
        if meta.step_info is None or envelope.reward is None:
            raise EnvServerError("expected a step's info and reward from the env server, got none")
        return (self._keep(envelope), envelope.reward, meta.terminated, meta.truncated,
                meta.step_info)

    async def oracle_action(self) -> Action | None:
        _, data = await self._call("oracle", {}, self.options.step_timeout_s)
        if not isinstance(data, dict):
            raise EnvServerError(f"expected the oracle's answer as an object from the env server, got "
                                 f"{type(data).__name__}")
        action = data.get("action")
        return parse_action(action) if action is not None else None

    async def jump(self, state_key: str, *, steps: int) -> tuple[Observation, str]:
        envelope = await self._observation("jump", {"state_key": state_key, "steps": steps},
                                           self.options.reset_timeout_s)
        return self._keep(envelope), envelope.observation.metadata.state_key or state_key

    async def observe(self) -> Observation:
        return self._keep(await self._observation("observe", {}, self.options.step_timeout_s))

    async def close(self) -> None:
        """End the session (the server hands its env back). Idempotent."""
        ws, self._ws = self._ws, None
        if ws is not None and not ws.closed:
            with contextlib.suppress(Exception):
                await ws.send_str(json.dumps({"type": "close"}))
            with contextlib.suppress(Exception):
                await ws.close()

    # ---- internals -----------------------------------------------------------------------

    def _payload(self, action: AgentAction | str | dict, codec: CodecLike) -> tuple[dict[str, object], float]:
        """(the step's action payload, its time allowance beyond the step timeout)."""
        if isinstance(action, str):
            if codec is None:
                return {"text": action, "codec": self.options.codec}, TEXT_ALLOWANCE_S
            size = (self._last.width, self._last.height) if self._last is not None else None
            try:
                decoded = resolve_codec(codec).decode(action, size=size)
            except ActionParseError as exc:
                return {"text": action, "parse_error": str(exc)}, 0.0
            return {"text": action, "action": decoded.model_dump(mode="json")}, _allowance(decoded)
        if isinstance(action, dict):
            # the server refuses an action dict off the schema (422, the client's error); an
            # agent's such dict is its mistake, as in a local env: it travels as a decode error
            try:
                action = parse_agent_action(action)
            except ValidationError as exc:
                return {"text": json.dumps(action, default=str)[:MAX_TEXT_CHARS],
                        "parse_error": dict_error(action, exc)}, 0.0
        return action.model_dump(mode="json"), _allowance(action)

    def _keep(self, envelope: Envelope) -> Observation:
        self._can_jump = envelope.observation.metadata.can_jump
        self._last = decode_observation(envelope.observation)
        return self._last

    async def _observation(self, kind: str, data: object, limit_s: float) -> Envelope:
        _, reply = await self._call(kind, data, limit_s)
        try:
            return Envelope.model_validate(reply)
        except ValueError as exc:
            raise EnvServerError(f"expected an observation envelope from the env server, got "
                                 f"one that does not validate: {exc}") from exc

    async def _call(self, kind: str, data: object, limit_s: float) -> tuple[str, object]:
        """One message and its answer; the session's calls run one at a time."""
        async with self._lock:
            if self._ws is None or self._ws.closed:
                self._ws = await self.connection.websocket(limit_s + GRACE_S)
            ws = self._ws
            try:
                await ws.send_str(json.dumps({"type": kind, "data": data}))
                message = await asyncio.wait_for(ws.receive(), limit_s + GRACE_S)
            except TimeoutError as exc:
                await self._drop()
                raise EnvServerTimeout(f"expected the env server at {self.connection.url} to "
                                       f"answer {kind} within {limit_s + GRACE_S:.0f}s, got "
                                       "nothing; it may be hung") from exc
            except (aiohttp.ClientError, OSError) as exc:
                await self._drop()
                raise self.connection.unreachable(exc) from exc
            if message.type != aiohttp.WSMsgType.TEXT:
                await self._drop()
                raise EnvServerUnreachable(f"expected an answer to {kind} from the env server at "
                                           f"{self.connection.url}, got the connection "
                                           f"{message.type.name.lower()} (the server stopped?)")
            reply = json.loads(message.data)
            if reply.get("type") == "error":
                raise error_from_wire(reply.get("data") or {})
            return reply.get("type"), reply.get("data")

    async def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.close()


def _allowance(action: object) -> float:
    """A wait's or typing's own time (as the server grants it); 0 for what is no action."""
    try:
        parsed = parse_agent_action(action) if isinstance(action, dict) else action
        return duration_s(parsed) if isinstance(parsed, (Wait, TypeText)) else 0.0
    except (ValueError, TypeError, AttributeError):
        return 0.0


class RemoteEnvs:
    """Envs of one env server: each episode a session of its own."""

    def __init__(self, url: str, token: str | None = None) -> None:
        token = token or os.environ.get(TOKEN_ENV, "")
        if not token:
            raise ConfigError(f"expected the env server's token in ${TOKEN_ENV}, got none; "
                              f"export {TOKEN_ENV}=... (the token the server was started with)")
        self.url, self._token = url, token
        self._connection: Connection | None = None
        self._open: set[RemoteEnv] = set()

    @property
    def connection(self) -> Connection:
        if self._connection is None:  # made on the loop that uses it
            self._connection = Connection(self.url, self._token)
        return self._connection

    async def start(self) -> None:
        """Check that the server answers and takes the token, before any episode (``/health``
        is open, so the check asks ``/metadata``)."""
        try:
            await self.connection.call("GET", "/metadata", timeout_s=GRACE_S)
        except EnvServerUnreachable as exc:
            raise ConfigError(f"{exc} (start one with `cua env-server`)") from exc

    async def open(self, task_id: str, options: EnvOptions) -> RemoteEnv:
        env = RemoteEnv(self.connection, task_id, options)
        self._open.add(env)
        return env

    async def release(self, env: Env) -> None:
        self._open.discard(env)
        await env.close()

    async def discard(self, env: Env) -> None:
        self._open.discard(env)
        await env.close()

    async def close(self) -> None:
        for env in list(self._open):
            await env.close()
        self._open.clear()
        if self._connection is not None:
            await self._connection.close()
            self._connection = None


def remote(arg: str | None, context: ProviderContext) -> RemoteEnvs:
    """The registry's entry for ``remote:URL``."""
    if not arg:
        raise ConfigError("expected --provider remote:URL (http://host:port or unix:/path), "
                          "got remote without a URL")
    return RemoteEnvs(arg)
