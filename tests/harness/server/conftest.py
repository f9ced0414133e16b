"""Env servers for the tests: real aiohttp servers on 127.0.0.1 over real sandboxes.

- ``served``: one server for the module, over the session's shared Chromium (``provider``),
  serving a few FSM and MiniWoB tasks, with oracle and jump exposed; ``served.url``,
  ``served.pool``, ``TOKEN``.
- ``capped``: one server for the module with OpenEnv's defaults (nothing exposed), two
  sessions at most and a small body limit (``CAPPED_BODY_BYTES``): capacity and 413 tests.
- ``start_server(pool)``: a server of your own over any session pool (stop it yourself).
- ``served_process(args)``: ``cua env-server`` as a subprocess; its URL once it answers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest_asyncio
from aiohttp import web

from harness.env_providers import LocalEnvs
from harness.server.app import EnvServer
from harness.server.sessions import SessionPool

TOKEN = "test-token"
TASKS = ["fsm:shop", "miniwob:click-test", "miniwob:click-button"]
CAPPED_BODY_BYTES = 256 * 1024


@dataclass
class Served:
    url: str
    pool: SessionPool
    runner: web.AppRunner

    async def stop(self) -> None:
        await self.runner.cleanup()


async def start_server(pool: SessionPool, token: str = TOKEN, **server: int) -> Served:
    runner = web.AppRunner(EnvServer(pool, token, **server).app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    return Served(f"http://{host}:{port}", pool, runner)


@pytest_asyncio.fixture(scope="module")
async def served(provider) -> AsyncIterator[Served]:
    server = await start_server(SessionPool(LocalEnvs(provider), tasks=TASKS, max_sessions=4,
                                            expose=("oracle", "jump")))
    yield server
    await server.stop()


@pytest_asyncio.fixture(scope="module")
async def capped(provider) -> AsyncIterator[Served]:
    server = await start_server(SessionPool(LocalEnvs(provider), tasks=TASKS, max_sessions=2),
                                max_body_bytes=CAPPED_BODY_BYTES)
    yield server
    await server.stop()


@contextmanager
def served_process(*args: str, timeout_s: float = 60.0) -> Iterator[str]:
    """``cua env-server ARGS`` with ``CUA_ENV_TOKEN=TOKEN``; yields its URL once it answers."""
    env = {**os.environ, "CUA_ENV_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-c", "from harness.cli import main; main()",
                             "env-server", "--port", "0", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "serving" in line:
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        if not ready.wait(timeout_s):
            raise AssertionError(f"expected cua env-server to start, got: {''.join(lines)}")
        yield next(line for line in lines if "serving" in line).split(" on ")[-1].strip()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
