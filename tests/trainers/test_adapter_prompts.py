"""Prompt parity of the adapters: on the env observations each adapter's episode met, the
messages TRL's environment, SkyRL's env and verl-agent's manager give the model are the one
prompt builder's (``harness.prompts``): its transcript mode (``opening``, then ``feedback``
after each step) for TRL and SkyRL, its single-turn ``build`` with the step's verdict for
verl-agent, whose rollout shows one user turn per step. (verl's agent loop, which only
imports in ``.venv-verl``, is checked the same way by test_verl_loop.py.)

Every episode is real Chromium on an FSM site: an action the env refuses, then the oracle's
to the goal. The env's observations are recorded where they leave ``AsyncEnv``."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fsm_sites.serving.verdict import StepVerdict
from harness.env import AsyncEnv
from harness.env_providers import EnvOptions
from harness.observation import Observation
from harness.prompts import Message, PromptBuilder, PromptConfig
from trainers.adapters.host import EnvHost
from trainers.adapters.trl_env import CUAEnvironments
from trainers.adapters.verl_agent_env import CUAEnvironmentManager, VerlAgentEnvConfig

TASK, SEED = "fsm:shop/open_mug", 3
GARBAGE = "I think I should click on the mug, probably."


@dataclass
class Seen:
    """One observation as it left the env, with what the builder is told of its step."""

    obs: Observation
    action: dict[str, Any] | None = None
    verdict: StepVerdict | None = None
    over: str | None = None


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Seen]]:
    """Every reset's and step's observation of the test, in order."""
    record: list[Seen] = []
    reset, step = AsyncEnv.reset, AsyncEnv.step

    async def recording_reset(self: AsyncEnv, **kwargs: Any) -> Any:
        obs, info = await reset(self, **kwargs)
        record.append(Seen(obs))
        return obs, info

    async def recording_step(self: AsyncEnv, action: Any, **kwargs: Any) -> Any:
        result = await step(self, action, **kwargs)
        obs, _, terminated, truncated, info = result
        over = (("goal reached" if info.success else "done, task not completed") if terminated
                else "step limit reached" if truncated else None)
        record.append(Seen(obs, info.action, info.verdict, over))
        return result

    monkeypatch.setattr(AsyncEnv, "reset", recording_reset)
    monkeypatch.setattr(AsyncEnv, "step", recording_step)
    yield record


def plain(messages: list[Message]) -> list[Message]:
    """``messages`` with every image part as the builder writes it, ``{"type": "image"}``."""
    return [{**m, "content": [{"type": "image"} if part["type"] in ("image", "image_url") else part
                              for part in m["content"]]} for m in messages]


def test_trl_answers_are_the_transcript(seen: list[Seen]) -> None:
    builder = PromptBuilder(PromptConfig(codec="json", system_prompt=False))  # TRL describes the tools
    with CUAEnvironments(reward="step") as envs:
        env = envs.factory(TASK)()
        answers = [env.reset(seed=SEED)]
        width, height = answers[0][0]["image"].size
        answers.append(env.click(width + 5, 3))  # refused: outside the screenshot
        while env.over is None and (action := envs.oracle_action(env)) is not None:
            answers.append(getattr(env, action.type)(**action.model_dump(exclude={"type"})))
    assert env.success and len(answers) == len(seen) >= 4
    assert seen[1].obs.last_action_error and seen[-1].over == "goal reached"
    [opening] = builder.opening(seen[0].obs).messages
    expected = [opening] + [builder.feedback(s.obs, s.verdict, over=s.over).messages[0] for s in seen[1:]]
    assert plain([{"role": "user", "content": a} for a in answers]) == expected
    for answer, step in zip(answers, seen, strict=True):  # the screenshot each step saw
        assert answer[0]["image"].tobytes() == step.obs.image().convert("RGB").tobytes()


def test_skyrl_messages_are_the_transcript(seen: list[Seen]) -> None:
    skyrl_gym = pytest.importorskip("skyrl_gym")
    from trainers.adapters.skyrl_env import close_shared_hosts

    builder = PromptBuilder(PromptConfig(codec="qwen", observation="screenshot+elements"))
    prompt = [{"role": "system", "content": "You operate a computer."},
              {"role": "user", "content": "Complete the task."}]
    env = skyrl_gym.make("cua", env_config={"reward": "step", "codec": "qwen", "elements": True},
                         extras={"task": TASK, "seed": SEED, "max_turns": 6})
    try:
        messages, _ = env.init(prompt)
        outs = [env.step(GARBAGE)]  # refused: no codec parses it
        while not outs[-1]["done"]:
            action = env.oracle_action()
            size = (seen[-1].obs.width, seen[-1].obs.height)
            outs.append(env.step(builder.action_text(action, size)))
    finally:
        env.close()
        close_shared_hosts()
    assert len(outs) == len(seen) - 1 >= 3 and seen[1].obs.last_action_error
    system, user = builder.opening(seen[0].obs).messages
    assert "Elements:\n- " in user["content"][-1]["text"]
    assert plain(messages) == [
        {"role": "system", "content": [{"type": "text", "text": "You operate a computer."}, *system["content"]]},
        {"role": "user", "content": [{"type": "text", "text": "Complete the task."}, *user["content"]]}]
    assert base64.b64decode(messages[1]["content"][1]["image_url"]["url"].split(",")[1]) == seen[0].obs.screenshot
    for out, step in zip(outs, seen[1:], strict=True):
        feedback = builder.feedback(step.obs, step.verdict, over=step.over).messages
        assert out["metadata"]["text"] == feedback[0]["content"][-1]["text"]
        assert plain(out["observations"]) == ([] if out["done"] else feedback)
    assert outs[-1]["metadata"]["text"].startswith("Step verdict: goal reached\nEpisode over: goal reached")


def test_verl_agent_texts_are_the_builders_prompts(seen: list[Seen]) -> None:
    builder = PromptBuilder(PromptConfig(codec="json"))
    config = VerlAgentEnvConfig(tasks=(TASK,), env_num=1, seed=SEED,
                                env=EnvOptions(codec="json", reward="step"))
    texts = []
    with EnvHost() as host:
        envs = CUAEnvironmentManager(config, host)
        obs, _ = envs.reset(None)
        texts.append(obs["text"][0])
        obs, _, dones, _ = envs.step([GARBAGE])
        texts.append(obs["text"][0])
        while not dones[0]:
            [action] = envs.oracle_actions()
            step = seen[-1].obs
            obs, _, dones, _ = envs.step([builder.action_text(action, (step.width, step.height))])
            texts.append(obs["text"][0])
        envs.close()
    assert len(texts) == len(seen) >= 4 and seen[1].obs.last_action_error
    for i, step in enumerate(seen):
        history = [(s.action, (p.obs.width, p.obs.height), p.obs.elements)
                   for p, s in zip(seen[:i], seen[1:i + 1], strict=True)]
        prompt = builder.build(instruction=step.obs.instruction, history=history, images=[step.obs],
                               image_steps=[step.obs.step], error=step.obs.last_action_error,
                               verdict=step.verdict, over=step.over)
        assert texts[i] == f"{builder.system_text}\n\n<image>\n{prompt.messages[-1]['content'][-1]['text']}"
    assert "Step verdict: closer to the goal (2 -> 1 steps away)" in texts[2]
