"""The hf: agent: typed steps whose log-probabilities are the policy's, batched across episodes."""

from __future__ import annotations

import asyncio
import shutil

import pytest
import torch

from harness.agents.base import AgentContext
from harness.agents.registry import make_agent
from harness.errors import ActionParseError
from harness.observation import Observation
from tests.harness.store.helpers import screenshot
from trainers.agents.hf import HFAgent
from trainers.agents.options import HFAgentOptions
from trainers.errors import ConfigError, ModelDirError
from trainers.models.generation import NEVER_GENERATED
from trainers.models.inputs import open_image

pytestmark = pytest.mark.asyncio(loop_scope="session")


def observation(label: str, instruction: str = "Click the Submit button.", size=(160, 120)) -> Observation:
    return Observation(screenshot=screenshot(label, size), image_format="png", width=size[0],
                       height=size[1], instruction=instruction, step=0)


def context(index: int = 0) -> AgentContext:
    return AgentContext.for_episode("fsm:shop/open_mug", seed=0, index=index)


async def test_step_log_probs_are_a_forward_pass_log_softmax(tiny_policy) -> None:
    agent = HFAgent(tiny_policy, HFAgentOptions(codec="json", max_new_tokens=8, max_wait_ms=0))
    obs = observation("home")
    step = await agent.act(obs, context())
    assert step.text == step.completion and step.prompt[0]["role"] == "system"
    assert step.image_steps == [0] and len(step.token_ids) == len(step.logprobs) == 8
    # By hand: the chat template's text, the processor, one forward pass over prompt + completion.
    processor, model = tiny_policy.processor, tiny_policy.model
    text = processor.apply_chat_template(step.prompt, add_generation_prompt=True, tokenize=False)
    inputs = processor(text=[text], images=[open_image(obs.screenshot)], return_tensors="pt")
    assert inputs["input_ids"][0].tolist() == step.prompt_token_ids
    completion = torch.tensor([step.token_ids])
    inputs["input_ids"] = torch.cat([inputs["input_ids"], completion], dim=1)
    inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
    inputs["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], torch.zeros_like(completion)], 1)
    with torch.no_grad():
        logits = model(**inputs).logits[0, len(step.prompt_token_ids) - 1:-1]
    expected = torch.log_softmax(logits, dim=-1)[torch.arange(8), completion[0]]
    assert torch.allclose(torch.tensor(step.logprobs), expected, atol=1e-4)
    never = [processor.tokenizer.convert_tokens_to_ids(t) for t in NEVER_GENERATED]
    logits[:, never] = float("-inf")
    assert logits.argmax(-1).tolist() == step.token_ids  # greedy: the likeliest token each time


async def test_concurrent_episodes_share_one_model_call(tiny_policy) -> None:
    agent = HFAgent(tiny_policy, HFAgentOptions(max_new_tokens=6, max_batch=4, max_wait_ms=1000))
    observations = [observation(f"page{i}", f"Open item {i}{' now' * i}.", (160 + 40 * i, 120))
                    for i in range(4)]
    steps = await asyncio.gather(*(agent.act(o, context(i)) for i, o in enumerate(observations)))
    assert agent.generator.calls == 1 and dict(agent.batcher.batch_sizes) == {4: 1}
    alone = HFAgent(tiny_policy, HFAgentOptions(max_new_tokens=6, max_batch=1))
    for i, o in enumerate(observations):  # left padding changes nothing: same tokens one by one
        single = await alone.act(o, context(i))
        assert single.token_ids == steps[i].token_ids and single.prompt_token_ids == steps[i].prompt_token_ids
        assert max(abs(a - b) for a, b in zip(single.logprobs, steps[i].logprobs, strict=True)) < 1e-4
    assert alone.generator.calls == 4


async def test_sampling_follows_the_episode_stream_whatever_the_batch(tiny_policy) -> None:
    options = HFAgentOptions(temperature=1.0, max_new_tokens=6, max_batch=8, max_wait_ms=1000)
    agent = HFAgent(tiny_policy, options)
    obs = observation("home")
    batch = await asyncio.gather(*(agent.act(obs, context(i)) for i in range(3)))
    again = await HFAgent(tiny_policy, options.model_copy(update={"max_batch": 1})).act(obs, context(1))
    assert again.token_ids == batch[1].token_ids  # episode 1 samples the same alone or batched
    assert len({tuple(s.token_ids) for s in batch}) == 3  # three episodes, three samples


async def test_garbage_text_is_the_codecs_to_reject(tiny_policy) -> None:
    agent = HFAgent(tiny_policy, HFAgentOptions(codec="json", max_new_tokens=4))
    step = await agent.act(observation("home"), context())
    with pytest.raises(ActionParseError, match="json codec: expected"):
        agent.codec.decode(step.text, size=(160, 120))


async def test_the_registry_builds_it_with_options_from_the_spec_and_the_model_dir(tiny_dir, tmp_path) -> None:
    model = shutil.copytree(tiny_dir, tmp_path / "model")
    (model / "cua_agent.yaml").write_text("codec: uitars\nmax_new_tokens: 9\n")
    agent = make_agent(f"hf:{model}?max_new_tokens=5&temperature=0.5&max_batch=3")
    assert isinstance(agent, HFAgent) and agent.codec.name == "uitars"  # from the model's file
    assert (agent.options.max_new_tokens, agent.options.temperature, agent.batcher.max_batch) == (5, 0.5, 3)
    with pytest.raises(ConfigError) as bad:
        make_agent(f"hf:{tiny_dir}?temperature=hot&batch=2")
    assert "2 bad field(s)" in str(bad.value) and "temperature" in str(bad.value) and "batch" in str(bad.value)
    with pytest.raises(ModelDirError, match="does not exist"):
        make_agent("hf:/nowhere/model")
    with pytest.raises(ConfigError, match="expected hf:TARGET"):
        make_agent("hf")
