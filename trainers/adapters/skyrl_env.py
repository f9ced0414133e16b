"""SkyRL (``skyrl-gym``) on the harness's envs: a ``BaseTextEnv`` registered as ``"cua"``.

    import skyrl_gym
    import trainers.adapters.skyrl_env  # registers ENV_ID = "cua"

    env = skyrl_gym.make("cua", env_config={"reward": "step", "codec": "qwen"},
                         extras={"task": "fsm:shop/open_mug", "seed": 0})
    messages, info = env.init(prompt)         # the prompt, plus the screenshot + instruction
    out = env.step(model_text)                # {observations, reward, done, metadata}

The contract, read from ``skyrl_gym`` 0.4.0 (``skyrl_gym/envs/base_text_env.py``) and how
SkyRL's generator uses it (``skyrl_gym.make(env_class, env_config=..., extras=row)``, one
env per trajectory, ``init(prompt)`` once, then ``step(model text)`` until ``done``):

- ``env_config`` (SkyRL's ``environment.skyrl_gym.cua`` section) is ``SkyRLEnvConfig``:
  the env options (codec, reward mode, step limit, timeouts), the env provider and whether
  the model is told each step's FSM verdict. Every env of a process with the same provider
  shares one ``EnvHost`` (one Chromium and the task servers), started on first use and
  closed at exit (or by ``close_shared_hosts``).
- ``extras`` is the dataset row (less its prompt): ``task`` (or ``extra_info.task``)
  picks the task, ``seed`` (or ``extra_info.seed``; 0 without one, so the samples of a
  GRPO group start alike) seeds it, and SkyRL's ``max_turns`` is the step limit unless
  ``env_config.max_steps`` sets one.
- The messages are the project's prompt in transcript mode (``PromptBuilder.opening`` and
  ``feedback``, ``harness.prompts``; screenshots as ``image_url`` blocks with ``data:``
  URLs): ``init(prompt)`` resets the env and adds the opening to the prompt (the codec's
  action space to its system message, the first screenshot and the instruction to its
  last user message).
- ``step(text)`` decodes the text with the config's codec (``harness.codecs``), executes
  it and answers with one user message, the builder's feedback: the new screenshot, the
  action's error, the FSM verdict. Text no codec can parse, or an action the page refuses,
  is the agent's mistake: the step counts and the text says ``Last action error: ...``;
  nothing raises. The reward is the step's reward in the chosen mode
  (``harness.rewards``); ``done`` is the goal, ``done()`` or the step limit. The final step answers with no observations, as
  SkyRL's own envs do (nothing follows it).
- An infrastructure failure (browser crash, step timeout) raises ``InfrastructureError``
  after discarding the env: it is never a zero reward.
"""

from __future__ import annotations

from typing import Any

from skyrl_gym import register, registry
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from harness.actions import Action
from harness.cli_config import load_config
from harness.env import Env
from harness.errors import ConfigError, InfrastructureError
from harness.observation import Observation
from harness.store.statekey import state_key_for
from harness.tasks.registry import check_task_id
from trainers.adapters.host import (  # noqa: F401 - close_shared_hosts: part of this API
    AdapterEnvConfig,
    adapter_prompts,
    close_shared_hosts,
    data_url,
    over_reason,
    plain_config,
    shared_host,
    with_opening,
)

#: the id SkyRL's ``environment.env_class`` names
ENV_ID = "cua"
Messages = list[dict[str, Any]]


class SkyRLEnvConfig(AdapterEnvConfig):
    """``env_config`` of the ``cua`` env: the env options plus where envs live."""


class CUASkyRLEnv(BaseTextEnv):
    """One trajectory of a harness task for SkyRL (see the module docstring)."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        options = plain_config(env_config, "env_config (SkyRLEnvConfig fields)")
        self.config = load_config(SkyRLEnvConfig, options=options, where="cua env_config")
        row = dict(extras or {})
        extra_info = dict(row.get("extra_info") or {})
        task = row.get("task") or extra_info.get("task")
        if not task:
            raise ConfigError("expected the dataset row to name a task in its 'task' column (or "
                              f"extra_info.task), got columns {sorted(row)}")
        check_task_id(task)
        self.task: str = task
        seed = row.get("seed", extra_info.get("seed"))
        self.seed = 0 if seed is None else int(seed)
        max_turns = row.get("max_turns")
        self.options = self.config.env_options(int(max_turns) if max_turns else None)
        self.max_turns = self.options.max_steps or 0
        self._host = shared_host(self.config.provider)
        self.prompts = adapter_prompts(self.options)
        self._env: Env | None = None
        self.rewards: list[float] = []
        self.success = False
        self.done = False

    def init(self, prompt: Messages) -> tuple[Messages, dict[str, Any]]:
        """Reset the env; the prompt with the transcript's opening added."""
        self._hand_back(failed=False)
        self.turns, self.rewards, self.success, self.done = 0, [], False, False
        self._env = self._host.open(self.task, self.options)
        try:
            obs, info = self._host.run(self._env.reset(seed=self.seed))
        except InfrastructureError:
            self._hand_back(failed=True)
            raise
        metadata = {"task": self.task, "seed": self.seed, "episode_id": info.episode_id,
                    "state": state_key_for(obs, info.fsm_state),
                    "start_distance": info.start_distance}
        return with_opening(prompt, self.prompts.opening(obs).with_images(_image)), metadata

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Decode and execute the model's text; the next observation, reward and done."""
        if self._env is None:
            if self.done:
                raise RuntimeError("expected init() after the episode ended, got another step()")
            raise RuntimeError("expected init(prompt) before step(), got step() first")
        self.turns += 1
        try:
            obs, reward, terminated, truncated, info = self._host.run(self._env.step(action))
        except InfrastructureError:
            self._hand_back(failed=True)
            raise
        self.rewards.append(reward)
        self.success = info.success
        self.done = terminated or truncated
        over = over_reason(terminated, truncated, info.success)
        feedback = self.prompts.feedback(obs, info.verdict if self.config.verdicts else None, over=over)
        text = feedback.messages[-1]["content"][-1]["text"]
        fsm_state = info.verdict.state_after if info.verdict is not None else None
        metadata = {"text": text, "action": info.action, "action_error": obs.last_action_error,
                    "verdict": info.verdict.model_dump() if info.verdict is not None else None,
                    "success": info.success, "state": state_key_for(obs, fsm_state)}
        if self.done:
            self._hand_back(failed=False)
        observations = [] if self.done else feedback.with_images(_image)
        return BaseTextEnvStepOutput(observations=observations, reward=reward, done=self.done,
                                     metadata=metadata)

    def oracle_action(self) -> Action | None:
        """The task's oracle action in the current state (tests, warm starts)."""
        if self._env is None:
            raise RuntimeError("expected an episode in progress (init(prompt)), got none")
        return self._host.run(self._env.oracle_action())

    def get_metrics(self) -> dict[str, Any]:
        return {"steps": self.turns, "success": float(self.success),
                "episode_reward": float(sum(self.rewards))}

    def close(self) -> None:
        """Hand the env back to the shared host (the host stays up for the next env)."""
        self._hand_back(failed=False)

    def _hand_back(self, *, failed: bool) -> None:
        env, self._env = self._env, None
        if env is not None and not self._host.closed:
            self._host.release(env, failed=failed)


def _image(obs: Observation) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(obs)}}


def register_skyrl_env(env_id: str = ENV_ID) -> None:
    """Register ``CUASkyRLEnv`` with ``skyrl_gym`` under ``env_id``. Idempotent."""
    if env_id not in registry:
        register(id=env_id, entry_point=f"{__name__}:CUASkyRLEnv")


register_skyrl_env()
