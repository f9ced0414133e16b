"""Tree exploration (TreeCUA-style): grow a trajectory tree by restoring promising nodes.

Each round picks the open node with the highest score

    score(n) = w_novelty / sqrt(1 + visits(n))          rarely visited states first
             + w_breadth / (1 + children(n))            nodes with few explored children
             + w_depth   * depth(n) / max_depth         push deeper, away from the root
             + w_success * [a success lies below n]     branch off paths that worked
             + w_progress * [n's step was on a shortest path]
             + jitter (uniform in [0, 0.01), seeded)    break ties reproducibly

restores it (jump or replay, see ``restore.py``), samples ``candidates`` first steps
there (the agent's own step first, with the path's history in its prompt, so a model
agent branches where it would act; the rest random actions, a draw that repeats an
existing edge redrawn up to 20 times, then kept; or, with ``off_path="elements"``, wrong
element steps: ``off_path.py``), and runs each as a child branch that
the agent continues until the episode ends, the branch reaches ``max_depth``, or two
steps in a row fail (an agent error, no transition fired, or a dead end). Any registered
agent explores (``--agent random|oracle|hf:PATH|...``). Every branch is one rollout
(``harness.rollout``) written by a store sink: one committed episode.
``independent`` mode runs the same branches from the root only: the baseline.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.agents.base import Agent, AgentContext, AgentStep, CodecAgent, Turn
from harness.agents.random_agent import RandomAgent
from harness.agents.registry import check_agent, make_agent
from harness.agents.scripted import ScriptedAgent
from harness.codecs.base import ActionCodec
from harness.env import DecodingEnv, resolve_codec
from harness.errors import InfrastructureError, RestoreMismatch
from harness.rollout import Episode, RolloutSink, RolloutStep, rollout
from harness.store.index import TreeIndex
from harness.store.models import (
    FLAG_OFF_PATH,
    FLAG_RESTORE_MISMATCH,
    Node,
    NodeStatus,
    Tree,
    action_key,
)
from harness.store.off_path import wrong_element_step
from harness.store.restore import RestoreMode, path_history, restore_node
from harness.store.sink import StoreSink
from harness.store.store import TrajectoryStore

if TYPE_CHECKING:
    from harness.env import Env
    from harness.observation import Observation


class ExploreWeights(BaseModel):
    """Weights of the node score (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    novelty: float = Field(default=1.0, description="weight of 1/sqrt(1 + visits)")
    breadth: float = Field(default=0.5, description="weight of 1/(1 + explored children)")
    depth: float = Field(default=0.3, description="weight of depth / max_depth")
    success: float = Field(default=0.3, description="bonus when a success lies below the node")
    progress: float = Field(default=0.5, description="bonus when the node's step was on a shortest path")


class ExploreConfig(BaseModel):
    """How one exploration run spends its budget."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget: int = Field(default=200, ge=1, description="environment steps to spend, replays included")
    seconds: float | None = Field(default=None, gt=0, description="wall-time budget; None: steps only")
    max_episodes: int | None = Field(default=None, ge=1, description="stop after this many episodes")
    agent: str = Field(default="random", description="the agent that picks actions: any "
                       "registered name, e.g. random, oracle, hf:PATH")

    @field_validator("agent")
    @classmethod
    def _registered(cls, agent: str) -> str:
        check_agent(agent)
        return agent
    explore: Literal["tree", "independent"] = Field(default="tree", description="restore nodes, or roll out from the root")
    candidates: int = Field(default=3, ge=1, description="actions sampled per expanded node")
    off_path: Literal["random", "elements"] = Field(
        default="random", description="the candidates after the agent's own: 'random' pixel "
        "actions, or 'elements': a click on another listed element or a name the list lacks "
        "(refused by the env), as an element-mode model errs (harness.store.off_path)")
    max_depth: int = Field(default=12, ge=1, description="deepest node a branch may reach")
    max_failures: int = Field(default=2, ge=1, description="failed steps in a row that end a branch")
    max_infra_retries: int = Field(default=3, ge=1, description="infrastructure failures in a "
                                   "row (sandbox, task, timeout) before the run gives up")
    restore: RestoreMode = Field(default="auto", description="jump where the env allows, else replay")
    seed: int = Field(default=0, description="env seed (layout and goal) and sampling seed")
    weights: ExploreWeights = Field(default_factory=ExploreWeights, description="node score weights")


@dataclass
class ExploreReport:
    """What a run spent and what it got."""

    env_steps: int = 0
    episodes: int = 0
    successes: int = 0
    restores_jump: int = 0
    restores_replay: int = 0
    restore_mismatches: int = 0
    infra_errors: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["steps_per_success"] = round(self.env_steps / self.successes, 2) if self.successes else None
        return out


def node_score(node: Node, children: int, success_below: bool, max_depth: int,
               weights: ExploreWeights) -> float:
    """The exploration priority of a node (higher first)."""
    return (weights.novelty / math.sqrt(1 + node.visits) + weights.breadth / (1 + children)
            + weights.depth * node.depth / max_depth + weights.success * float(success_below)
            + weights.progress * float(bool(node.on_shortest_path)))


class Explorer:
    """Grows one tree of ``store`` by driving ``env`` with ``agent`` (default: the agent
    the config names, from the agent registry)."""

    def __init__(self, store: TrajectoryStore, env: Env, config: ExploreConfig, *,
                 env_key: str, agent: Agent | None = None,
                 progress: Callable[[int], None] | None = None) -> None:  # a callback taking the steps spent
        self.store, self.env, self.config, self.env_key = store, env, config, env_key
        self.agent = agent or make_agent(config.agent)
        self.rng = random.Random(config.seed)
        self.report = ExploreReport()
        self._random = RandomAgent()
        self._progress = progress
        self._deadline = None if config.seconds is None else time.monotonic() + config.seconds

    def spent(self) -> bool:
        enough = self.config.max_episodes is not None and self.report.episodes >= self.config.max_episodes
        return self._out_of_steps() or enough

    async def run(self) -> ExploreReport:
        started, failures_in_a_row = time.monotonic(), 0
        while not self.spent():
            tree = self._tree()
            node = self.select_node(tree) if tree and self.config.explore == "tree" else None
            try:
                if node is None:
                    await self._branch(None, None, [])
                else:
                    await self._expand(node)
                failures_in_a_row = 0
            except InfrastructureError:
                # not the agent: the branch in flight is dropped (never committed), the
                # node is released (see _expand), and the round is retried
                self.report.infra_errors += 1
                failures_in_a_row += 1
                if failures_in_a_row >= self.config.max_infra_retries:
                    raise
        self.report.seconds = round(time.monotonic() - started, 3)
        return self.report

    def _tree(self) -> Tree | None:
        return next((t for t in self.store.trees() if t.env == self.env_key), None)

    def select_node(self, tree: Tree) -> Node | None:
        """The open node with the best score, or None when nothing is left to expand."""
        index = TreeIndex.load(self.store, tree.id)
        best, best_score = None, -math.inf
        for node in index.nodes.values():
            dead_end = node.verdict is not None and node.verdict.get("distance_after") is None
            if (node.status in (NodeStatus.TERMINAL, NodeStatus.EXPLORING) or dead_end
                    or FLAG_RESTORE_MISMATCH in node.flags or node.depth >= self.config.max_depth):
                continue
            score = node_score(node, len(index.children.get(node.id, [])), index.success_below[node.id],
                               self.config.max_depth, self.config.weights) + self.rng.random() * 0.01
            if score > best_score:
                best, best_score = node, score
        return best

    async def _expand(self, node: Node) -> None:
        if not self.store.claim_node(node.id):
            return
        status = NodeStatus.UNEXPLORED  # until a branch from it is committed
        try:
            taken = [child.action for child in self.store.children(node.id) if child.action]
            existing = {action_key(action) for action in taken}
            for i in range(self.config.candidates):
                if self.spent():
                    break
                restored = await self._restore(node)
                if restored is None:
                    return
                history = path_history(self.store, self.store.path_to(node.id), restored.instruction)
                first, own = await self._candidate(restored, history, i, existing, taken)
                if first.action is not None:
                    existing.add(action_key(first.action.model_dump()))
                    taken.append(first.action.model_dump())
                await self._branch(node, restored, history, first, off_path=not own)
                status = NodeStatus.EXPANDED
        finally:
            self.store.release_node(node.id, status)

    async def _restore(self, node: Node) -> Observation | None:
        try:
            restored = await restore_node(self.env, self.store, node.id, seed=self.config.seed,
                                          mode=self.config.restore, spend=self._spend)
        except RestoreMismatch:
            self.report.restore_mismatches += 1  # the node is flagged and never selected again
            return None
        if restored.mode == "jump":
            self.report.restores_jump += 1
        elif restored.mode == "replay":
            self.report.restores_replay += 1
        return restored.observation

    async def _candidate(self, obs: Observation, history: list[Turn], index: int,
                         existing: set[str], taken: list[dict[str, object]]) -> tuple[AgentStep, bool]:
        """The branch's first step: the agent's own first, then off-path ones (random new
        edges, or wrong element steps); and whether it is the agent's own."""
        if index == 0:
            ctx = AgentContext.for_episode(self.env.task_id, self.config.seed, self.rng.randrange(2**31),
                                           env=self.env)
            ctx.history = list(history)
            try:
                own: AgentStep | None = await self.agent.act(obs, ctx)
            except InfrastructureError:
                raise
            except Exception:  # noqa: BLE001 - the agent's mistake: explore with a random step
                own = None
            if own is not None and (own.action is None
                                    or action_key(own.action.model_dump()) not in existing):
                return own, True
        if self.config.off_path == "elements":
            wrong = wrong_element_step(obs, self.rng, taken, self._codec())
            if wrong is not None:
                taken.append(wrong[1].model_dump())  # not drawn again at this node
                return wrong[0], False
        action = self._random.sample(obs.width, obs.height, self.rng)
        for _ in range(20):  # a new edge, if the sampler finds one
            if action_key(action.model_dump()) not in existing:
                break
            action = self._random.sample(obs.width, obs.height, self.rng)
        return AgentStep(action=action), False

    async def _branch(self, node: Node | None, start: Observation | None, history: list[Turn],
                      first: AgentStep | None = None, *, off_path: bool = False) -> None:
        """One rollout from ``node`` (restored to ``start``) or from the root (a reset); the
        node its ``first`` step reaches is flagged ``off_path`` when that step was not the
        agent's own choice."""
        agent: Agent = ScriptedAgent([first], then=self.agent) if first is not None else self.agent
        sink = StoreSink(self.store, env=self.env_key, agent=self.agent.name,
                         from_node=node.id if node is not None else None)
        limits = _BranchLimits(self, node.depth if node is not None else 0)
        episode = await rollout(self.env, agent, [sink, limits], seed=self.config.seed,
                                index=self.report.episodes, start=start, history=history)
        self.report.episodes += 1
        self.report.successes += int(episode.success)
        if off_path and node is not None and sink.committed is not None:
            path = self.store.path_to(sink.committed.leaf_id)
            if len(path) > node.depth + 1:
                self.store.add_flag(path[node.depth + 1].id, FLAG_OFF_PATH)

    def _codec(self) -> ActionCodec:
        """The codec that decodes the agent's text in this env (the env's, by default)."""
        own = self.agent.codec if isinstance(self.agent, CodecAgent) else None
        return resolve_codec(own or (self.env.codec if isinstance(self.env, DecodingEnv) else None))

    def _out_of_steps(self) -> bool:
        """Step or time budget spent: ends a branch mid-way (unlike the episode budget, which
        only counts finished branches)."""
        over_time = self._deadline is not None and time.monotonic() >= self._deadline
        return self.report.env_steps >= self.config.budget or over_time

    def _spend(self, steps: int) -> None:
        self.report.env_steps += steps
        if self._progress is not None and steps:
            self._progress(steps)


class _BranchLimits(RolloutSink):
    """Spends each step of a branch and ends it at max_depth, after max_failures failed
    steps in a row (an agent error, no transition fired, or a dead end), or when the
    explorer's budget is spent."""

    def __init__(self, explorer: Explorer, depth: int) -> None:
        self.explorer, self.depth, self.failures = explorer, depth, 0

    async def on_step(self, episode: Episode, transition: RolloutStep) -> str | None:
        explorer, config = self.explorer, self.explorer.config
        explorer._spend(1)
        self.depth += 1
        verdict = transition.info.verdict
        failed = transition.after.last_action_error is not None or (verdict is not None and (
            not verdict.transition_fired or verdict.distance_after is None))
        self.failures = self.failures + 1 if failed else 0
        if self.failures >= config.max_failures:
            return f"{self.failures} failed steps in a row"
        if self.depth >= config.max_depth:
            return f"max_depth={config.max_depth}"
        if explorer._out_of_steps():
            return "budget spent"
        return None
