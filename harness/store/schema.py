"""The store's SQLite schema and its version table (DDL only)."""

from __future__ import annotations

import sqlite3

from harness.errors import StoreError

SCHEMA_VERSION = 2
#: what each version added, applied in order to a store of an older version
MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: (
        "ALTER TABLE nodes ADD COLUMN error TEXT",
        "ALTER TABLE nodes ADD COLUMN elements_json TEXT",
        """CREATE TABLE IF NOT EXISTS episode_steps (
            episode_id TEXT NOT NULL REFERENCES episodes(id),
            step INTEGER NOT NULL,
            node_id INTEGER NOT NULL REFERENCES nodes(id),
            agent_json TEXT NOT NULL,
            PRIMARY KEY (episode_id, step)
        )""",
    ),
}

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
    created REAL NOT NULL,
    error TEXT,  -- the agent error of the step into this node (the next prompt shows it)
    elements_json TEXT  -- the interactive elements its observation showed, where observed
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
-- what the agent sent and got at each step of an episode (prompt, completion, token ids,
-- log-probabilities, policy version), its images as blob hashes, never copies
CREATE TABLE IF NOT EXISTS episode_steps (
    episode_id TEXT NOT NULL REFERENCES episodes(id),
    step INTEGER NOT NULL,
    node_id INTEGER NOT NULL REFERENCES nodes(id),
    agent_json TEXT NOT NULL,
    PRIMARY KEY (episode_id, step)
);
"""


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the tables once, migrate an older store to our version, or refuse a newer one."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT name FROM sqlite_master WHERE name = 'schema_version'").fetchone()
        version = conn.execute("SELECT version FROM schema_version").fetchone() if row else None
        if version is None:
            for statement in DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif version[0] > SCHEMA_VERSION:
            raise_version(version[0])
        else:
            for target in range(version[0] + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[target]:
                    conn.execute(statement)
            conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def raise_version(found: int) -> None:
    raise StoreError(
        f"expected store schema version {SCHEMA_VERSION}, got {found}; "
        "open it with the harness version that wrote it or start a new store"
    )


def check_schema(conn: sqlite3.Connection) -> None:
    """For a read-only open: the store must already have our schema version."""
    row = conn.execute("SELECT name FROM sqlite_master WHERE name = 'schema_version'").fetchone()
    version = conn.execute("SELECT version FROM schema_version").fetchone() if row else None
    if version is None or version[0] > SCHEMA_VERSION:
        raise_version(version[0] if version else 0)
        return
    if version[0] < SCHEMA_VERSION:
        raise StoreError(f"expected store schema version {SCHEMA_VERSION}, got {version[0]}; open "
                         "the store once with a command that writes (e.g. cua collect) to migrate it")
