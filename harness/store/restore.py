"""Restore a tree node in a live env: jump the FSM session there, or replay its path.

Jump (FSM sites): reset the env (a fresh session), move the session straight to the
node's state (``Env.jump``: the site server's jump, then the page swaps the new
state in, no reload), and check that the FSM state is the node's. Replay (any env):
reset, then re-run the stored actions from the root through the one rollout path
(``harness.rollout``, a scripted agent), checking each step's state key (FSM state, or
screenshot hash + URL). Either way the final screenshot is compared with the stored one
by perceptual hash. A mismatch flags the node ``restore_mismatch`` and raises
``RestoreMismatch``: exploration never continues from a state that is not the one the
tree says it is. ``path_history`` rebuilds the path's earlier steps as the agent would
have seen them, so an agent continuing from the node gets the prompt it would have had.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from harness.actions import parse_action
from harness.agents.base import AgentStep, Turn
from harness.agents.scripted import ScriptedAgent
from harness.errors import RestoreMismatch, StoreError
from harness.observation import Observation
from harness.rollout import Episode, RolloutSink, RolloutStep, rollout
from harness.store.models import FLAG_RESTORE_MISMATCH, Node
from harness.store.statekey import state_key_for
from harness.store.store import TrajectoryStore
from sandboxes.base import UIElement

if TYPE_CHECKING:
    from harness.env import Env

RestoreMode = Literal["auto", "jump", "replay"]
#: perceptual-hash bits that may differ between the stored and the restored screenshot
PHASH_TOLERANCE = 6


@dataclass(frozen=True)
class Restored:
    """The env now sits at ``node``: its observation, how it got there (``reset`` for the
    root, which needs neither a jump nor a replay), and the steps it cost."""

    node: Node
    observation: Observation
    mode: Literal["jump", "replay", "reset"]
    env_steps: int
    phash_distance: int


async def restore_node(env: Env, store: TrajectoryStore, node_id: int, *,
                       seed: int | None, mode: RestoreMode = "auto",
                       spend: Callable[[int], None] | None = None) -> Restored:
    """Put ``env`` in the state of ``node_id`` (see the module docstring). ``spend`` is
    called with 1 after every env step a replay takes, also when the restore then fails."""
    path = store.path_to(node_id)
    node = path[-1]
    obs, info = await env.reset(seed=seed)
    root_key = state_key_for(obs, info.fsm_state)
    if root_key != path[0].state_key:
        _mismatch(store, node, f"expected the env to start at the tree root {path[0].state_key!r}, "
                  f"got {root_key!r}; restore nodes with the env and seed that built the tree")
    can_jump = env.can_jump and node.state_key.startswith("fsm:")
    if mode == "jump" and not can_jump:
        raise StoreError(f"expected an FSM env that can jump for mode='jump', got task "
                         f"{env.task_id!r} and node state {node.state_key!r}; use mode='replay' "
                         "(a served env jumps only where its server runs with --expose jump)")
    if len(path) == 1:
        return Restored(node, obs, "reset", 0, _check_shot(store, node, obs))
    if can_jump and mode != "replay":
        target = node.state_key.removeprefix("fsm:")
        obs, reached = await env.jump(target, steps=node.depth)
        if reached != target:
            _mismatch(store, node, f"expected the jump to reach {target!r}, got {reached!r}")
        return Restored(node, obs, "jump", 0, _check_shot(store, node, obs))
    replayed = await rollout(env, ScriptedAgent([_scripted(n) for n in path[1:]]),
                             [_ReplayCheck(store, path, spend)], start=obs, max_steps=len(path) - 1)
    return Restored(node, replayed.last, "replay", replayed.steps, _check_shot(store, node, replayed.last))


def path_history(store: TrajectoryStore, path: list[Node], instruction: str) -> list[Turn]:
    """The earlier steps of ``path`` (root .. node) as turns an agent recalls: each parent's
    screenshot, with its error, and the action taken from it."""
    turns = []
    for step, (parent, child) in enumerate(zip(path, path[1:], strict=False)):
        shot = store.blob(parent.obs_blob) if parent.obs_blob else b""
        seen = Observation(screenshot=shot, image_format="png", width=parent.width,
                           height=parent.height, instruction=instruction, url=parent.url or None,
                           step=step, last_action_error=parent.error,
                           elements=tuple(UIElement.model_validate(e) for e in parent.elements)
                           if parent.elements is not None else None)
        turns.append(Turn(seen, _scripted(child), child.action))
    return turns


def _scripted(node: Node) -> AgentStep:
    # a step whose text did not parse is replayed as text that does not parse either
    return AgentStep(action=parse_action(node.action)) if node.action else AgentStep(text="")


class _ReplayCheck(RolloutSink):
    """Checks each replayed step against the stored node, and spends the step."""

    def __init__(self, store: TrajectoryStore, path: list[Node],
                 spend: Callable[[int], None] | None) -> None:
        self.store, self.path, self.spend = store, path, spend

    async def on_step(self, episode: Episode, transition: RolloutStep) -> str | None:
        if self.spend is not None:
            self.spend(1)
        node = self.path[transition.step]
        verdict = transition.info.verdict
        key = state_key_for(transition.after, verdict.state_after if verdict is not None else None)
        if key != node.state_key:
            _mismatch(self.store, self.path[-1], f"expected replay step {transition.step} to reach "
                      f"{node.state_key!r} (node {node.id}), got {key!r}")
        ended = transition.terminated or transition.truncated
        if ended and node is not self.path[-1]:
            _mismatch(self.store, self.path[-1], f"expected the episode to go on after step "
                      f"{transition.step} (node {node.id}), got it ended; the env is not "
                      "deterministic here")
        return None


def phash_distance(stored: bytes, current: bytes) -> int:
    import imagehash
    from PIL import Image

    return imagehash.phash(Image.open(io.BytesIO(stored))) - imagehash.phash(Image.open(io.BytesIO(current)))


def _check_shot(store: TrajectoryStore, node: Node, obs: Observation) -> int:
    if node.obs_blob is None:
        return 0
    distance = phash_distance(store.blob(node.obs_blob), obs.screenshot)
    if distance > PHASH_TOLERANCE:
        _mismatch(store, node, f"expected the restored screenshot within {PHASH_TOLERANCE} phash bits "
                  f"of node {node.id}'s, got {distance}; the page differs from the stored state")
    return distance


def _mismatch(store: TrajectoryStore, node: Node, message: str) -> None:
    store.add_flag(node.id, FLAG_RESTORE_MISMATCH)
    raise RestoreMismatch(f"node {node.id}: {message}")
