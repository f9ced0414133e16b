"""The agent registry: ``--agent NAME[:ARG]`` names an agent.

A name maps onto ``"module:function"``, imported only when that agent is first asked for
(as task suites are). The function takes the text after the first ``:`` (``None`` when
there is none) and returns an :class:`~harness.agents.base.Agent`::

    make_agent("random")                       # harness.agents.random_agent:make
    make_agent("hf:runs/sft/checkpoint")       # registered by trainers/
    make_agent("openai:http://127.0.0.1:8000/v1#qwen")

Any package adds agents with ``register_agent(name, "module:function")`` or, without
being imported first, with an entry point in the group ``cua.agents`` (its name is the
agent name, its value ``module:function``), which is how ``trainers/`` adds ``hf``,
``openai`` and ``vllm``. An unknown name gets the suites' "did you mean" error.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points

from harness.agents.base import Agent
from harness.errors import ConfigError, UnknownAgentError, did_you_mean

ENTRY_POINT_GROUP = "cua.agents"

#: name -> "module:function"; the function takes the argument (or None) and returns an Agent.
AGENTS: dict[str, str] = {
    "random": "harness.agents.random_agent:make",
    "oracle": "harness.agents.oracle:make",
}


def register_agent(name: str, target: str) -> None:
    """Register (or replace) an agent: ``target`` is ``"module:function"``."""
    if not name or ":" in name:
        raise ConfigError(f"expected an agent name without ':', got {name!r}")
    if target.count(":") != 1:
        raise ConfigError(f"expected target as 'module:function', got {target!r}")
    AGENTS[name] = target


@cache
def _entry_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _targets() -> dict[str, str]:
    return {**_entry_points(), **AGENTS}


def agent_names() -> list[str]:
    """Every registered agent name."""
    return sorted(_targets())


def split_agent_spec(spec: str) -> tuple[str, str | None]:
    """``"hf:/models/x"`` -> ``("hf", "/models/x")``; ``"random"`` -> ``("random", None)``."""
    name, sep, arg = spec.partition(":")
    return name.strip(), (arg if sep else None)


def check_agent(spec: str) -> None:
    """Raise ``UnknownAgentError`` unless ``spec`` names a registered agent (builds nothing)."""
    name, _ = split_agent_spec(spec)
    if name not in _targets():
        raise UnknownAgentError(
            f"expected an agent in {agent_names()}, got {name!r}{did_you_mean(name, _targets())}; "
            "pass --agent NAME or NAME:ARG"
        )


def make_agent(spec: str) -> Agent:
    """The agent ``spec`` names (``NAME`` or ``NAME:ARG``)."""
    check_agent(spec)
    name, arg = split_agent_spec(spec)
    module_name, func_name = _targets()[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UnknownAgentError(
            f"expected agent {name!r} to be importable from {module_name}, got {exc}; "
            "install the package (or extra) that provides it"
        ) from exc
    return getattr(module, func_name)(arg)
