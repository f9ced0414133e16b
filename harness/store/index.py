"""An in-memory view of one tree: children, subtree outcomes and episode paths."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from harness.store.models import Episode, Node
from harness.store.store import TrajectoryStore


@dataclass
class TreeIndex:
    """Nodes of one tree plus the episodes that end in it, indexed for exports and viewing."""

    nodes: dict[int, Node]
    children: dict[int, list[int]]
    episodes: list[Episode]
    success_below: dict[int, bool] = field(default_factory=dict)
    failure_below: dict[int, bool] = field(default_factory=dict)

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
        """success_below / failure_below per node, folded bottom-up (children have larger ids)."""
        failed_leaves = {e.leaf_id for e in self.episodes if not e.success}
        succeeded_leaves = {e.leaf_id for e in self.episodes if e.success}
        for node_id in sorted(self.nodes, reverse=True):
            kids = self.children.get(node_id, [])
            self.success_below[node_id] = (self.nodes[node_id].success or node_id in succeeded_leaves
                                           or any(self.success_below[k] for k in kids))
            self.failure_below[node_id] = (node_id in failed_leaves
                                           or any(self.failure_below[k] for k in kids))

    def path(self, node_id: int) -> list[Node]:
        """Root .. node_id, inclusive."""
        out = []
        current: int | None = node_id
        while current is not None:
            out.append(self.nodes[current])
            current = self.nodes[current].parent_id
        return out[::-1]

    def episodes_below(self, node_id: int) -> list[Episode]:
        """Episodes whose leaf is node_id or one of its descendants, in creation order."""
        return [e for e in self.episodes if any(n.id == node_id for n in self.path(e.leaf_id))]
