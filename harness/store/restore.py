"""Restore a tree node in a live env: jump the FSM session there, or replay its path.

Jump (FSM sites): reset the env (a fresh session), move the session straight to the
node's state with ``FSMTask.jump`` (the site server's jump, then the page swaps the new
state in, no reload), and check that the FSM state is the node's. Replay (any env): reset, then execute the stored actions from
the root, checking each step's state key (FSM state, or screenshot hash + URL). Either
way the final screenshot is compared with the stored one by perceptual hash. A mismatch
flags the node ``restore_mismatch`` and raises ``RestoreMismatch``: exploration never
continues from a state that is not the one the tree says it is.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harness.errors import RestoreMismatch, StoreError
from harness.store.models import FLAG_RESTORE_MISMATCH, Node
from harness.store.statekey import state_key_for
from harness.store.store import TrajectoryStore

if TYPE_CHECKING:
    from harness.env import AsyncBrowserEnv
    from harness.observation import Observation

RestoreMode = Literal["auto", "jump", "replay"]
#: perceptual-hash bits that may differ between the stored and the restored screenshot
PHASH_TOLERANCE = 6
#: how long a restored page may take to finish loading before its screenshot
READY_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Restored:
    """The env now sits at ``node``: its observation, how it got there (``reset`` for the
    root, which needs neither a jump nor a replay), and the steps it cost."""

    node: Node
    observation: Observation
    mode: Literal["jump", "replay", "reset"]
    env_steps: int
    phash_distance: int


def jumpable_task(env: AsyncBrowserEnv) -> Any | None:
    """The env's FSM task where it can jump (a live FSM session), else None."""
    task = env.task
    if not callable(getattr(task, "jump", None)) or getattr(task, "session_id", None) is None:
        return None
    return task


async def restore_node(env: AsyncBrowserEnv, store: TrajectoryStore, node_id: int, *,
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
    can_jump = jumpable_task(env) is not None and node.state_key.startswith("fsm:")
    if mode == "jump" and not can_jump:
        raise StoreError(f"expected an FSM env for mode='jump', got task {env.task.id!r} "
                         f"and node state {node.state_key!r}; use mode='replay'")
    if len(path) == 1:
        return Restored(node, obs, "reset", 0, _check_shot(store, node, obs))
    if can_jump and mode != "replay":
        obs = await _jump(env, store, node)
        return Restored(node, obs, "jump", 0, _check_shot(store, node, obs))
    obs, steps = await _replay(env, store, path, spend)
    return Restored(node, obs, "replay", steps, _check_shot(store, node, obs))


async def _jump(env: AsyncBrowserEnv, store: TrajectoryStore, node: Node) -> Observation:
    task = jumpable_task(env)
    assert task is not None
    target = node.state_key.removeprefix("fsm:")
    reached = await task.jump(env.sandbox, target)
    if reached != target:
        _mismatch(store, node, f"expected the jump to reach {target!r}, got {reached!r}")
    return await observe(env)


async def _replay(env: AsyncBrowserEnv, store: TrajectoryStore, path: list[Node],
                  spend: Callable[[int], None] | None) -> tuple[Observation, int]:
    obs = None
    for steps, node in enumerate(path[1:], start=1):
        obs, _, terminated, truncated, info = await env.step(node.action)
        if spend is not None:
            spend(1)
        fsm_state = info.verdict.state_after if info.verdict is not None else None
        key = state_key_for(obs, fsm_state)
        if key != node.state_key:
            _mismatch(store, path[-1], f"expected replay step {steps} to reach {node.state_key!r} "
                      f"(node {node.id}), got {key!r}")
        if (terminated or truncated) and node is not path[-1]:
            _mismatch(store, path[-1], f"expected the episode to go on after step {steps} "
                      f"(node {node.id}), got it ended; the env is not deterministic here")
    assert obs is not None
    return obs, len(path) - 1


_READY = "document.readyState === 'complete' && !(window.__fsm && window.__fsm.pending)"


async def observe(env: AsyncBrowserEnv, *, attempts: int = 3) -> Observation:
    """A fresh observation of the env's current page (after a jump changed it).

    Waits for the page to finish loading, and retries a screenshot that Chromium refuses
    while it is still painting (seen under heavy load); a crash is not retried."""
    from sandboxes.errors import SandboxCrashed, SandboxError

    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if await env.sandbox.evaluate(_READY):
                break
        except SandboxCrashed:
            raise
        except SandboxError:
            pass  # the context was replaced by a navigation: ask again
        await asyncio.sleep(0.05)
    for attempt in range(attempts):
        try:
            return await env.observe()
        except SandboxCrashed:
            raise
        except SandboxError:
            if attempt == attempts - 1:
                raise
            await asyncio.sleep(0.25)
    raise AssertionError("unreachable")


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
