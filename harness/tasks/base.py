"""The task protocol, in BrowserGym's spirit: a task is separate from the sandbox.

A task says what sandbox it needs (``sandbox_request``), sets an episode up in one
(``setup``, with the run's shared ``TaskResources``: site servers, page servers), judges
it after every step (``validate``), may know an oracle action (``cheat``), and cleans up
(``teardown``). Tasks raise ``harness.errors.TaskError`` (or a ``SandboxError``) for
infrastructure failures; they never turn those into a reward. A task that needs a
browser asks for one with ``require_browser``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from fsm_sites.serving.verdict import StepVerdict
from harness.actions import Action
from harness.errors import ConfigError
from sandboxes.base import Browser, Sandbox, SandboxRequest
from sandboxes.desktop.sandbox import DesktopSandbox

if TYPE_CHECKING:
    from harness.resources import TaskResources


class TaskSetup(BaseModel):
    """What ``setup`` tells the env about the episode it prepared."""

    model_config = ConfigDict(frozen=True)

    instruction: str = Field(description="the natural-language goal shown to the agent")
    start_url: str = Field(description="where the sandbox was navigated")
    allowed_origins: tuple[str, ...] = Field(default=(), description="origins the agent may visit")
    fsm_state: str | None = Field(default=None, description="initial FSM state key, for FSM tasks")
    max_steps: int | None = Field(
        default=None, ge=1,
        description="the task's step budget for this episode; the env uses it when given none",
    )
    start_distance: int | None = Field(
        default=None, ge=0,
        description="shortest distance from the start state to the goal, where the task knows it",
    )
    goal: str | None = Field(default=None, description="the FSM goal (an id or a state key), for FSM tasks")


class Validation(BaseModel):
    """The task's judgement after a step."""

    model_config = ConfigDict(frozen=True)

    reward: float = Field(description="reward for this step (the env may shape it further)")
    raw_reward: float = Field(description="the task's own reward before time discounting or shaping")
    done: bool = Field(description="the episode has ended (success or failure)")
    success: bool = Field(default=False, description="the goal was reached")
    message: str = Field(default="", description="a human-readable reason")
    verdict: StepVerdict | None = Field(default=None, description="FSM step verdict, if any")
    action_error: str | None = Field(
        default=None, description="what the agent's action broke (it left the task's page): the step's "
        "last_action_error, scored like any step (``harness.errors.PageLeft``)")


class Task(ABC):
    """One task family member, parameterised by a seed at setup."""

    #: stable id such as "miniwob:click-button" or "fsm:shop/buy_laptop"
    id: str
    #: the sandbox this task needs (kind and viewport)
    sandbox_request: SandboxRequest = SandboxRequest()

    @abstractmethod
    async def setup(self, sandbox: Sandbox, *, seed: int | None,
                    resources: TaskResources) -> TaskSetup:
        """Prepare a fresh episode in ``sandbox`` (which is already started)."""

    @abstractmethod
    async def validate(self, sandbox: Sandbox, action: Action | None) -> Validation:
        """Judge the episode after ``action`` (None when the agent's text did not parse)."""

    async def cheat(self, sandbox: Sandbox) -> Action | None:
        """The oracle's next action, or None where the task has no oracle."""
        return None

    async def teardown(self, sandbox: Sandbox) -> None:
        """Release per-episode resources (server sessions, temp files)."""
        return None


@runtime_checkable
class JumpableTask(Protocol):
    """A task that can move its live episode straight to a state, with no replay (FSM
    tasks): what ``Env.jump`` (tree branches, restore) asks of a task."""

    async def jump(self, sandbox: Sandbox, state_key: str) -> str:
        """Show ``state_key`` in ``sandbox``'s page; returns the state key reached."""


@runtime_checkable
class DeclaresOracle(Protocol):
    """A task that says whether it has an oracle (a suite where only some tasks do, or
    whose ``cheat`` is always defined), rather than leaving it to whether it overrides
    ``cheat``."""

    @property
    def has_oracle(self) -> bool:
        """Whether ``cheat`` knows the next action."""


class PageReader(Protocol):
    """What a task reads of a web page: a browser sandbox, or a desktop's windowed Chromium."""

    @property
    def url(self) -> str: ...

    async def evaluate(self, expression: str) -> object: ...


@runtime_checkable
class ClosablePage(Protocol):
    """A page the agent can close (a windowed Chromium's tab); the headless sandbox's cannot."""

    @property
    def closed(self) -> bool: ...


def require_browser(sandbox: Sandbox, task_id: str) -> Browser:
    """``sandbox`` as a browser, or a ConfigError naming the task that needs one."""
    if not isinstance(sandbox, Browser):
        raise ConfigError(
            f"expected a browser sandbox for task {task_id}, got a {sandbox.kind} "
            "sandbox; run it with --sandbox browser"
        )
    return sandbox


def require_desktop(sandbox: Sandbox, task_id: str) -> DesktopSandbox:
    """``sandbox`` as a desktop sandbox, or a ConfigError naming the task that needs one."""
    if not isinstance(sandbox, DesktopSandbox):
        raise ConfigError(f"expected a desktop sandbox for task {task_id}, got a "
                          f"{sandbox.kind} sandbox; "
                          "run it with --sandbox desktop")
    return sandbox
