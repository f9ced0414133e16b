"""The env over real Chromium and real MiniWoB pages served from 127.0.0.1."""

from __future__ import annotations

import pytest

from harness.actions import Click, TypeText
from harness.agents import AgentContext, OracleAgent
from harness.env import AsyncEnv
from harness.errors import ConfigError
from harness.tasks.registry import make_task

# The test's own oracle: read the page's DOM for the button the instruction names.
_TARGET_CENTER_JS = """(() => {
  const wanted = /"(.*)"/.exec(document.getElementById('query').textContent)[1];
  const button = [...document.querySelectorAll('#area button')].find(b => b.textContent === wanted);
  const r = button.getBoundingClientRect();
  return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];
})()"""


@pytest.fixture
async def env_for(provider):
    envs: list[AsyncEnv] = []

    async def make(task_id: str, **kwargs) -> AsyncEnv:
        task = make_task(task_id)
        sandbox = await provider.new_sandbox(task.sandbox_request)
        env = AsyncEnv(task, sandbox, **kwargs)
        envs.append(env)
        return env

    yield make
    for env in envs:
        await env.close()
        await env.sandbox.close()


async def test_click_button_solved_by_dom_oracle_gets_positive_reward(env_for) -> None:
    env = await env_for("miniwob:click-button")
    obs, info = await env.reset(seed=7)
    assert obs.instruction.startswith("Click on the")
    assert (obs.width, obs.height) == (160, 210) and obs.step == 0
    assert info.task == "miniwob:click-button" and info.seed == 7
    x, y = await env.sandbox.evaluate(_TARGET_CENTER_JS)
    obs, reward, terminated, truncated, step_info = await env.step(Click(x=x, y=y))
    assert reward > 0 and step_info.raw_reward == 1.0 and step_info.success
    assert terminated and not truncated and obs.last_action_error is None and obs.step == 1


async def test_wrong_click_is_negative_and_same_seed_same_instruction(env_for) -> None:
    env = await env_for("miniwob:click-button")
    first, _ = await env.reset(seed=3)
    assert env.max_steps == 30  # no limit given and none from the task
    again, _ = await env.reset(seed=3)
    assert first.instruction == again.instruction and first.screenshot == again.screenshot
    # The yellow instruction box is no button: a click there does nothing yet.
    obs, reward, terminated, _, info = await env.step(Click(x=80, y=20))
    assert reward == 0.0 and not terminated and not info.success


async def test_unparseable_text_is_an_agent_error_and_costs_a_step(env_for) -> None:
    env = await env_for("miniwob:click-test", codec="json", max_steps=2)
    await env.reset(seed=0)
    assert env.max_steps == 2
    obs, reward, terminated, truncated, info = await env.step("I think I should click somewhere")
    assert obs.last_action_error and "expected" in obs.last_action_error
    assert info.action is None and info.action_text == "I think I should click somewhere"
    assert obs.step == 1 and reward == 0.0 and not terminated and not truncated
    obs, *_, truncated, _ = await env.step('{"type": "click", "x": 3, "y": 200}')
    assert obs.last_action_error is None and truncated and obs.step == 2


async def test_click_outside_the_viewport_is_an_agent_error(env_for) -> None:
    env = await env_for("miniwob:click-test")
    await env.reset(seed=0)
    obs, reward, terminated, _, info = await env.step(Click(x=500, y=30))
    assert obs.last_action_error and "160x210" in obs.last_action_error
    assert info.action == {"type": "click", "x": 500, "y": 30}
    assert obs.step == 1 and not terminated and reward == 0.0


async def test_oracle_agent_solves_and_refuses_tasks_without_oracle(env_for) -> None:
    env = await env_for("miniwob:click-link")
    obs, _ = await env.reset(seed=11)
    step = await OracleAgent().act(obs, AgentContext("miniwob:click-link", 11, 0, env=env))
    _, reward, terminated, _, _ = await env.step(step.action)
    assert reward > 0 and terminated
    no_oracle = await env_for("miniwob:click-dialog")
    obs, _ = await no_oracle.reset(seed=0)
    with pytest.raises(ConfigError, match="click-dialog"):
        await OracleAgent().act(obs, AgentContext("miniwob:click-dialog", 0, 0, env=no_oracle))


async def test_step_before_reset_and_bad_options_raise(env_for) -> None:
    env = await env_for("miniwob:click-test")
    with pytest.raises(RuntimeError, match="reset"):
        await env.step(TypeText(text="x"))
    with pytest.raises(ConfigError, match="options"):
        await env.reset(seed=0, options={"difficulty": 3})


def test_gymnasium_env_runs_an_episode_and_passes_check_env() -> None:
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    import harness.gym_ids  # noqa: F401 - registers the cua/ ids

    wrapped = gymnasium.make("cua/miniwob.click-test", max_steps=5)
    env = wrapped.unwrapped
    try:
        obs, info = env.reset(seed=1)
        assert obs["instruction"] == "Click the button." and info["seed"] == 1
        assert obs["screenshot"].shape == (210, 160, 3) and obs in env.observation_space
        assert env.last_observation is not None and env.last_observation.width == 160
        obs, _, _, _, info = env.step('{"type": "click", "x": 1}')  # text, decoded by the codec
        assert "expected" in info["last_action_error"]
        obs, reward, terminated, truncated, info = env.step(env.oracle_action())
        assert reward > 0 and terminated and not truncated and info["success"]
        check_env(env, skip_render_check=True)
    finally:
        env.close()
