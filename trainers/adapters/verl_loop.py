"""verl on the harness's envs: an agent loop registered as ``"cua_agent"``.

    import trainers.adapters.verl_loop  # registers AGENT_NAME = "cua_agent" and "cua_step_grpo"
    # dataset rows: agent_name="cua_agent", extra_info={"task": "fsm:shop/open_mug", "seed": 0}

The contract, read from verl 0.9.1 (``verl/experimental/agent_loop/agent_loop.py``,
``tool_agent_loop.py``; its calling conventions are copied, not reinvented):

- verl's ``AgentLoopWorker`` instantiates the class registered under a row's
  ``agent_name`` and awaits ``run(sampling_params, **row)``. The row's ``task`` (or
  ``extra_info.task``) picks the task, ``seed`` (or ``extra_info.seed``; 0 without one, so
  the samples of a GRPO group start alike) seeds it, and ``raw_prompt`` is the prompt.
- The env options come from the trainer config's ``cua`` section (``+cua.reward=step``,
  ``+cua.codec=qwen``; ``AdapterEnvConfig``); the turn limit is ``cua.max_steps``, else
  ``actor_rollout_ref.rollout.multi_turn.max_assistant_turns``, else the env's default.
- The loop: reset the env; add the opening of the project's prompt in transcript mode
  (``PromptBuilder.opening``, ``harness.prompts``: the codec's action space to the
  prompt's system message, the first screenshot as an image block and the instruction to
  its last user message); then, each turn, generate through
  ``server_manager.generate`` with every screenshot so far as ``image_data``, merge the
  model's tokens (mask 1), execute the decoded text in the env (``harness.codecs`` through
  the env: text no codec parses, or an action the page refuses, is the agent's mistake,
  an error observation, never a raise), and append the builder's feedback (the
  screenshot, the env's error, the step's verdict) as a user turn (mask 0), until the episode
  ends, the turn limit or ``rollout.response_length``. The last observation is not
  appended: nothing follows it.
- The output is ``CUAAgentLoopOutput``: verl's ``AgentLoopOutput`` with
  ``reward_score`` = the episode's reward in the chosen mode (the sum of its step
  rewards), ``multi_modal_data["images"]`` = the screenshots, and ``extra_fields``
  ``turn_scores`` (one step reward per model turn), ``success``, ``task``, ``seed``. Its
  ``as_dict`` (what verl's v1 trainer stores) puts each turn's reward on that turn's last
  model token of ``rm_scores`` instead of the whole sum on the last token, so
  ``token_level_rewards`` carry the per-turn rewards to ``cua_step_grpo``
  (``trainers.adapters.verl_advantage``).
- An infrastructure failure (browser crash, step timeout) raises ``InfrastructureError``
  after discarding the env: verl fails the sample's group; it is never a zero reward.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.utils.profiler import simple_timer

import trainers.adapters.verl_advantage  # noqa: F401 - registers cua_step_grpo with verl
from harness.cli_config import load_config
from harness.env import Env
from harness.errors import ConfigError, InfrastructureError
from harness.observation import Observation
from harness.prompts import Prompt
from harness.tasks.registry import check_task_id
from trainers.adapters.host import (
    AdapterEnvConfig,
    EnvHost,
    adapter_prompts,
    plain_config,
    shared_host,
    with_opening,
)
from trainers.adapters.verl_advantage import turn_token_scores

#: the name rows put in ``agent_name``
AGENT_NAME = "cua_agent"
Messages = list[dict[str, Any]]


class CUAAgentLoopOutput(AgentLoopOutput):
    """verl's output, whose ``rm_scores`` carry each turn's reward at the turn's last
    model token (verl's own put ``reward_score`` on the last token)."""

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        turn_scores = self.extra_fields.get("turn_scores")
        if "rm_scores" in out and turn_scores:
            out["rm_scores"] = turn_token_scores(out["response_mask"], turn_scores)
        return out


@register(AGENT_NAME)
class CUAAgentLoop(AgentLoopBase):
    """One episode of a harness task per ``run`` (see the module docstring)."""

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        options = plain_config(self.config.get("cua"), "the cua section (AdapterEnvConfig fields)")
        self.env_config = load_config(AdapterEnvConfig, options=options, where="the trainer config's cua section")
        multi_turn = self.rollout_config.get("multi_turn") or {}
        self.options = self.env_config.env_options(multi_turn.get("max_assistant_turns") or None)
        self.response_length = int(self.rollout_config.response_length)
        self.host: EnvHost = shared_host(self.env_config.provider)
        self.prompts = adapter_prompts(self.options)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        task, seed = _task_and_seed(kwargs)
        provider = self.host.provider
        env = await self.host.run_async(provider.open(task, self.options))
        failed = False
        try:
            return await self._episode(env, task, seed, list(kwargs["raw_prompt"]), sampling_params)
        except InfrastructureError:
            failed = True
            raise
        finally:
            await self.host.run_async(provider.discard(env) if failed else provider.release(env))

    async def _episode(self, env: Env, task: str, seed: int, messages: Messages,
                       sampling_params: dict[str, Any]) -> AgentLoopOutput:
        obs, _ = await self.host.run_async(env.reset(seed=seed))
        messages, images = self._with_prompt(messages, self.prompts.opening(obs), opening=True)
        self._assert_mm_supported(bool(images))
        token_ids = await self.ct_build_initial_tokens(messages, images=images)
        mask: list[int] = []
        rewards: list[float] = []
        metrics: dict[str, Any] = {}
        request_id, observations, success = uuid4().hex, 0, False
        while True:
            with simple_timer("generate_sequences", metrics):  # verl's timing names
                output = await self.server_manager.generate(
                    request_id=request_id, prompt_ids=token_ids, sampling_params=sampling_params,
                    image_data=images)
            merged, mask, _ = await self.ct_merge_assistant_token(token_ids, output.token_ids, mask)
            token_ids = merged.token_ids
            reply = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            with simple_timer("tool_calls", metrics):
                obs, reward, terminated, truncated, info = await self.host.run_async(env.step(reply))
            rewards.append(float(reward))
            success = info.success
            if terminated or truncated or len(mask) >= self.response_length:
                break
            feedback = self.prompts.feedback(obs, info.verdict if self.env_config.verdicts else None)
            previous = [*messages, {"role": "assistant", "content": reply}]
            messages, new_images = self._with_prompt(previous, feedback)
            merged, new_mask, _ = await self.ct_merge_context_msg(previous, messages, token_ids, mask)
            if len(new_mask) >= self.response_length:
                break
            token_ids, mask, images = merged.token_ids, new_mask, images + new_images
            observations += 1
        prompt_ids = token_ids[: len(token_ids) - len(mask)]
        output_fields = {"turn_scores": rewards, "tool_rewards": [], "success": success,
                         "task": task, "seed": seed}
        return CUAAgentLoopOutput(
            prompt_ids=prompt_ids, response_ids=token_ids[len(prompt_ids):][: self.response_length],
            response_mask=mask[: self.response_length], multi_modal_data={"images": images},
            reward_score=float(sum(rewards)), num_turns=1 + len(rewards) + observations,
            metrics=metrics, extra_fields=output_fields)

    @staticmethod
    def _with_prompt(messages: Messages, prompt: Prompt[Observation], *,
                     opening: bool = False) -> tuple[Messages, list[Any]]:
        """``messages`` with the builder's ``prompt`` added (the ``opening`` to the prompt's
        own messages, ``host.with_opening``; else as new turns), and its screenshots as PIL
        images. The images go to the processor as they are (the processor resizes them to
        its pixel budget), not through verl's dataset hook, whose ``qwen_vl_utils`` needs
        torchvision."""
        screenshots = [obs.image().convert("RGB") for obs in prompt.images]
        shown = iter(screenshots)
        added = prompt.with_images(lambda _: {"type": "image", "image": next(shown)})
        return (with_opening(messages, added) if opening else [*messages, *added]), screenshots


def _task_and_seed(row: dict[str, Any]) -> tuple[str, int]:
    extra_info = dict(row.get("extra_info") or {})
    task = row.get("task") or extra_info.get("task")
    if not task:
        raise ConfigError("expected the dataset row to name a task in its 'task' column (or "
                          f"extra_info.task), got columns {sorted(row)}")
    check_task_id(str(task))
    seed = row.get("seed", extra_info.get("seed"))
    return str(task), 0 if seed is None else int(seed)


__all__ = ["AGENT_NAME", "CUAAgentLoop", "CUAAgentLoopOutput"]
