"""End to end: `cua serve` as a real subprocess, `cua eval --agent openai:...` against it on
an FSM library task in real Chromium, with --api-key (the agent sends OPENAI_API_KEY)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app

CUA = [sys.executable, "-c", "from harness.cli import main; main()"]


def _wait_for_url(process: subprocess.Popen, timeout: float = 120.0) -> str:
    """The URL `cua serve` prints once it answers (read from its stdout as it comes)."""
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if selector.select(timeout=deadline - time.monotonic()):
            line = process.stdout.readline()
            if line.startswith("serving "):
                return line.split(" at ", 1)[1].strip()
            if not line and process.poll() is not None:
                break
    raise AssertionError(f"cua serve never said it was serving: {process.stderr.read()[-2000:]}")


def test_cua_eval_through_cua_serve(tiny_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-e2e")  # what the openai: agent sends
    process = subprocess.Popen([*CUA, "serve", str(tiny_dir), "--port", "0", "--name", "tiny",
                                "--api-key", "sk-e2e"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        url = _wait_for_url(process)
        root = url.removesuffix("/v1")
        assert urllib.request.urlopen(f"{root}/health", timeout=10).status == 200  # open
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(f"{url}/models", timeout=10)
        out = tmp_path / "eval"
        result = CliRunner().invoke(app, [
            "eval", "--suite", "fsm:shop/open_mug", "--agent", f"openai:{url}#tiny?codec=json&max_new_tokens=8",
            "--episodes", "1", "--max-steps", "2", "--out", str(out)])
        assert result.exit_code == 0, result.output
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0  # a clean shutdown on SIGTERM
    [record] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert record["error"] is None and record["agent_error"] is None and record["steps"] == 2
    first = record["trajectory"][0]
    assert first["error"].startswith("json codec: expected")  # a random model's text, rejected
    agent = first["agent"]
    assert len(agent["token_ids"]) == len(agent["logprobs"]) == 8
    assert agent["prompt_token_ids"] and agent["policy_version"] == 0
    assert json.loads((out / "summary.json").read_text())["episodes"] == 1
