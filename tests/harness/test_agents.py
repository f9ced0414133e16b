"""Agents: typed steps, the random agent's coverage and per-episode streams, the model-agent
base and its prompt, the registry, and the batching helper (a fake at the model seam)."""

from __future__ import annotations

import asyncio
import random
import sys
import types

import pytest

from harness.actions import POINTER_ACTIONS, Click, Drag
from harness.agents import (
    Agent,
    AgentContext,
    AgentStep,
    Batcher,
    Completion,
    ModelAgent,
    OracleAgent,
    RandomAgent,
    Turn,
    episode_rng,
    make_agent,
    register_agent,
    registry,
)
from harness.agents.base import ElementsAgent, wants_elements
from harness.errors import ConfigError, UnknownAgentError
from harness.observation import Observation
from harness.prompts import ObservationMode, PromptConfig


def _obs(**kw) -> Observation:
    base = dict(screenshot=b"png", image_format="png", width=160, height=210,
                instruction="Click the button.", url="http://127.0.0.1/", step=0)
    return Observation(**{**base, **kw})


def test_random_agent_covers_the_action_space_inside_the_screenshot() -> None:
    agent, rng = RandomAgent(), random.Random(1)
    actions = [agent.sample(160, 210, rng) for _ in range(2000)]
    kinds = {a.type for a in actions}
    assert kinds == {"click", "double_click", "right_click", "move", "drag", "scroll",
                     "type_text", "key", "wait"}
    for a in actions:
        if isinstance(a, POINTER_ACTIONS):
            assert 0 <= a.x < 160 and 0 <= a.y < 210
        if isinstance(a, Drag):
            assert 0 <= a.to_x < 160 and 0 <= a.to_y < 210


async def _play(agent: RandomAgent, task: str, seed: int, index: int) -> list:
    ctx = AgentContext.for_episode(task, seed, index)
    return [(await agent.act(_obs(), ctx)).action for _ in range(20)]


async def test_random_streams_depend_on_task_seed_and_index() -> None:
    agent = RandomAgent()
    first = await _play(agent, "miniwob:click-test", 42, 0)
    assert await _play(agent, "miniwob:click-test", 42, 0) == first  # a rerun plays the same
    assert await _play(agent, "miniwob:click-button", 42, 0) != first  # another task, another stream
    assert await _play(agent, "miniwob:click-test", 43, 0) != first
    assert await _play(agent, "miniwob:click-test", 42, 1) != first
    assert episode_rng("a", 1, 0).random() == episode_rng("a", 1, 0).random()


def test_agent_step_holds_exactly_one_decision() -> None:
    assert AgentStep.of(Click(x=1, y=2)).action == Click(x=1, y=2)
    assert AgentStep.of("click(1, 2)").text == "click(1, 2)"
    with pytest.raises(ValueError, match="exactly one of action or text"):
        AgentStep()
    with pytest.raises(ValueError, match="exactly one of action or text"):
        AgentStep(action=Click(x=1, y=2), text="x")
    with pytest.raises(ValueError, match="one log-probability per token"):
        AgentStep(text="x", token_ids=[1, 2], logprobs=[-0.1])
    step = AgentStep(text="x", completion="x", token_ids=[5], logprobs=[-0.5], policy_version=3)
    assert step.training_fields() == {"completion": "x", "token_ids": [5], "logprobs": [-0.5],
                                      "policy_version": 3}


class CannedModel(ModelAgent):
    """A fake at the model seam: records the prompts, answers with fixed text and tokens."""

    def __init__(self, observation: ObservationMode = "screenshot") -> None:
        super().__init__(PromptConfig(codec="json", history_images=2, observation=observation),
                         policy_version=7)
        self.prompts_seen: list = []

    async def generate(self, prompt):
        self.prompts_seen.append(prompt)
        return Completion('{"type": "click", "x": 5, "y": 6}', token_ids=[1, 2], logprobs=[-0.1, -0.2])


def test_an_agent_declares_whether_its_observations_need_the_element_list() -> None:
    """The runner, `cua collect` and GRPO ask the agent (ElementsAgent), not its attributes."""
    assert wants_elements(CannedModel("screenshot+elements")) and wants_elements(CannedModel("elements"))
    assert not wants_elements(CannedModel()) and not isinstance(OracleAgent(), ElementsAgent)
    assert not wants_elements(OracleAgent())


async def test_model_agent_sends_the_one_prompt_and_returns_a_training_step() -> None:
    agent = CannedModel()
    before = _obs(step=0, screenshot=b"first")
    now = _obs(step=1, screenshot=b"second", last_action_error="expected a point inside")
    ctx = AgentContext("miniwob:click-test", 0, 0,
                       history=[Turn(before, AgentStep(action=Drag(x=1, y=2, to_x=3, to_y=4)),
                                     {"type": "drag", "x": 1, "y": 2, "to_x": 3, "to_y": 4})])
    step = await agent.act(now, ctx)
    assert agent.codec.decode(step.text, size=(160, 210)).x == 5
    assert step.token_ids == [1, 2] and step.logprobs == [-0.1, -0.2] and step.policy_version == 7
    prompt = agent.prompts_seen[0]
    assert prompt.images == [b"first", b"second"] and prompt.image_steps == [0, 1] == step.image_steps
    assert step.prompt == prompt.messages and prompt.messages[0]["role"] == "system"
    user_text = prompt.messages[1]["content"][-1]["text"]
    assert user_text == ('Instruction: Click the button.\nPrevious actions:\n'
                         '1. {"type": "drag", "x": 1, "y": 2, "to_x": 3, "to_y": 4}\n'
                         "Last action error: expected a point inside\nNext action:")


def test_agents_satisfy_the_protocol() -> None:
    assert isinstance(RandomAgent(), Agent) and isinstance(OracleAgent(), Agent)
    assert isinstance(CannedModel(), Agent)


def test_registry_builds_names_and_offers_close_ones(monkeypatch) -> None:
    assert isinstance(make_agent("random"), RandomAgent)
    assert isinstance(make_agent("oracle"), OracleAgent)
    with pytest.raises(UnknownAgentError, match="did you mean 'random'"):
        make_agent("randon")
    with pytest.raises(ConfigError, match="module:function"):
        register_agent("x", "no_colon_here")
    module = types.ModuleType("my_agents_mod")
    module.make = lambda arg: types.SimpleNamespace(name=f"echo:{arg}")
    monkeypatch.setitem(sys.modules, "my_agents_mod", module)
    monkeypatch.setattr(registry, "AGENTS", dict(registry.AGENTS))
    register_agent("echo", "my_agents_mod:make")
    assert make_agent("echo:http://host:1/v1#m").name == "echo:http://host:1/v1#m"
    assert "echo" in registry.agent_names()


async def test_batcher_shares_one_model_call_between_concurrent_episodes() -> None:
    calls: list[list[int]] = []

    async def model(batch: list[int]) -> list[int]:  # the fake model: counts its calls
        calls.append(list(batch))
        await asyncio.sleep(0)
        return [x * 10 for x in batch]

    batcher = Batcher(model, max_batch=4, max_wait_ms=50)
    replies = await asyncio.gather(*(batcher(i) for i in range(10)))
    assert replies == [i * 10 for i in range(10)]
    assert [len(c) for c in calls] == [4, 4, 2] and batcher.calls == 3
    assert sorted(x for c in calls for x in c) == list(range(10))
    alone = await batcher(99)  # a lone request waits at most max_wait_ms, then goes alone
    assert alone == 990 and calls[-1] == [99]


async def test_a_failed_batch_reaches_every_waiter() -> None:
    async def broken(batch: list[int]) -> list[int]:
        raise RuntimeError("model down")

    batcher = Batcher(broken, max_batch=3, max_wait_ms=20)
    results = await asyncio.gather(*(batcher(i) for i in range(3)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    with pytest.raises(ConfigError, match="max_batch"):
        Batcher(broken, max_batch=0)
