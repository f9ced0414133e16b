"""The servers tasks share during a run, and who owns them.

``TaskResources`` starts each shared server on first use and closes it in ``close``
(or at the end of ``async with``):

- the FSM site server: an in-process ``SiteServer`` reached through a ``LocalSiteClient``,
  serving library and synthesized sites on demand, or the client of a server that runs
  elsewhere (``sites=HttpSiteClient(..., token=...)``; its server is not stopped here);
- the MiniWoB++ page server (static files from the ``miniwob`` package).

Whoever makes a ``TaskResources`` closes it: the runner, the explorer (``cua collect``),
task verification (``cua tasks synth``) and the sync ``GymEnv`` each make one unless they
are handed one; pass your own to share the servers across runs. Servers bind
``bind_host`` (127.0.0.1 by default: a sandbox in a container or on another machine
needs an address it can reach).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiohttp import web

from fsm_sites.serving.client import LocalSiteClient, SiteClient
from fsm_sites.serving.server import SiteServer
from harness.errors import ConfigError
from sandboxes.extras import import_extra


def miniwob_html() -> Path:
    """The ``miniwob`` package's ``html`` folder: what the page server serves (the
    `miniwob` extra, imported here, at its point of use)."""
    miniwob = import_extra("miniwob", "miniwob", "the MiniWoB++ task pages")
    return Path(miniwob.__path__[0]) / "html"


class TaskResources:
    """Shared servers for tasks, started on first use; close it when the run is done."""

    def __init__(self, *, sites: SiteClient | None = None, bind_host: str = "127.0.0.1") -> None:
        self.bind_host = bind_host
        self._given_sites = sites
        self._sites: asyncio.Task[SiteClient] | None = None
        self._site_server: SiteServer | None = None
        self._pages: asyncio.Task[str] | None = None
        self._page_runner: object | None = None
        self._closed = False

    async def sites(self) -> SiteClient:
        """The site client (the in-process server starts on the first call)."""
        self._check_open()
        if self._given_sites is not None:
            return self._given_sites
        if self._sites is None:  # set before the first await: concurrent callers share one start
            self._sites = asyncio.ensure_future(self._start_sites())
        return await asyncio.shield(self._sites)

    async def miniwob_url(self) -> str:
        """Base URL of the MiniWoB++ page server (``.../miniwob/<task>.html``)."""
        self._check_open()
        if self._pages is None:
            self._pages = asyncio.ensure_future(self._start_pages())
        return await asyncio.shield(self._pages)

    async def close(self) -> None:
        """Stop the servers started here and close a given site client. Idempotent."""
        self._closed = True
        if self._site_server is not None:
            await self._site_server.close()
            self._site_server = None
        if self._given_sites is not None:
            await self._given_sites.close()
        runner, self._page_runner = self._page_runner, None
        if runner is not None:
            await runner.cleanup()  # type: ignore[attr-defined]

    async def __aenter__(self) -> TaskResources:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ConfigError("expected open TaskResources, got closed ones; make new ones per run")

    async def _start_sites(self) -> SiteClient:
        server = SiteServer([], host=self.bind_host)
        await server.start()
        self._site_server = server
        return LocalSiteClient(server)

    async def _start_pages(self) -> str:
        app = web.Application()
        app.router.add_static("/", miniwob_html(), follow_symlinks=False)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.bind_host, 0)
        await site.start()
        self._page_runner = runner
        port = runner.addresses[0][1]
        return f"http://{self.bind_host}:{port}/"
