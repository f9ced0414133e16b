"""The verl-agent manager's contract (as read from verl-agent's source, cited in
``trainers/adapters/verl_agent_env.py``; verl-agent is not installable here) against real
FSM and MiniWoB tasks in real Chromium: batched reset/step, text with an ``<image>``
placeholder, uint8 screenshots, FSM-state anchors that make GiGPO's step groups exact,
per-step rewards, dones, and infos with ``won`` and ``is_action_valid``."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import pytest

from harness.env_providers import EnvOptions
from harness.errors import ConfigError
from harness.prompts import PromptBuilder, PromptConfig
from trainers.adapters.host import EnvHost
from trainers.adapters.verl_agent_env import (
    CUAEnvironmentManager,
    VerlAgentEnvConfig,
    make_verl_agent_envs,
)

TASKS = ("fsm:shop/open_mug", "fsm:settings/cfg_location")
GARBAGE = "let me think about where to click"
BUILDER = PromptBuilder(PromptConfig(codec="qwen"))


@pytest.fixture(scope="module")
def host() -> Iterator[EnvHost]:
    with EnvHost() as made:
        yield made


def manager(host: EnvHost, **fields) -> CUAEnvironmentManager:
    options = EnvOptions(codec="qwen", reward="step", max_steps=4)
    return CUAEnvironmentManager(VerlAgentEnvConfig(**{"tasks": TASKS, "env_num": 2, "group_n": 2,
                                                       "env": options, **fields}), host)


def oracle_texts(envs: CUAEnvironmentManager, obs: dict) -> list[str]:
    texts = []
    for action, image in zip(envs.oracle_actions(), obs["image"], strict=True):
        height, width, _ = image.shape
        texts.append(GARBAGE if action is None else BUILDER.action_text(action, (width, height)))
    return texts


def test_a_batch_of_groups_plays_to_the_end_with_exact_anchors(host: EnvHost) -> None:
    envs = manager(host)
    obs, infos = envs.reset(None)
    assert set(obs) == {"text", "image", "anchor"} and envs.batch_size == 4
    assert [(i["task"], i["seed"]) for i in infos] == [(TASKS[0], 0), (TASKS[0], 0),
                                                       (TASKS[1], 1), (TASKS[1], 1)]
    for text, image in zip(obs["text"], obs["image"], strict=True):
        assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
        assert text.count("<image>") == 1 and text.startswith(BUILDER.system_text)
        assert "Previous actions:\n(none)" in text and text.endswith("Next action:")
    assert "Instruction: Open the page of Coffee mug." in obs["text"][0]
    anchors = obs["anchor"]
    assert anchors[0] == anchors[1] != anchors[2] == anchors[3]  # a group starts alike
    assert all(a.startswith("fsm:") for a in anchors) and not any(i["won"] for i in infos)

    # group 0 both follow the oracle; in group 1 one does and one writes garbage
    texts = oracle_texts(envs, obs)
    texts[3] = GARBAGE
    obs, rewards, dones, infos = envs.step(texts)
    assert rewards.dtype == np.float32 and dones.dtype == bool
    assert rewards.tolist() == [0.5, 0.5, 0.5, 0.0] and not dones.any()
    assert [i["is_action_valid"] for i in infos] == [True, True, True, False]
    assert obs["anchor"][0] == obs["anchor"][1] == f"fsm:{infos[0]['verdict']['state_after']}"
    assert obs["anchor"][2] != obs["anchor"][3] == anchors[3]  # garbage changed nothing
    assert "Step verdict: closer to the goal (2 -> 1 steps away)" in obs["text"][0]
    assert "Last action error: " in obs["text"][3] and "Step verdict: nothing changed" in obs["text"][3]
    assert "Previous actions:\n1. <tool_call>" in obs["text"][0]

    # the verl-agent loop: step every env until all are done, masking the finished ones
    batches, all_infos, returns = [[] for _ in range(4)], [[] for _ in range(4)], rewards.copy()
    finished = np.zeros(4, dtype=bool)
    for i in range(4):
        batches[i].append({"active_masks": True})
        all_infos[i].append(infos[i])
    while not finished.all():
        obs, rewards, dones, infos = envs.step(oracle_texts(envs, obs))
        for i in range(4):
            batches[i].append({"active_masks": not finished[i]})
            all_infos[i].append(infos[i])
            if finished[i]:
                assert rewards[i] == 0.0 and dones[i] and infos[i]["inactive"]
        returns[~finished] += rewards[~finished]
        finished |= dones
    assert returns.tolist() == [2.0, 2.0, 2.0, 2.0]  # step mode: each optimal path earns 2.0
    lengths = [sum(item["active_masks"] for item in steps) for steps in batches]
    assert lengths == [2, 2, 2, 3]  # the garbage step cost env 3 a step
    assert all(i[-1]["won"] for i in all_infos)
    rate = envs.success_evaluator(total_infos=all_infos, total_batch_list=batches)
    assert rate["success_rate"].tolist() == [1.0, 1.0, 1.0, 1.0]
    envs.close()


def test_a_step_limit_ends_without_a_win(host: EnvHost) -> None:
    envs = manager(host, env_num=1, group_n=2, env=EnvOptions(codec="qwen", reward="outcome",
                                                              max_steps=2))
    envs.reset(None)
    _, rewards, dones, infos = envs.step([GARBAGE, GARBAGE])
    assert rewards.tolist() == [0.0, 0.0] and not dones.any()
    obs, rewards, dones, infos = envs.step([GARBAGE, '<tool_call>\n{"name": "computer_use", '
                                            '"arguments": {"action": "left_click", '
                                            '"coordinate": [2, 2]}}\n</tool_call>'])
    assert dones.tolist() == [True, True] and not any(i["won"] for i in infos)
    assert [i["is_action_valid"] for i in infos] == [False, True]
    assert "Episode over: step limit reached" in obs["text"][1]
    rate = envs.success_evaluator(total_infos=[[infos[0]], [infos[1]]],
                                  total_batch_list=[[{"active_masks": True}]] * 2)
    assert rate["success_rate"].tolist() == [0.0, 0.0]
    envs.close()


def test_env_kwargs_choose_tasks_and_miniwob_anchors_hash_the_screen(host: EnvHost) -> None:
    envs = manager(host, env_num=1, group_n=2)
    obs, infos = envs.reset([{"task": "miniwob:click-test", "seed": 4},
                             {"task": TASKS[1], "seed": 4}])
    assert [(i["task"], i["seed"]) for i in infos] == [("miniwob:click-test", 4), (TASKS[1], 4)]
    assert obs["anchor"][0].startswith("phash:") and obs["anchor"][1].startswith("fsm:")
    with pytest.raises(ConfigError, match=r"one \{'task': ..., 'seed': ...\} per env \(2\)"):
        envs.reset([{"task": TASKS[0]}])
    with pytest.raises(ConfigError, match="expected 2 text actions"):
        envs.step([GARBAGE])
    envs.close()


def test_resets_move_on_to_new_seeds_and_tasks(host: EnvHost) -> None:
    envs = manager(host, env_num=1, group_n=1, seed=10)
    seen = [(infos[0]["task"], infos[0]["seed"]) for infos in (envs.reset(None)[1] for _ in range(3))]
    assert seen == [(TASKS[0], 10), (TASKS[1], 11), (TASKS[0], 12)]
    envs.close()


def test_make_envs_reads_verl_agents_config(host: EnvHost) -> None:
    config = SimpleNamespace(
        env=SimpleNamespace(env_name="cua", seed=7, max_steps=5, rollout=SimpleNamespace(n=3),
                            cua=SimpleNamespace(tasks=list(TASKS), codec=None, reward="progress")),
        data=SimpleNamespace(train_batch_size=2, val_batch_size=4))
    envs, val_envs = make_verl_agent_envs(config, host=host)
    assert (envs.batch_size, val_envs.batch_size) == (6, 4)
    assert (envs.config.seed, val_envs.config.seed, val_envs.config.group_n) == (7, 1007, 1)
    assert envs.config.env == EnvOptions(codec="qwen", reward="progress", max_steps=5)
    with pytest.raises(ConfigError, match="nowhere"):
        CUAEnvironmentManager(VerlAgentEnvConfig(tasks=("fsm:nowhere",), env_num=1), host)
