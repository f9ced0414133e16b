"""GRPO's rollouts: groups of episodes from one start, and tree branches from restored states.

Every episode runs through the one rollout path (``harness.rollout.rollout``) in its own env
(its own FSM session: siblings never share state), with one shared model agent whose
``Batcher`` batches the concurrent episodes' model calls, so the env steps of some episodes
overlap the generation of others. Every episode, branches included, is written to the
trajectory store by a ``StoreSink`` with the policy version that sampled it.

A **branch** restores a state an episode of the group visited: a fresh env is reset with the
group's seed, jumped (``env.jump``) to the state the parent was in before its step ``t``, and
the agent continues with the parent's first ``t`` steps as its history, so the prompt prefix
is exactly the parent's. Branches of one state share the anchor of the parent's step there.

A **no-op** step (:func:`no_op_steps`) is an invalid one (the env refused it: text no codec
parses, an unknown element) or the ``idle_after``-th step in a row that fired no transition.
With ``no_op.effect: end``, :class:`NoOpStop` ends the training episode at the first one,
so junk steps stop piling up until ``max_steps``; the step itself is recorded, verdict and
all, like any other.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.agents.base import Agent, Turn
from harness.env_providers import EnvOptions, EnvProvider
from harness.errors import InfrastructureError
from harness.rollout import Episode, RolloutSink, RolloutStep, rollout
from harness.store.sink import StoreSink, env_key
from trainers.grpo.config import NoOpSpec

if TYPE_CHECKING:
    from harness.env import Env
    from harness.observation import Observation
    from harness.store.sink import StoreSink
    from harness.store.store import TrajectoryStore

ATTEMPTS = 3  # tries of one episode on infrastructure errors (a fresh env each)


@dataclass
class Rollout:
    """One episode of a rollout group, as training sees it."""

    episode: Episode
    group: str  # the rollout group: one task from one start state in one update
    number: int  # the episode's number in its group (branches follow the G episodes)
    prefix: list[RolloutStep] = field(default_factory=list)  # a branch's restored steps
    parent: int | None = None  # the episode a branch restored a state of
    stored: object | None = None  # the store's committed episode, if written

    @property
    def branch_step(self) -> int:
        return len(self.prefix)

    @property
    def states(self) -> list[str | None]:
        """The FSM state each of this episode's own steps was taken from."""
        return [t.info.verdict.state_before if t.info.verdict is not None else None
                for t in self.episode.transitions]


def no_op_steps(transitions: Sequence[RolloutStep], idle_after: int) -> list[bool]:
    """Which of an episode's steps are no-ops (see the module docstring)."""
    out, idle = [], 0
    for t in transitions:
        invalid = t.after.last_action_error is not None
        verdict = t.info.verdict
        idle = idle + 1 if invalid or (verdict is not None and not verdict.transition_fired) else 0
        out.append(invalid or idle >= idle_after)
    return out


def training_rewards(transitions: Sequence[RolloutStep], spec: NoOpSpec) -> list[float]:
    """The steps' rewards as training sees them: a no-op step's less ``spec.penalty``."""
    if spec.effect == "off" or spec.penalty == 0:
        return [t.reward for t in transitions]
    return [t.reward - spec.penalty * flag
            for t, flag in zip(transitions, no_op_steps(transitions, spec.idle_after), strict=True)]


class NoOpStop(RolloutSink):
    """Ends a training episode at its first no-op step (``no_op.effect: end``)."""

    def __init__(self, idle_after: int) -> None:
        self.idle_after = idle_after

    async def on_step(self, episode: Episode, transition: RolloutStep) -> str | None:
        if not no_op_steps(episode.transitions, self.idle_after)[-1]:
            return None
        error = transition.after.last_action_error
        return f"no-op: {error}" if error else f"no-op: {self.idle_after} steps in a row fired nothing"


class Rollouts:
    """Runs groups and branches over an env provider with one agent (see the module docstring).
    ``sinks``: more sinks every episode gets (a training run's ``NoOpStop``)."""

    def __init__(self, agent: Agent, envs: EnvProvider, options: EnvOptions, *,
                 store: TrajectoryStore | None = None, episode_timeout_s: float = 600.0,
                 sinks: Sequence[RolloutSink] = ()) -> None:
        self.agent, self.envs, self.options = agent, envs, options
        self.store = store
        self.sinks = list(sinks)
        self.episode_timeout_s = episode_timeout_s
        self.env_steps = 0

    async def group(self, task_id: str, seed: int, size: int, first_index: int,
                    group: str) -> list[Rollout]:
        """``size`` episodes of ``task_id`` from the start of layout ``seed``."""
        episodes = await asyncio.gather(*(self._episode(task_id, seed, first_index + i)
                                          for i in range(size)))
        return [Rollout(e, group, i, stored=s) for i, (e, s) in enumerate(episodes)]

    async def branches(self, parent: Rollout, step: int, count: int, first_index: int,
                       first_number: int) -> list[Rollout]:
        """``count`` continuations from the state ``parent`` was in before its step ``step``
        (0-based), restored by jump."""
        episodes = await asyncio.gather(*(self._episode(
            parent.episode.task_id, parent.episode.seed, first_index + i, parent=parent, step=step)
            for i in range(count)))
        prefix = parent.prefix + parent.episode.transitions[:step]
        return [Rollout(e, parent.group, first_number + i, prefix=prefix, parent=parent.number, stored=s)
                for i, (e, s) in enumerate(episodes)]

    async def record(self, rollouts: Sequence[Rollout]) -> None:
        """Write rollouts that ran elsewhere (another rank of a data-parallel run) to the
        store through the same sink, a branch under its parent's node, as if they ran here.
        ``rollouts`` lists each group's episodes before its branches, as ``collect`` does."""
        done: dict[tuple[str, int], Rollout] = {}
        for r in rollouts:
            parent = done.get((r.group, r.parent)) if r.parent is not None else None
            step = len(r.prefix) - len(parent.prefix) if parent is not None else 0
            sinks, sink = self._sinks(r.episode.task_id, r.episode.seed, parent, step)
            for each in sinks:
                await each.on_start(r.episode)
                for transition in r.episode.transitions:
                    await each.on_step(r.episode, transition)
                await each.on_end(r.episode)
            r.stored = sink.committed if sink is not None else None
            done[(r.group, r.number)] = r

    async def _episode(self, task_id: str, seed: int | None, index: int, *, parent: Rollout | None = None,
                       step: int = 0) -> tuple[Episode, object | None]:
        error: BaseException | None = None
        for _ in range(ATTEMPTS):
            env = await self.envs.open(task_id, self.options)
            try:
                sinks, store_sink = self._sinks(task_id, seed, parent, step)
                sinks = [*sinks, *self.sinks]
                if parent is None:
                    episode = await rollout(env, self.agent, sinks, seed=seed, index=index,
                                            timeout_s=self.episode_timeout_s)
                else:
                    start, history = await _restore(env, parent, step)
                    episode = await rollout(env, self.agent, sinks, seed=seed, index=index, start=start,
                                            history=history, timeout_s=self.episode_timeout_s)
            except InfrastructureError as exc:
                error = exc
                await self.envs.discard(env)
                continue
            except BaseException:
                await self.envs.discard(env)
                raise
            await self.envs.release(env)
            self.env_steps += episode.steps
            return episode, store_sink.committed if store_sink is not None else None
        assert error is not None
        raise error

    def _sinks(self, task_id: str, seed: int | None, parent: Rollout | None,
               step: int) -> tuple[list[RolloutSink], StoreSink | None]:
        if self.store is None:
            return [], None
        from_node = None
        if parent is not None and parent.stored is not None:
            path = self.store.path_to(parent.stored.leaf_id)  # type: ignore[attr-defined]
            from_node = path[parent.branch_step + step].id
        sink = StoreSink(self.store, env=env_key(task_id, seed), agent=self.agent.name,
                         from_node=from_node, task_id=task_id)
        return [sink], sink


async def _restore(env: Env, parent: Rollout, step: int) -> tuple[Observation, list[Turn]]:
    """Reset ``env`` to the parent's layout, jump to the parent's state before ``step`` and
    return that observation with the steps that led there (the agent's history)."""
    transitions = parent.prefix + parent.episode.transitions[:step]
    await env.reset(seed=parent.episode.seed)
    own = parent.episode.transitions[step]
    verdict = own.info.verdict
    if verdict is None:
        raise ValueError(f"expected an FSM step verdict to branch from, got none at step {step} of "
                         f"{parent.episode.task_id}; tree rollouts need FSM tasks")
    start, _ = await env.jump(verdict.state_before, steps=len(transitions))
    history = [Turn(t.before, t.agent_step, t.info.action) for t in transitions]
    return start, history


def branch_points(rollouts: Sequence[Rollout], count: int, where: str,
                  rng: random.Random) -> list[tuple[Rollout, int]]:
    """Up to ``count`` (episode, step) pairs of distinct FSM states to branch from.

    ``disagree``: states where the group's episodes took different actions or whose episodes
    ended with different returns (most disagreeing first); ``first``: states in order of
    first visit; ``random``: states drawn at random. Goal states are never branched from.
    """
    visits: dict[str, list[tuple[Rollout, int]]] = {}
    for r in rollouts:
        for t, state in enumerate(r.states):
            if state is not None:
                visits.setdefault(state, []).append((r, t))
    if not visits or count == 0:
        return []
    states = list(visits)
    if where == "random":
        rng.shuffle(states)
    elif where == "disagree":
        states.sort(key=lambda s: -_disagreement(visits[s]))
        states = [s for s in states if _disagreement(visits[s]) > 0] or states
    return [visits[s][0] for s in states[:count]]


def _disagreement(visits: list[tuple[Rollout, int]]) -> int:
    """How many distinct (action, outcome) pairs the visits of one state show, minus one."""
    seen = {(str(r.episode.transitions[t].info.action), r.episode.success) for r, t in visits}
    return len(seen) - 1
