"""TRL's OpenEnv pattern against a real `cua env-server` process: an ``environment_factory``
class whose tools step an OpenEnv client (``openenv-core``'s ``GenericEnvClient``, sync).
``ServedCUAEnv`` below is the example of docs/adapters.md ("OpenEnv clients"); an FSM
episode played with the oracle's clicks ends in success with the rewards a local run of
the same seed gives."""

from __future__ import annotations

import base64
import io
import os
from typing import Any

import pytest
from PIL import Image

from harness.gym_env import make_env
from tests.harness.server.conftest import TOKEN, served_process

generic = pytest.importorskip("openenv.core.generic_client")
GenericEnvClient = generic.GenericEnvClient

TASK = "fsm:shop/open_mug"


# ---- the example of docs/adapters.md, as it stands there -----------------------------------
def _image(obs: dict) -> dict:
    png = base64.b64decode(obs["screenshot"])
    return {"type": "image", "image": Image.open(io.BytesIO(png)).convert("RGB")}


class ServedCUAEnv:
    """One rollout on `cua env-server`, through OpenEnv's client (TRL's environment_factory)."""

    def __init__(self, base_url: str | None = None) -> None:
        # the token travels as the Basic-auth password: http://user:TOKEN@host:port
        self.client = GenericEnvClient(base_url=base_url or os.environ["CUA_ENV_URL"]).sync()
        self.rewards: list[float] = []
        self.over = False

    def reset(self, **row: Any) -> list[dict]:
        result = self.client.reset(task=row["task"], seed=int(row.get("seed", 0)))
        self.rewards, self.over = [], False
        obs = result.observation
        return [_image(obs), {"type": "text", "text": obs["instruction"]}]

    def click(self, x: int, y: int) -> list[dict] | str:
        """Click a point of the screen.

        Args:
            x: Pixels from the left edge of the screenshot.
            y: Pixels from the top edge of the screenshot.
        """
        return self._act({"type": "click", "x": x, "y": y})

    def done(self) -> list[dict] | str:
        """Declare the task complete; the episode ends."""
        return self._act({"type": "done"})

    def get_reward(self) -> float:
        return sum(self.rewards)

    def _act(self, action: dict) -> list[dict] | str:
        if self.over:
            return "no action taken: the episode is over"
        result = self.client.step(action)
        self.rewards.append(result.reward or 0.0)
        self.over = result.done
        obs = result.observation
        verdict = obs["metadata"]["step_info"]["verdict"]  # None for tasks without an FSM
        text = obs["last_action_error"] or (
            f"{verdict['distance_after']} steps from the goal" if verdict else "ok")
        return [_image(obs), {"type": "text", "text": text}]
# ---------------------------------------------------------------------------------------------


def oracle_clicks(seed: int) -> tuple[list[tuple[int, int]], list[float]]:
    """The oracle's clicks and step rewards for ``TASK`` at ``seed``, played locally."""
    env = make_env(TASK, reward="step")
    clicks, rewards = [], []
    try:
        env.reset(seed=seed)
        while (action := env.oracle_action()) is not None:
            assert action.type == "click"
            clicks.append((action.x, action.y))
            _, reward, terminated, _, _ = env.step(action)
            rewards.append(reward)
            if terminated:
                break
    finally:
        env.close()
    return clicks, rewards


def test_an_openenv_client_completes_an_fsm_episode_on_cua_env_server() -> None:
    clicks, local_rewards = oracle_clicks(seed=2)
    assert len(clicks) == 2 and local_rewards == [0.5, 1.5]
    with served_process("--suite", TASK, "--reward", "step") as url:
        env = ServedCUAEnv(url.replace("http://", f"http://user:{TOKEN}@"))
        try:
            image, text = env.reset(task=TASK, seed=2, prompt=[])
            assert text == {"type": "text", "text": "Open the page of Coffee mug."}
            width, height = image["image"].size
            _, feedback = env.click(width + 9, 1)  # the agent's mistake, in the answer
            assert "outside" in feedback["text"] and not env.over
            answers = [env.click(x, y) for x, y in clicks]
            assert [a[1]["text"] for a in answers] == ["1 steps from the goal",
                                                       "0 steps from the goal"]
            assert env.over and env.rewards == [0.0, *local_rewards]
            assert env.get_reward() == 2.0
            assert env.done() == "no action taken: the episode is over"
            state = env.client.state()
            assert state["step_count"] == 3 and state["done"]
        finally:
            env.client.close()
