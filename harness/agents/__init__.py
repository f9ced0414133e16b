"""Agents: the protocol and typed steps, the registry, the random and oracle agents, the
model-agent base, and the batching helper."""

from __future__ import annotations

from harness.agents.base import Agent, AgentContext, AgentStep, Turn, episode_rng
from harness.agents.batching import Batcher
from harness.agents.model import Completion, ModelAgent
from harness.agents.oracle import OracleAgent
from harness.agents.random_agent import RandomAgent, RandomAgentConfig
from harness.agents.registry import agent_names, check_agent, make_agent, register_agent

__all__ = [
    "Agent", "AgentContext", "AgentStep", "Batcher", "Completion", "ModelAgent", "OracleAgent",
    "RandomAgent", "RandomAgentConfig", "Turn", "agent_names", "check_agent", "episode_rng",
    "make_agent", "register_agent",
]
