"""Damaged stores are refused naming the file, and a read-only open writes nothing (real
SQLite files, damaged the ways disks and people damage them)."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from harness.errors import StoreError
from harness.store import NodeStatus, TrajectoryStore
from harness.store.cli import register
from harness.store.damage import damage_error
from harness.store.stats import store_stats
from tests.harness.store.helpers import damage_store, filled_store, folder_bytes

FOUND_AT_OPEN = {"empty": "an empty file beside existing blobs", "not_sqlite": "not one",
                 "truncated": "(it was truncated)"}


@pytest.mark.parametrize("read_only", [True, False])
@pytest.mark.parametrize("kind", sorted(FOUND_AT_OPEN))
def test_damage_on_disk_is_refused_at_open(tmp_path, kind, read_only):
    damage_store(filled_store(tmp_path / "s"), kind)
    before = folder_bytes(tmp_path / "s")
    with pytest.raises(StoreError, match=f"{tmp_path / 's' / 'store.sqlite'}.*{FOUND_AT_OPEN[kind]}"
                       .replace("(", r"\(").replace(")", r"\)")):
        TrajectoryStore(tmp_path / "s", read_only=read_only)
    assert folder_bytes(tmp_path / "s") == before  # refused before anything was written


@pytest.mark.parametrize("read_only", [True, False])
def test_damage_inside_the_file_is_named_when_a_query_first_reads_it(tmp_path, read_only):
    """The file looks whole (size, header), so the store opens; the query that reads the
    damaged page gets a StoreError naming the file, not sqlite3's DatabaseError."""
    damage_store(filled_store(tmp_path / "s"), "overwritten")
    store = TrajectoryStore(tmp_path / "s", read_only=read_only)
    assert store.tasks()[0].instruction == "buy the thing"  # undamaged tables still read
    db = tmp_path / "s" / "store.sqlite"
    with pytest.raises(StoreError, match=f"readable store database at {db}.*SQLITE_CORRUPT"):
        store.nodes()  # iterates the cursor
    with pytest.raises(StoreError, match="SQLITE_CORRUPT"):
        store.node(1)  # fetchone
    with pytest.raises(StoreError, match="SQLITE_CORRUPT"):
        store_stats(store)


def test_an_empty_database_without_blobs_is_a_new_store(tmp_path):
    (tmp_path / "store.sqlite").write_bytes(b"")
    store = TrajectoryStore(tmp_path)
    assert store.counts()["nodes"] == 0


def test_corruption_under_a_lock_free_read_with_a_writer_about_says_run_again(tmp_path):
    db = tmp_path / "store.sqlite"
    corrupt = sqlite3.DatabaseError("database disk image is malformed")
    corrupt.sqlite_errorcode = 11  # type: ignore[attr-defined]
    assert "SQLITE_CORRUPT" in str(damage_error(db, corrupt, immutable=True))
    (tmp_path / "store.sqlite-wal").write_bytes(b"")
    assert "run the command again" in str(damage_error(db, corrupt, immutable=True))
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = 5  # type: ignore[attr-defined]
    assert damage_error(db, busy) is None  # not damage: left to the caller


def _stats_cli(path) -> dict:
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["store", "stats", str(path), "--json"])
    assert result.exit_code == 0, result.output
    import json

    return json.loads(result.output)


def _stale_claims(path, node_ids: list[int]) -> None:
    """Mark nodes 'exploring' by a process of this host that is no longer running."""
    conn = sqlite3.connect(path / "store.sqlite")
    conn.executemany("UPDATE nodes SET status = 'exploring', owner = ? WHERE id = ?",
                     [(f"{socket.gethostname()}:999999999", n) for n in node_ids])
    conn.commit()
    conn.close()


def test_stats_changes_no_byte_of_the_store_folder(tmp_path):
    """Not even to release the stale claims of a dead process (a writable open would), nor
    SQLite's own -wal/-shm files (a plain read-only connection would leave both)."""
    store = filled_store(tmp_path / "s")
    _stale_claims(store, [2, 3])
    before = folder_bytes(store)
    assert _stats_cli(store)["nodes"] == 7
    assert folder_bytes(store) == before
    assert TrajectoryStore(store, read_only=True).node(2).status is NodeStatus.EXPLORING
    assert TrajectoryStore(store).node(2).status is NodeStatus.UNEXPLORED  # a writer recovers it


def test_stats_reads_what_a_crashed_writer_left_in_its_log(tmp_path):
    """A collector that died without closing leaves its last commits in store.sqlite-wal;
    stats reads them and writes neither the database, the log nor the blobs. (SQLite
    rebuilds its shared-memory index, store.sqlite-shm, on any open: that is no store data.)"""
    store = filled_store(tmp_path / "s")
    crash = (f"import os, sqlite3; c = sqlite3.connect({str(store / 'store.sqlite')!r});"
             "c.execute('PRAGMA journal_mode=WAL');"
             "c.execute(\"UPDATE nodes SET status = 'exploring', owner = 'elsewhere:1'\"); c.commit();"
             "os._exit(0)")
    subprocess.run([sys.executable, "-c", crash], check=True)
    assert (store / "store.sqlite-wal").stat().st_size > 0
    before = {k: v for k, v in folder_bytes(store).items() if not k.endswith("-shm")}
    stats = _stats_cli(store)
    assert stats["nodes"] == 7
    assert {k: v for k, v in folder_bytes(store).items() if not k.endswith("-shm")} == before
    statuses = {n.status for n in TrajectoryStore(store, read_only=True).nodes()}
    assert statuses == {NodeStatus.EXPLORING}  # the log's commit is what was read


def _can_mount_read_only() -> bool:
    probe = subprocess.run(["unshare", "--map-root-user", "--mount", "true"], capture_output=True,
                           check=False) if shutil.which("unshare") else None
    return probe is not None and probe.returncode == 0


@pytest.mark.skipif(not _can_mount_read_only(), reason="needs unshare for a read-only bind mount")
def test_stats_works_on_a_store_in_a_read_only_folder(tmp_path):
    store = filled_store(tmp_path / "s")
    before = folder_bytes(store)
    cua = [sys.executable, "-m", "harness.cli", "store", "stats", str(store), "--json"]
    script = (f"mount --bind {store} {store} && mount -o remount,bind,ro {store} && "
              f"touch {store}/probe 2>/dev/null && echo writable; exec {' '.join(cua)}")
    result = subprocess.run(["unshare", "--map-root-user", "--mount", "sh", "-c", script],
                            capture_output=True, text=True, check=False, env=os.environ)
    assert result.returncode == 0 and "writable" not in result.stdout, result.stdout + result.stderr
    assert '"nodes": 7' in result.stdout
    assert folder_bytes(store) == before
