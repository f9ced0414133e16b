"""``BrowserHost``: one Playwright driver and one Chromium process hosting many
isolated sandboxes (one BrowserContext each).

The host owns the browser's life: it launches it, notices when it dies (the
Playwright ``disconnected`` event, or the process gone from /proc), kills and reaps
what is left of it, and launches a fresh one. Sandboxes created before a restart
raise ``SandboxCrashed`` on their next operation and work again after ``reset``.
"""

from __future__ import annotations

import asyncio
import os
import uuid
import weakref
from typing import Protocol

from playwright.async_api import Browser, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from sandboxes import procs
from sandboxes.browser.chromium import CHROMIUM_FLAGS, find_chromium
from sandboxes.browser.config import HOST_FIELDS, BrowserConfig
from sandboxes.errors import ConfigError, SandboxClosed, SandboxStartError


class _Closable(Protocol):
    """What the host needs of its sandboxes (``sandboxes.browser.sandbox.BrowserSandbox``)."""

    async def close(self) -> None: ...

_CLOSE_TIMEOUT_S = 10.0


class BrowserHost:
    """One Chromium process shared by many ``BrowserSandbox`` instances.

    Sandboxes are made by a provider (``sandboxes.providers.LocalProvider``), which owns
    the host; ``BrowserSandbox(host, config)`` registers itself here.
    """

    def __init__(self, config: BrowserConfig | None = None) -> None:
        self.config = config or BrowserConfig()
        self._marker = f"--cua-browser-host={uuid.uuid4().hex}"
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._browser_pid: int | None = None
        self._driver_pid: int | None = None
        self._crashpad_pids: set[int] = set()
        self._generation = 0
        self._lock = asyncio.Lock()
        self._closed = False
        self._sandboxes: weakref.WeakSet[_Closable] = weakref.WeakSet()

    # ---- public API ------------------------------------------------------------------

    async def start(self) -> None:
        """Launch Playwright and Chromium. Idempotent."""
        await self.ensure_browser()

    def register(self, sandbox: _Closable) -> None:
        """Track a sandbox made on this host, so that ``close`` closes it too."""
        self._sandboxes.add(sandbox)

    def sandbox_config(self, config: BrowserConfig | None, overrides: dict[str, object]) -> BrowserConfig:
        """The config of a new sandbox: ``config`` (default: the host's) with per-sandbox
        ``overrides`` validated; host fields must match the host's."""
        base = config or self.config
        differing = sorted(f for f in HOST_FIELDS if getattr(base, f) != getattr(self.config, f))
        if differing:
            raise ConfigError(
                f"expected the host's {', '.join(differing)} in the sandbox config, got other "
                "values; host settings apply to the shared browser, set them on the host"
            )
        return base.with_overrides(overrides) if overrides else base

    async def close(self) -> None:
        """Close every sandbox, the browser and Playwright. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for sandbox in list(self._sandboxes):
            await sandbox.close()
        async with self._lock:
            await self._shutdown_browser()
            await self._stop_playwright()

    async def __aenter__(self) -> BrowserHost:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def browser_pid(self) -> int | None:
        """The pid of the Chromium browser process (None before start)."""
        return self._browser_pid

    @property
    def crashpad_pids(self) -> frozenset[int]:
        """Chromium's crash-handler processes that belong to the current browser."""
        return frozenset(self._crashpad_pids)

    @property
    def generation(self) -> int:
        """How many browsers this host has launched; it grows by one per restart."""
        return self._generation

    @property
    def closed(self) -> bool:
        """True after ``close``."""
        return self._closed

    def is_alive(self) -> bool:
        """True while the current browser is connected and its process runs."""
        return (
            self._browser is not None
            and self._browser.is_connected()
            and self._browser_pid is not None
            and procs.is_alive(self._browser_pid)
        )

    # ---- used by sandboxes -----------------------------------------------------------

    async def ensure_browser(self) -> Browser:
        """The live browser, launching (or relaunching after a crash) as needed."""
        if self._closed:
            raise SandboxClosed("expected an open BrowserHost, got a closed one; create a new host")
        if self.is_alive():
            assert self._browser is not None
            return self._browser
        async with self._lock:
            if not self.is_alive():
                await self._shutdown_browser()
                await self._launch()
            assert self._browser is not None
            return self._browser

    async def recover(self, seen_generation: int) -> None:
        """Restart the browser after a crash seen in ``seen_generation``; a no-op when
        another sandbox already restarted it."""
        if self._closed or self._generation != seen_generation:
            return
        await self.ensure_browser()

    # ---- internals -------------------------------------------------------------------

    async def _launch(self) -> None:
        executable = self.config.executable_path or find_chromium()
        if not (os.path.isfile(executable) and os.access(executable, os.X_OK)):
            raise SandboxStartError(
                f"expected executable_path to name an executable Chromium, got {executable!r}; "
                "install chromium or fix BrowserConfig.executable_path"
            )
        procs.become_subreaper()
        crashpad_before = procs.crashpad_children()
        if self._driver_pid is not None and not procs.is_alive(self._driver_pid):
            await self._stop_playwright()
        try:
            self._browser = await self._launch_browser(executable)
        except PlaywrightError:
            # The driver itself may have died with the browser: retry once on a new one.
            await self._stop_playwright()
            try:
                self._browser = await self._launch_browser(executable)
            except PlaywrightError as exc:
                raise SandboxStartError(
                    f"expected Chromium at {executable!r} to start, got: {first_line(exc)}; "
                    "check the binary runs (`chromium --version`) or set $CUA_CHROMIUM"
                ) from exc
        self._generation += 1
        self._browser_pid = procs.find_by_marker(self._marker)
        self._crashpad_pids = procs.crashpad_children() - crashpad_before
        if self._browser_pid is not None:
            info = procs.read_proc(self._browser_pid)
            self._driver_pid = info.ppid if info is not None else None
        if self._browser_pid is None:
            raise SandboxStartError(
                f"expected to find the launched Chromium in /proc by its {self._marker} flag, "
                "got nothing; is /proc mounted?"
            )

    async def _launch_browser(self, executable: str) -> Browser:
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        return await self._playwright.chromium.launch(
            executable_path=executable,
            headless=self.config.headless,
            args=[*CHROMIUM_FLAGS, *self.config.extra_flags, self._marker],
            timeout=self.config.navigation_timeout_s * 1000,
        )

    async def _stop_playwright(self) -> None:
        playwright, self._playwright = self._playwright, None
        if playwright is None:
            return
        # A dead driver never answers stop(): give it a moment only.
        driver_alive = self._driver_pid is None or procs.is_alive(self._driver_pid)
        try:
            await asyncio.wait_for(playwright.stop(), _CLOSE_TIMEOUT_S if driver_alive else 1.0)
        except (TimeoutError, PlaywrightError, OSError):
            pass
        _consume_driver_error(playwright)

    async def _shutdown_browser(self) -> None:
        """Close (or, if it died, clean up after) the current browser."""
        browser, pid, helpers = self._browser, self._browser_pid, self._crashpad_pids
        self._browser, self._browser_pid, self._crashpad_pids = None, None, set()
        alive = pid is not None and procs.is_alive(pid)
        if browser is not None and browser.is_connected() and alive:
            try:
                await asyncio.wait_for(browser.close(), _CLOSE_TIMEOUT_S)
            except (TimeoutError, PlaywrightError):
                pass
        if pid is not None:
            await self._reap(pid, helpers)

    async def _reap(self, pgid: int, helpers: set[int]) -> None:
        """Kill what is left of a browser (its process group and crash handlers) and
        reap the zombies, waiting up to about a second for them to go."""
        procs.kill_group(pgid)
        procs.kill_pids(helpers)
        for _ in range(50):
            procs.reap_group(pgid)
            if not procs.group_members(pgid) and not any(procs.read_proc(p) for p in helpers):
                return
            await asyncio.sleep(0.02)


def first_line(exc: PlaywrightError) -> str:
    """The first line of a Playwright error, for messages that name what went wrong."""
    return (exc.message or str(exc)).strip().splitlines()[0]


def _consume_driver_error(playwright: Playwright) -> None:
    """Read the error Playwright records when its driver dies: it only awaits that future
    during start-up, so otherwise asyncio logs "Future exception was never retrieved" when
    the dead driver's objects are collected (at interpreter exit, after everything else)."""
    manager = getattr(playwright.stop, "__self__", None)  # stop() is the context manager's exit
    transport = getattr(getattr(manager, "_client", None), "_transport", None)
    future = getattr(transport, "on_error_future", None)
    if isinstance(future, asyncio.Future) and future.done() and not future.cancelled():
        future.exception()
