"""Hindsight tasks: every reached state can be a goal, with an instruction built from its path.

For FSM trees the instruction strings together the descriptions of the transitions that
fired on the way ("open the cart, then checkout"); elsewhere it lists the actions.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.store.index import TreeIndex
from harness.store.models import Node, TaskRecord
from harness.store.store import TrajectoryStore

Describe = Callable[[str], str | None]  # transition id -> imperative phrase, if known


def path_instruction(path: list[Node], describe: Describe | None = None) -> str:
    """An instruction that reaching ``path[-1]`` satisfies, built from the steps that got there."""
    phrases: list[str] = []
    for node in path[1:]:
        verdict = node.verdict or {}
        if verdict:
            if not verdict.get("transition_fired"):
                continue  # a wasted step is not part of what the user asked for
            transition = verdict.get("transition_id")
            phrase = describe(str(transition)) if describe and transition else None
            phrases.append(phrase or f"do {transition}")
        else:
            phrases.append(node.action_text or "act")
    if not phrases:
        return "Stay on the start page."
    text = ", then ".join(phrases)
    return text[0].upper() + text[1:] + "."


def hindsight_tasks(store: TrajectoryStore, tree_id: int, *, describe: Describe | None = None,
                    fsm_only: bool = True) -> list[TaskRecord]:
    """Store one task per distinct reached state of a tree (shortest recorded path wins)."""
    index = TreeIndex.load(store, tree_id)
    tree = store.tree(tree_id)
    best: dict[str, Node] = {}
    for node in index.nodes.values():
        if node.parent_id is None or (fsm_only and not node.state_key.startswith("fsm:")):
            continue
        if tree.root_id is not None and node.state_key == index.nodes[tree.root_id].state_key:
            continue
        if node.state_key not in best or node.depth < best[node.state_key].depth:
            best[node.state_key] = node
    out = []
    for state_key, node in sorted(best.items(), key=lambda kv: kv[1].id):
        instruction = path_instruction(index.path(node.id), describe)
        # replace: the tree only grows, so this path is never longer than the stored one's
        out.append(store.put_task(f"hindsight:{tree.env}:{state_key}", instruction, tree_id=tree_id,
                                  goal_state=state_key.removeprefix("fsm:"), source="hindsight",
                                  replace=True))
    return out
