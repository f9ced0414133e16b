"""Sampled evaluation with the real tiny model: `cua eval --samples K` runs each task's
greedy episodes and K more at a temperature, keeps which is which, and compare pairs them."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from harness.evaluation.cli import register


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    app.command("version")(lambda: None)  # a second command keeps typer from flattening `eval`
    return app


def test_sampled_episodes_are_recorded_apart_and_pair_by_temperature(tiny_dir, tmp_path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(_app(), [
        "eval", "--suite", "fsm:shop/open_mug", "--agent", f"hf:{tiny_dir}?codec=json&max_new_tokens=8",
        "--episodes", "1", "--samples", "2", "--sample-temperature", "1.0", "--max-steps", "1",
        "--concurrency", "3", "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    records = sorted((json.loads(line) for line in (out / "results.jsonl").open()), key=lambda r: r["index"])
    assert [(r["index"], r["seed"], r["temperature"]) for r in records] == [(0, 0, None), (1, 0, 1.0), (2, 1, 1.0)]
    greedy, sampled = records[0]["trajectory"][0], records[1]["trajectory"][0]
    # the same page (seed 0), decided greedily and by sampling: the completions differ
    assert greedy["agent"]["prompt"] == sampled["agent"]["prompt"]
    assert greedy["agent"]["completion"] != sampled["agent"]["completion"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"] == 1 and summary["sampled"]["episodes"] == 2
    assert summary["sampled"]["temperatures"] == [1.0] and "sampled at temperature 1" in result.output

    compared = CliRunner().invoke(_app(), ["eval", "compare", str(out), str(out), "--json"])
    groups = json.loads(compared.output)["groups"]
    assert [(g["temperature"], g["pairs"], g["difference"]) for g in groups] == [(None, 1, 0.0), (1.0, 2, 0.0)]
