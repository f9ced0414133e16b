"""`cua eval --ray` and `cua collect --ray` through the CLI: a real local Ray that the run
starts (and ends) itself, real actors with real Chromium, every write on the driver."""

from __future__ import annotations

import json
import socket

import pytest
import ray
import typer
from typer.testing import CliRunner

from harness.errors import ConfigError
from harness.evaluation.cli import register as register_eval
from harness.ray_envs import RayEnvs, check_cluster_address
from harness.store.cli import register as register_store
from harness.store.store import TrajectoryStore


def _app() -> typer.Typer:
    app = typer.Typer()
    register_eval(app)
    register_store(app)
    return app


@pytest.fixture
def ray_opens(monkeypatch) -> list[str]:
    """Task ids of the envs RayEnvs opened (so a run that ignored --ray fails)."""
    opened: list[str] = []
    real_open = RayEnvs.open

    async def counting_open(self, task_id, options):  # noqa: ANN001, ANN202
        opened.append(task_id)
        return await real_open(self, task_id, options)

    monkeypatch.setattr(RayEnvs, "open", counting_open)
    return opened


def _outcomes(out) -> list[tuple]:
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return sorted((r["task"], r["seed"], r["success"], r["steps"], r["error"]) for r in records)


@pytest.mark.slow
def test_cua_eval_with_ray_matches_the_plain_run_for_the_same_seeds(tmp_path, ray_opens) -> None:
    assert not ray.is_initialized()  # so the run starts its own local Ray
    base = ["eval", "--suite", "fsm:shop/open_mug+fsm:bank", "--agent", "oracle", "--episodes", "2",
            "--seed", "7", "--concurrency", "2", "--no-progress", "--no-save-screenshots"]
    runs = {}
    for flag in ("--no-ray", "--ray"):
        out, store = tmp_path / f"out{flag}", tmp_path / f"store{flag}"
        result = CliRunner().invoke(_app(), [*base, flag, "--out", str(out), "--store", str(store)])
        assert result.exit_code == 0, result.output
        runs[flag] = _outcomes(out)
        assert len(ray_opens) == (4 if flag == "--ray" else 0)
        with TrajectoryStore(store) as opened:
            assert opened.counts()["episodes"] == 4  # written by the driver, once each
    assert runs["--ray"] == runs["--no-ray"]
    assert len(runs["--ray"]) == 4 and all(s and e is None for *_, s, _, e in runs["--ray"])
    assert not ray.is_initialized()  # the run ended the Ray it started


@pytest.mark.slow
def test_cua_collect_with_ray_grows_the_tree_on_the_driver(tmp_path, ray_opens) -> None:
    store = tmp_path / "store"
    result = CliRunner().invoke(_app(), ["collect", "--suite", "fsm:shop", "--store", str(store),
                                         "--budget", "6", "--ray"])
    assert result.exit_code == 0, result.output
    with TrajectoryStore(store) as opened:
        counts = opened.counts()
    assert counts["nodes"] >= 2 and counts["trees"] == 1, counts
    assert ray_opens == ["fsm:shop"]
    assert not ray.is_initialized()


def test_a_ray_address_nothing_answers_on_is_refused_at_once(tmp_path, monkeypatch) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    result = CliRunner().invoke(_app(), ["eval", "--suite", "fsm:shop/open_mug", "--agent", "oracle",
                                         "--ray", "--no-progress", "--out", str(tmp_path / "out")])
    assert result.exit_code != 0
    assert f"expected a Ray cluster answering at 127.0.0.1:{port}" in result.output, result.output
    assert "RAY_AUTH_MODE=token" in result.output
    assert not ray.is_initialized()
    with pytest.raises(ConfigError, match="expected RAY_ADDRESS as host:port"):
        check_cluster_address("head-without-port")
    check_cluster_address("auto")  # Ray finds it itself
