"""The store's merge, blobs, incremental API and recovery, on real SQLite."""

from __future__ import annotations

import sqlite3

import pytest

from harness.errors import StoreError
from harness.store import Frame, NodeStatus, TrajectoryStore, state_key_for
from harness.store.schema import SCHEMA_VERSION
from harness.store.store import DB_NAME
from tests.harness.store.helpers import click, screenshot, step, trajectory


def test_two_trajectories_sharing_k_steps_share_exactly_k_nodes(tmp_path):
    store = TrajectoryStore(tmp_path)
    shared = [("a", click(1, 1)), ("b", click(2, 2)), ("c", click(3, 3))]  # k = 3
    first = store.insert_trajectory(trajectory(shared + [("x", click(9, 9))]))
    second = store.insert_trajectory(trajectory(shared + [("y", click(8, 8)), ("z", click(7, 7))]))

    path1, path2 = store.path_to(first.leaf_id), store.path_to(second.leaf_id)
    common = {n.id for n in path1} & {n.id for n in path2}
    assert len(common) == 1 + 3  # the root plus the k shared steps
    assert len(store.nodes()) == 1 + 3 + 1 + 2
    assert [n.visits for n in path2] == [2, 2, 2, 2, 1, 1]
    assert [n.depth for n in path2] == [0, 1, 2, 3, 4, 5]
    assert len(store.trees()) == 1


def test_same_action_to_a_different_state_makes_a_new_node(tmp_path):
    store = TrajectoryStore(tmp_path)
    store.insert_trajectory(trajectory([("a", click(1, 1))]))
    store.insert_trajectory(trajectory([("b", click(1, 1))]))  # nondeterministic env
    store.insert_trajectory(trajectory([("a", click(1, 2))]))  # same state, another action
    root = store.nodes()[0]
    assert len(store.children(root.id)) == 3


@pytest.mark.parametrize("fmt", ["png", "webp"])
def test_identical_screenshots_are_stored_once(tmp_path, fmt):
    store = TrajectoryStore(tmp_path, blob_format=fmt)
    for _ in range(3):
        store.insert_trajectory(trajectory([("a", click(1, 1)), ("a", click(5, 5))]))
    files = [p for p in (tmp_path / "blobs").rglob(f"*.{fmt}")]
    assert len(files) == 2  # 'home' and 'a'
    assert store.counts()["unique_screenshots"] == 2
    node = store.nodes()[1]
    assert store.blobs.image(node.obs_blob).size == (160, 120)


def test_incremental_episode_is_invisible_until_commit(tmp_path):
    store = TrajectoryStore(tmp_path)
    root = Frame(screenshot=screenshot("home"), url="http://site/home", state_key="fsm:home")
    writer = store.begin_episode("fsm:shop", root, agent="random")
    writer.add_step(step("a", click(1, 1)))
    other = TrajectoryStore(tmp_path)
    assert other.counts()["nodes"] == 0 and other.episodes() == []
    episode = writer.commit(reward=1.0, success=True)
    assert [e.id for e in other.episodes()] == [episode.id]
    assert other.node(episode.leaf_id).success
    with pytest.raises(StoreError, match="already committed"):
        writer.add_step(step("b", click(2, 2)))

    dropped = store.begin_episode("fsm:shop", root)
    dropped.add_step(step("q", click(4, 4)))
    dropped.abandon()
    assert store.counts()["episodes"] == 1


def test_episode_can_continue_from_a_restored_node(tmp_path):
    store = TrajectoryStore(tmp_path)
    first = store.insert_trajectory(trajectory([("a", click(1, 1))]))
    writer = store.begin_episode("fsm:shop", from_node=first.leaf_id)
    writer.add_step(step("b", click(2, 2), terminal=True))
    episode = writer.commit()
    assert [n.state_key for n in store.path_to(episode.leaf_id)] == ["fsm:home", "fsm:a", "fsm:b"]
    assert store.node(episode.leaf_id).status is NodeStatus.TERMINAL


def test_exploring_nodes_of_dead_processes_are_reset_on_open(tmp_path):
    store = TrajectoryStore(tmp_path)
    leaf = store.insert_trajectory(trajectory([("a", click(1, 1))])).leaf_id
    assert store.claim_node(leaf)
    assert not store.claim_node(leaf)  # already held
    assert TrajectoryStore(tmp_path).node(leaf).status is NodeStatus.EXPLORING  # we are alive
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("UPDATE nodes SET owner = ? WHERE id = ?", (f"{_host()}:999999999", leaf))
    conn.commit()
    conn.close()
    assert TrajectoryStore(tmp_path).node(leaf).status is NodeStatus.UNEXPLORED


def test_recovery_keeps_a_claim_made_after_it_read_the_stale_row(tmp_path, monkeypatch):
    import harness.store.store as store_module

    store = TrajectoryStore(tmp_path)
    leaf = store.insert_trajectory(trajectory([("a", click(1, 1))])).leaf_id
    store.conn.execute("UPDATE nodes SET status = 'exploring', owner = ? WHERE id = ?",
                       (f"{_host()}:999999999", leaf))
    alive = store_module._owner_alive

    def another_collector_claims_first(owner: str | None, host: str) -> bool:
        monkeypatch.setattr(store_module, "_owner_alive", alive)
        other = TrajectoryStore(tmp_path)  # resets the dead claim itself, then claims the node
        assert other.claim_node(leaf)
        return alive(owner, host)

    monkeypatch.setattr(store_module, "_owner_alive", another_collector_claims_first)
    assert store.recover_exploring() == 0
    node = store.node(leaf)
    assert node.status is NodeStatus.EXPLORING
    assert store.conn.execute("SELECT owner FROM nodes WHERE id = ?", (leaf,)).fetchone()[0] == \
        store_module.process_owner()


def test_flags_added_by_two_collectors_at_once_are_both_kept(tmp_path, monkeypatch):
    store = TrajectoryStore(tmp_path)
    leaf = store.insert_trajectory(trajectory([("a", click(1, 1))])).leaf_id
    begin = store.transaction

    def another_collector_flags_first():
        TrajectoryStore(tmp_path).add_flag(leaf, "theirs")
        monkeypatch.setattr(store, "transaction", begin)
        return begin()

    monkeypatch.setattr(store, "transaction", another_collector_flags_first)
    store.add_flag(leaf, "restore_mismatch")
    store.add_flag(leaf, "restore_mismatch")  # a set: added once
    assert store.node(leaf).flags == ("theirs", "restore_mismatch")


def test_put_task_fills_a_missing_tree_and_replace_overwrites_the_instruction(tmp_path):
    store = TrajectoryStore(tmp_path)
    tree = store.insert_trajectory(trajectory([("a", click(1, 1))])).tree_id
    store.put_task("t", "first", source="suite")
    assert store.put_task("t", "second", tree_id=tree).tree_id == tree
    assert store.task("t").instruction == "first"  # kept unless replaced
    assert store.put_task("t", "third", tree_id=None, goal_state="g", replace=True).instruction == "third"
    assert (store.task("t").tree_id, store.task("t").goal_state) == (tree, "g")


def test_schema_version_mismatch_is_refused(tmp_path):
    TrajectoryStore(tmp_path).close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=f"expected store schema version {SCHEMA_VERSION}"):
        TrajectoryStore(tmp_path)


def test_wal_mode_is_on(tmp_path):
    store = TrajectoryStore(tmp_path)
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_state_key_uses_fsm_state_else_phash_and_url():
    class Obs:
        def __init__(self, label: str, url: str) -> None:
            self.screenshot, self.url = screenshot(label), url

    assert state_key_for(Obs("a", "http://x/"), "cart{}") == "fsm:cart{}"
    key = state_key_for(Obs("a", "http://x/1"))
    assert key.startswith("phash:") and key.endswith("|http://x/1")
    assert key == state_key_for(Obs("a", "http://x/1"))
    assert key != state_key_for(Obs("a", "http://x/2"))


def test_many_episodes_merge_into_one_tree(tmp_path):
    """The insert workload of docs/store.md (speed is bench_store's job, not a test's):
    200 episodes over 40 screenshots share their prefixes and store each screenshot once."""
    store = TrajectoryStore(tmp_path)
    trajectories = [trajectory([(f"s{(i * 7 + d) % 40}", click(i % 5, d)) for d in range(25)])
                    for i in range(200)]
    for item in trajectories:
        store.insert_trajectory(item)
    counts = store.counts()
    assert counts["episodes"] == 200
    assert counts["unique_screenshots"] == 41  # and the root's
    # Episodes with the same i % 40 and the same clicks (i % 5 fixed by i % 40) are equal.
    assert counts["nodes"] == 1 + 40 * 25


def _host() -> str:
    import socket

    return socket.gethostname()


@pytest.mark.parametrize("fmt", ["png", "webp"])
def test_blob_written_by_another_writer_is_reused_whole(tmp_path, fmt):
    from harness.store.blobs import BlobDir, blob_hash

    data = screenshot("shared", (320, 200))
    first, second = BlobDir(tmp_path, fmt), BlobDir(tmp_path, fmt)  # two writers, one folder
    stored = first.put(data)
    assert second.put(data) == stored == second.put(data, blob_hash(data))
    digest, size, width, height = stored
    assert (width, height) == (320, 200)
    assert size == second.path(digest).stat().st_size
    assert sorted(p.name for p in (tmp_path / digest[:2]).iterdir()) == [digest + "." + fmt]
    assert (second.get(digest) == data) is (fmt == "png")  # PNG kept as captured, no temp left
