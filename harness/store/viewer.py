"""A static HTML viewer of a store: a collapsible tree, node details and path filmstrips.

The page is ``harness/templates/viewer.html.jinja`` (with ``viewer.css`` and ``viewer.js``
inlined). Each distinct screenshot is copied once, as ``img/<hash>.<ext>``; the action that
led to a node is an SVG overlay (``harness.step_display.action_svg``, as in the eval report)
on its parent's image, and its verdict is also given in words (``verdict_words``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from harness.step_display import action_svg, verdict_words
from harness.store.index import TreeIndex
from harness.store.models import Node
from harness.store.store import TrajectoryStore
from harness.templating import render


def write_viewer(store: TrajectoryStore, out: Path) -> Path:
    """Write ``out/index.html`` plus ``out/img/``; return the index path."""
    images = out / "img"
    images.mkdir(parents=True, exist_ok=True)
    copied: dict[str, str] = {}  # blob hash -> its path relative to index.html

    def image(digest: str | None) -> str | None:
        if digest is None:
            return None
        if digest not in copied:
            source = store.blobs.path(digest)
            shutil.copyfile(source, images / (digest + source.suffix))
            copied[digest] = f"img/{digest}{source.suffix}"
        return copied[digest]

    data: dict[str, dict] = {}
    trees = []
    for tree in store.trees():
        index = TreeIndex.load(store, tree.id)
        for node in index.nodes.values():
            data[str(node.id)] = _node_record(index, node, image)
        root = tree.root_id
        trees.append({"env": tree.env, "start_key": tree.start_key, "start": _short_state(tree.start_key),
                      "nodes": _subtree_items(index, root) if root is not None else []})
    target = out / "index.html"
    target.write_text(render("harness", "viewer.html.jinja", trees=trees, nodes=data, node_label=_label),
                      encoding="utf-8")
    return target


def _node_record(index: TreeIndex, node: Node, image: Callable[[str | None], str | None]) -> dict:
    parent = index.nodes.get(node.parent_id) if node.parent_id is not None else None
    drawn = parent is not None and parent.obs_blob is not None and node.action is not None
    width, height = (parent.width, parent.height) if parent is not None else (0, 0)
    return {
        "id": node.id, "parent": node.parent_id, "depth": node.depth, "state": node.state_key,
        "action": node.action, "action_text": node.action_text, "url": node.url,
        "verdict": node.verdict, "verdict_words": verdict_words(node.verdict)[1], "reward": node.step_reward, "visits": node.visits,
        "status": node.status.value, "success": node.success, "flags": list(node.flags),
        "shot": image(node.obs_blob),
        "action_shot": image(parent.obs_blob) if drawn and parent is not None else None,
        "action_svg": action_svg(node.action, width, height) if drawn else None,
        "action_size": [width, height] if drawn else None,
        "path": [n.id for n in index.path(node.id)],
    }


def _label(node: Node) -> str:
    what = node.action_text or (node.action or {}).get("type", "") or "root"
    mark = " ✓" if node.success else ""
    return f"#{node.id} {what} → {_short_state(node.state_key)}{mark}"


def _short_state(state_key: str) -> str:
    """The page of an FSM state key (its variables go to the detail panel and the tooltip)."""
    key = state_key.removeprefix("fsm:")
    return key.split("{", 1)[0] if "{" in key else key[:40]


def _subtree_items(index: TreeIndex, node_id: int) -> list[tuple[str, Node | None]]:
    """The tree in document order as ("open", node), ("leaf", node) and ("close", None)
    items, for nested ``<details>`` (collapsible natively); iterative, so deep trees do not
    hit recursion limits (nor would the template's loop)."""
    items: list[tuple[str, Node | None]] = []
    stack: list[tuple[int, bool]] = [(node_id, False)]
    while stack:
        current, closing = stack.pop()
        if closing:
            items.append(("close", None))
            continue
        kids = index.children.get(current, [])
        items.append(("open" if kids else "leaf", index.nodes[current]))
        if kids:
            stack.append((current, True))
            stack.extend((k, False) for k in reversed(kids))
    return items
