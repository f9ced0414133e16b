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
- ``vllm`` (``VLLMBackend``): the ``vllm:`` agent, vLLM's engine in this process (the gpu
  extra; CUDA only), started on the run's starting checkpoint. ``sync`` hands the policy's
  current weights to the engine's model (``LLM.apply_model`` -> ``load_weights``; LoRA
  adapters merged on the fly into a copy, the policy's own weights untouched) and clears its
  prefix cache. The engine core runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``),
  so the weights pass by reference, not through a pipe. Untested where vLLM cannot be
  installed (this CPU host); the tests here fake only the engine (``vllm.LLM``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp

from harness.agents.base import Agent
from trainers.agents.hf import HFAgent
from trainers.agents.openai_agent import OpenAIAgent
from trainers.agents.options import HFAgentOptions, OpenAIAgentOptions, VLLMAgentOptions
from trainers.agents.vllm_agent import VLLMAgent
from trainers.errors import ConfigError, EndpointError, MissingExtraError
from trainers.grpo.config import GRPOConfig
from trainers.models.policy import AdaptedModel, checkpoint_base

if TYPE_CHECKING:
    from harness.agents.model import ModelAgent
    from trainers.agents.openai_agent import OpenAIAgent
    from trainers.agents.vllm_agent import VLLMAgent
    from trainers.models.policy import Policy


class RolloutBackend(Protocol):
    """What the GRPO loop needs of a rollout backend."""

    @property
    def agent(self) -> Agent:
        """Samples the rollouts (records prompts, token ids, log-probabilities)."""

    async def sync(self, policy: Policy, version: int) -> None:
        """Make ``agent`` sample from ``policy``'s current weights, as ``version``."""


class HFBackend:
    """Rollouts from the trained policy in this process (see the module docstring)."""

    def __init__(self, agent: ModelAgent) -> None:
        self.agent = agent

    async def sync(self, policy: Policy, version: int) -> None:
        self.agent.policy_version = version


class OpenAIBackend:
    """Rollouts from an OpenAI-compatible server with a weight-update call."""

    def __init__(self, agent: OpenAIAgent, weights_dir: Path, *, keep: int = 2) -> None:
        self.agent = agent
        self.weights_dir = Path(weights_dir)
        self.keep = keep

    async def sync(self, policy: Policy, version: int) -> None:
        from trainers.models.processor import save_processor

        target = self.weights_dir / f"v{version}"
        if target.exists():
            shutil.rmtree(target)

        if isinstance(policy.model, AdaptedModel):
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


class VLLMBackend:
    """Rollouts from vLLM's engine in this process, given the policy's weights before every
    update (see the module docstring)."""

    def __init__(self, agent: VLLMAgent) -> None:
        self.agent = agent

    async def sync(self, policy: Policy, version: int) -> None:
        await asyncio.to_thread(push_weights, self.agent.llm, policy.model)
        self.agent.policy_version = version


def make_vllm_backend(config: GRPOConfig) -> VLLMBackend:
    """The vllm backend of ``config``: an engine on ``model.path`` (a LoRA adapter: its base
    model), sampling as ``rollout`` says; a clear error where vLLM is not installed."""
    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("rollout.backend: expected vLLM for backend: vllm, got none installed; "
                                "install the gpu extra on a CUDA machine (pip install 'cua-harness[gpu]') "
                                "or use backend: hf") from exc
    rollout, model = config.rollout, config.model
    options = VLLMAgentOptions(**config.prompt.model_dump(), temperature=rollout.temperature, top_p=rollout.top_p,
                               max_new_tokens=rollout.max_new_tokens, seed=config.seed, max_batch=rollout.max_batch,
                               max_wait_ms=rollout.max_wait_ms, dtype=model.dtype,
                               gpu_memory_utilization=rollout.gpu_memory_utilization,
                               min_pixels=model.min_pixels, max_pixels=model.max_pixels)
    # The engine core in this process: the weights of every sync pass by reference.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return VLLMBackend(VLLMAgent(checkpoint_base(Path(model.path)), options))


def push_weights(llm: Any, model: Any) -> None:
    """Load ``model``'s current weights into the engine ``llm`` and drop its cached prefixes
    (their keys and values came from the old weights)."""
    weights = list(engine_weights(model).items())
    llm.apply_model(lambda engine_model: engine_model.load_weights(weights))
    reset = getattr(llm, "reset_prefix_cache", None)
    if reset is not None:
        reset()


def engine_weights(model: Any) -> dict[str, Any]:
    """``model``'s current weights under the names its checkpoint files use (what an engine's
    ``load_weights`` reads: transformers' own save-time renaming); a peft model's LoRA deltas
    are added to their base weights in new tensors, the policy's own left as they are."""
    base = model.get_base_model() if isinstance(model, AdaptedModel) else model
    lora_layers = {name: module for name, module in base.named_modules()
                   if hasattr(module, "base_layer") and hasattr(module, "get_delta_weight")}
    weights: dict[str, Any] = {}
    for name, param in base.named_parameters():
        owner, _, leaf = name.rpartition(".")
        layer = owner.removesuffix(".base_layer")
        if owner.endswith(".base_layer") and layer in lora_layers:
            weight = param.detach()
            if leaf == "weight":
                module = lora_layers[layer]
                for adapter in module.active_adapters:
                    if adapter in module.lora_A:
                        weight = weight + module.get_delta_weight(adapter).to(weight.dtype)
            weights[f"{layer}.{leaf}"] = weight
        elif ".lora_" not in f".{name}":  # the adapters' own matrices are in the deltas
            weights[name] = param.detach()
    try:
        from transformers.core_model_loading import revert_weight_conversion
    except ImportError:  # transformers before 5 saves under the module names
        return weights
    return dict(revert_weight_conversion(base, weights))


def make_backend(config: GRPOConfig, policy: Policy, agent_class: type | None) -> RolloutBackend:
    """The rollout backend the config names, with its agent."""
    rollout = config.rollout
    if rollout.backend == "hf":
        return HFBackend((agent_class or HFAgent)(policy, agent_options(config, temperature=rollout.temperature)))
    if rollout.backend == "vllm":
        return make_vllm_backend(config)
    options = OpenAIAgentOptions(**config.prompt.model_dump(), temperature=rollout.temperature,
                                 top_p=rollout.top_p, max_new_tokens=rollout.max_new_tokens, seed=config.seed)
    assert rollout.url is not None
    return OpenAIBackend(OpenAIAgent(rollout.url, options), Path(config.out) / "weights")


def agent_options(config: GRPOConfig, *, temperature: float) -> Any:
    """The hf: agent's options for this run's rollouts (or, at temperature 0, its evaluation)."""
    rollout = config.rollout
    return HFAgentOptions(**config.prompt.model_dump(), temperature=temperature, top_p=rollout.top_p,
                          max_new_tokens=rollout.max_new_tokens, seed=config.seed,
                          max_batch=rollout.max_batch, max_wait_ms=rollout.max_wait_ms,
                          device=config.model.device, dtype=config.model.dtype)

