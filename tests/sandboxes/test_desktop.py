"""The desktop sandbox on a real Xvfb with real apps: typing lands exactly (shift, symbols,
characters the layout lacks), pointer and wheel actions arrive where aimed, reset leaves a
clean desktop, and a dead X server is an infrastructure error."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from sandboxes.actions import Click, DoubleClick, Drag, Key, RightClick, Scroll, TypeText
from sandboxes.base import Sandbox, SandboxRequest
from sandboxes.desktop.config import DesktopConfig
from sandboxes.desktop.sandbox import DesktopSandbox
from sandboxes.errors import InfrastructureError, SandboxCrashed
from sandboxes.procs import is_alive
from sandboxes.providers import LocalProvider
from tests.conftest import wait_until

PROBE = Path(__file__).parent / "apps" / "tk_probe.py"
#: Shifted letters and symbols of the US layout, and characters it lacks (spare keycodes).
TRICKY = 'Hello, World! ~`$%^&*()_+-={}[]|\\:;"\'<>?/ é€ßü×'


@pytest_asyncio.fixture(loop_scope="session")
async def desktop():
    sandbox = DesktopSandbox(DesktopConfig(width=800, height=600))
    await sandbox.start()
    yield sandbox
    await sandbox.close()


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def _probe(desktop: DesktopSandbox) -> tuple[Path, dict]:
    await desktop.reset()
    path = desktop.state_dir / "probe.jsonl"
    desktop.launch([sys.executable, str(PROBE), str(path)])
    await desktop.wait_for_window(lambda w: w.title == "probe", "the probe app")
    await desktop.settle()
    assert await wait_until(lambda: any(e["kind"] == "ready" for e in _log(path)), 10)
    # The first click on a new window can be taken by the window manager's focus handling
    # while the app is still mapping its widgets, and the app lays its widgets out again once
    # mapped (the canvas moves down when the entry above it gets its height): click the canvas
    # where the app last said it is until the app sees that very click with no move since.
    for _ in range(10):
        ready = [e for e in _log(path) if e["kind"] == "ready"][-1]
        cx, cy = ready["canvas"]
        before = len(_log(path))
        await desktop.execute(Click(x=cx + 5, y=cy + 5))
        await wait_until(lambda n=before: any(e["kind"] == "press" for e in _log(path)[n:]), 1.0)
        after = _log(path)[before:]
        if [(e["x"], e["y"]) for e in after if e["kind"] == "press"] == [(cx + 5, cy + 5)] and \
                not any(e["kind"] == "ready" and e != ready for e in after):
            break
    else:
        raise AssertionError(f"the probe app never saw a click where it said its canvas is: {_log(path)}")
    path.write_text("")  # the tests read only what comes next
    return path, ready


async def test_provider_makes_a_started_desktop_sandbox() -> None:
    async with LocalProvider() as provider:
        sandbox: Sandbox = await provider.new_sandbox(SandboxRequest(kind="desktop", viewport=(640, 480)))
        assert sandbox.kind == "desktop" and await sandbox.health()
        shot = await sandbox.screenshot()
        assert (shot.width, shot.height, shot.format) == (640, 480, "png")
        assert shot.data.startswith(b"\x89PNG")
    assert not await sandbox.health()


async def test_typing_with_shift_and_symbols_lands_exactly_in_xterm(desktop) -> None:
    await desktop.reset()
    out = desktop.home / "typed.txt"
    proc = desktop.launch(["xterm", "-geometry", "100x20+0+0", "-e", "sh", "-c", f"cat > {out}"])
    await desktop.wait_for_window(lambda w: w.pid == proc.pid, "xterm")
    assert await desktop.execute(TypeText(text=TRICKY + "\n")) is None
    assert await desktop.execute(Key(keys=("ctrl", "d"))) is None
    assert await wait_until(lambda: proc.poll() is not None, 10)
    assert out.read_text(encoding="utf-8") == TRICKY + "\n"


async def test_typing_and_key_combos_land_in_tk(desktop) -> None:
    path, ready = await _probe(desktop)
    ex, ey = ready["entry"]
    await desktop.execute(Click(x=ex + 20, y=ey + 5))
    assert await wait_until(lambda: any(e["kind"] == "focus" for e in _log(path))), _log(path)
    await desktop.execute(TypeText(text=TRICKY))
    await desktop.execute(Key(keys=("ctrl", "a")))
    await desktop.execute(Key(keys=("enter",)))
    assert await wait_until(lambda: any(e["kind"] == "text" for e in _log(path))), _log(path)
    assert [e["text"] for e in _log(path) if e["kind"] == "text"] == [TRICKY]
    assert any(e["kind"] == "combo" for e in _log(path))


async def test_click_double_click_right_click_drag_and_scroll_arrive_where_aimed(desktop) -> None:
    path, ready = await _probe(desktop)
    cx, cy = ready["canvas"]
    await desktop.execute(Click(x=cx + 10, y=cy + 20))
    await desktop.execute(RightClick(x=cx + 30, y=cy + 40))
    await desktop.execute(DoubleClick(x=cx + 50, y=cy + 60))
    await desktop.execute(Drag(x=cx + 100, y=cy + 100, to_x=cx + 300, to_y=cy + 200))
    await desktop.execute(Scroll(x=cx + 100, y=cy + 100, dy=3 * 53))
    await desktop.execute(Scroll(x=cx + 100, y=cy + 100, dx=-53))
    assert await wait_until(lambda: [e for e in _log(path) if e["kind"] == "wheel"].__len__() == 4)
    log = [e for e in _log(path) if e["kind"] != "ready"]
    presses = [(e["x"], e["y"]) for e in log if e["kind"] == "press"]
    assert presses[0] == (cx + 10, cy + 20) and presses[-1] == (cx + 100, cy + 100)
    assert [(e["x"], e["y"]) for e in log if e["kind"] == "right"] == [(cx + 30, cy + 40)]
    assert [(e["x"], e["y"]) for e in log if e["kind"] == "double"] == [(cx + 50, cy + 60)]
    assert [(e["x"], e["y"]) for e in log if e["kind"] == "release"][-1] == (cx + 300, cy + 200)
    assert [e["direction"] for e in log if e["kind"] == "wheel"] == ["down", "down", "down", "left"]


async def test_points_outside_the_screen_are_the_agents_error(desktop) -> None:
    error = await desktop.execute(Click(x=800, y=10))
    assert error is not None and "outside the 800x600 screen" in error


@pytest.mark.parametrize("mode", ["new_display", "same_display"])
async def test_reset_leaves_no_process_and_a_fresh_home(mode) -> None:
    async with DesktopSandbox(DesktopConfig(width=640, height=480, reset_mode=mode)) as desktop:
        old_home = desktop.home
        (old_home / "secret.txt").write_text("left behind?")
        proc = desktop.launch(["xterm", "-e", "sh", "-c", "sleep 300 & sleep 300"])
        await desktop.wait_for_window(lambda w: w.pid == proc.pid, "xterm")
        assert await wait_until(lambda: len(desktop.app_pids()) >= 4)  # xterm, sh, two sleeps
        apps, display = desktop.app_pids(), desktop.display_pids()
        await desktop.reset()
        assert not [pid for pid in apps if is_alive(pid)]
        assert desktop.app_pids() == set() and await desktop.windows() == []
        assert desktop.home != old_home and not old_home.exists() and list(desktop.home.iterdir()) == []
        survivors = {pid for pid in display if is_alive(pid)}
        assert survivors == (display if mode == "same_display" else set())
        assert await desktop.health()


async def test_a_dead_x_server_is_an_infrastructure_error_and_reset_recovers() -> None:
    async with DesktopSandbox(DesktopConfig(width=640, height=480)) as desktop:
        xvfb = desktop._xvfb
        assert xvfb is not None
        os.kill(xvfb.pid, signal.SIGKILL)
        assert await wait_until(lambda: xvfb.poll() is not None)
        assert not await desktop.health()
        with pytest.raises(SandboxCrashed) as info:
            await desktop.screenshot()
        assert isinstance(info.value, InfrastructureError) and "X server" in str(info.value)
        with pytest.raises(InfrastructureError):
            await desktop.execute(Click(x=5, y=5))
        await desktop.reset()
        assert await desktop.health() and (await desktop.screenshot()).width == 640


CRASHING_HARNESS = """
import asyncio, os
from sandboxes.desktop.sandbox import DesktopSandbox
async def main():
    desktop = DesktopSandbox()
    await desktop.start()
    proc = desktop.launch(["xterm"])
    await desktop.wait_for_window(lambda w: w.pid == proc.pid, "xterm")
    print(repr((sorted(desktop.display_pids() | desktop.app_pids()), str(desktop.home.parent))), flush=True)
    os._exit(1)  # dies without closing the sandbox
asyncio.run(main())
"""


async def test_a_harness_that_dies_leaves_no_x_server_or_app_behind() -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", CRASHING_HARNESS,
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    pids, root = ast.literal_eval(out.decode().strip())
    shutil.rmtree(root)  # the sandbox's folder: only close() removes it
    assert len(pids) >= 3  # Xvfb, openbox, xterm (and its shell)
    assert await wait_until(lambda: not [pid for pid in pids if is_alive(pid)])
