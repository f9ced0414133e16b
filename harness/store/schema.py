"""The store's SQLite schema and its version table (DDL only)."""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = 1

DDL = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS trees (
    id INTEGER PRIMARY KEY,
    env TEXT NOT NULL,
    start_key TEXT NOT NULL,
    root_id INTEGER,
    created REAL NOT NULL,
    UNIQUE (env, start_key)
);
CREATE TABLE IF NOT EXISTS blobs (
    hash TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL,
    source_bytes INTEGER NOT NULL,
    width INTEGER NOT NULL,
    height INTEGER NOT NULL,
    format TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY,
    tree_id INTEGER NOT NULL REFERENCES trees(id),
    parent_id INTEGER REFERENCES nodes(id),
    depth INTEGER NOT NULL,
    state_key TEXT NOT NULL,
    action_key TEXT NOT NULL,
    action_text TEXT NOT NULL DEFAULT '',
    obs_blob TEXT REFERENCES blobs(hash),
    url TEXT NOT NULL DEFAULT '',
    verdict_json TEXT,
    step_reward REAL NOT NULL DEFAULT 0,
    visits INTEGER NOT NULL DEFAULT 1,
    status TEXT NOT NULL DEFAULT 'unexplored',
    owner TEXT,
    success INTEGER NOT NULL DEFAULT 0,
    flags TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL
);
-- the merge key: one node per (parent, resulting state, action) edge
CREATE UNIQUE INDEX IF NOT EXISTS nodes_edge
    ON nodes (tree_id, ifnull(parent_id, 0), state_key, action_key);
CREATE INDEX IF NOT EXISTS nodes_parent ON nodes (parent_id);
CREATE INDEX IF NOT EXISTS nodes_status ON nodes (status);
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    tree_id INTEGER REFERENCES trees(id),
    instruction TEXT NOT NULL,
    goal_state TEXT,
    source TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS episodes (
    id TEXT PRIMARY KEY,
    tree_id INTEGER NOT NULL REFERENCES trees(id),
    leaf_id INTEGER NOT NULL REFERENCES nodes(id),
    task_id TEXT,
    reward REAL NOT NULL,
    success INTEGER NOT NULL,
    agent TEXT NOT NULL,
    steps INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS episodes_leaf ON episodes (leaf_id);
"""


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the tables once, or check that an existing store has our schema version."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in DDL.split(";"):
            if statement.strip():
                conn.execute(statement)
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        if row is None:
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise_version(row[0])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def raise_version(found: int) -> None:
    from harness.errors import StoreError

    raise StoreError(
        f"expected store schema version {SCHEMA_VERSION}, got {found}; "
        "open it with the harness version that wrote it or start a new store"
    )
