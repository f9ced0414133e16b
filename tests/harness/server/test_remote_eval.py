"""Whole runs through a served env: `cua eval --provider remote:URL` against `cua env-server`
(a process of its own) gives what a local run of the same seeds gives; and OpenEnv's own
client drives the server unchanged."""

from __future__ import annotations

import base64
import json

import pytest
import typer
from typer.testing import CliRunner

from harness.evaluation.cli import register
from tests.harness.server.conftest import TOKEN, served_process

SUITE = "fsm:shop+fsm:bank/freeze_card"


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("version")  # a second command keeps typer from flattening `eval`
    def version() -> None:
        return None

    return app


def _eval(out, *extra: str) -> dict:
    args = ["eval", "--suite", SUITE, "--episodes", "2", "--seed", "5", "--reward", "step",
            "--concurrency", "2", "--out", str(out), "--no-progress", "--no-save-screenshots",
            *extra]
    result = CliRunner().invoke(_app(), args)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {(r["task"], r["seed"], r["index"]): r for r in records}


def _played(record: dict) -> dict:
    """What must be the same, local or served: outcome, steps, actions, rewards, verdicts."""
    keep = ("success", "steps", "reward", "progress", "terminated", "truncated", "error",
            "start_distance", "instruction")
    steps = [{k: s[k] for k in ("action", "action_text", "error", "reward", "verdict")}
             for s in record["trajectory"]]
    return {**{k: record[k] for k in keep}, "trajectory": steps}


@pytest.mark.parametrize("agent", ["random", "oracle"])
def test_cua_eval_through_a_served_env_matches_a_local_run(tmp_path, monkeypatch, agent) -> None:
    run = ["--agent", agent, *(["--max-steps", "6"] if agent == "random" else [])]
    local = _eval(tmp_path / "local", *run)
    monkeypatch.setenv("CUA_ENV_TOKEN", TOKEN)
    with served_process("--suite", SUITE, "--expose", "oracle,jump") as url:
        remote = _eval(tmp_path / "remote", *run, "--provider", f"remote:{url}")
    assert remote.keys() == local.keys() and len(local) == 4
    for key in local:
        assert _played(remote[key]) == _played(local[key]), key
    verdicts = [s["verdict"] for r in local.values() for s in r["trajectory"]]
    assert verdicts and all(v is not None for v in verdicts)
    if agent == "oracle":
        assert all(r["success"] for r in local.values())
    else:  # random clicks: some fire transitions, most do not
        assert {v["transition_fired"] for v in verdicts} == {True, False}


async def test_openenv_client_drives_the_server_unchanged(served) -> None:
    generic = pytest.importorskip("openenv.core.generic_client")
    base_url = served.url.replace("http://", f"http://user:{TOKEN}@")  # Basic auth: the token
    async with generic.GenericEnvClient(base_url=base_url) as env:
        result = await env.reset(seed=0, task="fsm:shop")
        obs = result.observation
        assert result.reward is None and not result.done
        assert base64.b64decode(obs["screenshot"]).startswith(b"\x89PNG")
        assert obs["metadata"]["reset_info"]["start_distance"] == 2
        rewards = []
        while not result.done:
            oracle = await env._send_and_receive({"type": "oracle", "data": {}})
            result = await env.step(oracle["data"]["action"])
            rewards.append(result.reward)
            assert result.observation["metadata"]["step_info"]["verdict"]["on_shortest_path"]
        assert rewards == [0.0, 1.0] and result.observation["metadata"]["step_info"]["success"]
        state = await env.state()
        assert state["step_count"] == 2 and state["done"]
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            await env.reset(seed=0, task="fsm:nowhere")
    assert served.pool.sessions == {}
