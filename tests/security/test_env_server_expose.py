"""The env server's trainer-only calls (docs/security.md): with defaults, ``oracle`` and
``jump`` are refused over HTTP and the WebSocket and no session says it can jump; with
``expose`` they work. A client that may jump can score an episode without playing it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import aiohttp
import pytest
from pydantic import ValidationError

from harness.env_providers import EnvOptions, LocalEnvs
from harness.server.cli import TOKEN_ENV, EnvServerConfig
from harness.server.client import RemoteEnvs
from harness.server.errors import EnvServerNotExposed
from harness.server.sessions import SessionPool
from sandboxes import procs
from tests.harness.server.conftest import TOKEN, start_server

pytestmark = pytest.mark.asyncio(loop_scope="session")

AUTH = {"Authorization": f"Bearer {TOKEN}"}
TASK = "fsm:shop"


async def _reset(http: aiohttp.ClientSession, url: str) -> tuple[str, dict]:
    async with http.post(url + "/reset", json={"seed": 0, "task": TASK,
                                                "open_session": True}) as resp:
        assert resp.status == 200, await resp.text()
        return resp.headers["X-Session-Id"], (await resp.json())["observation"]["metadata"]


async def test_oracle_and_jump_are_refused_by_default(provider) -> None:
    assert EnvServerConfig().expose == ""
    server = await start_server(SessionPool(LocalEnvs(provider), tasks=[TASK]))
    try:
        async with aiohttp.ClientSession(headers=AUTH) as http:
            session, meta = await _reset(http, server.url)
            assert meta["can_jump"] is False
            for path, body in (("/oracle", {}), ("/jump", {"state_key": "x", "steps": 0})):
                async with http.post(server.url + path, json={**body, "session_id": session}) as resp:
                    answer = await resp.json()
                assert (resp.status, answer["code"]) == (403, "NOT_EXPOSED"), path
                assert "--expose" in answer["detail"] and "trainer-only" in answer["detail"]
        envs = RemoteEnvs(server.url, TOKEN)
        env = await envs.open(TASK, EnvOptions())
        try:
            await env.reset(seed=0)
            assert not env.can_jump
            with pytest.raises(EnvServerNotExposed, match="--expose oracle"):
                await env.oracle_action()
            with pytest.raises(EnvServerNotExposed, match="--expose jump"):
                await env.jump("home{}", steps=0)
        finally:
            await envs.close()
    finally:
        await server.stop()


async def test_exposed_oracle_and_jump_work(provider) -> None:
    assert EnvServerConfig(expose="jump, oracle").expose == "jump,oracle"
    with pytest.raises(ValidationError, match="expected the calls to expose as a comma-separated subset"):
        EnvServerConfig(expose="oracle,cheat")
    server = await start_server(SessionPool(LocalEnvs(provider), tasks=[TASK], expose=("oracle", "jump")))
    envs = RemoteEnvs(server.url, TOKEN)
    try:
        env = await envs.open(TASK, EnvOptions())
        _, info = await env.reset(seed=0)
        assert env.can_jump and await env.oracle_action() is not None
        _, reached = await env.jump(info.fsm_state, steps=0)
        assert reached == info.fsm_state
    finally:
        await envs.close()
        await server.stop()


async def test_a_served_token_is_out_of_reach_of_a_shell_without_ptrace() -> None:
    """As in a container (Docker's and podman's default capabilities lack CAP_SYS_PTRACE):
    a shell beside the env server cannot read the server's environment, and no process the
    server started (Playwright's driver, Chromium) inherited its token."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv (util-linux) to drop capabilities as a container does")
    capless = [setpriv, "--inh-caps=-all", "--bounding-set=-all"]
    secret = "token-" + os.urandom(8).hex()
    env = {**os.environ, TOKEN_ENV: secret}
    proc = subprocess.Popen([*capless, sys.executable, "-c", "from harness.cli import main; main()",
                             "env-server", "--port", "0", "--suite", "miniwob:click-test"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving" in line, line + proc.stdout.read()
        url = line.split(" on ")[-1].strip()
        request = urllib.request.Request(url + "/health", headers={"Authorization": f"Bearer {secret}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200
        shell = subprocess.run([*capless, "cat", f"/proc/{proc.pid}/environ"], capture_output=True)
        assert shell.returncode != 0 and secret.encode() not in shell.stdout, shell
        peer = subprocess.run([*capless, "cat", "/proc/self/environ"], env=env, capture_output=True)
        assert secret.encode() in peer.stdout  # the control: a dumpable process is readable
        children = procs.descendants({proc.pid}) - {proc.pid}
        assert children, "expected the driver and Chromium"
        leaked = [pid for pid in children if secret.encode() in _environ(pid)]
        assert leaked == []
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""  # ended meanwhile
