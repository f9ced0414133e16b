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
  ``+cua.codec=qwen``; ``VerlLoopConfig``: ``AdapterEnvConfig`` plus ``episode_timeout_s``
  and ``store``); the turn limit is ``cua.max_steps``, else
  ``actor_rollout_ref.rollout.multi_turn.max_assistant_turns``, else the env's default.
- The episode runs through the project's one rollout loop (``harness.rollout.rollout``) on
  the ``EnvHost``'s loop, under the episode timeout, with the store's ``StoreSink`` where
  ``cua.store`` names one (so verl's episodes reach the store and ``cua view``). Its agent
  is the token-level :class:`VerlAgent`: at the first observation it adds the opening of
  the project's prompt in transcript mode (``PromptBuilder.opening``, ``harness.prompts``:
  the codec's action space to the prompt's system message, the first screenshot as an
  image block and the instruction to its last user message); each ``act`` generates through ``server_manager.generate`` (back on verl's loop) with
  every screenshot so far as ``image_data``, merges the model's tokens (mask 1) and
  returns the decoded text, which the env executes (``harness.codecs`` through the env:
  text no codec parses, or an action the page refuses, is the agent's mistake, an
  ``error: ...`` observation, never a raise). :class:`TranscriptSink` then appends the
  builder's feedback after the step (the screenshot, the env's error, the step's verdict)
  as a user turn (mask 0),
  until the episode ends, the turn limit or ``rollout.response_length``. The last
  observation is not appended: nothing follows it.
- The output is ``CUAAgentLoopOutput``: verl's ``AgentLoopOutput`` with
  ``reward_score`` = the episode's reward in the chosen mode (the sum of its step
  rewards), ``multi_modal_data["images"]`` = the screenshots, and ``extra_fields``
  ``turn_scores`` (one step reward per model turn), ``success``, ``task``, ``seed``. Its
  ``as_dict`` (what verl's v1 trainer stores) puts each turn's reward on that turn's last
  model token of ``rm_scores`` instead of the whole sum on the last token, so
  ``token_level_rewards`` carry the per-turn rewards to ``cua_step_grpo``
  (``trainers.adapters.verl_advantage``).
- An infrastructure failure (browser crash, step or episode timeout, verl's generation
  failing: ``GenerationError``) raises ``InfrastructureError`` after the store dropped the
  episode and the env was discarded: verl fails the sample's group; it is never a zero
  reward.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import uuid4

from pydantic import Field
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.utils.profiler import simple_timer

import trainers.adapters.verl_advantage  # noqa: F401 - registers cua_step_grpo with verl
from fsm_sites.serving.verdict import StepVerdict
from harness.agents.base import AgentContext, AgentStep
from harness.agents.model import Completion
from harness.cli_config import load_config
from harness.errors import ConfigError, InfrastructureError
from harness.observation import Observation
from harness.prompts import Prompt
from harness.rollout import Episode, RolloutSink, RolloutStep, describe_error, rollout
from harness.store.sink import StoreSink, env_key
from harness.store.store import TrajectoryStore
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
from trainers.errors import GenerationError

#: the name rows put in ``agent_name``
AGENT_NAME = "cua_agent"
Messages = list[dict[str, Any]]
T = TypeVar("T")


class VerlLoopConfig(AdapterEnvConfig):
    """The trainer config's ``cua`` section: the env options, the episode's limit and the
    store its episodes go to."""

    episode_timeout_s: float = Field(default=600.0, gt=0, description="limit for a whole "
                                     "episode, generation included (verl's queue too)")
    store: str | None = Field(default=None, description="trajectory store directory every "
                              "episode is written to (`cua view`); None: no store")


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
        options = plain_config(self.config.get("cua"), "the cua section (VerlLoopConfig fields)")
        self.env_config = load_config(VerlLoopConfig, options=options, where="the trainer config's cua section")
        multi_turn = self.rollout_config.get("multi_turn") or {}
        self.options = self.env_config.env_options(multi_turn.get("max_assistant_turns") or None)
        self.response_length = int(self.rollout_config.response_length)
        self.host: EnvHost = shared_host(self.env_config.provider)
        self.prompts = adapter_prompts(self.options)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        task, seed = _task_and_seed(kwargs)
        transcript = Transcript(self, list(kwargs["raw_prompt"]))
        sinks: list[RolloutSink] = []
        if self.env_config.store is not None:
            sinks.append(StoreSink(shared_store(self.env_config.store), env=env_key(task, seed),
                                   agent=VerlAgent.name, task_id=task))
        sinks.append(TranscriptSink(transcript))  # last: it sees the others' stop reasons
        provider = self.host.provider
        env = await self.host.run_async(provider.open(task, self.options))
        failed = False
        try:  # on the host's loop, where the env lives; the agent goes back to verl's for tokens
            episode = await self.host.run_async(rollout(
                env, VerlAgent(transcript, sampling_params), sinks, seed=seed,
                timeout_s=self.env_config.episode_timeout_s))
        except InfrastructureError:
            failed = True
            raise
        finally:
            await self.host.run_async(provider.discard(env) if failed else provider.release(env))
        return transcript.output(episode, task, seed)

    def opening(self, messages: Messages, obs: Observation) -> tuple[Messages, list[Any]]:
        """The prompt with the first observation: the builder's opening
        (``PromptBuilder.opening``) added to the row's own messages (``host.with_opening``)."""
        return self._with_prompt(messages, self.prompts.opening(obs), opening=True)

    def observation_turn(self, messages: Messages, obs: Observation,
                         verdict: StepVerdict | None) -> tuple[Messages, list[Any]]:
        """The transcript with the builder's feedback after a step (the screenshot, the env's
        error, the verdict where ``cua.verdicts`` asks) as a user turn."""
        shown = verdict if self.env_config.verdicts else None
        return self._with_prompt(messages, self.prompts.feedback(obs, shown))

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


@dataclass
class Transcript:
    """One episode's token transcript, what verl trains on: the prompt's and the model's
    tokens (mask 1) and the observations' (mask 0), with every screenshot so far. Its
    methods run on verl's loop (``loop.loop``), where the token builder and the server are."""

    loop: CUAAgentLoop
    messages: Messages
    token_ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    images: list[Any] = field(default_factory=list)
    image_steps: list[int] = field(default_factory=list)  # the observation step of each image
    observations: int = 0  # observation turns after the first
    metrics: dict[str, Any] = field(default_factory=dict)  # verl's timing names
    request_id: str = field(default_factory=lambda: uuid4().hex)

    @property
    def full(self) -> bool:
        return len(self.mask) >= self.loop.response_length

    async def generate(self, obs: Observation, sampling_params: dict[str, Any]) -> Completion:
        """The model's reply at ``obs`` (the first observation opens the transcript), its
        tokens merged in with mask 1."""
        if not self.token_ids:
            self.messages, self.images = self.loop.opening(self.messages, obs)
            self.image_steps = [obs.step]
            self.loop._assert_mm_supported(bool(self.images))
            self.token_ids = await self.loop.ct_build_initial_tokens(self.messages, images=self.images)
        prompt_ids = list(self.token_ids)
        with simple_timer("generate_sequences", self.metrics):
            output = await self.loop.server_manager.generate(
                request_id=self.request_id, prompt_ids=prompt_ids, sampling_params=sampling_params,
                image_data=list(self.images))
        merged, self.mask, _ = await self.loop.ct_merge_assistant_token(
            self.token_ids, output.token_ids, self.mask)
        self.token_ids = merged.token_ids
        reply = self.loop.tokenizer.decode(output.token_ids, skip_special_tokens=True)
        self.messages = [*self.messages, {"role": "assistant", "content": reply}]
        logprobs = output.log_probs if output.log_probs and len(output.log_probs) == len(output.token_ids) else None
        return Completion(reply, list(output.token_ids), logprobs, prompt_ids)

    async def observe(self, obs: Observation, verdict: StepVerdict | None) -> bool:
        """Append the observation after a step (mask 0); False, and nothing appended, when
        it would fill ``rollout.response_length``."""
        messages, new_images = self.loop.observation_turn(self.messages, obs, verdict)
        merged, mask, _ = await self.loop.ct_merge_context_msg(self.messages, messages, self.token_ids,
                                                               self.mask)
        if len(mask) >= self.loop.response_length:
            return False
        self.messages, self.token_ids, self.mask = messages, merged.token_ids, mask
        self.images, self.image_steps = self.images + new_images, [*self.image_steps, obs.step]
        self.observations += 1
        return True

    def output(self, episode: Episode, task: str, seed: int) -> CUAAgentLoopOutput:
        """verl's output of the finished episode (see the module docstring)."""
        rewards = [float(t.reward) for t in episode.transitions]
        length = self.loop.response_length
        prompt_ids = self.token_ids[: len(self.token_ids) - len(self.mask)]
        fields = {"turn_scores": rewards, "tool_rewards": [], "success": episode.success,
                  "task": task, "seed": seed}
        return CUAAgentLoopOutput(
            prompt_ids=prompt_ids, response_ids=self.token_ids[len(prompt_ids):][:length],
            response_mask=self.mask[:length], multi_modal_data={"images": self.images},
            reward_score=float(sum(rewards)), num_turns=1 + len(rewards) + self.observations,
            metrics=self.metrics, extra_fields=fields)


class VerlAgent:
    """The token-level agent at the verl seam: ``act`` hands the episode's transcript to
    verl's ``server_manager.generate`` (on verl's loop) and returns the reply as text for
    the env's codec, with its token ids and log-probabilities (``Completion.step``, as
    every model agent). One per episode, as verl's agent loop is one per sample."""

    name = "verl"

    def __init__(self, transcript: Transcript, sampling_params: dict[str, Any]) -> None:
        self.transcript, self.sampling_params = transcript, sampling_params

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        transcript = self.transcript
        try:
            completion = await on_loop(transcript.loop.loop, transcript.generate(obs, self.sampling_params))
        except Exception as exc:  # verl's side failed: no model output, not the agent's mistake
            if isinstance(exc, InfrastructureError):
                raise
            raise GenerationError(f"expected verl to generate step {obs.step + 1} of {ctx.task_id}, "
                                  f"got {describe_error(exc)}; see the error chained to this one") from exc
        return completion.step(image_steps=list(transcript.image_steps))


class TranscriptSink(RolloutSink):
    """Appends each step's observation to the transcript unless the episode ends there, and
    ends it when the transcript fills ``rollout.response_length``."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript

    async def on_step(self, episode: Episode, transition: RolloutStep) -> str | None:
        transcript = self.transcript
        metrics = transcript.metrics
        metrics["tool_calls"] = metrics.get("tool_calls", 0.0) + transition.info.step_seconds
        if transition.terminated or transition.truncated or episode.stop_reason is not None:
            return None  # the last observation is not appended: nothing follows it
        full = f"response_length={transcript.loop.response_length}"
        if transcript.full:
            return full
        fits = await on_loop(transcript.loop.loop,
                             transcript.observe(transition.after, transition.info.verdict))
        return None if fits else full


async def on_loop(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` on ``loop`` (another thread's) from this loop; cancelling the wait
    cancels it there too."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


_stores: dict[str, TrajectoryStore] = {}
_stores_lock = threading.Lock()


def shared_store(path: str) -> TrajectoryStore:
    """The process's store at ``path``, opened on first use (every loop of a process writes
    through one; the store takes writers of many processes)."""
    with _stores_lock:
        store = _stores.get(path)
        if store is None:
            store = _stores[path] = TrajectoryStore(path)
        return store


def _task_and_seed(row: dict[str, Any]) -> tuple[str, int]:
    extra_info = dict(row.get("extra_info") or {})
    task = row.get("task") or extra_info.get("task")
    if not task:
        raise ConfigError("expected the dataset row to name a task in its 'task' column (or "
                          f"extra_info.task), got columns {sorted(row)}")
    check_task_id(str(task))
    seed = row.get("seed", extra_info.get("seed"))
    return str(task), 0 if seed is None else int(seed)


__all__ = ["AGENT_NAME", "CUAAgentLoop", "CUAAgentLoopOutput", "Transcript", "TranscriptSink",
           "VerlAgent", "VerlLoopConfig"]
