"""verl-agent on the harness's envs: an environment manager in the shape of its
``EnvironmentManagerBase``, duck-typed (verl-agent is not imported, and not installable
from PyPI: it is a GitHub fork of verl).

The contract, read from verl-agent's source at commit
``796ed310287fa605c9292a0fce07a86d79fde05e`` (langfengQ/verl-agent, 2026-02-27, "Update
HGPO readme (#233)"; read in the history of the fork xlan156/verl-agent, which holds that
commit, since the upstream repository was not reachable from here), files
``agent_system/environments/base.py`` (``EnvironmentManagerBase``),
``agent_system/environments/env_manager.py`` (its managers and ``make_envs``),
``agent_system/multi_turn_rollout/rollout_loop.py`` (``vanilla_multi_turn_loop``, the
caller) and ``gigpo/core_gigpo.py`` (``build_step_group``, the anchor's reader):

- ``make_envs(config)`` returns ``(envs, val_envs)``: managers over
  ``config.data.train_batch_size * config.env.rollout.n`` and ``config.data.val_batch_size``
  envs; envs ``[g*n, (g+1)*n)`` form the GRPO group ``g`` and start in the same state.
- ``reset(kwargs) -> (observations, infos)``; ``kwargs`` is the batch's ``env_kwargs``
  column or None. ``step(text_actions) -> (observations, rewards, dones, infos)``, called
  for every env of the batch at every turn, finished ones included (their results are
  masked out), so a finished env answers again with reward 0 and done.
- ``observations`` is ``{"text": [str], "image": [HxWx3 uint8 array] or None, "anchor":
  [hashable]}``; the rollout puts each text in one user turn and splices the image in at
  its ``<image>`` placeholder; GiGPO groups the steps of a group by equal anchors.
- ``rewards`` and ``dones`` are numpy arrays; ``infos[i]`` carries ``won`` (read at the
  last active step by ``success_evaluator``) and ``is_action_valid`` (its invalid-action
  penalty).

Here the anchor is the FSM state key (``fsm:<state>``; a perceptual hash and the URL for
tasks without an FSM: ``harness.store.statekey``), so GiGPO's step groups are exact. The
text is the project's prompt (``harness.prompts.PromptBuilder.build``: the codec's action
space, the instruction, the previous actions, the last error) with the step's FSM verdict
as the builder's feedback writes it, as one text: verl-agent shows the model one user turn
per step, its history in the text, so this is the builder's single-turn prompt, not its
transcript.
Steps of a batch run concurrently on one ``EnvHost``. An infrastructure failure raises
``InfrastructureError`` after discarding that env (resets retry on fresh envs first): it
is never a zero reward.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from fsm_sites.serving.verdict import StepVerdict
from harness.actions import Action
from harness.env import Env
from harness.env_providers import EnvOptions
from harness.errors import ConfigError, InfrastructureError
from harness.observation import Observation, StepInfo
from harness.prompts import HistoryEntry, Prompt
from harness.store.statekey import state_key_for
from harness.tasks.registry import check_task_id
from trainers.adapters.host import EnvHost, adapter_prompts, over_reason

log = logging.getLogger(__name__)


class VerlAgentEnvConfig(BaseModel):
    """One manager's envs: which tasks, how many, how they run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: tuple[str, ...] = Field(min_length=1, description="task ids; groups take them in turn")
    env_num: int = Field(ge=1, description="groups per batch (verl-agent's batch size)")
    group_n: int = Field(default=1, ge=1, description="envs per group, all in the same start "
                         "state (verl-agent's env.rollout.n)")
    seed: int = Field(default=0, description="seed of the first reset's first group; each "
                      "reset moves on by env_num")
    env: EnvOptions = Field(default_factory=EnvOptions, description="codec, reward mode, step "
                            "limit, timeouts of every env")
    verdicts: bool = Field(default=True, description="tell the model each step's FSM verdict")
    reset_attempts: int = Field(default=3, ge=1, description="fresh envs a reset tries before "
                                "its infrastructure error is raised")


@dataclass
class _Slot:
    """One env of the batch and its episode so far."""

    env: Env | None = None
    task: str = ""
    seed: int = 0
    history: list[HistoryEntry] = field(default_factory=list)
    obs: Observation | None = None
    verdict: StepVerdict | None = None  # the last step's, where the config shows verdicts
    over: str | None = None  # why the episode ended
    anchor: str = ""
    done: bool = False
    won: bool = False


class CUAEnvironmentManager:
    """verl-agent's environment manager over harness envs (see the module docstring)."""

    def __init__(self, config: VerlAgentEnvConfig, host: EnvHost) -> None:
        for task in config.tasks:
            check_task_id(task)
        self.config = config
        self.host = host
        self.builder = adapter_prompts(config.env)
        self._slots = [_Slot() for _ in range(config.env_num * config.group_n)]
        self._resets = 0

    @property
    def batch_size(self) -> int:
        return len(self._slots)

    def reset(self, kwargs: Any = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Start a new episode in every env. ``kwargs``: one dict per env with ``task`` and
        ``seed`` (verl-agent's ``env_kwargs`` column), or None: the groups take the
        configured tasks in turn, seeded from ``config.seed``."""
        starts = self._starts(kwargs)
        self._resets += 1
        results = self.host.run(_gather(
            *(self._reset_slot(slot, task, seed) for slot, (task, seed) in zip(self._slots, starts, strict=True))))
        infos = [{"task": slot.task, "seed": slot.seed, "won": False, "is_action_valid": True,
                  "episode_id": info.episode_id, "start_distance": info.start_distance}
                 for slot, (_, info) in zip(self._slots, results, strict=True)]
        return self._observations(), infos

    def step(self, text_actions: Sequence[str]) -> tuple[dict[str, Any], np.ndarray, np.ndarray,
                                                          list[dict[str, Any]]]:
        """Execute one text action per env; a finished env takes none (reward 0, done)."""
        if len(text_actions) != self.batch_size:
            raise ConfigError(f"expected {self.batch_size} text actions (one per env), got "
                              f"{len(text_actions)}")
        if any(slot.obs is None for slot in self._slots):
            raise RuntimeError("expected reset() before step(), got step() first")
        results = self.host.run(_gather(
            *(self._step_slot(slot, text) for slot, text in zip(self._slots, text_actions, strict=True)),
            return_exceptions=True))
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            raise failed[0]
        rewards, infos = (list(column) for column in zip(*results, strict=True))
        dones = np.array([slot.done for slot in self._slots], dtype=bool)
        return self._observations(), np.array(rewards, dtype=np.float32), dones, infos

    def build_text_obs(self) -> list[str]:
        """Each env's text: the builder's prompt at its current step as one text (messages
        apart by a blank line), ``<image>`` where the rollout puts the screenshot."""
        texts = []
        for slot in self._slots:
            assert slot.obs is not None
            prompt = self.builder.build(
                instruction=slot.obs.instruction, history=slot.history, images=[slot.obs],
                image_steps=[slot.obs.step], error=slot.obs.last_action_error,
                elements=slot.obs.elements, verdict=slot.verdict, over=slot.over)
            texts.append(prompt_text(prompt))
        return texts

    def success_evaluator(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        """``success_rate``: ``won`` at each env's last active step (as verl-agent's base)."""
        total_infos, total_batch_list = kwargs["total_infos"], kwargs["total_batch_list"]
        rates = []
        for steps, infos in zip(total_batch_list, total_infos, strict=True):
            active = [i for i, item in enumerate(steps) if item["active_masks"]]
            rates.append(float(infos[active[-1]]["won"]) if active else 0.0)
        return {"success_rate": np.array(rates)}

    def oracle_actions(self) -> list[Action | None]:
        """Each env's oracle action in its current state (tests, warm starts)."""
        envs = [slot.env for slot in self._slots]
        return self.host.run(_gather(
            *(env.oracle_action() if env is not None else _none() for env in envs)))

    def close(self) -> None:
        """Hand every env back (the host stays up: it may serve other managers)."""
        for slot in self._slots:
            env, slot.env = slot.env, None
            if env is not None and not self.host.closed:
                self.host.release(env)

    # ---- internals -------------------------------------------------------------------

    def _starts(self, kwargs: Any) -> list[tuple[str, int]]:
        if kwargs is not None:
            rows = list(kwargs)
            if len(rows) != self.batch_size or not all(isinstance(r, Mapping) and r.get("task")
                                                       for r in rows):
                raise ConfigError(f"expected env_kwargs with one {{'task': ..., 'seed': ...}} per "
                                  f"env ({self.batch_size}), got {rows!r:.200}")
            return [(r["task"], int(r.get("seed") or 0)) for r in rows]
        n, first = self.config.group_n, self._resets * self.config.env_num
        tasks = self.config.tasks
        return [(tasks[(first + i // n) % len(tasks)], self.config.seed + first + i // n)
                for i in range(self.batch_size)]

    async def _reset_slot(self, slot: _Slot, task: str, seed: int) -> tuple[Observation, Any]:
        provider = self.host.provider
        for attempt in range(1, self.config.reset_attempts + 1):
            if slot.env is not None and slot.env.task_id != task:
                env, slot.env = slot.env, None
                await provider.release(env)
            if slot.env is None:
                slot.env = await provider.open(task, self.config.env)
            try:
                obs, info = await slot.env.reset(seed=seed)
                break
            except InfrastructureError as exc:
                env, slot.env = slot.env, None
                await provider.discard(env)
                if attempt == self.config.reset_attempts:
                    raise
                log.warning("reset of %s failed (%s); retrying on a fresh env", task, exc)
        slot.task, slot.seed, slot.history, slot.obs = task, seed, [], obs
        slot.verdict, slot.over = None, None
        slot.anchor, slot.done, slot.won = state_key_for(obs, info.fsm_state), False, False
        return obs, info

    async def _step_slot(self, slot: _Slot, text: str) -> tuple[float, dict[str, Any]]:
        base = {"task": slot.task, "seed": slot.seed}
        if slot.done or slot.env is None:
            return 0.0, {**base, "won": slot.won, "is_action_valid": True, "inactive": True}
        assert slot.obs is not None
        size = (slot.obs.width, slot.obs.height)
        try:
            obs, reward, terminated, truncated, info = await slot.env.step(text)
        except InfrastructureError:
            env, slot.env = slot.env, None
            await self.host.provider.discard(env)
            raise
        slot.history.append((info.action, size, slot.obs.elements))
        slot.obs, slot.done, slot.won = obs, terminated or truncated, info.success
        slot.anchor = state_key_for(obs, _state_after(info))
        slot.verdict = info.verdict if self.config.verdicts else None
        slot.over = over_reason(terminated, truncated, info.success)
        return reward, {
            **base, "won": info.success, "is_action_valid": obs.last_action_error is None,
            "action": info.action, "action_error": obs.last_action_error,
            "verdict": info.verdict.model_dump() if info.verdict is not None else None}

    def _observations(self) -> dict[str, Any]:
        images = []
        for slot in self._slots:
            assert slot.obs is not None
            images.append(np.asarray(slot.obs.image().convert("RGB"), dtype=np.uint8))
        return {"text": self.build_text_obs(), "image": images,
                "anchor": [slot.anchor for slot in self._slots]}


def prompt_text(prompt: Prompt[Any]) -> str:
    """A prompt as verl-agent's one text: its messages apart by a blank line, their parts by
    a newline, each image part as the ``<image>`` placeholder the rollout splices it in at."""
    return "\n\n".join("\n".join("<image>" if part["type"] == "image" else part["text"]
                                  for part in message["content"])
                         for message in prompt.messages)


def _state_after(info: StepInfo) -> str | None:
    return info.verdict.state_after if info.verdict is not None else None


async def _none() -> None:
    return None


async def _gather(*coros: Any, return_exceptions: bool = False) -> list[Any]:
    """``asyncio.gather`` made on the host's loop (a gather made elsewhere binds no loop)."""
    return list(await asyncio.gather(*coros, return_exceptions=return_exceptions))


def make_verl_agent_envs(config: Any, *, provider: str = "local",
                         host: EnvHost | None = None) -> tuple[CUAEnvironmentManager,
                                                                 CUAEnvironmentManager]:
    """``(envs, val_envs)`` for verl-agent's ``make_envs``, from its config: the tasks in
    ``config.env.cua.tasks``, the codec and reward mode in ``config.env.cua.codec`` and
    ``.reward`` (defaults qwen, step), ``config.env.max_steps``, ``config.env.seed``,
    ``config.env.rollout.n``, ``config.data.train_batch_size`` and ``.val_batch_size``.
    Validation envs start at ``seed + 1000`` in groups of one, as verl-agent's own. Both
    share one host (``host``, else a new one on ``provider``)."""
    cua = config.env.cua
    options = EnvOptions(codec=_get(cua, "codec", "qwen"), reward=_get(cua, "reward", "step"),
                         max_steps=config.env.max_steps)
    group_n = config.env.rollout.n if config.env.rollout.n > 0 else 1
    common = {"tasks": tuple(cua.tasks), "env": options, "verdicts": _get(cua, "verdicts", True)}
    train = VerlAgentEnvConfig(env_num=config.data.train_batch_size, group_n=group_n,
                               seed=config.env.seed, **common)
    val = VerlAgentEnvConfig(env_num=config.data.val_batch_size, group_n=1,
                             seed=config.env.seed + 1000, **common)
    if host is None:
        host = EnvHost(provider)
        atexit.register(host.close)
    return CUAEnvironmentManager(train, host), CUAEnvironmentManager(val, host)


def _get(section: Any, name: str, default: Any) -> Any:
    value = getattr(section, name, None)
    return default if value is None else value
