"""Agents: the protocol, a seeded random agent, the task oracle, and the model interface."""

from __future__ import annotations

from harness.agents.base import Agent, AgentContext
from harness.agents.model import ModelAgent
from harness.agents.oracle import OracleAgent
from harness.agents.random_agent import RandomAgent, RandomAgentConfig

#: names accepted by `cua eval --agent`
AGENTS = ("random", "oracle")


def make_agent(name: str, *, seed: int | None = None) -> Agent:
    """An agent by its CLI name."""
    if name == "random":
        return RandomAgent(seed)
    if name == "oracle":
        return OracleAgent()
    raise ValueError(f"expected an agent in {AGENTS}, got {name!r}")


__all__ = [
    "AGENTS", "Agent", "AgentContext", "ModelAgent", "OracleAgent", "RandomAgent",
    "RandomAgentConfig", "make_agent",
]
