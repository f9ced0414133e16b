"""Rollout backends: where GRPO's rollouts are generated, behind one interface.

A backend gives the rollouts their agent and keeps it sampling from the weights being
trained: ``sync(policy, version)`` runs before every update's rollouts.

- ``hf`` (``HFBackend``): the ``hf:`` agent over the trained policy itself (transformers
  generate, batched across episodes; CPU or GPU). The weights are shared, so ``sync`` only
  sets the policy version the steps record.
- ``openai`` (``OpenAIBackend``): the ``openai:`` agent against an OpenAI-compatible server
  that can reload weights, such as our own ``cua serve`` (``POST /v1/weights``). ``sync``
  saves the policy to ``OUT/weights/vN`` and asks the server to load it; the steps record the
  version the server says produced them. The server must serve the same architecture and
  tokenizer (start it on the run's starting checkpoint).
- vLLM in-process (``vllm:``, the gpu extra) would be a third; it is not wired in here and is
  untested where vLLM cannot be installed (this CPU host).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Protocol

import aiohttp

from harness.agents.base import Agent
from trainers.errors import ConfigError, EndpointError


class RolloutBackend(Protocol):
    """What the GRPO loop needs of a rollout backend."""

    agent: Agent  # samples the rollouts (records prompts, token ids, log-probabilities)

    async def sync(self, policy: Any, version: int) -> None:
        """Make ``agent`` sample from ``policy``'s current weights, as ``version``."""


class HFBackend:
    """Rollouts from the trained policy in this process (see the module docstring)."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    async def sync(self, policy: Any, version: int) -> None:
        self.agent.policy_version = version


class OpenAIBackend:
    """Rollouts from an OpenAI-compatible server with a weight-update call."""

    def __init__(self, agent: Any, weights_dir: Path, *, keep: int = 2) -> None:
        self.agent = agent
        self.weights_dir = Path(weights_dir)
        self.keep = keep

    async def sync(self, policy: Any, version: int) -> None:
        import asyncio

        from trainers.models.processor import save_processor

        target = self.weights_dir / f"v{version}"
        if target.exists():
            shutil.rmtree(target)

        if hasattr(policy.model, "get_base_model"):
            raise ConfigError("rollout.backend: expected finetune: full with the openai backend (the "
                              "server reloads whole checkpoints), got LoRA adapters; use backend: hf")

        def write() -> None:
            target.mkdir(parents=True)
            policy.model.save_pretrained(target)
            save_processor(policy.processor, target, policy.kind)

        await asyncio.to_thread(write)
        url = self.agent.base_url + "/weights"
        try:
            async with aiohttp.ClientSession() as session, \
                    session.post(url, json={"path": str(target.resolve()), "version": version}) as response:
                answer = await response.json(content_type=None)
                status = response.status
        except (aiohttp.ClientError, OSError) as exc:
            raise EndpointError(f"expected {url} to take the new weights, got {type(exc).__name__}: {exc}; "
                                "check that `cua serve` runs there") from exc
        if status != 200 or answer.get("policy_version") != version:
            raise EndpointError(f"expected {url} to load {target} as version {version}, got status {status}: "
                                f"{str(answer)[:200]}; serve the run's starting checkpoint with `cua serve`")
        for old in sorted(self.weights_dir.glob("v*"), key=lambda p: int(p.name[1:]))[:-self.keep]:
            shutil.rmtree(old, ignore_errors=True)
