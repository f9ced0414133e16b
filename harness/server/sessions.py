"""Sessions of the env server: each one an episode stream over an env from an EnvProvider.

A session is what an OpenEnv client holds: one WebSocket connection, or the id an HTTP
``/reset`` answered with. Its first reset opens an env for the task (``EnvProvider.open``;
``LocalEnvs`` by default); later resets reuse that env while the task and options stay
the same. Calls on one session run one at a time; sessions run concurrently, up to
``max_sessions``. An infrastructure failure (a browser crash, a timeout) drops the
session's env (``EnvProvider.discard``) and reaches the client as an infrastructure error,
never as a reward; the next reset opens a fresh env. Idle sessions are closed after
``idle_timeout_s``.

``oracle`` (the task's next oracle action) and ``jump`` (move an FSM episode to any
state, its goal included) are trainer-only tools: a client that may call them can score
any episode 1.0 without playing it. A pool serves them only when ``expose`` names them
(``cua env-server --expose oracle,jump``); otherwise they are refused with 403
``NOT_EXPOSED`` and sessions report ``can_jump`` false.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import ValidationError

from harness.actions import AgentAction, parse_agent_action
from harness.codecs.base import ActionCodec, CodecOptions, Size
from harness.env import Env, resolve_codec
from harness.env_providers import EnvOptions, EnvProvider
from harness.errors import ActionParseError, ConfigError, InfrastructureError
from harness.server.protocol import (
    Envelope,
    JumpBody,
    ResetBody,
    TextAction,
    WireMetadata,
    WireState,
    describe_body,
    encode_observation,
    merged_options,
    validation_errors,
)
from harness.tasks.registry import check_task_id

T = TypeVar("T")

#: The calls a server serves only when asked to (``SessionPool(expose=...)``).
EXPOSABLE = ("oracle", "jump")


def parse_expose(text: str | Iterable[str]) -> frozenset[str]:
    """The calls ``--expose`` names ("oracle,jump", "oracle", ""), or ConfigError."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    unknown = sorted({n for n in names if n} - set(EXPOSABLE))
    if unknown:
        raise ConfigError(f"expected the calls to expose as a comma-separated subset of "
                          f"{list(EXPOSABLE)}, got {unknown}")
    return frozenset(n for n in names if n)


class ServerError(Exception):
    """A refusal the server answers with an HTTP status and an OpenEnv error code."""

    def __init__(self, status: int, code: str, message: str,
                 errors: list[dict[str, object]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.errors = errors  # pydantic's list, as OpenEnv's VALIDATION_ERROR carries it


@dataclass
class Session:
    """One client's episode stream."""

    id: str
    transport: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    env: Env | None = None
    task_id: str | None = None
    options: EnvOptions | None = None
    seed: int | None = None
    episode_id: str | None = None
    steps: int = 0
    done: bool = False
    can_jump: bool = False
    last_active: float = field(default_factory=time.monotonic)


class _Decoded:
    """A codec that hands back what the agent's own codec decoded on the client."""

    name = "client"
    options = CodecOptions()

    def __init__(self, action: dict[str, object] | None, error: str | None) -> None:
        self.action, self.error = action, error

    def encode(self, action: AgentAction, *, size: Size | None = None) -> str:
        raise NotImplementedError("the client's own codec encodes; this one only hands back what it decoded")

    def prompt(self) -> str:
        raise NotImplementedError("the client's own codec writes the prompt")

    def decode(self, text: str, *, size: tuple[int, int] | None = None) -> AgentAction:
        if self.error is not None:
            raise ActionParseError(self.error)
        return parse_agent_action(self.action)


def step_input(payload: object) -> tuple[AgentAction | str, ActionCodec | None]:
    """(what ``Env.step`` takes, the codec for text) from a step's action payload.

    Where the line is drawn (as OpenEnv draws it): a structured action (a dict with
    ``type``) is the client's request, validated against the schema like any body, so one
    that does not validate is refused with 422 ``VALIDATION_ERROR`` and costs no step. Model
    text (``{"text": ...}``) is the agent's output: text that does not decode is the agent's
    mistake, a step whose observation carries ``last_action_error``."""
    if not isinstance(payload, dict):
        raise ServerError(422, "VALIDATION_ERROR", f"expected an action object, got "
                          f"{type(payload).__name__}; send an action dict or {{'text': ...}}")
    if "text" in payload and "type" not in payload:
        try:
            text = TextAction.model_validate(payload)
        except ValidationError as exc:
            raise ServerError(422, "VALIDATION_ERROR", describe_body(exc, "action"),
                              validation_errors(exc)) from None
        if text.action is not None or text.parse_error is not None:
            return text.text, _Decoded(text.action, text.parse_error)
        try:
            return text.text, resolve_codec(text.codec) if text.codec else None
        except ConfigError as exc:
            raise ServerError(422, "VALIDATION_ERROR", f"action.codec: {exc}") from None
    try:
        return parse_agent_action({k: v for k, v in payload.items() if k != "metadata"}), None
    except ValidationError as exc:
        raise ServerError(422, "VALIDATION_ERROR", describe_body(exc, "action") + "; see GET "
                          "/schema, or send model text as {'text': ...} to have a mistake "
                          "count as the agent's", validation_errors(exc)) from None


class SessionPool:
    """The server's sessions over one env provider."""

    def __init__(self, envs: EnvProvider, *, tasks: Sequence[str] | None = None,
                 defaults: EnvOptions | None = None, max_sessions: int = 8,
                 idle_timeout_s: float | None = 600.0, expose: Iterable[str] = ()) -> None:
        self.envs = envs
        self.expose = parse_expose(expose)
        self.tasks = list(tasks) if tasks is not None else None
        self.defaults = defaults or EnvOptions()
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.sessions: dict[str, Session] = {}
        self._reaper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.envs.start()
        if self.idle_timeout_s is not None and self._reaper is None:
            self._reaper = asyncio.ensure_future(self._reap())

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for session in list(self.sessions.values()):
            await self.end(session)
        await self.envs.close()

    # ---- sessions ----------------------------------------------------------------------

    def open(self, transport: str) -> Session:
        if len(self.sessions) >= self.max_sessions:
            raise ServerError(503, "CAPACITY_REACHED", f"expected a free session, got all "
                              f"{self.max_sessions} in use; close one or start the server "
                              "with more --max-sessions")
        session = Session(id=uuid.uuid4().hex, transport=transport)
        self.sessions[session.id] = session
        return session

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise ServerError(404, "SESSION_ERROR", f"expected a live session id, got "
                              f"{session_id!r} (closed, expired or never opened); /reset opens one")
        return session

    async def end(self, session: Session) -> None:
        """Close a session and hand its env back (its sandbox may serve another)."""
        if self.sessions.pop(session.id, None) is None:
            return
        async with session.lock:
            env, session.env = session.env, None
            if env is not None:
                with contextlib.suppress(Exception):  # a dead env is dropped either way
                    await self.envs.release(env)

    # ---- the env calls -----------------------------------------------------------------

    async def reset(self, session: Session, body: ResetBody) -> Envelope:
        task_id = self._task_for(body)
        try:
            options = merged_options(self.defaults, body.options)
        except ValidationError as exc:
            raise ServerError(422, "VALIDATION_ERROR", describe_body(exc, "options")) from None

        async def run() -> Envelope:
            env = await self._env_for(session, task_id, options)
            obs, info = await env.reset(seed=body.seed)
            session.seed, session.episode_id, session.steps = body.seed, info.episode_id, 0
            session.done, session.can_jump = False, self._can_jump(env)
            meta = WireMetadata(session_id=session.id, kind="reset", can_jump=session.can_jump,
                                reset_info=info)
            return Envelope(observation=encode_observation(obs, meta))

        return await self._call(session, run)

    async def step(self, session: Session, payload: object) -> Envelope:
        action, codec = step_input(payload)

        async def run() -> Envelope:
            env = self._live(session, "step")
            obs, reward, terminated, truncated, info = await env.step(action, codec=codec)
            session.steps, session.done = obs.step, terminated or truncated
            meta = WireMetadata(session_id=session.id, kind="step", terminated=terminated,
                                truncated=truncated, can_jump=self._can_jump(env), step_info=info)
            return Envelope(observation=encode_observation(obs, meta), reward=reward,
                            done=session.done)

        return await self._call(session, run)

    async def oracle(self, session: Session) -> dict[str, object] | None:
        self._require_exposed("oracle")

        async def run() -> dict[str, object] | None:
            action = await self._live(session, "oracle").oracle_action()
            return action.model_dump(mode="json") if action is not None else None

        return await self._call(session, run)

    async def jump(self, session: Session, body: JumpBody) -> Envelope:
        self._require_exposed("jump")

        async def run() -> Envelope:
            env = self._live(session, "jump")
            obs, reached = await env.jump(body.state_key, steps=body.steps)
            session.steps, session.done = body.steps, False
            meta = WireMetadata(session_id=session.id, kind="jump", can_jump=self._can_jump(env),
                                state_key=reached)
            return Envelope(observation=encode_observation(obs, meta))

        return await self._call(session, run)

    async def observe(self, session: Session) -> Envelope:
        async def run() -> Envelope:
            env = self._live(session, "observe")
            meta = WireMetadata(session_id=session.id, kind="observe", can_jump=self._can_jump(env))
            return Envelope(observation=encode_observation(await env.observe(), meta),
                            done=session.done)

        return await self._call(session, run)

    def state(self, session: Session) -> WireState:
        session.last_active = time.monotonic()
        return WireState(episode_id=session.episode_id, step_count=session.steps,
                         session_id=session.id, task=session.task_id, seed=session.seed,
                         done=session.done, can_jump=session.can_jump)

    # ---- internals ---------------------------------------------------------------------

    async def _call(self, session: Session, run: Callable[[], Awaitable[T]]) -> T:
        """Run one env call on the session: one at a time; an infrastructure failure drops
        the session's env (the next reset opens a fresh one) and is raised on."""
        async with session.lock:
            if session.id not in self.sessions:
                raise ServerError(404, "SESSION_ERROR", "expected a live session, got one "
                                  "closed meanwhile; /reset opens a new one")
            session.last_active = time.monotonic()
            try:
                return await run()
            except InfrastructureError:
                env, session.env, session.episode_id = session.env, None, None
                if env is not None:
                    with contextlib.suppress(Exception):
                        await self.envs.discard(env)
                raise
            finally:
                session.last_active = time.monotonic()

    def _can_jump(self, env: Env) -> bool:
        return env.can_jump and "jump" in self.expose

    def _require_exposed(self, call: str) -> None:
        if call not in self.expose:
            raise ServerError(403, "NOT_EXPOSED", f"expected a server started with --expose "
                              f"{call}, got one that keeps {call} off (the default): oracle and "
                              "jump are trainer-only tools that can score an episode without "
                              "playing it; start `cua env-server --expose oracle,jump` where only "
                              "the trainer reaches the server")

    def _live(self, session: Session, what: str) -> Env:
        if session.env is None or session.episode_id is None:
            raise ServerError(409, "SESSION_ERROR", f"expected a reset before {what}, got "
                              f"{what} first; send a reset")
        if session.done and what == "step":
            raise ServerError(409, "SESSION_ERROR", "expected a reset after the episode "
                              "ended, got another step; send a reset")
        return session.env

    def _task_for(self, body: ResetBody) -> str:
        if body.task is not None:
            if self.tasks is not None and body.task not in self.tasks:
                shown = ", ".join(self.tasks[:8]) + (", ..." if len(self.tasks) > 8 else "")
                raise ServerError(422, "VALIDATION_ERROR", f"task: expected a task this server "
                                  f"serves ({shown}), got {body.task!r}")
            try:
                check_task_id(body.task)
            except ConfigError as exc:
                raise ServerError(422, "VALIDATION_ERROR", f"task: {exc}") from None
            return body.task
        if self.tasks is None:
            raise ServerError(422, "VALIDATION_ERROR", "task: expected a task id in the reset, "
                              "got none; this server serves any task, so name one")
        if len(self.tasks) == 1:
            return self.tasks[0]
        if body.seed is None:
            return random.choice(self.tasks)
        return self.tasks[body.seed % len(self.tasks)]

    async def _env_for(self, session: Session, task_id: str, options: EnvOptions) -> Env:
        if session.env is not None and (session.task_id, session.options) == (task_id, options):
            return session.env
        env, session.env, session.episode_id = session.env, None, None
        if env is not None:
            await self.envs.release(env)
        session.env = await self.envs.open(task_id, options)
        session.task_id, session.options = task_id, options
        return session.env

    async def _reap(self) -> None:
        assert self.idle_timeout_s is not None
        while True:
            await asyncio.sleep(min(self.idle_timeout_s / 4, 30.0))
            cutoff = time.monotonic() - self.idle_timeout_s
            for session in list(self.sessions.values()):
                if session.last_active < cutoff and not session.lock.locked():
                    await self.end(session)
