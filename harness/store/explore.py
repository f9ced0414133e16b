"""Tree exploration (TreeCUA-style): grow a trajectory tree by restoring promising nodes.

Each round picks the open node with the highest score

    score(n) = w_novelty / sqrt(1 + visits(n))          rarely visited states first
             + w_breadth / (1 + children(n))            nodes with few explored children
             + w_depth   * depth(n) / max_depth         push deeper, away from the root
             + w_success * [a success lies below n]     branch off paths that worked
             + w_progress * [n's step was on a shortest path]
             + jitter (uniform in [0, 0.01), seeded)    break ties reproducibly

restores it (jump or replay, see ``restore.py``), samples ``candidates`` actions there
(the oracle's action first for the oracle agent, the rest random; a random draw that
repeats an existing edge is redrawn, up to 20 times, then kept), and runs each as a
child branch that the agent continues until the episode ends, the branch reaches
``max_depth``, or two steps in a row fail (an agent error, no transition fired, or a
dead end). Every branch is one committed episode.
``independent`` mode runs the same branches from the root only: the baseline.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.actions import Action, parse_action
from harness.errors import RestoreMismatch
from harness.store.models import FLAG_RESTORE_MISMATCH, Frame, Node, NodeStatus, Step, action_key
from harness.store.restore import RestoreMode, restore_node
from harness.store.statekey import state_key_for
from harness.store.store import TrajectoryStore

if TYPE_CHECKING:
    from harness.env import AsyncBrowserEnv
    from harness.observation import Observation
    from harness.store.writer import EpisodeWriter


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
    agent: Literal["oracle", "random"] = Field(default="random", description="who picks actions")
    explore: Literal["tree", "independent"] = Field(default="tree", description="restore nodes, or roll out from the root")
    candidates: int = Field(default=3, ge=1, description="actions sampled per expanded node")
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
    """Grows one tree of ``store`` by driving ``env`` (an ``AsyncBrowserEnv``)."""

    def __init__(self, store: TrajectoryStore, env: AsyncBrowserEnv, config: ExploreConfig, *,
                 env_key: str, progress=None) -> None:  # noqa: ANN001 - a rich Progress task callback
        self.store, self.env, self.config, self.env_key = store, env, config, env_key
        self.rng = random.Random(config.seed)
        self.report = ExploreReport()
        self.task_id: str | None = None
        self._task_has_tree = False
        self._progress = progress
        self._deadline = None if config.seconds is None else time.monotonic() + config.seconds

    def spent(self) -> bool:
        enough = self.config.max_episodes is not None and self.report.episodes >= self.config.max_episodes
        return self._out_of_steps() or enough

    async def run(self) -> ExploreReport:
        from harness.errors import EpisodeTimeout, TaskError
        from sandboxes.errors import SandboxError

        started, failures_in_a_row = time.monotonic(), 0
        while not self.spent():
            tree = self._tree()
            node = self.select_node(tree) if tree and self.config.explore == "tree" else None
            try:
                if node is None:
                    await self._rollout_from_root()
                else:
                    await self._expand(node)
                failures_in_a_row = 0
            except (SandboxError, TaskError, EpisodeTimeout):
                # infrastructure, not the agent: the branch in flight is dropped (never
                # committed), the node is released (see _expand), and the round is retried
                self.report.infra_errors += 1
                failures_in_a_row += 1
                if failures_in_a_row >= self.config.max_infra_retries:
                    raise
        self.report.seconds = round(time.monotonic() - started, 3)
        return self.report

    def _tree(self):
        root = self.store.trees()
        return next((t for t in root if t.env == self.env_key), None)

    def select_node(self, tree) -> Node | None:  # noqa: ANN001 - a Tree
        """The open node with the best score, or None when nothing is left to expand."""
        from harness.store.index import TreeIndex

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

    async def _rollout_from_root(self) -> None:
        obs, info = await self.env.reset(seed=self.config.seed)
        self._ensure_task(obs)
        root = Frame(screenshot=obs.screenshot, url=obs.url, state_key=state_key_for(obs, info.fsm_state))
        writer = self.store.begin_episode(self.env_key, root, agent=self.config.agent, task_id=self.task_id)
        await self._branch(writer, obs, first=None, depth=0)

    async def _expand(self, node: Node) -> None:
        if not self.store.claim_node(node.id):
            return
        status = NodeStatus.UNEXPLORED  # until a branch from it is committed
        try:
            existing = {action_key(child.action) for child in self.store.children(node.id)}
            for i in range(self.config.candidates):
                if self.spent():
                    break
                restored = await self._restore(node)
                if restored is None:
                    return
                action = await self._candidate(restored, i, existing)
                existing.add(action_key(action.model_dump()))
                writer = self.store.begin_episode(self.env_key, from_node=node.id,
                                                  agent=self.config.agent, task_id=self.task_id)
                await self._branch(writer, restored, first=action, depth=node.depth)
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
        self._ensure_task(restored.observation)
        if restored.mode == "jump":
            self.report.restores_jump += 1
        elif restored.mode == "replay":
            self.report.restores_replay += 1
        return restored.observation

    async def _candidate(self, obs: Observation, index: int, existing: set[str]) -> Action:
        if index == 0 and self.config.agent == "oracle":
            oracle = await self.env.oracle_action()
            if oracle is not None and action_key(oracle.model_dump()) not in existing:
                return oracle
        for _ in range(20):  # a new edge, if the sampler finds one
            action = self._random(obs)
            if action_key(action.model_dump()) not in existing:
                return action
        return action

    async def _policy(self, obs: Observation) -> Action:
        if self.config.agent == "oracle":
            action = await self.env.oracle_action()
            if action is not None:
                return action
        return self._random(obs)

    def _random(self, obs: Observation) -> Action:
        from harness.agents.random_agent import RandomAgent

        agent = RandomAgent(seed=self.rng.randrange(2**31))
        return agent.sample(obs.width, obs.height)

    async def _branch(self, writer: EpisodeWriter, obs: Observation, *, first: Action | None,
                      depth: int) -> None:
        failures, success, total = 0, False, 0.0
        action = first
        while True:
            action = action or await self._policy(obs)
            obs, reward, terminated, truncated, info = await self.env.step(action)
            self._spend(1)
            depth += 1
            verdict = info.verdict
            fsm_state = verdict.state_after if verdict is not None else None
            writer.add_step(Step(
                action=info.action or action.model_dump(), action_text=describe_action(action),
                screenshot=obs.screenshot, url=obs.url, state_key=state_key_for(obs, fsm_state),
                reward=reward, verdict=verdict.model_dump() if verdict is not None else None,
                terminal=terminated))
            total += reward
            success = success or bool(getattr(info, "success", False))
            failed = obs.last_action_error is not None or (verdict is not None and (
                not verdict.transition_fired or verdict.distance_after is None))
            failures = failures + 1 if failed else 0
            if (terminated or truncated or failures >= self.config.max_failures
                    or depth >= self.config.max_depth or self._out_of_steps()):
                break
            action = None
        writer.commit(reward=total, success=success)
        self.report.episodes += 1
        self.report.successes += int(success)

    def _out_of_steps(self) -> bool:
        """Step or time budget spent: ends a branch mid-way (unlike the episode budget, which
        only counts finished branches)."""
        over_time = self._deadline is not None and time.monotonic() >= self._deadline
        return self.report.env_steps >= self.config.budget or over_time

    def _spend(self, steps: int) -> None:
        self.report.env_steps += steps
        if self._progress is not None and steps:
            self._progress(steps)

    def _ensure_task(self, obs: Observation) -> None:
        """Store the suite task; on a fresh store its tree exists only after the first
        commit, so the task is stored again (filling in the tree) on a later round."""
        if self.task_id is not None and self._task_has_tree:
            return
        tree = self._tree()
        if self.task_id is None or tree is not None:
            goal = getattr(getattr(self.env.task, "task", None), "goal", None)
            self.task_id = self.env_key
            self._task_has_tree = tree is not None
            self.store.put_task(self.env_key, obs.instruction, tree_id=tree.id if tree else None,
                                goal_state=goal, source="suite")


def describe_action(action: Action | dict) -> str:
    """A short human label for an action, e.g. ``click(12, 40)`` or ``type_text("hi")``."""
    data = (parse_action(action) if isinstance(action, dict) else action).model_dump()
    kind = data["type"]
    if "x" in data:
        extra = f", to=({data['to_x']}, {data['to_y']})" if kind == "drag" else ""
        extra += f", dy={data['dy']}" if kind == "scroll" else ""
        return f"{kind}({data['x']}, {data['y']}{extra})"
    if kind == "type_text":
        return f"type_text({data['text']!r})"
    if kind == "key":
        return "key(" + "+".join(data["keys"]) + ")"
    if kind == "done":
        return f"done({data['answer']!r})" if data.get("answer") else "done()"
    return f"wait({data.get('seconds', 1.0)})"
