"""The one rollout path: every episode in the project runs through :func:`rollout`.

``cua eval``, tree exploration, task verification, restore-by-replay and GRPO rollouts
all call it. It resets the env (or starts from an observation a restore produced), asks
the agent for a step, has the env execute and judge it, and repeats until the episode
ends, under the env's step timeouts and an optional episode timeout. What an episode
leaves behind (a results.jsonl line, store nodes, report screenshots, training batches,
checks that end it early) is a :class:`RolloutSink`, never a copy of this loop.

The two error channels:

- the agent's mistakes are part of the episode: text no codec parses comes back as
  ``last_action_error``; an exception the agent raises ends the episode as a failure,
  recorded in ``Episode.agent_error``; a model's output never raises out of here;
- infrastructure failures (``InfrastructureError``: sandbox, task, site server, timeouts)
  raise out of ``rollout`` after every sink's ``on_abort`` ran (a store sink drops the
  episode in flight); the caller retries or records them. So does an exception a sink
  raises on purpose (a replay that no longer matches the tree).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.actions import ClickElement, duration_s, parse_action
from harness.agents.base import Agent, AgentContext, AgentStep, CodecAgent, Turn
from harness.codecs.base import ActionCodec
from harness.env import DecodingEnv, Env, resolve_codec
from harness.errors import EpisodeTimeout, InfrastructureError
from harness.observation import Observation, ResetInfo, StepInfo
from harness.rewards import episode_progress


@dataclass(frozen=True)
class RolloutStep:
    """One step of an episode: what the agent saw and decided, and what came of it."""

    step: int  # 1-based
    before: Observation
    agent_step: AgentStep
    after: Observation
    reward: float
    terminated: bool
    truncated: bool
    info: StepInfo


@dataclass
class Episode:
    """The episode in flight (what sinks see) and, once ``rollout`` returns, its result."""

    task_id: str
    seed: int | None
    index: int
    env: Env
    first: Observation  # the observation the episode started from
    reset_info: ResetInfo | None  # None when it started from a restored state
    history: list[Turn] = field(default_factory=list)  # steps before ``first`` (a restored path)
    transitions: list[RolloutStep] = field(default_factory=list)
    agent_error: str | None = None  # the exception the agent raised, which ended the episode
    stop_reason: str | None = None  # why a sink (or max_steps) ended the episode early
    wall_seconds: float = 0.0

    @property
    def last(self) -> Observation:
        return self.transitions[-1].after if self.transitions else self.first

    @property
    def steps(self) -> int:
        return len(self.transitions)

    @property
    def success(self) -> bool:
        return any(t.info.success for t in self.transitions)

    @property
    def total_reward(self) -> float:
        return sum(t.reward for t in self.transitions)

    @property
    def terminated(self) -> bool:
        return bool(self.transitions) and self.transitions[-1].terminated

    @property
    def truncated(self) -> bool:
        return bool(self.transitions) and self.transitions[-1].truncated

    @property
    def start_distance(self) -> int | None:
        if self.reset_info is not None and self.reset_info.start_distance is not None:
            return self.reset_info.start_distance
        verdicts = [t.info.verdict for t in self.transitions if t.info.verdict is not None]
        return verdicts[0].distance_before if verdicts else None

    @property
    def progress(self) -> float:
        """The fraction of the start's distance-to-goal the episode closed (``harness.rewards``)."""
        verdicts = [t.info.verdict for t in self.transitions if t.info.verdict is not None]
        final = verdicts[-1].distance_after if verdicts else None
        return episode_progress(self.start_distance, final, success=self.success,
                                has_verdicts=bool(verdicts))


class RolloutSink:
    """What an episode leaves behind. Override the hooks you need; each may be async work."""

    async def on_start(self, episode: Episode) -> None:
        """The episode has its first observation."""

    async def on_step(self, episode: Episode, transition: RolloutStep) -> str | None:
        """A step was taken; return a reason to end the episode here, or None to go on."""
        return None

    async def on_end(self, episode: Episode) -> None:
        """The episode ended (goal, failure, truncation, a stop, or the agent's exception)."""

    async def on_abort(self, episode: Episode | None, error: BaseException) -> None:
        """The episode failed on infrastructure (or a sink raised): drop what is in flight.
        ``episode`` is None when the failure came before its first observation."""


async def rollout(env: Env, agent: Agent, sinks: Sequence[RolloutSink] = (), *,
                  seed: int | None = None, index: int = 0, start: Observation | None = None,
                  history: Sequence[Turn] = (), max_steps: int | None = None,
                  timeout_s: float | None = None) -> Episode:
    """Run one episode of ``env`` with ``agent``; see the module docstring.

    ``seed`` and ``index`` key the episode: the env's reset seed, and with the task id the
    agent's random stream (``AgentContext.rng``).
    ``start``: the env already shows this observation (a restored state), so no reset;
    ``history``: the steps that led there, as the agent would recall them.
    ``max_steps``: end after this many steps even where the env would go on.
    ``timeout_s``: the whole episode's limit (``EpisodeTimeout``, an infrastructure error),
    extended by the time each executed action takes by design (a wait, a long text).
    Text from an agent with a ``codec`` is decoded with that codec.
    """
    state: dict[str, Episode] = {}
    try:
        async with asyncio.timeout(timeout_s) as limit:
            episode = await _run(env, agent, sinks, seed, index, start, list(history), max_steps,
                                 state, limit)
    except BaseException as exc:
        error: BaseException = exc
        if isinstance(exc, TimeoutError) and not isinstance(exc, InfrastructureError):
            error = EpisodeTimeout(f"expected the episode of {env.task_id} to end within "
                                   f"{timeout_s}s, got a timeout; raise the episode timeout")
        for sink in sinks:
            await sink.on_abort(state.get("episode"), error)
        if error is exc:
            raise
        raise error from exc
    return episode


def _planned_seconds(decision: AgentStep, codec: ActionCodec | None, obs: Observation) -> float | None:
    """The time the decided action takes by design, known before it runs (None: unknown)."""
    action = decision.action
    if action is None:
        if decision.text is None or codec is None:
            return None
        try:
            decoded = codec.decode(decision.text, size=(obs.width, obs.height))
        except Exception:  # noqa: BLE001 - the env reports the agent's mistake, not us
            return 0.0
        return 0.0 if isinstance(decoded, ClickElement) else duration_s(decoded)
    return duration_s(action)


def _extend(limit: asyncio.Timeout, seconds: float) -> None:
    deadline = limit.when()
    if deadline is not None and seconds > 0:
        limit.reschedule(deadline + seconds)


async def _run(env: Env, agent: Agent, sinks: Sequence[RolloutSink], seed: int | None,
               index: int, start: Observation | None, history: list[Turn], max_steps: int | None,
               state: dict[str, Episode], limit: asyncio.Timeout) -> Episode:
    began = time.perf_counter()
    reset_info = None
    if start is None:
        start, reset_info = await env.reset(seed=seed)
    episode = state["episode"] = Episode(env.task_id, seed, index, env, start, reset_info, history)
    ctx = AgentContext.for_episode(env.task_id, seed, index, env=env)
    ctx.history = list(history)
    codec = agent.codec if isinstance(agent, CodecAgent) else None
    decoder = resolve_codec(codec) if codec is not None else env.codec if isinstance(env, DecodingEnv) else None
    for sink in sinks:
        await sink.on_start(episode)
    obs, ended = start, False
    while not ended:
        if max_steps is not None and episode.steps >= max_steps:
            episode.stop_reason = f"max_steps={max_steps}"
            break
        ctx.step = obs.step
        decision = await _decide(agent, obs, ctx, episode)
        if decision is None:
            break
        act = decision.action if decision.action is not None else decision.text
        # A wait's (or typing's) time is not a hang: the limit moves by it before the step
        # runs, or after it where only the env could decode the text.
        planned = _planned_seconds(decision, decoder, obs)
        _extend(limit, planned or 0.0)
        after, reward, terminated, truncated, info = await env.step(
            act if act is not None else "", codec=codec)
        ctx.history.append(Turn(obs, decision, info.action))
        if planned is None and info.action is not None:
            _extend(limit, duration_s(parse_action(info.action)))
        transition = RolloutStep(episode.steps + 1, obs, decision, after, reward, terminated,
                                truncated, info)
        episode.transitions.append(transition)
        obs, ended = after, terminated or truncated
        for sink in sinks:
            reason = await sink.on_step(episode, transition)
            if reason is not None and episode.stop_reason is None:
                episode.stop_reason, ended = reason, True
    episode.wall_seconds = time.perf_counter() - began
    for sink in sinks:
        await sink.on_end(episode)
    return episode


async def _decide(agent: Agent, obs: Observation, ctx: AgentContext,
                  episode: Episode) -> AgentStep | None:
    """The agent's step, or None (and ``episode.agent_error``) when it raised or answered
    something that is not a step."""
    try:
        decision: object = await agent.act(obs, ctx)
    except InfrastructureError:
        raise  # e.g. an oracle's env.oracle_action() timed out: not the agent's fault
    except Exception as exc:  # the agent's failure: the episode ends as a failure
        episode.agent_error = describe_error(exc)
        return None
    if isinstance(decision, AgentStep):
        return decision
    try:  # what AgentStep.of does, for a value of any type (validation refuses a non-action)
        if isinstance(decision, str):
            return AgentStep(text=decision)
        return AgentStep.model_validate({"action": decision})
    except (TypeError, ValueError):
        episode.agent_error = (f"expected the agent to return an AgentStep (or an action or "
                               f"text), got {type(decision).__name__}")
        return None


def describe_error(exc: BaseException) -> str:
    """``Type: message`` (or just the type when the message is empty)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
