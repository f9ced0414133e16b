"""Envs hosted in Ray actors (`--ray`, or `--provider ray:INNER`).

``RayEnvs`` is an ``EnvProvider`` whose envs are proxies (``RayEnv``) to envs that live in
Ray actors (``EnvPoolActor``). Each actor runs an env provider of its own, ``INNER``
(``local`` by default, or ``isolated``, or any registered name) with its own sandboxes and
task servers, and hosts up to ``envs_per_actor`` envs at once; actors are added as more
envs are open at once. Everything else stays on the driver: the rollout, the agent (so
concurrent episodes can still batch their model calls) and every sink (results.jsonl,
the trajectory store, reports), so the SQLite store has one writer on one machine.

Ray runs locally (``ray.init()``) unless ``RayConfig.address`` or ``$RAY_ADDRESS`` names a
cluster; an actor needs this package importable where it runs.

An actor that dies (``RayActorError``) is replaced by a new one, and every env it hosted
raises ``EnvHostLost`` on its next call: a shared crash, which the runner retries without
using up the episode's retries.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import socket
import uuid
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.actions import Action, AgentAction
from harness.codecs.base import CodecLike
from harness.env import Env, StepResult
from harness.env_providers import (
    EnvOptions,
    EnvProvider,
    ProviderContext,
    check_provider,
    make_env_provider,
)
from harness.errors import ConfigError, EnvHostLost, InfrastructureError
from harness.observation import Observation, ResetInfo
from harness.rollout import describe_error
from sandboxes.extras import import_extra


class RayConfig(BaseModel):
    """How envs are spread over Ray actors."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    inner: str = Field(default="local", description="the env provider each actor runs "
                       "(local, isolated, or any registered name)")
    envs_per_actor: int = Field(default=4, ge=1, description="envs one actor hosts at once")
    actor_cpus: float = Field(default=0.0, ge=0, description="CPUs Ray reserves per actor (0: "
                              "envs wait on browsers, not on Ray's CPU accounting)")
    address: str | None = Field(default=None, description="Ray cluster to join; None: "
                                "$RAY_ADDRESS if set, else a local Ray")
    start_timeout_s: float = Field(default=300.0, gt=0, description="limit for an actor to "
                                   "start and open its provider")


CLUSTER_HINT = ("check RAY_ADDRESS (the head's GCS host:port, or ray://host:10001), and on a "
                "cluster with token authentication set RAY_AUTH_MODE=token with its token in "
                "~/.ray/auth_token or RAY_AUTH_TOKEN")


def check_cluster_address(address: str, timeout_s: float = 5.0) -> None:
    """Refuse a cluster address (``host:port`` or ``ray://host:port``) that no server
    answers on: ``ray.init`` would wait for it without end. ``auto`` and ``local`` pass."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep:
        if address in ("auto", "local"):
            return
        raise ConfigError(f"expected RAY_ADDRESS as host:port, ray://host:port, auto or local, "
                          f"got {address!r}; {CLUSTER_HINT}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"expected a Ray cluster answering at {address}, got "
                          f"{type(exc).__name__}: {exc}; {CLUSTER_HINT}") from exc


def _ray() -> Any:
    return import_extra("ray", "ray", "--ray")


class EnvPoolActor:
    """Hosts envs of one env provider; runs as a Ray actor (see the module docstring).

    Every method answers ``("ok", value)`` or ``("error", exception)``, so the driver
    re-raises the env's own exception (its type, message and attributes) rather than
    Ray's wrapper of it."""

    def __init__(self, inner: str, bind_host: str) -> None:
        self.provider: EnvProvider = make_env_provider(inner, ProviderContext(bind_host=bind_host))
        self.envs: dict[str, Env] = {}

    async def start(self) -> tuple[str, Any]:
        return await _answer(self._start())

    async def _start(self) -> int:
        await self.provider.start()
        return os.getpid()

    async def open(self, task_id: str, options: EnvOptions) -> tuple[str, Any]:
        return await _answer(self._open(task_id, options))

    async def _open(self, task_id: str, options: EnvOptions) -> str:
        env = await self.provider.open(task_id, options)
        env_id = uuid.uuid4().hex
        self.envs[env_id] = env
        return env_id

    async def call(self, env_id: str, method: str, args: tuple, kwargs: dict) -> tuple[str, Any]:
        """``env.method(*args, **kwargs)``, and whether the env can jump afterwards."""
        async def run() -> tuple[Any, bool]:
            env = self.envs[env_id]
            value = await getattr(env, method)(*args, **kwargs)
            return value, env.can_jump
        return await _answer(run())

    async def finish(self, env_id: str, how: str) -> tuple[str, Any]:
        """Hand an env back to the provider: ``release`` or ``discard``."""
        env = self.envs.pop(env_id, None)
        if env is None:
            return "ok", None
        return await _answer(getattr(self.provider, how)(env))

    async def close(self) -> tuple[str, Any]:
        for env_id in list(self.envs):
            await self.finish(env_id, "discard")
        return await _answer(self.provider.close())

    def pid(self) -> int:
        return os.getpid()


async def _answer(awaitable: Any) -> tuple[str, Any]:
    try:
        return "ok", await awaitable
    except Exception as exc:
        try:
            pickle.dumps(exc)
            return "error", exc
        except Exception:  # noqa: BLE001 - an exception that cannot travel: keep its text
            cls = InfrastructureError if isinstance(exc, InfrastructureError) else RuntimeError
            return "error", cls(describe_error(exc))


@dataclass(eq=False)
class _Actor:
    """One actor of the pool and what the driver knows of it."""

    handle: Any
    started: asyncio.Future[Any] | None = None
    busy: int = 0
    dead: bool = False
    envs: set[str] = field(default_factory=set)


class RayEnv:
    """A driver-side proxy of an env hosted in an actor; it implements ``Env``."""

    def __init__(self, pool: RayEnvs, actor: _Actor, env_id: str, task_id: str) -> None:
        self._pool, self.actor, self.env_id = pool, actor, env_id
        self._task_id = task_id
        self._can_jump = False

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def can_jump(self) -> bool:
        return self._can_jump

    async def reset(self, *, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, ResetInfo]:
        return await self._call("reset", seed=seed, options=options)

    async def step(self, action: AgentAction | str | dict, *, codec: CodecLike = None) -> StepResult:
        return await self._call("step", action, codec=codec)

    async def oracle_action(self) -> Action | None:
        return await self._call("oracle_action")

    async def jump(self, state_key: str, *, steps: int) -> tuple[Observation, str]:
        return await self._call("jump", state_key, steps=steps)

    async def observe(self) -> Observation:
        return await self._call("observe")

    async def close(self) -> None:
        await self._call("close")

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        value, self._can_jump = await self._pool.ask(
            self.actor, self.actor.handle.call.remote(self.env_id, method, args, kwargs))
        return value


class RayEnvs:
    """Envs of ``config.inner`` hosted in Ray actors (see the module docstring)."""

    def __init__(self, config: RayConfig | None = None, *, bind_host: str = "127.0.0.1") -> None:
        self.config = config or RayConfig()
        self.bind_host = bind_host
        self.actors: list[_Actor] = []
        #: how many actors died and were replaced
        self.replaced = 0
        self._owns_ray = False
        self._closed = False

    async def start(self) -> None:
        """Join (or start) Ray. Actors start as envs are opened."""
        ray = _ray()
        if not ray.is_initialized():
            address = self.config.address or os.environ.get("RAY_ADDRESS") or None
            if address is not None:
                await asyncio.to_thread(check_cluster_address, address)
            try:
                await asyncio.to_thread(ray.init, address=address, include_dashboard=False,
                                        logging_level="ERROR", log_to_driver=False)
            except (ConnectionError, RuntimeError) as exc:
                if address is None:
                    raise
                raise ConfigError(f"expected to join the Ray cluster at {address}, got "
                                  f"{type(exc).__name__}: {exc}; {CLUSTER_HINT}") from exc
            self._owns_ray = True

    async def open(self, task_id: str, options: EnvOptions) -> Env:
        await self.start()
        actor = self._pick()
        actor.busy += 1  # reserved before any await: concurrent opens see it
        try:
            await self._started(actor)
            env_id = await self.ask(actor, actor.handle.open.remote(task_id, options))
        except BaseException:
            actor.busy -= 1
            raise
        actor.envs.add(env_id)
        return RayEnv(self, actor, env_id, task_id)

    async def release(self, env: Env) -> None:
        await self._finish(env, "release")

    async def discard(self, env: Env) -> None:
        await self._finish(env, "discard")

    async def close(self) -> None:
        """Close every actor's provider, end the actors, and Ray if this started it."""
        if self._closed:
            return
        self._closed = True
        ray = _ray()
        for actor in self.actors:
            if not actor.dead:
                try:
                    await asyncio.wait_for(actor.handle.close.remote(), 60)
                except Exception:  # noqa: BLE001 - a dying actor is ended below anyway
                    pass
            ray.kill(actor.handle)
        self.actors.clear()
        if self._owns_ray:
            await asyncio.to_thread(ray.shutdown)

    # ---- actors ------------------------------------------------------------------------

    async def ask(self, actor: _Actor, ref: Any) -> Any:
        """The answer of one actor call; a dead actor is replaced and raises ``EnvHostLost``."""
        ray = _ray()
        try:
            status, value = await ref
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
            self._replace(actor)
            raise EnvHostLost(f"expected the Ray actor hosting envs to answer, got "
                              f"{type(exc).__name__}; it was replaced, retry the episode") from exc
        if status == "error":
            raise value
        return value

    def _pick(self) -> _Actor:
        live = [a for a in self.actors if not a.dead and a.busy < self.config.envs_per_actor]
        if live:
            return min(live, key=lambda a: a.busy)
        return self._new_actor()

    def _new_actor(self) -> _Actor:
        remote = _actor_class().options(
            num_cpus=self.config.actor_cpus, scheduling_strategy="SPREAD",
            max_concurrency=max(8, 4 * self.config.envs_per_actor))
        actor = _Actor(remote.remote(self.config.inner, self.bind_host))
        self.actors.append(actor)
        return actor

    async def _started(self, actor: _Actor) -> None:
        if actor.started is None:
            actor.started = asyncio.ensure_future(
                asyncio.wait_for(self.ask(actor, actor.handle.start.remote()),
                                 self.config.start_timeout_s))
        try:
            await asyncio.shield(actor.started)
        except TimeoutError as exc:
            self._replace(actor)
            raise EnvHostLost(f"expected a Ray actor to start within {self.config.start_timeout_s}s"
                              ", got a timeout; check the cluster's resources") from exc

    def _replace(self, actor: _Actor) -> None:
        if actor.dead:
            return
        actor.dead = True
        self.replaced += 1
        _ray().kill(actor.handle)
        self.actors.remove(actor)
        if not self._closed:
            self._new_actor()

    async def _finish(self, env: Env, how: str) -> None:
        if not isinstance(env, RayEnv):
            raise ConfigError(f"expected an env this RayEnvs opened, got {type(env).__name__}")
        actor = env.actor
        if env.env_id not in actor.envs:
            return
        actor.envs.discard(env.env_id)
        actor.busy -= 1
        if actor.dead:
            return  # its envs died with it
        try:
            await self.ask(actor, actor.handle.finish.remote(env.env_id, how))
        except EnvHostLost:
            pass  # it died after the episode ended: the episode stands, the actor is replaced


@cache
def _actor_class() -> Any:
    return _ray().remote(EnvPoolActor)


def ray_provider(arg: str | None, context: ProviderContext) -> RayEnvs:
    """The registry's entry for ``ray`` (``ray:INNER``; ``ray`` alone is ``ray:local``)."""
    inner = arg or "local"
    if inner.partition(":")[0] == "ray":
        raise ConfigError(f"expected a provider other than ray inside ray:, got ray:{inner}; "
                          "name the provider the actors run, e.g. ray:local or ray:isolated")
    if context.resources is not None:
        raise ConfigError("expected no shared TaskResources for --provider ray, got some; "
                          "each actor runs its own servers next to its browsers")
    check_provider(inner)
    return RayEnvs(RayConfig(inner=inner), bind_host=context.bind_host)
