"""The env's sync face: ``GymEnv``, a ``gymnasium.Env`` that drives ``harness.env.AsyncEnv``
on a private event loop in a thread (``LoopThread``), for code that is not async, and
``make_env("miniwob:click-button")``, which builds one with its own sandbox provider."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import TypedDict, TypeVar, Unpack

import gymnasium
import numpy as np
from gymnasium import spaces

from harness.actions import Action
from harness.codecs.base import CodecLike
from harness.env import DEFAULT_STEP_TIMEOUT_S, AsyncEnv
from harness.observation import Observation, ResetInfo, StepInfo
from harness.resources import TaskResources
from harness.rewards import RewardMode
from harness.tasks.base import Task
from harness.tasks.registry import make_task
from sandboxes.base import Sandbox, SandboxProvider
from sandboxes.providers import LocalProvider

T = TypeVar("T")


class LoopThread:
    """A private asyncio loop on a daemon thread; ``run`` blocks on one coroutine. Sync
    wrappers of async envs use it (``GymEnv``, the TRL adapter)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="cua-env", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[object, object, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        self.loop.close()


class GymEnv(gymnasium.Env[dict[str, object], Action | str | dict[str, object]]):
    """A ``gymnasium.Env`` over ``AsyncEnv``, with its own sandbox provider and task resources.

    It speaks gymnasium's contract so that third-party code (and
    ``gymnasium.utils.env_checker.check_env``, which it passes) can drive it:

    - observation: ``{"screenshot": uint8 array (height, width, 3), "instruction": str}``,
      in ``observation_space`` (a ``Dict`` of a ``Box`` and a ``Text``);
    - action: model text (decoded with ``codec``), in ``action_space`` (a ``Text``), or an
      ``Action`` model or dict, which it also takes;
    - info: a dict of the step's judgement (task, executed action, raw reward, message,
      verdict, success), the same for the same seed and actions.

    The typed results of the last call (``Observation``, ``ResetInfo``/``StepInfo``, with
    timings and the episode id) are ``last_observation`` and ``last_info``.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        task: Task | str,
        *,
        provider: SandboxProvider | None = None,
        codec: CodecLike = None,
        max_steps: int | None = None,
        reward: RewardMode = "outcome",
        step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
    ) -> None:
        self.task = make_task(task) if isinstance(task, str) else task
        self._loop = LoopThread()
        self._owns_provider = provider is None
        self._provider: SandboxProvider = provider or LocalProvider()
        try:
            self._resources = self._loop.run(_new_resources())
            sandbox = self._loop.run(self._provider.new_sandbox(self.task.sandbox_request))
            width, height = self._loop.run(_surface_size(sandbox))
        except BaseException:
            self._loop.run(self._provider.close())
            self._loop.stop()
            raise
        self._sandbox = sandbox
        self.env = AsyncEnv(
            self.task, sandbox, resources=self._resources, codec=codec, max_steps=max_steps,
            reward=reward, step_timeout_s=step_timeout_s,
        )
        # gymnasium types a Dict space as one of dict[str, Space]; its samples are our dicts
        self.observation_space = spaces.Dict({  # type: ignore[assignment]
            "screenshot": spaces.Box(0, 255, (height, width, 3), dtype=np.uint8),
            "instruction": spaces.Text(MAX_INSTRUCTION_CHARS, min_length=0, charset=TEXT_CHARSET),
        })
        self.action_space = spaces.Text(MAX_ACTION_CHARS, min_length=1, charset=TEXT_CHARSET)
        self.last_observation: Observation | None = None
        self.last_info: ResetInfo | StepInfo | None = None
        self._closed = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, object] | None = None
    ) -> tuple[dict[str, object], dict[str, object]]:
        super().reset(seed=seed)
        if seed is None:  # gymnasium's contract: an unseeded reset draws from the env's RNG,
            seed = int(self.np_random.integers(2**31))  # so reset(seed=s), reset() repeats
        obs, info = self._loop.run(self.env.reset(seed=seed, options=options))
        self.last_observation, self.last_info = obs, info
        return _gym_observation(obs), {"task": info.task, "seed": info.seed,
                                       "fsm_state": info.fsm_state, "start_distance": info.start_distance}

    def step(self, action: Action | str | dict) -> tuple[dict[str, object], float, bool, bool, dict[str, object]]:
        obs, reward, terminated, truncated, info = self._loop.run(self.env.step(action))
        self.last_observation, self.last_info = obs, info
        gym_info = info.model_dump(mode="json", exclude={"episode_id", "step_seconds"})
        gym_info["last_action_error"] = obs.last_action_error
        return _gym_observation(obs), reward, terminated, truncated, gym_info

    def oracle_action(self) -> Action | None:
        return self._loop.run(self.env.oracle_action())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.run(self.env.close())
            self._loop.run(self._sandbox.close())
            self._loop.run(self._resources.close())
            if self._owns_provider:
                self._loop.run(self._provider.close())
        finally:
            self._loop.stop()


#: what the Text spaces hold: printable ASCII, whitespace, Latin-1 and common typography
TEXT_CHARSET = frozenset(
    [chr(c) for c in range(32, 127)] + ["\n", "\t"] + [chr(c) for c in range(0xA0, 0x180)]
    + list("‘’“”–—…•→←↑↓✓✗€£¥©®™°±×÷")
)
MAX_INSTRUCTION_CHARS = 4096
MAX_ACTION_CHARS = 2048


def _gym_observation(obs: Observation) -> dict[str, object]:
    pixels = np.asarray(obs.image().convert("RGB"), dtype=np.uint8)
    return {"screenshot": pixels, "instruction": obs.instruction}


async def _surface_size(sandbox: Sandbox) -> tuple[int, int]:
    """The (width, height) of a sandbox's screenshots: one blank reset, one capture."""
    await sandbox.reset()
    shot = await sandbox.screenshot()
    return shot.width, shot.height


async def _new_resources() -> TaskResources:
    return TaskResources()  # made on the env's own loop, where its servers will run


class GymEnvOptions(TypedDict, total=False):
    """The keyword arguments ``GymEnv`` takes beside its task."""

    provider: SandboxProvider | None
    codec: CodecLike
    max_steps: int | None
    reward: RewardMode
    step_timeout_s: float


def make_env(task_id: str, **kwargs: Unpack[GymEnvOptions]) -> GymEnv:
    """A sync env for ``task_id`` (e.g. "miniwob:click-button") with its own provider.

    Keyword arguments go to ``GymEnv`` (provider, codec, max_steps, reward, step_timeout_s).
    """
    return GymEnv(task_id, **kwargs)
