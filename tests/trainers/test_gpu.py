"""GPU checks (marked ``gpu``; skipped without CUDA, and so not run for this issue)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from harness.agents.base import AgentContext
from harness.agents.registry import make_agent
from harness.prompts import Prompt
from tests.trainers.test_hf_agent import observation
from trainers.agents.hf import HFAgent
from trainers.agents.options import HFAgentOptions
from trainers.models.inputs import completion_logprobs
from trainers.models.policy import LoraOptions, PolicyConfig, load_policy

pytestmark = [pytest.mark.gpu, pytest.mark.asyncio(loop_scope="session")]


async def test_bf16_on_the_gpu_by_default_and_log_probs_agree(tiny_dir) -> None:
    policy = load_policy(PolicyConfig(path=tiny_dir))
    assert policy.device.type == "cuda"
    if torch.cuda.is_bf16_supported():
        assert policy.dtype == torch.bfloat16
    obs = observation("home")
    step = await HFAgent(policy, HFAgentOptions(max_new_tokens=6)).act(obs, AgentContext.for_episode("t", 0))
    prompt = Prompt(step.prompt, [obs.screenshot], step.image_steps)
    with torch.no_grad():
        again = completion_logprobs(policy, [prompt], [step.token_ids])[0].float().cpu()
    assert torch.allclose(again, torch.tensor(step.logprobs), atol=0.1)  # bf16 rounding


async def test_lora_with_checkpointing_steps_on_the_gpu(tiny_dir, prompts) -> None:
    policy = load_policy(PolicyConfig(path=tiny_dir, finetune="lora", gradient_checkpointing=True,
                                      lora=LoraOptions(r=8)))
    loss = -completion_logprobs(policy, prompts[:2], [[1, 2, 3], [4, 5]])[0].mean()
    loss.backward()
    grads = [p.grad for p in policy.parameters()]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs the gpu extra (vLLM)")
async def test_the_vllm_agent_records_tokens_and_log_probs(tiny_dir) -> None:
    agent = make_agent(f"vllm:{tiny_dir}?max_new_tokens=6&gpu_memory_utilization=0.2")
    step = await agent.act(observation("home"), AgentContext.for_episode("t", 0))
    assert len(step.token_ids) == len(step.logprobs) > 0 and step.prompt_token_ids


async def test_completion_only_scores_match_every_position_in_bf16_on_the_gpu(tiny_dir) -> None:
    """GRPO's ``score`` runs the LM head at completion positions only (a boolean
    ``logits_to_keep``): on CUDA in the policy's own dtype it must pick the same positions
    as the head over every position (after a step toward the completions, so that a position
    off by one would change the log-probs by far more than bf16's rounding)."""
    from tests.trainers.test_completion_logits import every_position, learn, train_steps
    from trainers.grpo.batch import score

    policy = load_policy(PolicyConfig(path=tiny_dir, finetune="full"))
    assert policy.device.type == "cuda"
    steps = train_steps(policy, images=True)
    learn(policy.model, policy, steps)
    with torch.no_grad():
        scored = score(policy.model, policy, steps)
        expected, _, _, _ = every_position(policy.model, policy, steps)
    got = scored.logprobs[scored.mask].float()
    assert got.shape == expected.shape
    assert torch.allclose(got, expected.float(), atol=0.05)
    assert (got[1:] - expected.float()[:-1]).abs().max() > 0.5  # one position off would show
