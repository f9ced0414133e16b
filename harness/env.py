"""The env: one task in one sandbox, with a gymnasium-shaped API.

``AsyncEnv`` is the core (async, used by the rollout); ``harness.gym_env`` holds its sync
face (``GymEnv``, a ``gymnasium.Env`` on a private event loop in a thread, and
``make_env("miniwob:click-button")``, which builds one with its own provider).

Two error channels (see docs/evaluation.md): the agent's mistakes (text no codec can
parse, a click outside the screenshot, an action the page refuses, a page the agent left
or broke) come back as ``Observation.last_action_error`` and the step still counts;
infrastructure failures (``InfrastructureError``: ``SandboxError``, ``TaskError``, ``EpisodeTimeout``) raise.

The reward of a step is the task's judgement under the env's reward mode
(``harness.rewards``: outcome, step or progress).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from pydantic import ValidationError

from harness.actions import (
    Action,
    AgentAction,
    Click,
    ClickElement,
    Done,
    duration_s,
    outside,
    parse_agent_action,
    replace_surrogates,
    short_repr,
)
from harness.codecs import get_codec
from harness.codecs.base import ActionCodec, CodecLike
from harness.errors import ActionParseError, ConfigError, EpisodeTimeout
from harness.observation import Observation, ResetInfo, StepInfo
from harness.prompts import named_element
from harness.resources import TaskResources
from harness.rewards import REWARD_MODES, RewardMode, step_reward
from harness.tasks.base import JumpableTask, Task, TaskSetup, Validation
from sandboxes.base import Browser, Sandbox, Screenshot, UIElement

T = TypeVar("T")
StepResult = tuple[Observation, float, bool, bool, StepInfo]

DEFAULT_MAX_STEPS = 30
DEFAULT_STEP_TIMEOUT_S = 30.0
DEFAULT_RESET_TIMEOUT_S = 60.0


def dict_error(action: object, exc: ValidationError) -> str:
    """The agent's mistake an action dict off the schema is (its last_action_error)."""
    return f"expected an action dict, got {short_repr(action, 200)}: {exc.errors()[0]['msg']}"


def resolve_codec(codec: CodecLike) -> ActionCodec:
    """A codec object from a name ("qwen", "uitars", "pyautogui", "json") or an object."""
    if codec is None or isinstance(codec, str):
        return get_codec(codec or "json")
    return codec


@runtime_checkable
class Env(Protocol):
    """What the rollout, the explorer and the trainers drive: an env, here or remote.

    ``AsyncEnv`` (a task in a local sandbox) implements it; so does the env-server client
    (an env served over HTTP, in another process, container or machine).
    """

    @property
    def task_id(self) -> str:
        """The id of the task the env runs."""

    @property
    def can_jump(self) -> bool:
        """Whether the live episode can move straight to a state (FSM tasks)."""

    async def reset(self, *, seed: int | None = None,
                    options: dict[str, object] | None = None) -> tuple[Observation, ResetInfo]:
        """Start an episode."""

    async def step(self, action: AgentAction | str | dict, *, codec: CodecLike = None) -> StepResult:
        """Act, judge, observe."""

    async def oracle_action(self) -> Action | None:
        """The task's oracle action for the current state, or None."""

    async def jump(self, state_key: str, *, steps: int) -> tuple[Observation, str]:
        """Move the live episode straight to a state."""

    async def observe(self) -> Observation:
        """A fresh observation without a step."""

    async def close(self) -> None:
        """End the episode and release what the env holds for it."""


@runtime_checkable
class DecodingEnv(Env, Protocol):
    """An env that decodes the agent's text here, with a codec it shows (``AsyncEnv``); a
    served env's text is decoded by its server."""

    @property
    def codec(self) -> ActionCodec:
        """The codec that decodes text actions when the step names none."""


class AsyncEnv:
    """One task in one sandbox. ``reset`` starts an episode; ``step`` acts and judges.

    ``resources`` are the run's shared servers (``TaskResources``); without them the env
    makes its own and closes them in ``close``.
    """

    def __init__(
        self,
        task: Task,
        sandbox: Sandbox,
        *,
        resources: TaskResources | None = None,
        codec: CodecLike = None,
        max_steps: int | None = None,
        reward: RewardMode = "outcome",
        elements: bool = False,
        step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
        reset_timeout_s: float = DEFAULT_RESET_TIMEOUT_S,
    ) -> None:
        if max_steps is not None and max_steps < 1:
            raise ConfigError(f"expected max_steps >= 1, got {max_steps}")
        if reward not in REWARD_MODES:
            raise ConfigError(f"expected reward in {', '.join(REWARD_MODES)}, got {reward!r}")
        if step_timeout_s <= 0 or reset_timeout_s <= 0:
            raise ConfigError(
                f"expected positive timeouts, got step_timeout_s={step_timeout_s}, "
                f"reset_timeout_s={reset_timeout_s}"
            )
        self.task = task
        self.sandbox = sandbox
        self.reward_mode: RewardMode = reward
        #: Observe the page's interactive elements too (observation modes with elements).
        self.elements = elements
        self._owns_resources = resources is None
        self.resources = resources or TaskResources()
        self._start_distance: int | None = None
        self._max_steps_arg = max_steps
        #: Steps before truncation in the current episode: ``max_steps`` if given, else
        #: the task's budget for the episode (``TaskSetup.max_steps``), else 30.
        self.max_steps = max_steps or DEFAULT_MAX_STEPS
        self.step_timeout_s = step_timeout_s
        self.reset_timeout_s = reset_timeout_s
        self._codec_spec = codec
        self._codec: ActionCodec | None = None
        self._setup: TaskSetup | None = None
        self._episode_id = ""
        self._steps = 0
        self._ended = True
        self._last_obs: Observation | None = None

    @property
    def task_id(self) -> str:
        """The id of the task this env runs."""
        return self.task.id

    @property
    def codec(self) -> ActionCodec:
        """The codec that decodes text actions (resolved on first use; default "json")."""
        if self._codec is None:
            self._codec = resolve_codec(self._codec_spec)
        return self._codec

    @property
    def last_observation(self) -> Observation | None:
        """The most recent observation (None before the first reset)."""
        return self._last_obs

    @property
    def episode_id(self) -> str:
        return self._episode_id

    async def reset(
        self, *, seed: int | None = None, options: dict[str, object] | None = None
    ) -> tuple[Observation, ResetInfo]:
        """Start a fresh episode of the task, seeded, in a fresh browser context."""
        if options:
            raise ConfigError(
                f"expected no reset options, got {sorted(options)}; seed the episode with seed="
            )
        start = time.perf_counter()
        if self._setup is not None:
            await self.task.teardown(self.sandbox)
        self._setup = None
        setup = await self._timed(
            self.task.setup(self.sandbox, seed=seed, resources=self.resources),
            self.reset_timeout_s, "reset",
        )
        self._setup = setup
        shot = await self._timed(self._capture(), self.step_timeout_s, "screenshot")
        self._steps, self._ended = 0, False
        self._start_distance = setup.start_distance
        self.max_steps = self._max_steps_arg or setup.max_steps or DEFAULT_MAX_STEPS
        self._episode_id = uuid.uuid4().hex[:12]
        obs = self._observe(shot, None)
        info = ResetInfo(
            task=self.task.id,
            seed=seed,
            episode_id=self._episode_id,
            reset_seconds=time.perf_counter() - start,
            fsm_state=setup.fsm_state,
            start_distance=setup.start_distance,
            goal=setup.goal,
        )
        return obs, info

    async def step(self, action: AgentAction | str | dict, *, codec: CodecLike = None) -> StepResult:
        """Act, judge, observe. Text is decoded with ``codec`` (default: the env's codec);
        an element action is resolved to a click at its element's centre; agent errors
        don't raise."""
        if self._setup is None or self._last_obs is None:
            raise RuntimeError("expected reset() before step(), got step() first; call reset()")
        if self._ended:
            raise RuntimeError("expected reset() after the episode ended, got another step()")
        start = time.perf_counter()
        requested, text, error = self._decode(action, resolve_codec(codec) if codec is not None else self.codec)
        parsed, resolve_error = resolve_element_action(requested, self._last_obs)
        error = error if error is not None else resolve_error
        # A wait or a long text takes its time by design: it never counts as a timeout.
        allowance = duration_s(parsed) if parsed is not None and error is None else 0.0
        validation, shot, agent_error = await self._timed(
            self._act_and_judge(parsed, error), self.step_timeout_s + allowance, "step"
        )
        self._steps += 1
        # the first of: the agent's text, its action, what its action broke (``PageLeft``)
        error = next((e for e in (error, agent_error, validation.action_error) if e is not None), None)
        terminated = validation.done or isinstance(parsed, Done)
        truncated = not terminated and self._steps >= self.max_steps
        self._ended = terminated or truncated
        obs = self._observe(shot, error)
        reward = step_reward(self.reward_mode, validation.reward, validation.verdict,
                             self._start_distance)
        info = StepInfo(
            task=self.task.id,
            episode_id=self._episode_id,
            action=parsed.model_dump() if parsed is not None else None,
            raw_reward=validation.raw_reward,
            message=validation.message,
            step_seconds=time.perf_counter() - start,
            verdict=validation.verdict,
            success=validation.success,
            action_text=text,
            requested=requested.model_dump() if isinstance(requested, ClickElement) else None,
        )
        return obs, float(reward), terminated, truncated, info

    async def oracle_action(self) -> Action | None:
        """The task's oracle action for the current state (``Task.cheat``), or None."""
        if self._setup is None:
            raise RuntimeError("expected reset() before oracle_action(), got none")
        return await self._timed(self.task.cheat(self.sandbox), self.step_timeout_s, "cheat")

    @property
    def can_jump(self) -> bool:
        """Whether the task can move its live episode straight to a state (FSM sites)."""
        return self._setup is not None and isinstance(self.task, JumpableTask)

    async def jump(self, state_key: str, *, steps: int) -> tuple[Observation, str]:
        """Move the live episode straight to ``state_key`` (no replay) as if ``steps`` steps
        had been taken; returns the new observation and the state key reached."""
        if not self.can_jump or not isinstance(self.task, JumpableTask):
            raise ConfigError(f"expected a task that can jump (an FSM task after reset), got "
                              f"{self.task.id!r}; restore by replay instead")
        reached = await self._timed(self.task.jump(self.sandbox, state_key),
                                    self.reset_timeout_s, "jump")
        self._steps = steps
        return await self.observe(), reached

    async def observe(self) -> Observation:
        """A fresh observation of the current page without taking a step (e.g. after a
        store restore moved the task's state)."""
        if self._setup is None:
            raise RuntimeError("expected reset() before observe(), got none")
        shot = await self._timed(self._capture(), self.step_timeout_s, "screenshot")
        return self._observe(shot, None)

    async def close(self) -> None:
        """Tear the task down, and close the resources the env made itself. The sandbox
        belongs to whoever made it and stays open."""
        if self._setup is not None:
            self._setup = None
            await self.task.teardown(self.sandbox)
        self._ended = True
        if self._owns_resources:
            await self.resources.close()

    # ---- internals -------------------------------------------------------------------

    async def _act_and_judge(
        self, action: Action | None, error: str | None
    ) -> tuple[Validation, _Capture, str | None]:
        """Execute (unless the agent already erred), validate, capture."""
        agent_error = None
        if action is not None and error is None:
            agent_error = await self.sandbox.execute(action)
        judged = action if error is None else None
        validation = await self.task.validate(self.sandbox, judged)
        return validation, await self._capture(), agent_error

    async def _capture(self) -> _Capture:
        """The screenshot, and the elements of the same page when the env observes them."""
        shot = await self.sandbox.screenshot()
        if not self.elements:
            return _Capture(shot, None)
        if not isinstance(self.sandbox, Browser):
            raise ConfigError(f"expected a sandbox that lists its elements for elements=True, got "
                              f"a {self.sandbox.kind} sandbox; observe screenshots only")
        return _Capture(shot, tuple(await self.sandbox.elements()))

    def _decode(self, action: AgentAction | str | dict,
                codec: ActionCodec) -> tuple[AgentAction | None, str | None, str | None]:
        """(action, source text, agent error) for whatever the agent handed over."""
        assert self._last_obs is not None
        size = (self._last_obs.width, self._last_obs.height)
        text: str | None = None
        try:
            if isinstance(action, str):
                text = replace_surrogates(action)  # so that every sink can store and print it
                parsed = codec.decode(text, size=size)
            elif isinstance(action, dict):
                parsed = parse_agent_action(action)
            else:
                parsed = action
        except ActionParseError as exc:
            return None, text, str(exc)
        except ValidationError as exc:
            return None, text, dict_error(action, exc)
        if isinstance(parsed, ClickElement):
            return parsed, text, None
        return parsed, text, outside(parsed, *size)

    def _observe(self, capture: _Capture, error: str | None) -> Observation:
        assert self._setup is not None
        shot = capture.shot
        obs = Observation(
            screenshot=shot.data,
            image_format=shot.format,
            width=shot.width,
            height=shot.height,
            elements=capture.elements,
            instruction=self._setup.instruction,
            url=self.sandbox.url if isinstance(self.sandbox, Browser) else None,
            step=self._steps,
            last_action_error=error,
        )
        self._last_obs = obs
        return obs

    async def _timed(self, awaitable: Coroutine[object, object, T], limit: float, what: str) -> T:
        try:
            return await asyncio.wait_for(awaitable, limit)
        except TimeoutError as exc:
            raise EpisodeTimeout(
                f"expected {what} of {self.task.id} within {limit}s, got a timeout; "
                "raise the timeout or check the sandbox"
            ) from exc


@dataclass(frozen=True)
class _Capture:
    shot: Screenshot
    elements: tuple[UIElement, ...] | None


def resolve_element_action(action: AgentAction | None,
                           obs: Observation) -> tuple[Action | None, str | None]:
    """(the pixel action to execute, an agent error): an element action becomes a click at
    its element's centre, found by the name the prompt shows it under
    (``harness.prompts.named_element``: ``Archive in row "Lunch on Friday?"``, ``Inbox in
    navigation``, ``"Mailbox #2"``; its label alone where one element has it; its id)."""
    if not isinstance(action, ClickElement):
        return action, None
    if obs.elements is None:
        return None, ("click_element needs an element list, and this observation has none; "
                      "act by coordinates or observe elements")
    target, error = named_element(action.element, obs.elements)
    if target is None:
        return None, error
    x, y = target.center
    click = Click(x=min(max(x, 0), obs.width - 1), y=min(max(y, 0), obs.height - 1))
    return click, None

