"""The tree-structured trajectory store (issue 4): SQLite + content-addressed blobs.

    store = TrajectoryStore("runs/store")
    episode = store.insert_trajectory(Trajectory(env="fsm:shop", root=Frame(...), steps=(...)))

See docs/store.md for the schema, exploration and export formats.
"""

from harness.store.models import (
    FLAG_RESTORE_MISMATCH,
    Frame,
    Node,
    NodeStatus,
    Step,
    StoredEpisode,
    TaskRecord,
    Trajectory,
    Tree,
)
from harness.store.statekey import state_key_for
from harness.store.store import TrajectoryStore
from harness.store.writer import EpisodeWriter

__all__ = [
    "FLAG_RESTORE_MISMATCH", "StoredEpisode", "EpisodeWriter", "Frame", "Node", "NodeStatus", "Step",
    "TaskRecord", "Trajectory", "Tree", "TrajectoryStore", "state_key_for",
]
