"""What an agent's actions on a desktop cannot do, checked from outside the sandbox: leave a
process running after its episode, open another sandbox's X display, or break isolation
because the project lives under /tmp. Real Xvfb, openbox, xterm, bubblewrap and cgroups.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandboxes import procs
from sandboxes.actions import Click, Key, RightClick, TypeText
from sandboxes.desktop.config import DesktopConfig
from sandboxes.desktop.display import Processes
from sandboxes.desktop.sandbox import DesktopSandbox
from sandboxes.isolated import IsolatedProvider
from sandboxes.isolation.jail import IsolationConfig
from sandboxes.isolation.tracked import Tracker
from sandboxes.providers import LocalProvider
from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
SMALL = DesktopConfig(width=640, height=480)


def _named(name: str) -> set[int]:
    """Live processes whose argv[0] is ``name`` (``exec -a name``)."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv0 = fh.read().split(b"\0")[0]
        except OSError:
            continue
        if argv0 == name.encode() and procs.is_alive(int(entry)):
            found.add(int(entry))
    return found


@pytest.fixture
def daemon_name() -> Iterator[str]:
    """A fresh process name; whatever still carries it after the test is killed (old code)."""
    name = f"cua-daemon-{secrets.token_hex(4)}"
    yield name
    procs.kill_pids(_named(name))


def _detach(name: str) -> str:
    """The shell line an agent types: a daemon in a session of its own, its parent gone."""
    return f"setsid bash -c 'exec -a {name} sleep 900' &"


async def _desktops(kind: str, count: int, config: DesktopConfig = SMALL
                    ) -> tuple[LocalProvider | IsolatedProvider, list[DesktopSandbox]]:
    provider: LocalProvider | IsolatedProvider
    provider = LocalProvider(desktop=config) if kind == "local" else IsolatedProvider(desktop=config)
    desktops = []
    for _ in range(count):
        desktop = await provider.new_desktop()
        assert isinstance(desktop, DesktopSandbox)
        desktops.append(desktop)
    return provider, desktops


@pytest.mark.parametrize("kind", ["local", "isolated"])
async def test_a_daemon_started_from_xterm_or_an_app_ends_with_reset_and_close(
        kind: str, daemon_name: str) -> None:
    provider, [desktop] = await _desktops(kind, 1)
    try:
        xterm = desktop.launch(["xterm", "-geometry", "80x20+0+0"])
        window = await desktop.wait_for_window(lambda w: w.pid == xterm.pid, "xterm")
        await desktop.execute(Click(x=window.x + window.width // 2, y=window.y + window.height // 2))
        await desktop.execute(TypeText(text=_detach(daemon_name) + "\n"))
        assert await wait_until(lambda: _named(daemon_name), timeout=10), "the daemon never started"
        await desktop.reset()
        assert not _named(daemon_name), "a daemon typed into xterm outlived the reset"

        # The app stays up: in a jail, a launch's PID namespace ends when its first process does.
        desktop.launch(["bash", "-c", _detach(daemon_name + "-app") + " exec sleep 900"])
        assert await wait_until(lambda: _named(daemon_name + "-app"), timeout=10)
    finally:
        await provider.close()
    assert not _named(daemon_name + "-app"), "a daemon an app started outlived the provider's close"


@pytest.mark.parametrize("kind", ["local", "isolated"])
async def test_the_window_managers_menus_and_keys_start_no_program(kind: str) -> None:
    """Debian's openbox offers a terminal and a browser on a right-click of the desktop, and
    runs programs from keys (W-e); the sandbox's openbox does neither (sandboxes/desktop/openbox.py)."""
    provider, [desktop] = await _desktops(kind, 1, SMALL.with_overrides({"reset_mode": "same_display"}))
    try:
        await desktop.execute(RightClick(x=100, y=100))  # Debian's root menu would open here
        await desktop.execute(Click(x=140, y=110))  # and this is its "Terminal emulator"
        await desktop.execute(RightClick(x=100, y=100))
        await desktop.execute(Click(x=140, y=130))  # its "Web browser"
        await desktop.execute(Key(keys=("meta", "e")))  # Debian binds W-e to a browser
        # openbox handles X events in order: once it manages a window mapped after those
        # clicks and keys, it has handled them, and whatever they started has been forked.
        marker = desktop.launch(["xterm", "-geometry", "20x5+300+300"])
        await desktop.wait_for_window(lambda w: w.pid == marker.pid, "the marker xterm")
        started = {info.comm for pid in desktop.display_pids()
                   if (info := procs.read_proc(pid)) is not None} - {"Xvfb", "openbox", "bwrap"}
        assert not started, f"openbox started {started}"
        await desktop.reset()
        assert await desktop.health() and desktop.display_pids(), "the display did not stay"
    finally:
        await provider.close()


async def test_without_a_cgroup_the_environment_tag_still_ends_a_detached_daemon(daemon_name: str) -> None:
    started = Processes()
    started.tracker = Tracker(use_cgroup=False)  # as where /sys/fs/cgroup is read-only
    started.spawn(["bash", "-c", _detach(daemon_name)], env={"PATH": os.environ["PATH"]})
    assert await wait_until(lambda: _named(daemon_name), timeout=10)
    started.close()
    assert not _named(daemon_name)


# An X client in the sandbox: the connection setup's answer for each socket, with the
# cookie of the app's own XAUTHORITY (what a client of that display would use).
X_PROBE = r"""
import json, os, socket, struct, sys
from Xlib import xauth
path = os.environ.get("XAUTHORITY")  # none: no cookie
entries = xauth.Xauthority(path).entries if path else []
cookie = entries[0][4] if entries else b""
def answer(address):
    s = socket.socket(socket.AF_UNIX); s.settimeout(5)
    try:
        s.connect(address)
    except OSError as exc:
        return "no socket: " + type(exc).__name__
    name = b"MIT-MAGIC-COOKIE-1"
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    s.sendall(struct.pack("<BxHHHHxx", 0x6C, 11, 0, len(name), len(cookie)) + pad(name) + pad(cookie))
    reply = s.recv(1)
    return {b"\x01": "accepted", b"\x00": "refused"}.get(reply, repr(reply))
out = {key: answer(address.replace("@", "\0", 1)) for key, address in json.loads(sys.argv[1]).items()}
def readable(path):
    try:
        open(path, "rb").read(); return True
    except OSError:
        return False
out["readable"] = [path for path in json.loads(sys.argv[2]) if readable(path)]
open(sys.argv[3], "w").write(json.dumps(out))
"""


async def _probe(desktop: DesktopSandbox, sockets: dict[str, str], files: list[str]) -> dict:
    out = desktop.home / "x-probe.json"
    desktop.launch([sys.executable, "-c", X_PROBE, json.dumps(sockets), json.dumps(files), str(out)])
    assert await wait_until(out.exists, timeout=20)
    return json.loads(out.read_text())


def _socket(number: int) -> str:
    return f"/tmp/.X11-unix/X{number}"


async def test_an_app_opens_its_own_display_and_not_another_sandboxs() -> None:
    provider, [mine, other] = await _desktops("local", 2)
    try:
        number = {d: int(d.app_display[1:]) for d in (mine, other)}
        found = await _probe(mine, {"own": _socket(number[mine]), "other": _socket(number[other]),
                                    "other abstract": "@" + _socket(number[other])}, [])
    finally:
        await provider.close()
    assert found["own"] == "accepted", found  # the control: the cookie is the right one
    assert found["other"] == "refused" and found["other abstract"] == "refused", found


async def test_a_jail_cannot_see_or_open_another_jails_display() -> None:
    # Jail homes outside /tmp: there the jail's own /tmp does not hide the others' homes.
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="cua-test-homes-") as homes:
        provider = IsolatedProvider(isolation=IsolationConfig(home_root=homes), desktop=SMALL)
        try:
            mine, other = await provider.new_desktop(), await provider.new_desktop()
            assert other.jail is not None and other._host_display is not None
            other_socket = os.path.join(other.jail.tmp, ".X11-unix", f"X{other.app_display[1:]}")
            own = _socket(int(mine.app_display[1:]))  # in its jail's own /tmp and netns
            found = await _probe(mine, {"own": own, "own abstract": "@" + own,
                                        "other": other_socket},
                                 [other_socket, other.app_env().get("XAUTHORITY", other_socket)])
        finally:
            await provider.close()
    assert found["own"] == "accepted" and found["own abstract"] == "accepted", found
    assert found["other"].startswith("no socket"), found
    assert found["readable"] == [], found


JAIL_RUNS_THIS_PYTHON = """
import asyncio, subprocess, sys
from sandboxes.isolation.jail import Isolation, IsolationConfig
from sandboxes.isolation.netns import ServiceNetwork

async def main():
    network = ServiceNetwork()
    network.open()
    jail = Isolation(IsolationConfig(memory_limit_mb=None, max_processes=None), service=network.address)
    try:
        await jail.open()
        proc = await jail.spawn([sys.executable, "-c", "import sandboxes, sys; print(sys.prefix)"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        print((await proc.communicate())[0].decode().strip())
    finally:
        await jail.close()
        network.close()

asyncio.run(main())
"""


def test_a_jail_runs_a_python_that_lives_under_tmp(tmp_path: Path) -> None:
    assert str(tmp_path).startswith("/tmp/"), tmp_path  # the case: a checkout or venv under /tmp
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "project.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # this venv's packages
    done = subprocess.run([str(venv / "bin" / "python"), "-c", JAIL_RUNS_THIS_PYTHON], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == str(venv), done
