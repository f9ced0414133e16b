"""``IsolatedProvider``: browser and desktop sandboxes, each in a jail of its own.

Where ``LocalProvider`` shares one Chromium between its sandboxes (one context each), an
isolated sandbox has its own Chromium, started through a launcher script
(``Isolation.write_launcher``, given to Playwright as ``executable_path``) inside its own
``sandboxes.isolation.jail.Isolation``: a network namespace that reaches only loopback and the
granted ports of the provider's service address, a temporary home, a cgroup and rlimits.
Playwright talks to Chromium over a pipe, so the browser needs no network for the
protocol; the Playwright driver itself stays outside the jail.

The provider owns the **service address** (``ServiceNetwork``): start it, bind the run's
servers there (``TaskResources(bind_host=provider.service_address)``), and ``grant`` their
ports; every sandbox made before or after may reach those ports and nothing else.
A desktop sandbox (``SandboxRequest(kind="desktop")``) is a ``DesktopSandbox`` whose Xvfb,
openbox and apps all run in its jail (see ``sandboxes.desktop.sandbox``); it reaches the same
granted ports as a browser (the Tk FSM app talks to the site app, as a page does).
Closing a sandbox closes its browser (or display) and its jail (every process in it ends, the
namespace and home are removed); closing the provider closes every sandbox it made and
removes the service address::

    async with IsolatedProvider() as provider:
        server = await start_my_server(host=provider.service_address)
        provider.grant([server.port])
        sandbox = await provider.new_sandbox(SandboxRequest(viewport=(800, 600)))
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Literal

from sandboxes.actions import Action
from sandboxes.base import Sandbox, SandboxKind, SandboxRequest, Screenshot, UIElement
from sandboxes.browser.chromium import find_chromium
from sandboxes.browser.config import BrowserConfig
from sandboxes.browser.host import BrowserHost
from sandboxes.browser.sandbox import BrowserSandbox
from sandboxes.desktop.config import DesktopConfig
from sandboxes.desktop.sandbox import DesktopSandbox
from sandboxes.errors import ConfigError, SandboxClosed
from sandboxes.isolation.jail import Isolation, IsolationConfig
from sandboxes.isolation.netns import ServiceNetwork
from sandboxes.teardown import close_all


class IsolatedBrowser:
    """A browser sandbox with its own Chromium in its own jail; closing it ends both.

    It is a ``BrowserSandbox`` for everything else (attributes it does not define itself
    are the inner sandbox's)."""

    kind: Literal["browser"] = "browser"

    def __init__(self, inner: BrowserSandbox, host: BrowserHost, jail: Isolation,
                 on_close: Callable[[IsolatedBrowser], None] | None = None) -> None:
        self.inner, self.host, self.jail = inner, host, jail
        self._on_close = on_close

    async def start(self) -> None:
        await self.inner.start()

    async def reset(self, url: str | None = None, *, allowed_origins: tuple[str, ...] = (),
                    keep_page: bool = False, content: str | None = None) -> None:
        await self.inner.reset(url, allowed_origins=allowed_origins, keep_page=keep_page,
                               content=content)

    async def screenshot(self) -> Screenshot:
        return await self.inner.screenshot()

    async def execute(self, action: Action) -> str | None:
        return await self.inner.execute(action)

    async def evaluate(self, expression: str) -> object:
        return await self.inner.evaluate(expression)

    async def elements(self) -> list[UIElement]:
        return await self.inner.elements()

    def read_after_actions(self, expression: str | None) -> None:
        self.inner.read_after_actions(expression)

    def show_address(self, url: str) -> None:
        self.inner.show_address(url)

    @property
    def url(self) -> str:
        return self.inner.url

    async def health(self) -> bool:
        return await self.inner.health()

    async def close(self) -> None:
        """Close the browser, then end whatever is left in the jail and remove it."""
        try:
            await self.inner.close()
            await self.host.close()
        finally:
            await self.jail.close()
            if self._on_close is not None:
                self._on_close(self)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


class IsolatedProvider:
    """Makes ``IsolatedBrowser`` and jailed ``DesktopSandbox`` sandboxes (see the module docstring)."""

    def __init__(self, browser: BrowserConfig | None = None,
                 isolation: IsolationConfig | None = None, *, ports: Iterable[int] = (),
                 desktop: DesktopConfig | None = None) -> None:
        self.browser_config = browser or BrowserConfig()
        self.desktop_config = desktop or DesktopConfig()
        self.isolation_config = isolation or IsolationConfig()
        self.ports: set[int] = set(ports)
        self._network = ServiceNetwork(self.isolation_config.subnet)
        self._sandboxes: set[IsolatedBrowser | DesktopSandbox] = set()
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def kinds(self) -> tuple[SandboxKind, ...]:
        return ("browser", "desktop")

    @property
    def service_address(self) -> str:
        """The host address the sandboxes reach; bind the run's servers there."""
        if not self._network.address:
            raise ConfigError("expected a started IsolatedProvider, got one not started; "
                              "await provider.start() before asking for its service address")
        return self._network.address

    @property
    def open_sandboxes(self) -> int:
        """How many sandboxes made here are open now."""
        return len(self._sandboxes)

    async def start(self) -> None:
        """Add the service address. Idempotent."""
        if self._closed:
            raise SandboxClosed("expected an open provider, got a closed one; make a new provider")
        async with self._lock:
            if not self._network.address:
                await asyncio.to_thread(self._network.open)

    def grant(self, ports: Iterable[int]) -> None:
        """Let every sandbox (live and future) reach these TCP ports of the service address."""
        new = set(ports) - self.ports
        self.ports |= new
        for sandbox in self._sandboxes:
            assert sandbox.jail is not None
            sandbox.jail.grant(new)

    async def new_sandbox(self, request: SandboxRequest | None = None) -> Sandbox:
        request = request or SandboxRequest()
        if request.kind not in self.kinds:
            raise ConfigError(f"expected a sandbox kind this provider makes (browser, desktop), got "
                              f"{request.kind!r}; use a provider that has it")
        if request.kind == "desktop":
            return await self.new_desktop(request)
        overrides: dict[str, object] = {}
        if request.viewport is not None:
            overrides = {"viewport_width": request.viewport[0], "viewport_height": request.viewport[1]}
        return await self.new_browser(**overrides)

    async def new_browser(self, **overrides: object) -> IsolatedBrowser:
        """A new isolated browser sandbox (its Chromium started); ``overrides`` are
        per-sandbox ``BrowserConfig`` fields. Call ``reset`` before using it."""
        await self.start()
        jail = Isolation(self.isolation_config, service=self.service_address, ports=self.ports)
        await jail.open()
        try:
            executable = self.browser_config.executable_path or find_chromium()
            launcher = jail.write_launcher(executable, "chromium")
            host = BrowserHost(self.browser_config.model_copy(update={"executable_path": launcher}))
            inner = BrowserSandbox(host, host.sandbox_config(None, overrides))
            sandbox = IsolatedBrowser(inner, host, jail, on_close=self._sandboxes.discard)
            await host.start()
        except BaseException:
            await jail.close()
            raise
        self._sandboxes.add(sandbox)
        jail.grant(self.ports - jail.network.ports)  # ports granted while this one started
        return sandbox

    async def new_desktop(self, request: SandboxRequest | None = None) -> DesktopSandbox:
        """A new, started desktop sandbox whose X server, window manager and apps run in a
        jail of its own; the request's viewport is the screen size."""
        await self.start()
        config = self.desktop_config
        if request is not None and request.viewport is not None:
            config = config.with_overrides({"width": request.viewport[0], "height": request.viewport[1]})
        jail_config = self.isolation_config  # xterm (as root) chowns its pty and calls initgroups
        jail_config = jail_config.model_copy(update={"capabilities": tuple(
            sorted({*jail_config.capabilities, "CAP_CHOWN", "CAP_SETGID"}))})
        jail = Isolation(jail_config, service=self.service_address, ports=self.ports)
        await jail.open()
        try:
            sandbox = DesktopSandbox(config, jail=jail, on_close=self._sandboxes.discard)
        except BaseException:
            await jail.close()
            raise
        self._sandboxes.add(sandbox)
        try:
            await sandbox.start()
        except BaseException:
            await sandbox.close()
            raise
        jail.grant(self.ports - jail.network.ports)
        return sandbox

    async def close(self) -> None:
        """Close every sandbox made here and remove the service address. Idempotent."""
        self._closed = True
        sandboxes, self._sandboxes = list(self._sandboxes), set()
        try:
            await close_all(sandbox.close for sandbox in sandboxes)
        finally:
            await asyncio.to_thread(self._network.close)

    async def __aenter__(self) -> IsolatedProvider:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
