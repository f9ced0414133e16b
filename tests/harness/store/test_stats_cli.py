"""`cua store stats|export` and `cua view` through the typer app."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from harness.store import TrajectoryStore
from harness.store.cli import register
from harness.store.stats import flat_line
from tests.harness.store.helpers import click, screenshot, trajectory


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def _fill(store: TrajectoryStore, episodes: int) -> None:
    for i in range(episodes):
        steps = [("a", click(1, 1)), ("b", click(2, 2)), (f"leaf{i % 4}", click(3, i % 4))]
        store.insert_trajectory(trajectory(steps, success=i % 4 == 0))


def test_stats_json_has_exactly_the_headline_keys_and_true_numbers(tmp_path):
    store = TrajectoryStore(tmp_path)
    _fill(store, 12)
    result = CliRunner().invoke(_app(), ["store", "stats", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert list(stats) == ["trees", "nodes", "episodes", "unique_screenshots", "bytes",
                           "flat_bytes", "saving_ratio"]
    assert (stats["trees"], stats["nodes"], stats["episodes"], stats["unique_screenshots"]) == (1, 7, 12, 7)
    on_disk = sum(p.stat().st_size for p in tmp_path.rglob("*")
                  if p.is_file() and not p.name.endswith("-shm"))
    assert stats["bytes"] == on_disk
    flat = 0
    for episode in store.episodes():
        for n, node in enumerate(store.path_to(episode.leaf_id)):
            label = node.state_key.removeprefix("fsm:")
            flat += len(flat_line(episode.id, n, node).encode()) + len(screenshot(label))
    assert stats["flat_bytes"] == flat
    assert stats["saving_ratio"] == round(flat / on_disk, 3)


def test_stats_table_shows_histograms(tmp_path):
    _fill(TrajectoryStore(tmp_path), 8)
    result = CliRunner().invoke(_app(), ["store", "stats", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "depth_histogram: 0:1  1:1  2:1  3:4" in result.output
    assert "branching_histogram: 0:4  1:2  4:1" in result.output


def test_tree_storage_beats_flat_storage_on_shared_prefixes(tmp_path):
    store = TrajectoryStore(tmp_path)
    for i in range(60):
        steps = [(f"p{d}", click(d, d)) for d in range(6)] + [(f"leaf{i % 10}", click(9, i % 10))]
        store.insert_trajectory(trajectory(steps, large=True))
    result = CliRunner().invoke(_app(), ["store", "stats", str(tmp_path), "--json"])
    assert json.loads(result.output)["saving_ratio"] > 5


def test_missing_store_is_reported_with_the_expected_file(tmp_path):
    result = CliRunner().invoke(_app(), ["store", "stats", str(tmp_path / "nope")])
    assert result.exit_code != 0
    assert "expected a store directory containing store.sqlite" in result.output


def test_export_and_view_commands_write_their_files(tmp_path):
    _fill(TrajectoryStore(tmp_path / "s"), 4)
    for fmt in ("sft", "dpo", "grpo"):
        result = CliRunner().invoke(_app(), ["store", "export", str(tmp_path / "s"), "--format", fmt,
                                             "--out", str(tmp_path / "x"), "--codec", "json",
                                             "--steps", "all", "--jsonl"])
        assert result.exit_code == 0, result.output
    assert len((tmp_path / "x" / "sft.jsonl").read_text().splitlines()) == 3
    assert len((tmp_path / "x" / "grpo.jsonl").read_text().splitlines()) == 1
    bad = CliRunner().invoke(_app(), ["store", "export", str(tmp_path / "s"), "--format", "ppo",
                                      "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--format (format): input should be 'sft', 'dpo' or 'grpo', got 'ppo'" in bad.output
    view = CliRunner().invoke(_app(), ["view", str(tmp_path / "s"), "--out", str(tmp_path / "v")])
    assert view.exit_code == 0, view.output
    assert (tmp_path / "v" / "index.html").exists()
    assert len(list((tmp_path / "v" / "img").iterdir())) == 7  # home, a, b, leaf0..3: once each


def test_collect_rejects_bad_options_before_starting_anything(tmp_path):
    result = CliRunner().invoke(_app(), ["collect", "--suite", "fsm:shop", "--store", str(tmp_path),
                                         "--agent", "genius", "--budget", "0"])
    assert result.exit_code != 0
    assert result.output.count("\n") == 1 and "2 bad field(s)" in result.output
    assert "--agent (agent): expected an agent in [" in result.output  # every registered agent
    assert "'oracle', 'random'" in result.output and "got 'genius'" in result.output
    assert "--budget (budget): input should be greater than or equal to 1, got '0'" in result.output
    assert not (tmp_path / "store.sqlite").exists()
