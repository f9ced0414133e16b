"""Typed records of the trajectory tree store (frozen dataclasses; no SQL here)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum


class NodeStatus(StrEnum):
    """Exploration status of a node, as TreeCUA keeps it."""

    UNEXPLORED = "unexplored"  # reached, children not yet sampled
    EXPLORING = "exploring"  # a collector has claimed it and is sampling children
    EXPANDED = "expanded"  # children sampled
    TERMINAL = "terminal"  # the episode ended here (goal reached, failure, or done)


#: flag set on a node whose replayed screenshot differed from the stored one
FLAG_RESTORE_MISMATCH = "restore_mismatch"
#: flag set on a node reached by an explorer's off-path candidate (a random or wrong first
#: step of a branch), not by the exploring agent's own choice
FLAG_OFF_PATH = "off_path"


@dataclass(frozen=True)
class Tree:
    """One tree per environment and start state."""

    id: int
    env: str
    start_key: str
    root_id: int | None
    created: float


@dataclass(frozen=True)
class Node:
    """A state reached by the action on the edge from its parent."""

    id: int
    tree_id: int
    parent_id: int | None
    depth: int
    state_key: str
    action: dict[str, object] | None
    action_text: str
    obs_blob: str | None
    url: str
    verdict: dict[str, object] | None
    step_reward: float
    visits: int
    status: NodeStatus
    success: bool
    flags: tuple[str, ...]
    width: int
    height: int
    created: float
    error: str | None = None  # the agent error of the step into this node
    elements: tuple[dict[str, object], ...] | None = None  # the elements its observation showed

    @property
    def on_shortest_path(self) -> bool | None:
        """The step verdict's on_shortest_path, None where the step had no verdict."""
        if self.verdict is None:
            return None
        return bool(self.verdict.get("on_shortest_path"))


@dataclass(frozen=True)
class TaskRecord:
    """A task known to the store: from a suite, or a hindsight goal built from a path."""

    id: str
    tree_id: int | None
    instruction: str
    goal_state: str | None
    source: str
    created: float


@dataclass(frozen=True)
class StoredEpisode:
    """A committed trajectory, identified by the leaf it ended on."""

    id: str
    tree_id: int
    leaf_id: int
    task_id: str | None
    reward: float
    success: bool
    agent: str
    steps: int
    created: float


@dataclass(frozen=True)
class Frame:
    """The first observation of an episode (the tree's root state)."""

    screenshot: bytes
    url: str
    state_key: str
    elements: tuple[dict[str, object], ...] | None = None


@dataclass(frozen=True)
class Step:
    """One agent step: the action (None: the agent's text did not parse) and what it led to."""

    action: dict[str, object] | None
    action_text: str
    screenshot: bytes
    url: str
    state_key: str
    reward: float = 0.0
    verdict: dict[str, object] | None = None
    terminal: bool = False
    error: str | None = None  # the agent error this step produced (shown in the next prompt)
    #: what the agent sent and got (AgentStep.training_fields, images as blob hashes)
    agent: dict[str, object] | None = None
    elements: tuple[dict[str, object], ...] | None = None  # the elements the new observation showed


@dataclass(frozen=True)
class Trajectory:
    """A whole episode to merge into the tree in one transaction."""

    env: str
    root: Frame
    steps: tuple[Step, ...]
    task_id: str | None = None
    reward: float = 0.0
    success: bool = False
    agent: str = ""
    start_key: str | None = None  # defaults to root.state_key
    episode_id: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


def action_key(action: dict[str, object] | None) -> str:
    """Canonical JSON of an action: the edge label that merging compares."""
    if action is None:
        return ""
    return json.dumps(action, sort_keys=True, separators=(",", ":"))
