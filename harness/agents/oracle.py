"""An agent that plays the task's own oracle (``Task.cheat``)."""

from __future__ import annotations

from harness.agents.base import AgentContext, AgentStep
from harness.errors import ConfigError
from harness.observation import Observation


class OracleAgent:
    """Asks the env for the task's oracle action at every step."""

    name = "oracle"

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        if ctx.env is None:
            raise ConfigError(
                "expected an AgentContext with env set for the oracle agent, got env=None; "
                "run it through harness.rollout or pass the env in the context"
            )
        action = await ctx.env.oracle_action()
        if action is None:
            raise ConfigError(
                f"expected task {ctx.task_id!r} to have an oracle (Task.cheat), got none; "
                "use another agent (e.g. --agent random) or a task with an oracle"
            )
        return AgentStep(action=action)


def make(arg: str | None = None) -> OracleAgent:
    """The registry's entry for ``oracle``."""
    return OracleAgent()
