"""Chromium as a real windowed browser on a desktop sandbox's display.

The agent sees the whole window, browser chrome included, and acts on it through X
input like on any app. The task reads the page through Playwright over CDP (``evaluate``,
``url``, where the page's viewport lies on the screen), the way a browser task reads its
page; Chromium itself is started by the sandbox (``DesktopSandbox.launch``), so it ends
with the episode like every app. Requests outside ``allowed_origins`` are refused, so the
address bar reaches nothing but the task's site (not the site server's control API, not
the debugging port).

Chromium runs under the episode's managed enterprise policy (``sandboxes.browser.policy``):
no ``javascript:``/``chrome:``/``data:``/``file:`` URL, no DevTools, no incognito window.
So the agent cannot run script of its own in the page, and a WebSocket (which routes do not
see) can only be opened by the site's own script, to an allowed origin.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.async_api import async_playwright

from sandboxes.browser.chromium import CHROMIUM_FLAGS, find_chromium
from sandboxes.browser.policy import locked_down, policy_root
from sandboxes.desktop.sandbox import DesktopSandbox
from sandboxes.errors import SandboxEvaluationError, SandboxStartError
from sandboxes.origins import origin_of

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        Frame,
        Page,
        Playwright,
        Route,
        WebSocketRoute,
    )

# Where the page's viewport lies on the screen (the window's frame may have no border).
_ORIGIN_JS = ("[window.screenX, window.screenY, window.outerWidth, window.outerHeight,"
              " window.innerWidth, window.innerHeight]")


class DesktopChromium:
    """One headed Chromium on a desktop sandbox; ``launch`` it, the sandbox ends it."""

    def __init__(self, sandbox: DesktopSandbox, playwright: Playwright, browser: Browser, page: Page) -> None:
        self.sandbox = sandbox
        self._playwright, self._browser, self.page = playwright, browser, page
        #: documents the tab committed since launch (a reload, a navigation, a blocked one's
        #: error page), counted here from the browser's events: nothing in the page changes it
        self.documents = 0
        self._address = str(page.url)
        page.on("framenavigated", self._navigated)

    def _navigated(self, frame: Frame) -> None:
        if frame != self.page.main_frame:
            return
        before, self._address = self._address, str(frame.url)
        same, _, hash_after = self._address.partition("#")
        if not (before.partition("#")[0] == same and before.partition("#")[2] != hash_after):
            self.documents += 1  # not a same-document jump to another #fragment

    @classmethod
    async def launch(cls, sandbox: DesktopSandbox, url: str, *, allowed_origins: tuple[str, ...] = (),
                     app_mode: bool = False, timeout_s: float = 30.0) -> DesktopChromium:
        """Start Chromium at ``url`` filling the screen; ``app_mode`` hides the tabs and the
        address bar (``--app``), else the full browser chrome shows."""
        if sandbox.jail is not None:
            raise SandboxStartError(
                "expected a desktop sandbox outside a jail for windowed Chromium, got an isolated "
                "one; its debugging port would be on the jail's own loopback, out of the "
                "harness's reach: run Chromium desktop tasks with --provider local")
        profile = sandbox.home / ".config" / "chromium"
        profile.mkdir(parents=True, exist_ok=True)
        width, height = sandbox.config.width, sandbox.config.height
        allowed = {o for o in (*allowed_origins, origin_of(url)) if o}
        argv = [find_chromium(), *CHROMIUM_FLAGS, "--remote-debugging-port=0", f"--user-data-dir={profile}",
                "--window-position=0,0", f"--window-size={width},{height}", "--password-store=basic",
                "--no-default-browser-check", "--test-type", "--disable-features=Translate,MediaRouter",
                f"--app={url}" if app_mode else url]
        log = sandbox.state_dir / "chromium.log"
        proc = sandbox.launch(locked_down(argv, allowed, sandbox.state_dir / "chromium-etc"), log=log)
        port = await _debugging_port(profile / "DevToolsActivePort", timeout_s, proc, log)
        playwright = await async_playwright().start()
        sandbox.add_cleanup(playwright.stop)
        try:
            browser = await playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{port}", timeout=timeout_s * 1000)
        except Exception as exc:
            raise SandboxStartError(f"expected Chromium's debugging port {port} to accept Playwright, got {exc}") from exc
        context = browser.contexts[0]
        await context.route("**/*", lambda route: _confine(route, allowed))
        await context.route_web_socket(lambda ws_url: _ws_origin(ws_url) not in allowed, _refuse_socket)
        page = await _first_page(context, allowed, timeout_s)
        await _require_policy(context, argv[0], timeout_s)
        await page.wait_for_load_state("load", timeout=timeout_s * 1000)
        await sandbox.wait_for_window(lambda w: "chromium" in w.title.lower() or bool(w.title), "Chromium")
        return cls(sandbox, playwright, browser, page)

    @property
    def url(self) -> str:
        return str(self.page.url)

    @property
    def closed(self) -> bool:
        """Whether the tab is gone (closed by the agent, or the browser with it)."""
        return bool(self.page.is_closed())

    async def evaluate(self, expression: str) -> object:
        """The JSON value of a JavaScript expression in the page."""
        try:
            return await self.page.evaluate(expression)
        except Exception as exc:
            raise SandboxEvaluationError(f"expected {expression[:60]!r} to evaluate in the page, got {exc}") from exc

    async def viewport_origin(self) -> tuple[int, int]:
        """Screen coordinates of the page's (0, 0)."""
        values = await self.evaluate(_ORIGIN_JS)
        if not isinstance(values, list) or len(values) != 6:
            raise SandboxEvaluationError(f"expected the window's six sizes, got {values!r}")
        sx, sy, ow, oh, iw, ih = (int(v) for v in values)
        border = max(0, (ow - iw) // 2)
        return int(sx + border), int(sy + oh - ih - border)


async def _debugging_port(path: Path, timeout_s: float, proc: subprocess.Popen[bytes], log: Path) -> int:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        try:
            first = path.read_text().split("\n", 1)[0]
            if first.strip().isdigit():
                return int(first)
        except OSError:
            pass
        if proc.poll() is not None:  # bwrap refused (no user namespaces?), or Chromium died
            output = log.read_text(encoding="utf-8", errors="replace")[-1500:] if log.exists() else ""
            raise SandboxStartError(f"expected Chromium to start under bwrap, got its exit (code "
                                    f"{proc.returncode}); its output: {output!r}")
        if loop.time() > deadline:
            raise SandboxStartError(f"expected Chromium to write {path} within {timeout_s}s, got nothing; "
                                    "check that Chromium starts on this display")
        await asyncio.sleep(0.01)


async def _first_page(context: BrowserContext, allowed: set[str], timeout_s: float) -> Page:
    """The tab at the start URL (the browser's own UI, e.g. the omnibox popup, is a page too)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not (pages := [p for p in context.pages if origin_of(p.url) in allowed]):
        if loop.time() > deadline:
            raise SandboxStartError(f"expected Chromium to open a page within {timeout_s}s, got "
                                    f"{[p.url for p in context.pages]}")
        await asyncio.sleep(0.01)
    return pages[0]


async def _require_policy(context: BrowserContext, chromium: str, timeout_s: float) -> None:
    """Fail closed unless the managed policy is in force: a ``data:`` URL must be refused in a
    tab opened and closed for the check (a Chromium build that reads its policies elsewhere
    would run unlocked, and MiniWoB's reward would be forgeable)."""
    probe = await context.new_page()
    try:
        await probe.goto("data:text/html,policy-probe", timeout=timeout_s * 1000)
        outcome = "the page loaded"
    except Exception as exc:
        if "ERR_BLOCKED_BY_ADMINISTRATOR" in str(exc):
            return
        outcome = str(exc)
    finally:
        await probe.close()
    raise SandboxStartError(
        f"expected Chromium's managed policy to refuse a data: URL, got {outcome}; {chromium} does not "
        f"read its policies from {policy_root(chromium)}/policies/managed: use Debian's Chromium or Chrome")


def _ws_origin(url: str) -> str | None:
    """The http(s) origin a ws(s) URL belongs to (routes compare origins by scheme)."""
    return origin_of("http" + url[2:] if url.startswith("ws") else url)


async def _refuse_socket(ws: WebSocketRoute) -> None:
    await ws.close(code=1008, reason="outside the episode's origins")


async def _confine(route: Route, allowed: set[str]) -> None:
    if origin_of(route.request.url) in allowed:
        await route.continue_()
    else:
        await route.abort("blockedbyclient")
