"""What every adapter's synchronous envs run on, and the short texts they answer with.

Other frameworks call envs synchronously (TRL's tools, SkyRL's ``step``, verl-agent's
batched ``step``); our envs are async. An ``EnvHost`` owns a private event loop thread
(``harness.env.LoopThread``) and an env provider started on it (``local`` by default: one
shared Chromium and the task servers), and runs the envs' coroutines there.
"""

from __future__ import annotations

import base64
from collections.abc import Coroutine
from typing import Any, TypeVar

from fsm_sites.verdict import StepVerdict
from harness.env import Env, LoopThread
from harness.env_providers import EnvOptions, EnvProvider, check_provider, make_env_provider
from harness.observation import Observation

T = TypeVar("T")


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


async def _start_provider(spec: str) -> EnvProvider:
    provider = make_env_provider(spec)  # made on the loop its servers and browser will use
    try:
        await provider.start()
    except BaseException:
        await provider.close()
        raise
    return provider


def verdict_text(verdict: StepVerdict) -> str:
    """A short reading of an FSM ``StepVerdict`` for the model."""
    if verdict.goal_reached:
        return "goal reached"
    if not verdict.transition_fired:
        return "nothing changed"
    if verdict.distance_after is None:
        return "dead end: the goal can no longer be reached"
    way = "closer to the goal" if verdict.on_shortest_path else "off the shortest path"
    return f"{way} ({verdict.distance_before} -> {verdict.distance_after} steps away)"


def step_feedback(obs: Observation, verdict: StepVerdict | None, *, verdicts: bool = True,
                  over: str | None = None) -> str:
    """The text that goes back to the model after a step: the action's error (the agent's
    mistake), the FSM verdict (where the task has one and ``verdicts``), and why the
    episode is over (``over``)."""
    parts = []
    if obs.last_action_error:
        parts.append(f"error: {obs.last_action_error}")
    if verdicts and verdict is not None:
        parts.append(verdict_text(verdict))
    if over is not None:
        parts.append(f"episode over: {over}")
    return "; ".join(parts) or f"step {obs.step} done"


def data_url(obs: Observation) -> str:
    """The screenshot as a ``data:`` URL (PNG or JPEG, as the sandbox encoded it)."""
    return (f"data:image/{obs.image_format};base64,"
            f"{base64.b64encode(obs.screenshot).decode('ascii')}")
