"""Store statistics, including what the same episodes would cost stored flat."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from harness.store.index import TreeIndex
from harness.store.models import Node
from harness.store.store import TrajectoryStore

#: the keys `cua store stats --json` prints, exactly
JSON_KEYS = ("trees", "nodes", "episodes", "unique_screenshots", "bytes", "flat_bytes", "saving_ratio")


def flat_line(episode_id: str, step: int, node: Node) -> str:
    """The JSONL line a flat harness writes per step (one image file per step beside it)."""
    return json.dumps({
        "episode_id": episode_id, "step": step, "action": node.action,
        "action_text": node.action_text, "url": node.url, "state_key": node.state_key,
        "reward": node.step_reward, "verdict": node.verdict,
        "image": f"{episode_id}/{step:04d}.png",
    }, sort_keys=True) + "\n"


def disk_bytes(root: Path) -> int:
    """Every byte under the store directory: database, WAL and blobs (not the -shm index,
    which is a memory map that SQLite rebuilds)."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.name.endswith("-shm"))


def store_stats(store: TrajectoryStore) -> dict:
    """Counts, bytes on disk, the flat-storage equivalent, and depth/branching histograms.

    flat_bytes counts, for every episode, one JSONL line per observation on its
    root-to-leaf path plus that screenshot as captured (one file per occurrence).
    """
    counts = store.counts()
    blob_sizes = store.blob_sizes()
    flat = 0
    depth: Counter[int] = Counter()
    branching: Counter[int] = Counter()
    for tree in store.trees():
        index = TreeIndex.load(store, tree.id)
        for node in index.nodes.values():
            depth[node.depth] += 1
            branching[len(index.children.get(node.id, []))] += 1
        for episode in index.episodes:
            for step, node in enumerate(index.path(episode.leaf_id)):
                flat += len(flat_line(episode.id, step, node).encode())
                flat += blob_sizes.get(node.obs_blob, (0, 0))[1] if node.obs_blob else 0
    on_disk = disk_bytes(store.path)
    return {
        "trees": counts["trees"],
        "nodes": counts["nodes"],
        "episodes": counts["episodes"],
        "unique_screenshots": counts["unique_screenshots"],
        "bytes": on_disk,
        "flat_bytes": flat,
        "saving_ratio": round(flat / on_disk, 3) if on_disk else 0.0,
        "tasks": counts["tasks"],
        "blob_bytes": counts["blob_bytes"],
        "depth_histogram": {str(k): v for k, v in sorted(depth.items())},
        "branching_histogram": {str(k): v for k, v in sorted(branching.items())},
    }
