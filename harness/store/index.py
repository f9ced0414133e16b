"""An in-memory view of one tree: children, subtree outcomes and episode paths."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from harness.store.models import Node, StoredEpisode
from harness.store.store import TrajectoryStore


@dataclass
class TreeIndex:
    """Nodes of one tree plus the episodes that end in it, indexed for exports and viewing."""

    nodes: dict[int, Node]
    children: dict[int, list[int]]
    episodes: list[StoredEpisode]
    success_below: dict[int, bool] = field(default_factory=dict)
    failure_below: dict[int, bool] = field(default_factory=dict)
    #: per node, the episode below it that names its task: successes first, then the oldest
    task_episode_below: dict[int, StoredEpisode | None] = field(default_factory=dict)

    @classmethod
    def load(cls, store: TrajectoryStore, tree_id: int) -> TreeIndex:
        nodes = {node.id: node for node in store.nodes(tree_id)}
        children: dict[int, list[int]] = defaultdict(list)
        for node in nodes.values():
            if node.parent_id is not None:
                children[node.parent_id].append(node.id)
        index = cls(nodes, dict(children), store.episodes(tree_id=tree_id))
        index._outcomes()
        return index

    def _outcomes(self) -> None:
        """The per-node fields above, folded bottom-up (children have larger ids)."""
        failed_leaves = {e.leaf_id for e in self.episodes if not e.success}
        succeeded_leaves = {e.leaf_id for e in self.episodes if e.success}
        with_task: dict[int, StoredEpisode] = {}
        for episode in self.episodes:
            held = with_task.get(episode.leaf_id)
            if episode.task_id is not None and (held is None or _task_rank(episode) < _task_rank(held)):
                with_task[episode.leaf_id] = episode
        for node_id in sorted(self.nodes, reverse=True):
            kids = self.children.get(node_id, [])
            self.success_below[node_id] = (self.nodes[node_id].success or node_id in succeeded_leaves
                                           or any(self.success_below[k] for k in kids))
            self.failure_below[node_id] = (node_id in failed_leaves
                                           or any(self.failure_below[k] for k in kids))
            found = [e for e in (with_task.get(node_id), *(self.task_episode_below[k] for k in kids)) if e]
            self.task_episode_below[node_id] = min(found, key=_task_rank) if found else None

    def path(self, node_id: int) -> list[Node]:
        """Root .. node_id, inclusive."""
        out = []
        current: int | None = node_id
        while current is not None:
            out.append(self.nodes[current])
            current = self.nodes[current].parent_id
        return out[::-1]


def _task_rank(episode: StoredEpisode) -> tuple[bool, float, str]:
    return not episode.success, episode.created, episode.id
