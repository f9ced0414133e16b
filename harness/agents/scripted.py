"""An agent that plays given steps first (a replay, or a branch's first action), then
hands over to another agent."""

from __future__ import annotations

from collections.abc import Sequence

from harness.actions import Action
from harness.agents.base import Agent, AgentContext, AgentStep, CodecAgent
from harness.codecs.base import CodecLike
from harness.observation import Observation

_POSITION = "scripted.position"


class ScriptedAgent:
    """Returns ``steps`` in order, one per call of an episode, then asks ``then``."""

    name = "scripted"

    def __init__(self, steps: Sequence[AgentStep | Action], then: Agent | None = None) -> None:
        self.steps = [s if isinstance(s, AgentStep) else AgentStep(action=s) for s in steps]
        self.then = then
        if then is not None:
            self.name = then.name

    @property
    def codec(self) -> CodecLike:
        """The codec of the agent handed over to (the env decodes its text with it)."""
        return self.then.codec if isinstance(self.then, CodecAgent) else None

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        position = ctx.memory.get(_POSITION, 0)
        if isinstance(position, int) and position < len(self.steps):
            ctx.memory[_POSITION] = position + 1
            return self.steps[position]
        if self.then is None:
            raise RuntimeError(f"expected at most {len(self.steps)} steps from the script, got "
                               "asked for another; bound the rollout with max_steps")
        return await self.then.act(obs, ctx)
