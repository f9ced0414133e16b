"""The agent protocol and the context the runner hands an agent at every step."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from harness.actions import Action
from harness.observation import Observation

if TYPE_CHECKING:
    from harness.env import AsyncBrowserEnv


@dataclass
class AgentContext:
    """What an agent may know besides the observation.

    ``env`` is there for oracles (``env.oracle_action()``); a model agent must not peek.
    ``history`` holds this episode's earlier (observation, action) pairs.
    """

    task_id: str
    seed: int | None
    step: int
    env: AsyncBrowserEnv | None = None
    history: list[tuple[Observation, Action | str]] = field(default_factory=list)


@runtime_checkable
class Agent(Protocol):
    """Anything that maps an observation to an action (or to model text for the codec).

    An agent that answers in text may carry a ``codec`` attribute (``ModelAgent`` does):
    the episode runner then decodes its text with that codec, whatever its config says.
    """

    name: str

    def reset(self, seed: int | None) -> None:
        """Forget the previous episode; ``seed`` makes a stochastic agent reproducible."""

    async def act(self, obs: Observation, ctx: AgentContext) -> Action | str:
        """The next action, or model text the env decodes with its codec."""
