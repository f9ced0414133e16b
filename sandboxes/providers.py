"""Sandbox providers: who makes sandboxes, and owns what they share.

``LocalProvider`` (the default) runs sandboxes as local processes: every browser
sandbox is a context of one shared Chromium (a ``BrowserHost``, started on first use);
every desktop sandbox is an X display of its own (``DesktopSandbox``: Xvfb + openbox).
A provider is passed into the runner, the env and the explorer; whoever made it closes
it, and one provider can serve many runs::

    async with LocalProvider() as provider:
        sandbox = await provider.new_sandbox(SandboxRequest(kind="browser", viewport=(800, 600)))
        desktop = await provider.new_sandbox(SandboxRequest(kind="desktop"))
"""

from __future__ import annotations

from sandboxes.base import Sandbox, SandboxKind, SandboxRequest
from sandboxes.browser.config import BrowserConfig
from sandboxes.browser.host import BrowserHost
from sandboxes.browser.sandbox import BrowserSandbox
from sandboxes.desktop.config import DesktopConfig
from sandboxes.desktop.sandbox import DesktopSandbox
from sandboxes.errors import ConfigError, SandboxClosed


class LocalProvider:
    """Local-process sandboxes; browsers share one Chromium, desktops each have a display."""

    def __init__(self, browser: BrowserConfig | None = None, desktop: DesktopConfig | None = None) -> None:
        self.browser_config = browser or BrowserConfig()
        self.desktop_config = desktop or DesktopConfig()
        self._host: BrowserHost | None = None
        self._desktops: list[DesktopSandbox] = []
        self._closed = False

    @property
    def kinds(self) -> tuple[SandboxKind, ...]:
        return ("browser", "desktop")

    @property
    def host(self) -> BrowserHost:
        """The shared Chromium (made on first use; started by ``start`` or a new sandbox)."""
        if self._host is None:
            self._host = BrowserHost(self.browser_config)
        return self._host

    async def start(self) -> None:
        await self.host.start()

    async def new_sandbox(self, request: SandboxRequest | None = None) -> Sandbox:
        request = request or SandboxRequest()
        if request.kind not in self.kinds:
            raise ConfigError(
                f"expected a sandbox kind this provider makes ({', '.join(self.kinds)}), got "
                f"{request.kind!r}; use a provider that has it"
            )
        if request.kind == "desktop":
            return await self.new_desktop(request)
        overrides: dict[str, int] = {}
        if request.viewport is not None:
            overrides = {"viewport_width": request.viewport[0], "viewport_height": request.viewport[1]}
        return await self.new_browser(None, **overrides)

    async def new_browser(self, config: BrowserConfig | None = None, **overrides: object) -> BrowserSandbox:
        """A new browser sandbox; per-sandbox ``overrides`` (e.g. image_format="jpeg") are
        validated against ``BrowserConfig``. Call ``reset`` before using it."""
        if self._closed:
            raise SandboxClosed("expected an open provider, got a closed one; make a new provider")
        host = self.host
        sandbox_config = host.sandbox_config(config, overrides)
        await host.start()
        return BrowserSandbox(host, sandbox_config)

    async def new_desktop(self, request: SandboxRequest | None = None) -> Sandbox:
        """A new, started desktop sandbox (its own X display); the request's viewport is
        the screen size. Closed with the provider unless the caller closed it first."""
        if self._closed:
            raise SandboxClosed("expected an open provider, got a closed one; make a new provider")
        config = self.desktop_config
        if request is not None and request.viewport is not None:
            config = config.with_overrides({"width": request.viewport[0], "height": request.viewport[1]})
        sandbox = DesktopSandbox(config)
        self._desktops = [d for d in self._desktops if not d.closed] + [sandbox]
        await sandbox.start()
        return sandbox

    async def close(self) -> None:
        self._closed = True
        desktops, self._desktops = self._desktops, []
        for desktop in desktops:
            await desktop.close()
        if self._host is not None:
            await self._host.close()

    async def __aenter__(self) -> LocalProvider:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
