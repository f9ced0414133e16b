"""Env providers: where the envs of a run live (`--provider`).

The runner and `cua collect` ask an ``EnvProvider`` for an env per episode
(``open``), hand it back when the episode ended (``release``: its sandbox may serve the
next episode) or failed on infrastructure (``discard``: nothing of it is reused), and
close the provider when the run is done (unless it was handed to them: one provider can
serve many runs).

- ``local`` (the default): ``LocalEnvs``, an ``AsyncEnv`` per episode over sandboxes from
  a ``SandboxProvider`` (``LocalProvider``: one shared Chromium) and the run's
  ``TaskResources``; idle sandboxes are kept per ``SandboxRequest`` and reused.
- ``isolated``: ``harness.isolated_envs.IsolatedEnvs``, local envs whose sandboxes each
  run their own Chromium in a network namespace, home, cgroup and bubblewrap jail.
- ``ray:INNER``: ``harness.ray_envs.RayEnvs``, envs of the provider ``INNER`` (default
  ``local``) hosted in Ray actors, several per actor (``--ray`` does the same).
- further providers register here by name (``register_env_provider``, or an entry point
  in the ``cua.providers`` group): a name maps onto ``"module:function"``, the function
  takes the text after the first ``:`` (``remote:http://host:8000`` gives the URL) and
  the ``EnvOptions``-independent ``ProviderContext`` and returns an ``EnvProvider``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Protocol, TypedDict, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.env import AsyncEnv, Env
from harness.errors import ConfigError, UnknownNameError, did_you_mean
from harness.resources import TaskResources
from harness.rewards import RewardMode
from harness.tasks.registry import make_task
from sandboxes.base import Sandbox, SandboxKind, SandboxProvider, SandboxRequest
from sandboxes.teardown import close_all

ENTRY_POINT_GROUP = "cua.providers"


class EnvKwargs(TypedDict):
    """The options an ``AsyncEnv`` takes from ``EnvOptions``."""

    codec: str
    max_steps: int | None
    reward: RewardMode
    elements: bool
    step_timeout_s: float
    reset_timeout_s: float


class EnvOptions(BaseModel):
    """How an env runs its episodes (the same for a local and a remote env)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    codec: str = Field(default="json", description="codec of text actions (an agent's own wins)")
    max_steps: int | None = Field(default=None, ge=1, description="steps before truncation; "
                                  "None: the task's budget, else 30")
    reward: RewardMode = Field(default="outcome", description="outcome, step or progress")
    elements: bool = Field(default=False, description="observe the page's interactive elements")
    step_timeout_s: float = Field(default=30.0, gt=0, description="limit for one step")
    reset_timeout_s: float = Field(default=60.0, gt=0, description="limit for one reset")
    sandbox: SandboxKind | None = Field(default=None, description="the kind of sandbox (browser, "
                                        "desktop); None: the kind each task asks for")
    viewport: tuple[int, int] | None = Field(default=None, description="(width, height) of every "
                                             "sandbox; None: the viewport each task asks for")

    def env_kwargs(self) -> EnvKwargs:
        """The options an ``AsyncEnv`` takes (the sandbox is the provider's business)."""
        return cast(EnvKwargs, self.model_dump(exclude={"sandbox", "viewport"}))


class UnknownProviderError(UnknownNameError):
    """A provider name that is not registered."""


@runtime_checkable
class EnvProvider(Protocol):
    """Makes envs for task ids and owns what they share."""

    async def start(self) -> None:
        """Start what the envs share. Idempotent."""

    async def open(self, task_id: str, options: EnvOptions) -> Env:
        """An env for ``task_id``, ready for ``reset``."""

    async def release(self, env: Env) -> None:
        """The episode ended: close the env; what it ran on may serve the next one."""

    async def discard(self, env: Env) -> None:
        """The env failed on infrastructure: close it and reuse nothing of it."""

    async def close(self) -> None:
        """Close everything. Idempotent."""


class LocalEnvs:
    """``AsyncEnv``s over sandboxes from a sandbox provider, in this process."""

    def __init__(self, sandboxes: SandboxProvider | None = None, *,
                 resources: TaskResources | None = None, bind_host: str = "127.0.0.1",
                 sandbox_episodes: int | None = None) -> None:
        """``sandbox_episodes``: close a sandbox after it served this many episodes
        (None: reuse it for as long as the provider lives)."""
        from sandboxes.providers import LocalProvider

        self._owns_sandboxes = sandboxes is None
        self.sandboxes: SandboxProvider = sandboxes or LocalProvider()
        self._owns_resources = resources is None
        self.resources = resources or TaskResources(bind_host=bind_host)
        self._idle: dict[SandboxRequest, list[Sandbox]] = {}
        self._busy: dict[int, tuple[SandboxRequest, Sandbox]] = {}
        self.sandbox_episodes = sandbox_episodes
        self._served: dict[int, int] = {}  # id(sandbox) -> episodes it served

    async def start(self) -> None:
        await self.sandboxes.start()

    async def open(self, task_id: str, options: EnvOptions) -> Env:
        task = make_task(task_id)
        request = sandbox_request(task.sandbox_request, options.sandbox, self.sandboxes,
                                  viewport=options.viewport)
        idle = self._idle.get(request)
        sandbox = idle.pop() if idle else await self.sandboxes.new_sandbox(request)
        env = AsyncEnv(task, sandbox, resources=self.resources, **options.env_kwargs())
        self._busy[id(env)] = (request, sandbox)
        return env

    async def release(self, env: Env) -> None:
        request, sandbox = self._busy.pop(id(env))
        try:
            await env.close()
        except BaseException:
            await sandbox.close()
            raise
        served = self._served.pop(id(sandbox), 0) + 1
        if self.sandbox_episodes is not None and served >= self.sandbox_episodes:
            await sandbox.close()
            return
        self._served[id(sandbox)] = served
        self._idle.setdefault(request, []).append(sandbox)

    async def discard(self, env: Env) -> None:
        _, sandbox = self._busy.pop(id(env))
        self._served.pop(id(sandbox), None)
        try:
            await env.close()
        finally:
            await sandbox.close()

    async def close(self) -> None:
        idle = [sandbox for pool in self._idle.values() for sandbox in pool]
        self._idle.clear()
        self._served.clear()
        try:
            await close_all(sandbox.close for sandbox in idle)
        finally:
            await close_all(([self.resources.close] if self._owns_resources else [])
                            + ([self.sandboxes.close] if self._owns_sandboxes else []))


def sandbox_request(request: SandboxRequest, kind: SandboxKind | None,
                    sandboxes: SandboxProvider, *,
                    viewport: tuple[int, int] | None = None) -> SandboxRequest:
    """The task's request with ``--sandbox`` applied, if the sandbox provider makes that
    kind, and ``--viewport`` (which overrides the task's own)."""
    if viewport is not None:
        request = request.model_copy(update={"viewport": viewport})
    if kind is None or kind == request.kind:
        return request
    kinds = tuple(sandboxes.kinds)
    if kinds and kind not in kinds:
        raise ConfigError(f"--sandbox: expected a kind {type(sandboxes).__name__} makes "
                          f"({', '.join(kinds)}), got {kind!r}; pick one of those or a provider "
                          "that makes it")
    return request.model_copy(update={"kind": kind})


def check_sandbox(kind: SandboxKind | None, provider: str,
                  tasks: dict[str, SandboxKind] | None = None) -> None:
    """Refuse ``--sandbox KIND`` up front: for tasks (id -> the kind each needs) that need
    another kind, and where the local provider does not make it (other providers refuse it
    when their first env opens)."""
    if kind is None:
        return
    other = [task for task, needs in (tasks or {}).items() if needs != kind]
    if other:
        raise ConfigError(f"--sandbox {kind}: expected tasks that run on a {kind} sandbox, got "
                          f"{len(other)} that need another kind ({', '.join(other[:5])}); drop "
                          f"--sandbox, or pick tasks of that kind")
    if provider == "local":
        from sandboxes.providers import LocalProvider

        sandbox_request(SandboxRequest(), kind, LocalProvider())


@dataclass(frozen=True)
class ProviderContext:
    """What a provider factory may use besides its argument."""

    bind_host: str = "127.0.0.1"
    resources: TaskResources | None = None


def local(arg: str | None, context: ProviderContext) -> EnvProvider:
    """The registry's entry for ``local``."""
    if arg:
        raise ConfigError(f"expected --provider local without an argument, got local:{arg}")
    return LocalEnvs(resources=context.resources, bind_host=context.bind_host)


#: name -> "module:function"; the function takes (argument or None, ProviderContext).
PROVIDERS: dict[str, str] = {
    "local": "harness.env_providers:local",
    "isolated": "harness.isolated_envs:isolated",
    "ray": "harness.ray_envs:ray_provider",
}


def register_env_provider(name: str, target: str) -> None:
    """Register (or replace) an env provider: ``target`` is ``"module:function"``."""
    if not name or ":" in name or target.count(":") != 1:
        raise ConfigError(f"expected a name without ':' and 'module:function', got {name!r}, {target!r}")
    PROVIDERS[name] = target


@cache
def _entry_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def provider_names() -> list[str]:
    return sorted({**_entry_points(), **PROVIDERS})


def check_provider(spec: str) -> None:
    """Raise ``UnknownProviderError`` unless ``spec`` names a registered provider."""
    name = spec.partition(":")[0]
    if name not in {**_entry_points(), **PROVIDERS}:
        raise UnknownProviderError(
            f"expected a provider in {provider_names()}, got {name!r}"
            f"{did_you_mean(name, provider_names())}; pass --provider NAME or NAME:ARG")


def provider_spec(provider: str, ray: bool) -> str:
    """The provider spec a run uses: ``provider``, spread over Ray actors when ``ray``."""
    if not ray:
        return provider
    if provider.partition(":")[0] == "ray":
        raise ConfigError(f"expected either --ray or --provider ray:..., got both (--provider "
                          f"{provider}); drop one")
    return f"ray:{provider}"


class EnvPlacement(BaseModel):
    """Where a run's envs run: the provider and whether Ray actors host them. The one pair
    of fields that `cua eval`, `cua collect` and GRPO rollouts share (their configs inherit
    it); the agent, the sinks and the store writer always stay in the run's process."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = Field(
        default="local", description="where the envs run: local (this process's sandboxes), or a "
        "registered provider such as isolated, docker, remote:URL")
    ray: bool = Field(
        default=False, description="run the provider's envs in Ray actors, several per actor "
        "(a local Ray, or the cluster $RAY_ADDRESS names)")

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, provider: str) -> str:
        check_provider(provider)
        return provider

    @model_validator(mode="after")
    def _one_way_to_ray(self) -> EnvPlacement:
        provider_spec(self.provider, self.ray)
        return self

    def provider_spec(self) -> str:
        """The spec ``make_env_provider`` takes for these fields."""
        return provider_spec(self.provider, self.ray)


#: What a registered provider name points at: ``factory(ARG or None, context)``.
ProviderFactory = Callable[[str | None, ProviderContext], EnvProvider]


def make_env_provider(spec: str, context: ProviderContext | None = None) -> EnvProvider:
    """The env provider ``spec`` names (``NAME`` or ``NAME:ARG``)."""
    check_provider(spec)
    name, sep, arg = spec.partition(":")
    module_name, func_name = {**_entry_points(), **PROVIDERS}[name].split(":")
    factory: ProviderFactory = getattr(importlib.import_module(module_name), func_name)
    return factory(arg if sep else None, context or ProviderContext())
