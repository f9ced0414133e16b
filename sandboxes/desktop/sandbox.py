"""The desktop sandbox: an X display of its own (Xvfb + openbox), XTEST input, mss capture.

It implements the sandbox core (``sandboxes.base.Sandbox``) over the same typed action
space as the browser, with the same bounds (a point outside the screen is the agent's
error); and, for desktop tasks, ``launch`` (start an app on the display with the
sandbox's environment), ``windows``/``wait_for_window`` and ``home`` (the episode's
fresh home directory).

``reset`` gives a clean desktop: every app ends (and everything it started), the home
directory is a new empty one, and the display is a new X server (``reset_mode=
"new_display"``) or the same one with no client left (``"same_display"``). An X server
that died is an infrastructure error (``SandboxCrashed``); ``reset`` starts a new one.

With a ``jail`` (``sandboxes.isolation.jail.Isolation``, made by ``IsolatedProvider``), Xvfb,
openbox and every app run inside it: its network namespace, cgroup, limits and bwrap; the
homes and task files live in a directory the jail shares at the same path, and the host
reaches the display through a linked socket (``sandboxes.desktop.xlink``); closing the sandbox
closes the jail.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sandboxes.actions import (
    Action,
    Click,
    Done,
    DoubleClick,
    Drag,
    Key,
    Move,
    RightClick,
    Scroll,
    TypeText,
    Wait,
    duration_s,
    outside,
)
from sandboxes.base import SandboxKind, Screenshot
from sandboxes.desktop.config import DesktopConfig
from sandboxes.desktop.display import Processes, start_xvfb, wait_until
from sandboxes.desktop.openbox import write_locked_config
from sandboxes.desktop.xauth import HOST, new_cookie, write_authority
from sandboxes.desktop.xlink import HostDisplay
from sandboxes.errors import SandboxClosed, SandboxCrashed, SandboxStartError, SandboxTimeout
from sandboxes.extras import require_extra
from sandboxes.teardown import close_all, finish_in_thread

if TYPE_CHECKING:
    from sandboxes.desktop.xinput import XInput
    from sandboxes.desktop.xscreen import Screen, Window
    from sandboxes.isolation.jail import Isolation

T = TypeVar("T")


class DesktopSandbox:
    """One X display for one episode at a time (see the module docstring)."""

    def __init__(self, config: DesktopConfig | None = None, *, jail: Isolation | None = None,
                 on_close: Callable[[DesktopSandbox], None] | None = None) -> None:
        """``jail``: an opened jail to run everything in (closed with the sandbox)."""
        self.config = config or DesktopConfig()
        self.jail = jail
        self._on_close = on_close
        self._root = Path(jail.share("desktop") if jail else tempfile.mkdtemp(prefix="cua-desktop-"))
        self._episode = 0
        self.home = self._root / "home-0"
        self._display_procs = Processes(jail)
        self._apps = Processes(jail)
        self._host_display: HostDisplay | None = None
        self._host_number: int | None = None  # the display's number in HOST (sandboxes.desktop.xauth)
        self._xvfb: subprocess.Popen[bytes] | None = None
        self._number: int | None = None
        self._input: XInput | None = None
        self._screen: Screen | None = None
        self._cleanups: list[Callable[[], Awaitable[None]]] = []
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def kind(self) -> SandboxKind:
        return "desktop"

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def display_name(self) -> str:
        """The X display as this process reaches it, e.g. ":5" (after start)."""
        if self._host_display is not None and self._host_display.number is not None:
            return self._host_display.name
        return self.app_display

    @property
    def app_display(self) -> str:
        """The X display as the apps reach it (in a jail, its own number there)."""
        if self._number is None:
            raise SandboxClosed("expected a started desktop sandbox, got none; call start()")
        return f":{self._number}"

    # ---- the core ---------------------------------------------------------------------
    async def start(self) -> None:
        self._check_open()
        require_extra("desktop", "the desktop sandbox")  # mss and python-xlib, before any process
        if self._xvfb is None:
            self._new_home()
            await finish_in_thread(self._start_display, self._stop_display)

    async def reset(self) -> None:
        """A clean desktop: apps ended, a fresh home, a new (or emptied) display."""
        self._check_open()
        await self._run_cleanups()
        await asyncio.to_thread(self._apps.kill_all)
        crashed = self._xvfb is not None and self._xvfb.poll() is not None
        self._new_home()
        if self.config.reset_mode == "new_display" or crashed or self._xvfb is None:
            await asyncio.to_thread(self._stop_display)
            await finish_in_thread(self._start_display, self._stop_display)
        else:  # what openbox's own menu launched (a terminal) ends too; openbox stays
            await asyncio.to_thread(self._display_procs.kill_descendants)
            await self._x(self._wait_no_clients)

    async def screenshot(self) -> Screenshot:
        screen = self._require_screen()
        raw = await self._x(screen.grab_raw)
        return await asyncio.to_thread(screen.encode, raw, self.config.image_format, self.config.jpeg_quality)

    async def execute(self, action: Action) -> str | None:
        error = outside(action, self.config.width, self.config.height, "screen")
        if error is not None:
            return error
        if isinstance(action, Done):
            return None
        if isinstance(action, Wait):
            await asyncio.sleep(action.seconds)
            return None
        limit = self.config.action_timeout_s + duration_s(action) + self.config.settle_timeout_s
        try:
            await asyncio.wait_for(self._x(lambda: self._act(action)), limit)
        except TimeoutError as exc:
            raise SandboxTimeout(f"expected {action.type} on {self.display_name} within {limit}s, "
                                 "got a timeout; check the X server") from exc
        return None

    async def health(self) -> bool:
        if self._closed or self._xvfb is None or self._xvfb.poll() is not None or self._input is None:
            return False
        try:
            await self._x(self._input.sync)
        except SandboxCrashed:
            return False
        return True

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:  # each part runs even if one before it failed; the jail goes last
            await close_all([self._run_cleanups, lambda: asyncio.to_thread(self._apps.close),
                             lambda: asyncio.to_thread(self._stop_display),
                             lambda: asyncio.to_thread(self._display_procs.close)])
        finally:
            try:
                shutil.rmtree(self._root, ignore_errors=True)
                if self.jail is not None:
                    await self.jail.close()
            finally:
                if self._on_close is not None:
                    self._on_close(self)

    # ---- the desktop interface --------------------------------------------------------
    @property
    def state_dir(self) -> Path:
        """A directory for the task's own files this episode, outside the home directory."""
        path = self._root / f"run-{self._episode}"
        path.mkdir(mode=0o700, exist_ok=True)
        return path

    def app_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment apps run with: this display, the episode's home, UTF-8."""
        runtime = self.state_dir
        env = {"DISPLAY": self.app_display, "HOME": str(self.home), "USER": os.environ.get("USER", "cua"),
               "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
               "XDG_RUNTIME_DIR": str(runtime), "XDG_CONFIG_HOME": str(self.home / ".config"),
               "XDG_CACHE_HOME": str(self.home / ".cache"), "SHELL": "/bin/bash", "TERM": "xterm",
               "XAUTHORITY": str(self._xauthority)}
        return {**env, **(extra or {})}

    def launch(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
               cwd: str | os.PathLike[str] | None = None,
               log: str | os.PathLike[str] | None = None) -> subprocess.Popen[bytes]:
        """Start an app on the display; it ends (with all it started) at reset or close. Its
        output (stdout and stderr) is appended to ``log``, or discarded."""
        self._require_screen()
        return self._apps.spawn(argv, env=self.app_env(env), cwd=str(cwd or self.home), log=log)

    def add_cleanup(self, cleanup: Callable[[], Awaitable[None]]) -> None:
        """Run ``cleanup`` at the next reset or close (e.g. a browser driver's disconnect)."""
        self._cleanups.append(cleanup)

    def app_pids(self) -> set[int]:
        """Live processes of the apps started here (and their descendants)."""
        return self._apps.pids()

    def display_pids(self) -> set[int]:
        """Live processes of the X server and the window manager."""
        return self._display_procs.pids()

    async def windows(self) -> list[Window]:
        """Client windows; in a jail, a window's pid is that of the ``launch`` it came from."""
        found = await self._x(self._require_screen().windows)
        if self.jail is None or not self.jail.config.bubblewrap:
            return found
        return [dataclasses.replace(w, pid=self._apps.started_pid_of(w.pid) if w.pid else None)
                for w in found]

    async def wait_for_window(self, match: Callable[[Window], bool], what: str,
                              timeout_s: float | None = None) -> Window:
        """The first client window ``match`` accepts, once it is viewable (takes input)."""
        limit = timeout_s or self.config.start_timeout_s
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while True:
            found = [w for w in await self.windows() if w.viewable and match(w)]
            if found:
                return found[0]
            if loop.time() > deadline:
                raise SandboxStartError(f"expected {what} to open a window on {self.display_name} "
                                        f"within {limit}s, got none")
            await asyncio.sleep(0.01)

    async def settle(self) -> None:
        """Wait until the screen stops changing (the settle of every action)."""
        screen = self._require_screen()
        await self._x(lambda: screen.settle(self.config.settle_quiet_ms / 1000, self.config.settle_timeout_s))

    # ---- internals --------------------------------------------------------------------
    @property
    def _xauthority(self) -> Path:
        """The display's cookie (``sandboxes.desktop.xauth``), for Xvfb and this sandbox's apps only."""
        return self._root / "xauthority"

    def _act(self, action: Action) -> None:
        xin = self._input
        assert xin is not None and self._screen is not None
        if isinstance(action, Click):
            xin.click(action.x, action.y)
        elif isinstance(action, DoubleClick):
            xin.click(action.x, action.y, count=2)
        elif isinstance(action, RightClick):
            xin.click(action.x, action.y, button=3)
        elif isinstance(action, Move):
            xin.move(action.x, action.y)
            xin.sync()
        elif isinstance(action, Drag):
            xin.drag(action.x, action.y, action.to_x, action.to_y)
        elif isinstance(action, Scroll):
            xin.scroll(action.x, action.y, action.dx, action.dy, self.config.scroll_pixels_per_tick)
        elif isinstance(action, TypeText):
            xin.type_text(action.text)
        elif isinstance(action, Key):
            xin.key_combo(action.keys)
        self._screen.settle(self.config.settle_quiet_ms / 1000, self.config.settle_timeout_s)

    async def _x(self, call: Callable[[], T]) -> T:
        """Run a blocking X call in a thread, one at a time; a dead X server is a crash."""
        async with self._lock:
            try:
                return await asyncio.to_thread(call)
            except (SandboxStartError, SandboxTimeout):
                raise
            except Exception as exc:  # Xlib's and mss's errors when the server went away
                if self._xvfb is not None and self._xvfb.poll() is None:
                    raise
                raise SandboxCrashed(
                    f"expected the X server {self.display_name} to run, got it exited with code "
                    f"{self._xvfb.returncode if self._xvfb else None} ({type(exc).__name__}); "
                    "reset the sandbox to start a new display") from exc

    def _start_display(self) -> None:
        cfg = self.config
        cookie = new_cookie()  # a new display, a new cookie: an old display's apps cannot reach it
        write_authority(str(self._xauthority), cookie)
        self._xvfb, self._number = start_xvfb(self._display_procs, cfg.xvfb_path, cfg.width, cfg.height,
                                              {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                                              cfg.start_timeout_s, auth=str(self._xauthority))
        try:
            self._host_number = self._number
            if self.jail is not None and self.jail.config.bubblewrap:  # its socket is in the jail's /tmp
                self._host_display = HostDisplay(os.path.join(self.jail.tmp, ".X11-unix", f"X{self._number}"))
                self._host_display.link()
                self._host_number = self._host_display.number
            assert self._host_number is not None
            HOST.add(self._host_number, cookie)
            from sandboxes.desktop.xinput import XInput  # the desktop extra (checked in start)
            from sandboxes.desktop.xscreen import Screen

            self._input = XInput(self.display_name)
            self._screen = Screen(self.display_name, cfg.width, cfg.height)
            if cfg.window_manager:
                wm_home = self._root / "wm"  # openbox keeps its cache out of the episode's home
                wm_home.mkdir(exist_ok=True)
                rc = write_locked_config(wm_home)  # no menu or key starts a program
                self._display_procs.spawn(["openbox", "--sm-disable", "--config-file", str(rc)],
                                          env=self.app_env({"HOME": str(wm_home), "XDG_CACHE_HOME": str(wm_home)}))
                wait_until(self._screen.wm_manages_windows, cfg.start_timeout_s, "openbox to manage the display")
                screen = self._screen
                wait_until(lambda: not screen.windows(), cfg.start_timeout_s, "openbox to forget its probe window")
        except BaseException:
            self._stop_display()
            raise

    def _stop_display(self) -> None:
        for closeable in (self._input, self._screen):
            if closeable is not None:
                try:
                    closeable.close()
                except Exception:  # noqa: BLE001 - the connection may be gone with the server
                    pass
        self._input = self._screen = None
        if self._host_number is not None:
            HOST.remove(self._host_number)
            self._host_number = None
        self._display_procs.kill_all()
        self._xvfb = None
        if self.jail is not None and self.jail.config.bubblewrap and self._number is not None:
            # A killed Xvfb leaves its lock in the jail's /tmp, holding its pid there, which
            # the next Xvfb (a new PID namespace) may have: it would move to the next number.
            for stale in (f".X{self._number}-lock", f".X11-unix/X{self._number}"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.jail.tmp, stale))
        if self._host_display is not None:
            self._host_display.unlink()
            self._host_display = None

    def _wait_no_clients(self) -> None:
        screen = self._require_screen()
        wait_until(lambda: not screen.windows(), self.config.start_timeout_s, "every app window to close")

    def _new_home(self) -> None:
        old = self.home
        self._episode += 1
        self.home = self._root / f"home-{self._episode}"
        self.home.mkdir(mode=0o700)
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(self._root / f"run-{self._episode - 1}", ignore_errors=True)

    async def _run_cleanups(self) -> None:
        cleanups, self._cleanups = self._cleanups, []
        for cleanup in cleanups:
            try:
                await cleanup()
            except Exception:  # noqa: BLE001 - its processes are killed next anyway
                pass

    def _require_screen(self) -> Screen:
        self._check_open()
        if self._screen is None:
            raise SandboxClosed("expected a started desktop sandbox, got none; call start() or reset()")
        return self._screen

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosed("expected an open desktop sandbox, got a closed one; make a new one")

    async def __aenter__(self) -> DesktopSandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
