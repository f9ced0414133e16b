"""Incremental episode writer: buffer steps in memory, merge them into the tree at commit.

Screenshots go to the blob directory as they arrive (content-addressed, so a crash
leaves at most an unreferenced file); the database sees the episode only at
``commit``, in one transaction, so a killed collector loses only episodes in flight.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from contextlib import AbstractContextManager
from typing import Protocol

from harness.actions import replace_surrogates
from harness.errors import StoreError
from harness.store.blobs import BlobDir
from harness.store.models import Frame, NodeStatus, Step, StoredEpisode, action_key


class WriterStore(Protocol):
    """What a writer needs of its store (``harness.store.store.TrajectoryStore`` is one)."""

    blobs: BlobDir

    def put_blob(self, data: bytes) -> tuple[str, int, int, int]: ...

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...


class EpisodeWriter:
    """begin (via ``TrajectoryStore.begin_episode``) -> add_step ... -> commit."""

    def __init__(self, store: WriterStore, env: str, root: Frame | None, *,
                 start_key: str | None = None, from_node: int | None = None, agent: str = "",
                 task_id: str | None = None, episode_id: str | None = None) -> None:
        if (root is None) == (from_node is None):
            raise StoreError("expected exactly one of root (a Frame) or from_node (a node id), "
                             f"got root={root!r}, from_node={from_node!r}; pass one")
        self.store, self.env, self.agent, self.task_id = store, env, agent, task_id
        self.episode_id = episode_id or uuid.uuid4().hex
        self.from_node = from_node
        self._root = root
        self._start_key = start_key or (root.state_key if root else None)
        self._blobs: dict[str, tuple[int, int, int, int]] = {}  # hash -> size, w, h, captured
        self._root_blob = self._put(root.screenshot) if root else None
        self._steps: list[tuple[Step, str]] = []
        self._done = False

    def add_step(self, step: Step) -> None:
        """Buffer one step (its screenshot is stored right away, once per unique image)."""
        if self._done:
            raise StoreError(f"expected an open episode, got episode {self.episode_id} already "
                             "committed or abandoned; begin a new one")
        self._steps.append((step, self._put(step.screenshot)))

    def _put(self, screenshot: bytes) -> str:
        digest, size, width, height = self.store.put_blob(screenshot)
        self._blobs[digest] = (size, width, height, len(screenshot))
        return digest

    def abandon(self) -> None:
        """Drop the buffered steps; nothing reaches the database."""
        self._done = True

    def commit(self, *, reward: float = 0.0, success: bool = False) -> StoredEpisode:
        """Merge the buffered steps into the tree and record the episode, atomically."""
        if self._done:
            raise StoreError(f"expected an open episode, got episode {self.episode_id} already "
                             "committed or abandoned; begin a new one")
        now = time.time()
        with self.store.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO blobs (hash, bytes, source_bytes, width, height, format)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [(h, meta[0], meta[3], meta[1], meta[2], self.store.blobs.fmt) for h, meta in self._blobs.items()])
            tree_id, parent, depth = self._start(conn, now)
            visited = [parent]
            agent_rows = []
            for number, (step, blob) in enumerate(self._steps, start=1):
                depth += 1
                parent = _merge_step(conn, tree_id, parent, depth, step, blob, now)
                visited.append(parent)
                if step.agent is not None:
                    agent_rows.append((self.episode_id, number, parent,
                                       json.dumps(step.agent)))
            conn.executemany("UPDATE nodes SET visits = visits + 1 WHERE id = ?",
                             [(node_id,) for node_id in visited if node_id is not None])
            if success:
                conn.execute("UPDATE nodes SET success = 1 WHERE id = ?", (parent,))
            conn.execute(
                "INSERT INTO episodes (id, tree_id, leaf_id, task_id, reward, success, agent,"
                " steps, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (self.episode_id, tree_id, parent, self.task_id, reward, int(success),
                 self.agent, len(self._steps), now))
            conn.executemany("INSERT INTO episode_steps (episode_id, step, node_id, agent_json)"
                             " VALUES (?, ?, ?, ?)", agent_rows)
        self._done = True
        return StoredEpisode(self.episode_id, tree_id, parent, self.task_id, reward, success,
                       self.agent, len(self._steps), now)

    def _start(self, conn: sqlite3.Connection, now: float) -> tuple[int, int, int]:
        """The tree and the node this episode starts from (creating tree and root if new)."""
        if self.from_node is not None:
            row = conn.execute("SELECT tree_id, depth FROM nodes WHERE id = ?",
                               (self.from_node,)).fetchone()
            if row is None:
                raise StoreError(f"expected an existing from_node, got {self.from_node}; "
                                 "restore a node that is in the store")
            return row[0], self.from_node, row[1]
        assert self._root is not None
        conn.execute("INSERT OR IGNORE INTO trees (env, start_key, created) VALUES (?, ?, ?)",
                     (self.env, self._start_key, now))
        tree_id, root_id = conn.execute("SELECT id, root_id FROM trees WHERE env = ? AND start_key = ?",
                                        (self.env, self._start_key)).fetchone()
        if root_id is None:
            root_id = conn.execute(
                "INSERT INTO nodes (tree_id, parent_id, depth, state_key, action_key, obs_blob, url,"
                " visits, created, elements_json) VALUES (?, NULL, 0, ?, '', ?, ?, 0, ?, ?)",
                (tree_id, self._root.state_key, self._root_blob, self._root.url, now,
                 _elements_json(self._root.elements))).lastrowid
            conn.execute("UPDATE trees SET root_id = ? WHERE id = ?", (root_id, tree_id))
        return tree_id, root_id, 0


def _merge_step(conn: sqlite3.Connection, tree_id: int, parent: int, depth: int, step: Step,
                blob: str, now: float) -> int:
    """Reuse the node on the (parent, state key, action) edge, or create it; return its id."""
    key = action_key(step.action)
    row = conn.execute(
        "SELECT id FROM nodes WHERE tree_id = ? AND ifnull(parent_id, 0) = ? AND state_key = ?"
        " AND action_key = ?", (tree_id, parent, step.state_key, key)).fetchone()
    if row is not None:
        if step.terminal:
            conn.execute("UPDATE nodes SET status = 'terminal' WHERE id = ?", (row[0],))
        return int(row[0])
    status = NodeStatus.TERMINAL if step.terminal else NodeStatus.UNEXPLORED
    verdict = json.dumps(step.verdict, sort_keys=True) if step.verdict is not None else None
    return conn.execute(
        "INSERT INTO nodes (tree_id, parent_id, depth, state_key, action_key, action_text,"
        " obs_blob, url, verdict_json, step_reward, visits, status, created, error, elements_json)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
        (tree_id, parent, depth, step.state_key, key, replace_surrogates(step.action_text), blob,
         step.url, verdict, step.reward, status.value, now,
         step.error and replace_surrogates(step.error), _elements_json(step.elements))).lastrowid or 0


def _elements_json(elements: tuple[dict, ...] | None) -> str | None:
    return json.dumps(list(elements)) if elements is not None else None
