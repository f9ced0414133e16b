"""Shared fixtures for every test directory.

- ``provider``: one started ``LocalProvider`` for the whole session (its Chromium is
  expensive to start on 2 cores); make your own sandboxes with ``new_browser()`` (or
  ``new_sandbox(request)``) and close them, or use ``browser_sandbox`` which does that
  for you. ``provider.host`` is the shared ``BrowserHost``.
- ``static_server``: an aiohttp server on 127.0.0.1 serving tests/sandboxes/pages.
- ``static_server_factory``: ``await static_server_factory(directory)`` serves any
  directory on its own port (a distinct origin); closed at session end.
- ``wait_until(predicate, timeout)``: polls a condition that settles on its own.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest_asyncio
from aiohttp import web

from harness.env_providers import LocalEnvs
from harness.resources import TaskResources
from sandboxes.browser.config import BrowserConfig
from sandboxes.browser.sandbox import BrowserSandbox
from sandboxes.desktop.config import DesktopConfig
from sandboxes.providers import LocalProvider

SANDBOX_PAGES = Path(__file__).parent / "sandboxes" / "pages"


async def wait_until(
    predicate: Callable[[], bool | Awaitable[bool]], timeout: float = 5.0
) -> bool:
    """True once ``predicate()`` (or the awaitable it returns) holds, polled every 50 ms;
    False after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not await _holds(predicate):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def _holds(predicate: Callable[[], bool | Awaitable[bool]]) -> bool:
    value = predicate()
    return bool(await value) if inspect.isawaitable(value) else bool(value)


class StaticServer:
    """Serves one directory on 127.0.0.1 and remembers every path requested."""

    def __init__(self, directory: Path) -> None:
        if not directory.is_dir():
            raise ValueError(f"expected a directory to serve, got {directory}")
        self.directory = directory
        self.requests: list[str] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def start(self) -> None:
        @web.middleware
        async def record(request: web.Request, handler):  # noqa: ANN001 - aiohttp handler
            self.requests.append(request.path_qs)
            return await handler(request)

        app = web.Application(middlewares=[record])
        app.router.add_static("/", self.directory, show_index=True)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}"

    def url(self, path: str = "") -> str:
        """Absolute URL of ``path`` under the served directory."""
        return f"{self.base_url}/{path.lstrip('/')}"

    @property
    def origin(self) -> str:
        """scheme://host:port of this server."""
        return self.base_url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


@pytest_asyncio.fixture(scope="session")
async def static_server_factory() -> AsyncIterator[Callable[[Path], Awaitable[StaticServer]]]:
    servers: list[StaticServer] = []

    async def serve(directory: Path) -> StaticServer:
        server = StaticServer(Path(directory))
        await server.start()
        servers.append(server)
        return server

    yield serve
    for server in servers:
        await server.close()


@pytest_asyncio.fixture(scope="session")
async def static_server(static_server_factory) -> StaticServer:
    return await static_server_factory(SANDBOX_PAGES)


@pytest_asyncio.fixture(scope="session")
async def provider() -> AsyncIterator[LocalProvider]:
    provider = LocalProvider(BrowserConfig())
    await provider.start()
    yield provider
    await provider.close()


@pytest_asyncio.fixture
async def browser_sandbox(provider: LocalProvider) -> AsyncIterator[BrowserSandbox]:
    """A fresh sandbox (no episode yet: call ``reset``), closed after the test."""
    sandbox = await provider.new_browser()
    yield sandbox
    await sandbox.close()


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def desktop_envs() -> AsyncIterator[LocalEnvs]:
    """A module's pool of envs, desktop ones on one X display reused between episodes (and
    headless browsers beside them)."""
    provider = LocalProvider(desktop=DesktopConfig(reset_mode="same_display"))
    async with TaskResources() as resources:
        pool = LocalEnvs(provider, resources=resources)
        yield pool
        await pool.close()
    await provider.close()
