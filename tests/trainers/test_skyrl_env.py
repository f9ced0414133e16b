"""The SkyRL adapter with the real ``skyrl-gym`` package: an FSM episode in real Chromium
through ``skyrl_gym.make("cua")`` / ``init`` / ``step``, driven by the oracle's actions
as the Qwen codec writes them, against the same episode on our own gymnasium env."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator

import pytest
from PIL import Image

skyrl_gym = pytest.importorskip("skyrl_gym")

from harness.errors import ConfigError  # noqa: E402
from harness.gym_env import make_env  # noqa: E402
from harness.prompts import PromptBuilder, PromptConfig  # noqa: E402
from trainers.adapters import skyrl_env  # noqa: E402

TASK = "fsm:shop/open_mug"
GARBAGE = "I think I should click on the mug, probably."
PROMPT = [{"role": "system", "content": "You operate a computer."},
          {"role": "user", "content": "Complete the task."}]


@pytest.fixture(scope="module", autouse=True)
def shared_hosts() -> Iterator[None]:
    yield
    skyrl_env.close_shared_hosts()


def image_of(block: dict) -> Image.Image:
    assert block["type"] == "image_url"
    head, payload = block["image_url"]["url"].split(",", 1)
    assert head == "data:image/png;base64"
    return Image.open(io.BytesIO(base64.b64decode(payload)))


def test_registered_under_its_documented_id() -> None:
    assert skyrl_env.ENV_ID == "cua"
    assert skyrl_gym.registry["cua"].entry_point == "trainers.adapters.skyrl_env:CUASkyRLEnv"
    skyrl_env.register_skyrl_env()  # idempotent: a second registration is not an error


def test_an_fsm_episode_through_skyrl_gym_matches_our_env() -> None:
    builder = PromptBuilder(PromptConfig(codec="qwen"))
    env = skyrl_gym.make("cua", env_config={"reward": "step", "codec": "qwen"},
                         extras={"task": TASK, "seed": 3, "max_turns": 6})
    assert isinstance(env, skyrl_env.CUASkyRLEnv) and env.max_turns == 6
    messages, info = env.init(PROMPT)
    assert messages[0]["content"] == [{"type": "text", "text": "You operate a computer."},
                                      {"type": "text", "text": builder.system_text}]
    assert PROMPT[0]["content"] == "You operate a computer."  # the caller's prompt is kept as it was
    assert PROMPT[1]["content"] == "Complete the task."
    first, shot, text = messages[1]["content"]
    assert first == {"type": "text", "text": "Complete the task."}
    size = image_of(shot).size
    assert text["text"] == "Instruction: Open the page of Coffee mug.\nPrevious actions:\n(none)\nNext action:"
    assert info["start_distance"] == 2 and info["state"].startswith("fsm:")

    out = env.step(GARBAGE)  # the agent's mistake: an invalid-action observation
    assert not out["done"] and out["reward"] == 0.0
    [message] = out["observations"]
    assert message["role"] == "user" and image_of(message["content"][0]).size == size
    feedback = message["content"][1]["text"]
    assert feedback.startswith("Last action error: ")
    assert feedback.endswith("\nStep verdict: nothing changed\nNext action:")
    assert out["metadata"]["action"] is None and out["metadata"]["action_error"]

    texts, outs = [GARBAGE], [out]
    while not outs[-1]["done"]:
        action = env.oracle_action()
        assert action is not None
        texts.append(builder.action_text(action, size))
        outs.append(env.step(texts[-1]))
    assert [o["reward"] for o in outs] == [0.0, 0.5, 1.5]
    assert outs[1]["observations"][0]["content"][1]["text"] == (
        "Step verdict: closer to the goal (2 -> 1 steps away)\nNext action:")
    assert outs[-1]["observations"] == [] and outs[-1]["metadata"]["success"]
    assert outs[-1]["metadata"]["text"] == "Step verdict: goal reached\nEpisode over: goal reached"
    assert env.get_metrics() == {"steps": 3, "success": 1.0, "episode_reward": 2.0}
    with pytest.raises(RuntimeError, match="init"):
        env.step(texts[-1])
    env.close()

    ours = make_env(TASK, reward="step", codec="qwen", max_steps=6)
    try:
        ours.reset(seed=3)
        rewards = [ours.step(text)[1] for text in texts]
    finally:
        ours.close()
    assert rewards == [o["reward"] for o in outs]


def test_reward_modes_and_the_step_limit() -> None:
    from omegaconf import OmegaConf  # what SkyRL passes: its config's section for the env

    env = skyrl_gym.make("cua", env_config=OmegaConf.create({"reward": "outcome", "max_steps": 2}),
                         extras={"extra_info": {"task": TASK}, "max_turns": 9})
    assert env.max_turns == 2  # the config's step limit wins over SkyRL's max_turns
    env.init([{"role": "user", "content": "go"}])
    first = env.step(GARBAGE)
    last = env.step('{"type": "click", "x": 1, "y": 1}')  # the json codec by default
    assert (first["reward"], first["done"]) == (0.0, False)
    assert (last["reward"], last["done"], last["observations"]) == (0.0, True, [])
    assert last["metadata"]["text"] == "Step verdict: nothing changed\nEpisode over: step limit reached"
    assert not last["metadata"]["success"]
    env.close()


def test_bad_config_and_rows_are_named() -> None:
    with pytest.raises(ConfigError, match="task"):
        skyrl_gym.make("cua", env_config={}, extras={"seed": 1})
    with pytest.raises(ConfigError, match="reward"):
        skyrl_gym.make("cua", env_config={"reward": "sometimes"}, extras={"task": TASK})
    env = skyrl_gym.make("cua", extras={"task": TASK})
    with pytest.raises(RuntimeError, match=r"init\(prompt\) before step"):
        env.step(GARBAGE)
