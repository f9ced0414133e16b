"""What every adapter's synchronous envs run on, and the prompt builder they answer with.

Other frameworks call envs synchronously (TRL's tools, SkyRL's ``step``, verl-agent's
batched ``step``); our envs are async. An ``EnvHost`` owns a private event loop thread
(``harness.gym_env.LoopThread``) and an env provider started on it (``local`` by default: one
shared Chromium and the task servers), and runs the envs' coroutines there.

Every adapter writes the model's chat with the one prompt builder's transcript mode
(``adapter_prompts``; ``harness.prompts``), so what a model sees through TRL, SkyRL or verl
is what SFT and evaluation show it.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from pydantic import Field

from harness.env import Env
from harness.env_providers import EnvOptions, EnvProvider, check_provider, make_env_provider
from harness.errors import ConfigError
from harness.gym_env import LoopThread
from harness.observation import Observation
from harness.prompts import Message, ObservationMode, PromptBuilder, PromptConfig

T = TypeVar("T")


class AdapterEnvConfig(EnvOptions):
    """The env options of an adapter (codec, reward mode, step limit, timeouts) plus where
    the envs live and what the model is told after each step."""

    provider: str = Field(default="local", description="env provider (`--provider`): where the "
                          "envs live; one host per provider and process")
    verdicts: bool = Field(default=True, description="tell the model each step's FSM verdict")

    def env_options(self, max_steps: int | None) -> EnvOptions:
        """The env's options; ``max_steps`` (the framework's turn limit) unless set here."""
        fields = self.model_dump(include=set(EnvOptions.model_fields))
        return EnvOptions(**{**fields, "max_steps": self.max_steps or max_steps})


class EnvHost:
    """A private event loop and an env provider on it. Close it (or use it as a context
    manager) when training ends; ``run`` after ``close`` raises."""

    def __init__(self, provider: str = "local") -> None:
        check_provider(provider)
        self.provider_spec = provider
        self._closed = False
        self._loop = LoopThread()
        try:
            self._provider: EnvProvider = self._loop.run(_start_provider(provider))
        except BaseException:
            self._loop.stop()
            raise

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def provider(self) -> EnvProvider:
        """The env provider; its coroutines run on this host's loop (``run``)."""
        return self._provider

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the host's loop and wait for it."""
        if self._closed:
            coro.close()
            raise RuntimeError("expected an open env host, got a closed one; make a new one")
        return self._loop.run(coro)

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the host's loop and await it from another event loop (verl's agent
        loops are coroutines on verl's own loop, which must not block on a step)."""
        if self._closed:
            coro.close()
            raise RuntimeError("expected an open env host, got a closed one; make a new one")
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop.loop))

    def open(self, task: str, options: EnvOptions) -> Env:
        """A new env for ``task`` from the provider."""
        return self.run(self._provider.open(task, options))

    def release(self, env: Env, *, failed: bool = False) -> None:
        """Hand ``env`` back: for reuse, or (``failed``) discarded with what it ran on."""
        self.run(self._provider.discard(env) if failed else self._provider.release(env))

    def close(self) -> None:
        """Close the provider and stop the loop. Idempotent."""
        if self._closed:
            return
        try:
            self._loop.run(self._provider.close())
        finally:
            self._closed = True
            self._loop.stop()

    def __enter__(self) -> EnvHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_hosts: dict[str, EnvHost] = {}
_hosts_lock = threading.Lock()


def shared_host(provider: str = "local") -> EnvHost:
    """The process's ``EnvHost`` for ``provider``, started on first use (the SkyRL env and
    the verl agent loop share it: one Chromium and one set of task servers per process)."""
    with _hosts_lock:
        host = _hosts.get(provider)
        if host is None or host.closed:
            host = _hosts[provider] = EnvHost(provider)
        return host


@atexit.register
def close_shared_hosts() -> None:
    """Close every shared host (their browsers and servers). Runs at exit."""
    with _hosts_lock:
        hosts = list(_hosts.values())
        _hosts.clear()
    for host in hosts:
        host.close()


async def _start_provider(spec: str) -> EnvProvider:
    provider = make_env_provider(spec)  # made on the loop its servers and browser will use
    try:
        await provider.start()
    except BaseException:
        await provider.close()
        raise
    return provider


def adapter_prompts(options: EnvOptions, *, system_prompt: bool = True) -> PromptBuilder:
    """The prompt builder of an adapter's episodes (its transcript mode,
    ``PromptBuilder.opening`` and ``feedback``): the env's codec, the one that decodes the
    model's text, and the element list where the env observes elements."""
    observation: ObservationMode = "screenshot+elements" if options.elements else "screenshot"
    return PromptBuilder(PromptConfig(codec=options.codec, observation=observation,
                                      system_prompt=system_prompt))


def over_reason(terminated: bool, truncated: bool, success: bool) -> str | None:
    """Why a step ended the episode (``PromptBuilder.feedback``'s ``over``); None if it runs on."""
    if terminated:
        return "goal reached" if success else "done, task not completed"
    return "step limit reached" if truncated else None


def with_opening(prompt: list[Message], opening: list[Message]) -> list[Message]:
    """A framework's prompt (its dataset row's) with the transcript's opening messages added:
    the opening's system parts to the prompt's system message (a new one first where it has
    none), its user parts to the prompt's last user message (a new one where the last
    message is not the user's). The caller's messages are not modified."""
    out = [dict(m) for m in prompt]
    for message in opening:
        system = message["role"] == "system"
        at = 0 if system else len(out) - 1
        if out and out[at].get("role") == message["role"]:
            head = out[at].get("content")
            parts = [{"type": "text", "text": head}] if isinstance(head, str) else list(head or [])
            out[at]["content"] = parts + list(message["content"])
        else:
            out.insert(0 if system else len(out), dict(message))
    return out


def data_url(obs: Observation) -> str:
    """The screenshot as a ``data:`` URL (PNG or JPEG, as the sandbox encoded it)."""
    return (f"data:image/{obs.image_format};base64,"
            f"{base64.b64encode(obs.screenshot).decode('ascii')}")


def plain_config(section: Any, what: str) -> dict[str, Any]:
    """A framework's config section (an OmegaConf ``DictConfig``, as SkyRL and verl pass, a
    dict, or nothing) as a plain dict of fields; ``what`` names it in the error."""
    if section is None:
        return {}
    if isinstance(section, dict):
        return dict(section)
    from omegaconf import OmegaConf  # both frameworks depend on it

    fields = OmegaConf.to_container(section, resolve=True)
    if not isinstance(fields, dict):
        raise ConfigError(f"expected {what} to be a mapping of fields, got {type(fields).__name__}")
    return {str(name): value for name, value in fields.items()}
