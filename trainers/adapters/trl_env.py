"""TRL's ``GRPOTrainer(environment_factory=...)`` on the harness's envs.

    from trainers.adapters.trl_env import CUAEnvironments, task_rows

    with CUAEnvironments(reward="step") as envs:
        trainer = GRPOTrainer(model=..., args=GRPOConfig(...), processing_class=processor,
                              train_dataset=Dataset.from_list(task_rows(["fsm:shop/open_mug"], range(8))),
                              environment_factory=envs.factory())
        trainer.train()

TRL makes one ``CUAEnvironment`` per rollout (pooled across batches) and turns its public
methods into the model's tools; the contract it expects, read from TRL 1.16's
``GRPOTrainer``:

- ``reset(**row)`` gets every column of the dataset row and may return content blocks,
  which TRL appends to the row's last user message. Here: the opening user message of the
  project's prompt in transcript mode (``PromptBuilder.opening``, ``harness.prompts``: the
  first screenshot as an image block, then the instruction; no action-space description,
  since TRL describes the tools). The row's ``task`` column picks the task (one
  training set mixes sites), else the task the factory was made for; its ``seed`` column
  seeds the episode (0 without one: the rollouts of a GRPO group see the same start).
- every other public method is a tool, described to the model by its signature and its
  docstring. There is one tool per action kind, named as the action's ``type``: ``click``,
  ``double_click``, ``right_click``, ``move`` (hover), ``drag``, ``scroll``, ``type_text``,
  ``key``, ``wait`` and ``done``. Each steps the env and returns the builder's feedback
  (``PromptBuilder.feedback``): the new screenshot, the action's error (an agent error),
  the FSM step verdict where the task has one, and whether the episode is over.
  (``click_element``, the element-list action, has no tool: the tools act on pixels;
  ``benchmarks.trl_arm.ElementEnvironment`` acts on element lists.)
- ``get_reward()`` is called once per finished rollout: the sum of the episode's step
  rewards in the env's reward mode (``outcome``, ``step`` or ``progress``,
  ``harness.rewards``). TRL's GRPO loss sees only this episode total.

Each environment runs its episode on an env from an env provider (``harness.env_providers``,
``local`` by default: one shared Chromium and the task servers); ``CUAEnvironments`` owns
the provider and runs every env on its private event loop thread, since TRL calls the
methods synchronously. Close it (or use it as a context manager) when training ends.

Infrastructure failures are not the model's doing: a step that raises one voids the
episode (the env is discarded, the tool answers with the error, ``get_reward`` returns
None, which TRL leaves out of the group's statistics); a reset retries on a fresh env
before it raises.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from harness.actions import Action
from harness.env import Env
from harness.env_providers import EnvOptions
from harness.errors import ConfigError, InfrastructureError
from harness.observation import Observation, StepInfo
from harness.rewards import RewardMode
from harness.tasks.registry import check_task_id
from trainers.adapters.host import (
    EnvHost,
    adapter_prompts,
    over_reason,
)
from trainers.models.chat_template import CHAT_TEMPLATE, RESPONSE_TEMPLATE

__all__ = ["CUAEnvironment", "CUAEnvironments", "TRLAdapterConfig", "enable_tool_calls",
           "task_rows"]

T = TypeVar("T")
log = logging.getLogger(__name__)
Content = list[dict[str, Any]]

#: the user message of ``task_rows``; ``reset`` appends the opening (screenshot, instruction)
DEFAULT_PROMPT = ("Complete the task shown on the screen with the tools. Coordinates are "
                  "pixels of the screenshot. Call done() when the task is complete.")


class TRLAdapterConfig(BaseModel):
    """How the environments of a TRL run behave."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    env: EnvOptions = Field(default_factory=EnvOptions, description="reward mode, step limit, "
                            "timeouts of every env")
    provider: str = Field(default="local", description="env provider (`--provider`): where "
                          "the envs live")
    verdicts: bool = Field(default=True, description="tell the model each step's FSM verdict")
    task_column: str = Field(default="task", description="dataset column with the task id")
    seed_column: str = Field(default="seed", description="dataset column with the episode seed")
    reset_attempts: int = Field(default=3, ge=1, description="fresh envs a reset tries before "
                                "its infrastructure error reaches TRL")


class CUAEnvironments:
    """The envs of one TRL run: a private event loop, an env provider, the options.

    ``factory(task)`` is what ``environment_factory`` takes; ``factories({name: task})``
    the dict form, whose rows pick an environment by their ``environment`` column.
    """

    def __init__(self, config: TRLAdapterConfig | None = None, *,
                 reward: RewardMode | None = None, max_steps: int | None = None) -> None:
        config = config or TRLAdapterConfig()
        updates = {k: v for k, v in (("reward", reward), ("max_steps", max_steps)) if v is not None}
        if updates:
            config = config.model_copy(update={"env": EnvOptions(
                **{**config.env.model_dump(), **updates})})
        self.config = config
        self._members: weakref.WeakSet[CUAEnvironment] = weakref.WeakSet()
        self._host = EnvHost(config.provider)

    def factory(self, task: str | None = None, *,
                reward: RewardMode | None = None) -> Callable[[], CUAEnvironment]:
        """A zero-argument factory of environments for ``task`` (None: every row names its
        task in the task column), rewarding in ``reward`` mode (None: the config's)."""
        if task is not None:
            check_task_id(task)
        options = self.config.env
        if reward is not None:
            options = EnvOptions(**{**options.model_dump(), "reward": reward})
        return functools.partial(CUAEnvironment, self, task, options)

    def factories(self, tasks: Mapping[str, str], *,
                  reward: RewardMode | None = None) -> dict[str, Callable[[], CUAEnvironment]]:
        """``{environment name: factory}`` for TRL's dict form, from ``{name: task id}``."""
        if not tasks:
            raise ConfigError("expected at least one {environment name: task id}, got none")
        return {name: self.factory(task, reward=reward) for name, task in tasks.items()}

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the envs' loop and wait for it."""
        if self._host.closed:
            coro.close()
            raise RuntimeError("expected open CUAEnvironments, got a closed one; make a new one")
        return self._host.run(coro)

    def open(self, task: str, options: EnvOptions | None = None) -> Env:
        """A new env for ``task`` from the provider (``options``: the config's by default)."""
        return self._host.open(task, options or self.config.env)

    def release(self, env: Env, *, failed: bool = False) -> None:
        """Hand ``env`` back: for reuse, or (``failed``) discarded with what it ran on."""
        self._host.release(env, failed=failed)

    def oracle_action(self, environment: CUAEnvironment) -> Action | None:
        """The task's oracle action in ``environment``'s current state (tests, warm starts)."""
        if environment.env is None:
            raise RuntimeError("expected an environment after reset(), got one never reset")
        return self.run(environment.env.oracle_action())

    def register(self, environment: CUAEnvironment) -> None:
        """Track ``environment`` so that ``close`` hands its env back."""
        if self._host.closed:
            raise RuntimeError("expected open CUAEnvironments, got a closed one; make a new one")
        self._members.add(environment)

    def close(self) -> None:
        """Hand every env back, close the provider, stop the loop. Idempotent."""
        if self._host.closed:
            return
        try:
            for member in list(self._members):
                if member.env is not None:
                    env, member.env = member.env, None
                    try:
                        self._host.release(env)
                    except Exception as exc:  # the provider's close below still runs
                        log.warning("closing the env of %s failed: %s", env.task_id, exc)
        finally:
            self._host.close()

    def __enter__(self) -> CUAEnvironments:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CUAEnvironment:
    """One rollout's env for TRL: ``reset``, the tools, ``get_reward`` (see the module
    docstring). Every public method but ``reset`` and ``get_reward`` is a tool."""

    def __init__(self, envs: CUAEnvironments, task: str | None = None,
                 options: EnvOptions | None = None) -> None:
        self._envs = envs
        self._task = task
        self._options = options or envs.config.env
        self._prompts = adapter_prompts(self._options, system_prompt=False)  # TRL describes the tools
        #: the env of the current episode (None before the first reset)
        self.env: Env | None = None
        self._rewards: list[float] = []
        self._over: str | None = None
        self._void: str | None = None
        self._last: StepInfo | None = None
        envs.register(self)

    @property
    def rewards(self) -> tuple[float, ...]:
        """The episode's step rewards so far."""
        return tuple(self._rewards)

    @property
    def last_step(self) -> StepInfo | None:
        """The episode's last step (its executed action, verdict, success); None before one."""
        return self._last

    @property
    def over(self) -> str | None:
        """Why the episode ended (goal reached, done, step limit); None while it runs."""
        return self._over

    @property
    def success(self) -> bool:
        """The episode reached its goal."""
        return self._last is not None and self._last.success

    def reset(self, **row: Any) -> Content:
        """Start the episode of the row's task (see the module docstring)."""
        config = self._envs.config
        task = row.get(config.task_column) or self._task
        if not task:
            raise ConfigError(f"expected a task id in the dataset's {config.task_column!r} column "
                              "or a factory made for one (CUAEnvironments.factory(task)), got neither")
        seed = row.get(config.seed_column)
        seed = 0 if seed is None else int(seed)
        self._rewards, self._over, self._void, self._last = [], None, None, None
        for attempt in range(1, config.reset_attempts + 1):
            if self.env is not None and self.env.task_id != task:
                self._hand_back(failed=False)
            if self.env is None:
                self.env = self._envs.open(task, self._options)
            try:
                obs, _ = self._envs.run(self.env.reset(seed=seed))
                break
            except InfrastructureError as exc:
                self._hand_back(failed=True)
                if attempt == config.reset_attempts:
                    raise
                log.warning("reset of %s failed (%s); retrying on a fresh env", task, exc)
        [user] = self._prompts.opening(obs).with_images(_image)
        return list(user["content"])

    def click(self, x: int, y: int) -> Content | str:
        """Click a point of the screen.

        Args:
            x: Pixels from the left edge of the screenshot.
            y: Pixels from the top edge of the screenshot.
        """
        return self._act({"type": "click", "x": x, "y": y})

    def double_click(self, x: int, y: int) -> Content | str:
        """Double-click a point of the screen (to open an item, or select a word).

        Args:
            x: Pixels from the left edge of the screenshot.
            y: Pixels from the top edge of the screenshot.
        """
        return self._act({"type": "double_click", "x": x, "y": y})

    def right_click(self, x: int, y: int) -> Content | str:
        """Right-click a point of the screen (opens a context menu).

        Args:
            x: Pixels from the left edge of the screenshot.
            y: Pixels from the top edge of the screenshot.
        """
        return self._act({"type": "right_click", "x": x, "y": y})

    def move(self, x: int, y: int) -> Content | str:
        """Move the pointer to a point without clicking: hover (shows tooltips and menus).

        Args:
            x: Pixels from the left edge of the screenshot.
            y: Pixels from the top edge of the screenshot.
        """
        return self._act({"type": "move", "x": x, "y": y})

    def drag(self, x: int, y: int, to_x: int, to_y: int) -> Content | str:
        """Press at a point, move to another with the button held, and release there.

        Args:
            x: Pixels from the left edge of the screenshot, where the drag starts.
            y: Pixels from the top edge of the screenshot, where the drag starts.
            to_x: Pixels from the left edge of the screenshot, where it ends.
            to_y: Pixels from the top edge of the screenshot, where it ends.
        """
        return self._act({"type": "drag", "x": x, "y": y, "to_x": to_x, "to_y": to_y})

    def type_text(self, text: str) -> Content | str:
        """Type text into the focused field.

        Args:
            text: The text to type.
        """
        return self._act({"type": "type_text", "text": text})

    def scroll(self, x: int, y: int, dy: int, dx: int = 0) -> Content | str:
        """Scroll with the mouse wheel at a point of the screen.

        Args:
            x: Pixels from the left edge of the screenshot.
            y: Pixels from the top edge of the screenshot.
            dy: Pixels to scroll down; negative scrolls up.
            dx: Pixels to scroll right; negative scrolls left.
        """
        return self._act({"type": "scroll", "x": x, "y": y, "dx": dx, "dy": dy})

    def key(self, keys: str) -> Content | str:
        """Press a key, or a combination joined by '+' with the modifiers first.

        Args:
            keys: For example 'enter', 'tab', 'backspace' or 'ctrl+a'.
        """
        parts = [keys] if keys == "+" else [k for k in keys.split("+") if k]
        return self._act({"type": "key", "keys": parts or [keys]})

    def wait(self, seconds: float = 1.0) -> Content | str:
        """Wait for the screen to change (a page loading, an animation).

        Args:
            seconds: How long to wait, at most 60.
        """
        return self._act({"type": "wait", "seconds": seconds})

    def done(self) -> Content | str:
        """Declare the task complete; the episode ends."""
        return self._act({"type": "done"})

    def get_reward(self) -> float | None:
        """The episode's reward: the sum of its step rewards; None if infrastructure voided it."""
        if self._void is not None:
            return None
        return float(sum(self._rewards))

    # ---- internals -------------------------------------------------------------------

    def _act(self, action: dict[str, Any]) -> Content | str:
        if self._void is not None:
            return f"no action taken: infrastructure voided the episode ({self._void})"
        if self._over is not None:
            return f"no action taken: the episode is over ({self._over})"
        if self.env is None:
            raise RuntimeError("expected reset() before a tool call, got a tool call first")
        try:
            obs, reward, terminated, truncated, info = self._envs.run(self.env.step(action))
        except InfrastructureError as exc:
            self._void = f"{type(exc).__name__}: {exc}"
            log.warning("step of %s failed; the episode is void: %s", self.env.task_id, exc)
            self._hand_back(failed=True)
            return f"no result: infrastructure voided the episode ({self._void})"
        self._rewards.append(reward)
        self._last = info
        self._over = over_reason(terminated, truncated, info.success)
        verdict = info.verdict if self._envs.config.verdicts else None
        [user] = self._prompts.feedback(obs, verdict, over=self._over).with_images(_image)
        return list(user["content"])

    def _hand_back(self, *, failed: bool) -> None:
        env, self.env = self.env, None
        if env is not None:
            self._envs.release(env, failed=failed)


def _image(obs: Observation) -> dict[str, Any]:
    return {"type": "image", "image": obs.image().convert("RGB")}


def enable_tool_calls(processor: Any) -> Any:
    """Give a Qwen-VL processor the project's tool-calling chat template and its response
    template, in place. Qwen2.5-VL's (and Qwen2-VL's) own template renders no tools, tool
    calls or tool messages, so TRL's ``GRPOTrainer`` refuses it with tools; checkpoints of
    ``cua model init`` already carry both. Returns ``processor``."""
    processor.chat_template = CHAT_TEMPLATE
    tokenizer = getattr(processor, "tokenizer", processor)
    for token in ("<tool_call>", "</tool_call>", "<|im_end|>"):
        if token not in tokenizer.get_vocab():
            raise ConfigError(f"expected a Qwen tokenizer with {token!r} in its vocabulary, got "
                              f"{type(tokenizer).__name__} without it; use a Qwen-VL checkpoint")
    tokenizer.response_template = RESPONSE_TEMPLATE
    return processor


def task_rows(tasks: Sequence[str], seeds: Iterable[int], *,
              prompt: str = DEFAULT_PROMPT) -> list[dict[str, Any]]:
    """Dataset rows for ``GRPOTrainer``: one per (task, seed), each with a conversational
    ``prompt`` and the ``task`` and ``seed`` columns ``reset`` reads."""
    for task in tasks:
        check_task_id(task)
    return [{"prompt": [{"role": "user", "content": prompt}], "task": task, "seed": seed}
            for seed in seeds for task in tasks]
