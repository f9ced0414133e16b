"""The store's rollout sink: every episode of a rollout, merged into the trajectory tree.

One sink per episode. It begins an episode writer at the first observation (a new root
frame, or ``from_node`` when the episode continues from a restored node), buffers each
step (its action, screenshot, state key, reward, verdict, agent error, and what the agent
sent and got: prompt, completion, token ids, log-probabilities, policy version, with the
prompt's images as blob hashes), commits at the end, and abandons the episode on an
infrastructure failure, so the store never holds half an episode.

The episode's task is stored under ``task_id`` (default: the env key) with the
instruction the agent saw, so exports can rebuild its prompts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.actions import describe_action
from harness.observation import Observation
from harness.rollout import Episode, RolloutSink, RolloutStep
from harness.store.blobs import blob_hash
from harness.store.models import Frame, Step
from harness.store.statekey import state_key_for

if TYPE_CHECKING:
    from harness.store.models import StoredEpisode
    from harness.store.store import TrajectoryStore
    from harness.store.writer import EpisodeWriter


def env_key(task_id: str, seed: int | None) -> str:
    """The store's name of an environment: a task at a seed (its layout and goal)."""
    return f"{task_id}@seed={seed}"


class StoreSink(RolloutSink):
    """Writes one rollout into ``store`` (see the module docstring)."""

    def __init__(self, store: TrajectoryStore, *, env: str, agent: str, from_node: int | None = None,
                 task_id: str | None = None) -> None:
        self.store, self.env, self.agent, self.from_node = store, env, agent, from_node
        self.task_id = task_id or env
        self.writer: EpisodeWriter | None = None
        self.committed: StoredEpisode | None = None
        self._blobs: dict[int, str] = {}  # observation step -> blob hash

    async def on_start(self, episode: Episode) -> None:
        first = episode.first
        self._blobs = {turn.observation.step: blob_hash(turn.observation.screenshot)
                       for turn in episode.history}
        self._blobs[first.step] = blob_hash(first.screenshot)
        if self.from_node is not None:
            self.writer = self.store.begin_episode(self.env, from_node=self.from_node,
                                                   agent=self.agent, task_id=self.task_id)
            return
        fsm_state = episode.reset_info.fsm_state if episode.reset_info is not None else None
        root = Frame(screenshot=first.screenshot, url=first.url or "",
                     state_key=state_key_for(first, fsm_state), elements=_elements(first))
        self.writer = self.store.begin_episode(self.env, root, agent=self.agent, task_id=self.task_id)

    async def on_step(self, episode: Episode, transition: RolloutStep) -> str | None:
        assert self.writer is not None
        after, info, decision = transition.after, transition.info, transition.agent_step
        self._blobs[after.step] = blob_hash(after.screenshot)
        verdict = info.verdict
        self.writer.add_step(Step(
            action=info.action, action_text=describe_action(info.action, decision.text),
            screenshot=after.screenshot, url=after.url or "",
            state_key=state_key_for(after, verdict.state_after if verdict is not None else None),
            reward=transition.reward, verdict=verdict.model_dump() if verdict is not None else None,
            terminal=transition.terminated, error=after.last_action_error,
            agent=self._agent_record(transition), elements=_elements(after)))
        return None

    async def on_end(self, episode: Episode) -> None:
        assert self.writer is not None
        self.committed = self.writer.commit(reward=episode.total_reward, success=episode.success)
        goal = episode.reset_info.goal if episode.reset_info is not None else None
        self.store.put_task(self.task_id, episode.first.instruction, tree_id=self.committed.tree_id,
                            goal_state=goal, source="suite")

    async def on_abort(self, episode: Episode | None, error: BaseException) -> None:
        if self.writer is not None and self.committed is None:
            self.writer.abandon()

    def _agent_record(self, transition: RolloutStep) -> dict[str, object] | None:
        fields = transition.agent_step.training_fields()
        if not fields:
            return None
        steps = fields.pop("image_steps", None)
        if isinstance(steps, list):
            fields["images"] = [self._blobs.get(step) for step in steps]
        return fields


def _elements(obs: Observation) -> tuple[dict[str, object], ...] | None:
    if obs.elements is None:
        return None
    return tuple(element.model_dump() for element in obs.elements)
