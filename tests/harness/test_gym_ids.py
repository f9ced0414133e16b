"""Gymnasium ids (``harness.gym_ids``): ``gymnasium.make("cua/...")`` builds an FSM task and a
desktop task, each passing gymnasium's own checker (the MiniWoB one is in test_env.py)."""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env

from harness.gym_ids import IDS, gym_id


def test_ids_name_every_suite() -> None:
    assert gym_id("fsm:shop/open_mug") == "cua/fsm.shop.open_mug"
    assert {"cua/miniwob.click-test", "cua/fsm.shop", "cua/fsm.shop.open_mug",
            "cua/fsm.travel.wishlist_1", "cua/desktop.xterm-write-file"} <= set(IDS)
    assert len(IDS) == len(set(IDS)) > 200


def test_fsm_and_desktop_tasks_by_id_pass_check_env() -> None:
    for env_id, task_id in (("cua/fsm.shop.open_mug", "fsm:shop/open_mug"),
                            ("cua/desktop.xterm-write-file", "desktop:xterm-write-file")):
        env = gymnasium.make(env_id, max_steps=3)
        try:
            gym = env.unwrapped
            assert gym.task.id == task_id and gym.spec.id == env_id
            assert isinstance(env.observation_space, gymnasium.spaces.Dict)
            assert env.observation_space["screenshot"].dtype == np.uint8
            assert isinstance(env.action_space, gymnasium.spaces.Text)
            # seeded, then unseeded: the second reset repeats too (gymnasium's contract)
            try:
                check_env(gym, skip_render_check=True)
            except AssertionError as exc:  # say which env: a reset that differed once under load
                raise AssertionError(f"{env_id}: {exc}") from exc
        finally:
            env.close()
