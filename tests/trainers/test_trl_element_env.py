"""``benchmarks.trl_arm.ElementEnvironment``, the TRL side of ``bench_adapters``, on a real
FSM site in Chromium: its answers are exactly the prompt our own agents build at the same
observation (so a model trained for ``cua train grpo`` sees the same text through TRL), and
its tally counts the env steps the adapter really took."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from benchmarks.trl_arm import ElementEnvironment, Tally
from harness.actions import Click
from harness.agents.base import AgentStep, Turn, episode_prompt
from harness.env_providers import EnvOptions
from harness.observation import Observation
from harness.prompts import PromptBuilder, PromptConfig, as_element_action
from trainers.adapters.trl_env import CUAEnvironments

TASK = "fsm:shop/open_mug"
OPTIONS = EnvOptions(codec="qwen", reward="outcome", max_steps=4, elements=True)
BUILDER = PromptBuilder(PromptConfig(codec="qwen", observation="elements", system_prompt=False))


@pytest.fixture(scope="module")
def envs() -> Iterator[CUAEnvironments]:
    with CUAEnvironments() as made:
        yield made


def our_prompt(obs: Observation, turns: list[Turn]) -> str:
    [message] = episode_prompt(BUILDER, obs, turns).messages
    [text] = [part["text"] for part in message["content"] if part["type"] == "text"]
    return text


def test_answers_are_our_prompts_and_the_tally_counts_env_steps(envs: CUAEnvironments) -> None:
    tally = Tally()
    env = ElementEnvironment(envs, OPTIONS, BUILDER, tally)
    first = env.reset(task=TASK, seed=3, prompt="")
    inner = env._episode.env
    assert inner is not None and (obs := inner.last_observation) is not None and obs.elements
    assert first == our_prompt(obs, []) and "Elements:\n- " in first
    turns: list[Turn] = []

    answer = env.computer_use(action="left_click", element="no such element")
    assert "Last action error" in answer and tally.env_steps == 1  # the agent's error: a step
    refused = env._episode.last_step
    assert refused is not None and refused.action is None
    turns.append(Turn(obs, AgentStep(text="-"), None))
    obs = inner.last_observation
    assert obs is not None and answer == our_prompt(obs, turns)

    while (oracle := envs.oracle_action(env._episode)) is not None:
        assert isinstance(oracle, Click) and obs.elements
        element = as_element_action(oracle, obs.elements)
        label = json.loads(BUILDER.codec.encode(element).split("\n")[1])["arguments"]["element"]
        answer = env.computer_use(action="left_click", element=label)
        step = env._episode.last_step
        assert step is not None
        turns.append(Turn(obs, AgentStep(text="-"), step.action))
        obs = inner.last_observation
        assert obs is not None
        if step.success:
            assert answer == "episode over: goal reached"
            break
        assert answer == our_prompt(obs, turns)
    steps = tally.env_steps
    assert steps == len(turns) >= 2 and env._episode.success
    assert env.computer_use(action="left_click", element="Home").startswith("no action taken")
    assert tally.env_steps == steps and tally.tool_calls == steps + 1  # no step after the end
    assert env.get_reward() == 1.0 and (tally.episodes, tally.successes, tally.resets) == (1, 1, 1)
