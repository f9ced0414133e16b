"""The trajectory tree store: SQLite (WAL) plus a content-addressed blob directory.

Every process and thread gets its own connection (WAL lets one writer and many
readers work at once; ``busy_timeout`` makes concurrent writers queue instead of
failing). All writes go through ``BEGIN IMMEDIATE`` transactions, one per episode,
so a crash loses at most the episodes that were in flight.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import StoreError
from harness.store.blobs import BlobDir, BlobFormat, blob_hash
from harness.store.damage import BLOB_DIR, DB_NAME, check_store_dir, connect
from harness.store.models import (
    Frame,
    Node,
    NodeStatus,
    Step,
    StoredEpisode,
    TaskRecord,
    Trajectory,
    Tree,
)
from harness.store.schema import check_schema, ensure_schema
from harness.store.writer import EpisodeWriter

_NODE_COLUMNS = (
    "id, tree_id, parent_id, depth, state_key, action_key, action_text, obs_blob, url,"
    " verdict_json, step_reward, visits, status, success, flags, created,"
    " (SELECT width FROM blobs WHERE hash = obs_blob), (SELECT height FROM blobs WHERE hash = obs_blob),"
    " error, elements_json"
)


def process_owner() -> str:
    """Who claims a node for exploration: host and pid, so a dead claimant can be detected."""
    return f"{socket.gethostname()}:{os.getpid()}"


class TrajectoryStore:
    """A store directory: ``store.sqlite`` and ``blobs/``. Safe to open from many processes."""

    def __init__(self, path: str | Path, *, blob_format: BlobFormat = "png",
                 busy_timeout_ms: int = 60_000, recover: bool = True, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        check_store_dir(self.path)
        if read_only:
            if not (self.path / DB_NAME).is_file() or (self.path / DB_NAME).stat().st_size == 0:
                raise StoreError(f"expected a store directory containing {DB_NAME}, got {self.path}; "
                                 "collect into it first with `cua collect --store PATH`")
            recover = False
        else:
            self.path.mkdir(parents=True, exist_ok=True)
        self.blobs = BlobDir(self.path / BLOB_DIR, blob_format, create=not read_only)
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._blob_cache: dict[str, tuple[int, int, int]] = {}
        try:
            if read_only:
                check_schema(self.conn)
            else:
                ensure_schema(self.conn)
            if recover:
                self.recover_exploring()
        except BaseException:
            self.close()
            raise

    # ---- connections ---------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection (reopened after a fork: connections never cross processes)."""
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = connect(self.path / DB_NAME, read_only=self.read_only,
                           timeout_s=self._busy_timeout_ms / 1000)
            conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout_ms)}")
            if self.read_only:  # never writes: no journal change, no migration, no recovery
                self._local.conn, self._local.pid = conn, os.getpid()
                return conn
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout_ms)}")
            # NORMAL is durable against process crashes in WAL mode; only power loss
            # can drop the last commits, which the brief accepts for collection.
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taking the write lock up front to avoid upgrade deadlocks."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            conn.close()
        self._local.conn = None

    def __enter__(self) -> TrajectoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- blobs ---------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> tuple[str, int, int, int]:
        """Store a screenshot (once); return (hash, stored bytes, width, height)."""
        digest = blob_hash(data)
        cached = self._blob_cache.get(digest)
        if cached is None:
            row = self.conn.execute(
                "SELECT bytes, width, height FROM blobs WHERE hash = ?", (digest,)).fetchone()
            if row is None or not self.blobs.path(digest).exists():
                _, size, width, height = self.blobs.put(data, digest)
                row = (size, width, height)
            cached = self._blob_cache[digest] = (row[0], row[1], row[2])
        return digest, *cached

    def blob(self, digest: str) -> bytes:
        """The stored image bytes of a blob."""
        return self.blobs.get(digest)

    # ---- writing trajectories ------------------------------------------------------------

    def insert_trajectory(self, trajectory: Trajectory) -> StoredEpisode:
        """Merge a whole episode into its tree in one transaction; return the episode."""
        writer = EpisodeWriter(self, trajectory.env, trajectory.root,
                               start_key=trajectory.start_key, agent=trajectory.agent,
                               task_id=trajectory.task_id, episode_id=trajectory.episode_id)
        for step in trajectory.steps:
            writer.add_step(step)
        return writer.commit(reward=trajectory.reward, success=trajectory.success)

    def begin_episode(self, env: str, root: Frame | None = None, *, start_key: str | None = None,
                      from_node: int | None = None, agent: str = "", task_id: str | None = None,
                      episode_id: str | None = None) -> EpisodeWriter:
        """Start an incremental episode (add_step ..., then commit); nothing is written to
        the database until commit. Pass ``from_node`` to continue from a restored node."""
        return EpisodeWriter(self, env, root, start_key=start_key, from_node=from_node,
                             agent=agent, task_id=task_id, episode_id=episode_id)

    # ---- tasks ---------------------------------------------------------------------------

    def put_task(self, task_id: str, instruction: str, *, tree_id: int | None = None,
                 goal_state: str | None = None, source: str = "suite",
                 replace: bool = False) -> TaskRecord:
        """Insert a task, or return the one already stored under that id. A stored task
        without a tree gets ``tree_id``; ``replace`` also overwrites its instruction and goal."""
        update = "tree_id = coalesce(tasks.tree_id, excluded.tree_id)"
        if replace:
            update = ("tree_id = coalesce(excluded.tree_id, tasks.tree_id),"
                      " instruction = excluded.instruction, goal_state = excluded.goal_state")
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO tasks (id, tree_id, instruction, goal_state, source, created)"
                f" VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET {update}",
                (task_id, tree_id, instruction, goal_state, source, time.time()))
        return self.task(task_id)

    def task(self, task_id: str) -> TaskRecord:
        row = self.conn.execute(
            "SELECT id, tree_id, instruction, goal_state, source, created FROM tasks WHERE id = ?",
            (task_id,)).fetchone()
        if row is None:
            raise StoreError(f"expected a stored task id, got {task_id!r}; put_task it first")
        return TaskRecord(*row)

    def tasks(self, *, source: str | None = None) -> list[TaskRecord]:
        sql = "SELECT id, tree_id, instruction, goal_state, source, created FROM tasks"
        args: tuple = ()
        if source is not None:
            sql, args = sql + " WHERE source = ?", (source,)
        return [TaskRecord(*row) for row in self.conn.execute(sql + " ORDER BY created, id", args)]

    # ---- reading -------------------------------------------------------------------------

    def trees(self) -> list[Tree]:
        rows = self.conn.execute("SELECT id, env, start_key, root_id, created FROM trees ORDER BY id")
        return [Tree(*row) for row in rows]

    def tree(self, tree_id: int) -> Tree:
        row = self.conn.execute(
            "SELECT id, env, start_key, root_id, created FROM trees WHERE id = ?", (tree_id,)).fetchone()
        if row is None:
            raise StoreError(f"expected an existing tree id, got {tree_id}; see `cua store stats`")
        return Tree(*row)

    def find_tree(self, env: str, start_key: str) -> Tree | None:
        row = self.conn.execute("SELECT id, env, start_key, root_id, created FROM trees"
                                " WHERE env = ? AND start_key = ?", (env, start_key)).fetchone()
        return None if row is None else Tree(*row)

    def node(self, node_id: int) -> Node:
        row = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE id = ?", (node_id,)).fetchone()
        if row is None:
            raise StoreError(f"expected an existing node id, got {node_id}; pick one from the viewer")
        return _node(row)

    def nodes(self, tree_id: int | None = None) -> list[Node]:
        """All nodes (of one tree), in id order: parents always come before children."""
        if tree_id is None:
            rows = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM nodes ORDER BY id")
        else:
            rows = self.conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tree_id = ? ORDER BY id", (tree_id,))
        return [_node(row) for row in rows]

    def children(self, node_id: int) -> list[Node]:
        rows = self.conn.execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE parent_id = ? ORDER BY id", (node_id,))
        return [_node(row) for row in rows]

    def path_to(self, node_id: int) -> list[Node]:
        """The nodes from the root down to ``node_id``, inclusive."""
        out: list[Node] = []
        current: int | None = node_id
        while current is not None:
            node = self.node(current)
            out.append(node)
            current = node.parent_id
        return out[::-1]

    def episodes(self, *, tree_id: int | None = None, success: bool | None = None) -> list[StoredEpisode]:
        clauses, args = [], []
        if tree_id is not None:
            clauses.append("tree_id = ?")
            args.append(tree_id)
        if success is not None:
            clauses.append("success = ?")
            args.append(int(success))
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self.conn.execute(
            "SELECT id, tree_id, leaf_id, task_id, reward, success, agent, steps, created"
            f" FROM episodes{where} ORDER BY created, id", args)
        return [StoredEpisode(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6], r[7], r[8]) for r in rows]

    def episode_steps(self, episode_id: str) -> list[tuple[int, int, dict]]:
        """(step, node id, agent record) of every step of an episode that recorded what
        its agent sent and got, in step order."""
        rows = self.conn.execute("SELECT step, node_id, agent_json FROM episode_steps"
                                 " WHERE episode_id = ? ORDER BY step", (episode_id,))
        return [(step, node_id, json.loads(agent)) for step, node_id, agent in rows]

    def counts(self) -> dict[str, int]:
        """Row counts and blob bytes, for stats."""
        one = lambda sql: self.conn.execute(sql).fetchone()[0] or 0  # noqa: E731
        return {
            "trees": one("SELECT count(*) FROM trees"),
            "nodes": one("SELECT count(*) FROM nodes"),
            "episodes": one("SELECT count(*) FROM episodes"),
            "tasks": one("SELECT count(*) FROM tasks"),
            "unique_screenshots": one("SELECT count(*) FROM blobs"),
            "blob_bytes": one("SELECT sum(bytes) FROM blobs"),
        }

    def blob_sizes(self) -> dict[str, tuple[int, int]]:
        """hash -> (stored bytes, bytes as captured), for the flat-storage comparison."""
        rows = self.conn.execute("SELECT hash, bytes, source_bytes FROM blobs")
        return {digest: (stored, captured) for digest, stored, captured in rows}

    # ---- exploration bookkeeping ---------------------------------------------------------

    def claim_node(self, node_id: int) -> bool:
        """Mark a node 'exploring' for this process; False if someone else holds it."""
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE nodes SET status = 'exploring', owner = ? WHERE id = ? AND status != 'exploring'",
                (process_owner(), node_id))
        return cur.rowcount == 1

    def release_node(self, node_id: int, status: NodeStatus = NodeStatus.EXPANDED) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE nodes SET status = ?, owner = NULL WHERE id = ?",
                         (NodeStatus(status).value, node_id))

    def bump_visits(self, node_id: int, by: int = 1) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE nodes SET visits = visits + ? WHERE id = ?", (by, node_id))

    def add_flag(self, node_id: int, flag: str) -> None:
        """Add a flag (e.g. restore_mismatch) to a node; flags are a comma-separated set.
        One statement, so flags added at once by two collectors are both kept."""
        with self.transaction() as conn:
            conn.execute("UPDATE nodes SET flags = CASE flags WHEN '' THEN ?1 ELSE flags || ',' || ?1 END"
                         " WHERE id = ?2 AND instr(',' || flags || ',', ',' || ?1 || ',') = 0",
                         (flag, node_id))

    def recover_exploring(self, *, force: bool = False) -> int:
        """Put nodes left 'exploring' by a dead process back to 'unexplored' (TreeCUA's restart
        rule). Claims of live processes on this host are kept, so a second collector opening
        the store does not steal work; ``force`` resets every claim."""
        host = socket.gethostname()
        rows = self.conn.execute("SELECT id, owner FROM nodes WHERE status = 'exploring'").fetchall()
        stale = [(node_id, owner) for node_id, owner in rows if force or not _owner_alive(owner, host)]
        if not stale:
            return 0
        # the owner check skips a node that another collector reset and claimed meanwhile
        with self.transaction() as conn:
            cur = conn.executemany("UPDATE nodes SET status = 'unexplored', owner = NULL"
                                   " WHERE id = ? AND status = 'exploring' AND owner IS ?", stale)
        return cur.rowcount

def _owner_alive(owner: str | None, host: str) -> bool:
    if not owner or ":" not in owner:
        return False
    owner_host, _, pid = owner.rpartition(":")
    if owner_host != host:
        return True  # another machine's claim: we cannot tell, so keep it
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return True


def _node(row: tuple) -> Node:
    action_key = row[5]
    return Node(
        id=row[0], tree_id=row[1], parent_id=row[2], depth=row[3], state_key=row[4],
        action=json.loads(action_key) if action_key else None, action_text=row[6],
        obs_blob=row[7], url=row[8], verdict=json.loads(row[9]) if row[9] else None,
        step_reward=row[10], visits=row[11], status=NodeStatus(row[12]), success=bool(row[13]),
        flags=tuple(f for f in row[14].split(",") if f), created=row[15],
        width=row[16] or 0, height=row[17] or 0, error=row[18],
        elements=tuple(json.loads(row[19])) if row[19] else None,
    )


__all__ = ["BLOB_DIR", "DB_NAME", "Frame", "Step", "Trajectory", "TrajectoryStore",
           "check_store_dir", "process_owner"]
