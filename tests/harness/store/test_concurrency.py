"""Several writer processes at once, and kill -9 in the middle of collection."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

from harness.store import NodeStatus, TrajectoryStore
from tests.harness.store.helpers import click, trajectory

ROOT = Path(__file__).resolve().parents[3]


def _writer(path: str, worker: int, episodes: int) -> None:
    store = TrajectoryStore(path)
    for i in range(episodes):
        # every worker shares the first two steps, then branches by worker and episode
        steps = [("a", click(1, 1)), ("b", click(2, 2)), (f"w{worker}", click(worker, i % 3))]
        store.insert_trajectory(trajectory(steps, success=i % 2 == 0))
    store.close()


def test_concurrent_writer_processes_lose_nothing(tmp_path):
    TrajectoryStore(tmp_path).close()  # create the schema once
    ctx = multiprocessing.get_context("fork")
    workers, episodes = 4, 30
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, episodes)) for w in range(workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    store = TrajectoryStore(tmp_path)
    assert len(store.episodes()) == workers * episodes
    # merged, not duplicated: root, a, b, then 3 distinct actions per worker
    assert store.counts()["nodes"] == 3 + workers * 3
    root = store.node(store.trees()[0].root_id)
    assert root.visits == workers * episodes
    assert store.children(root.id)[0].visits == workers * episodes


def test_kill_9_loses_no_committed_episode(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.harness.store.crash_writer", str(tmp_path)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    committed: list[str] = []
    claimed = None
    assert proc.stdout is not None
    for line in proc.stdout:
        kind, _, value = line.strip().partition(" ")
        if kind == "claimed":
            claimed = int(value)
        elif kind == "committed":
            committed.append(value)
        if len(committed) >= 40:
            break
    proc.send_signal(signal.SIGKILL)
    committed.extend(line.split()[1] for line in proc.stdout if line.startswith("committed"))
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    store = TrajectoryStore(tmp_path)  # reopening runs recovery
    stored = {e.id for e in store.episodes()}
    assert set(committed) <= stored
    assert len(stored) - len(committed) <= 1 + 1  # the claim episode, at most one racing the kill
    assert claimed is not None and store.node(claimed).status is NodeStatus.UNEXPLORED
    assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    for episode in store.episodes():
        assert store.path_to(episode.leaf_id)[0].parent_id is None
