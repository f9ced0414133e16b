"""Linux process bookkeeping for the Chromium a host launched: find it, kill its
leftovers after a crash, and reap the zombies so none outlive the host.

Playwright spawns Chromium detached, so the browser leads its own process group and
its zygote and renderers share that group. When the browser is SIGKILLed those
children are orphaned; we make this process a child subreaper so they are
re-parented to us (not to a PID 1 that may never reap) and reap them by group.
Chromium's crash handler (chrome_crashpad_handler) double-forks into a session of
its own, so it is re-parented to us as well and is tracked by name.
"""

from __future__ import annotations

import ctypes
import os
import signal
from dataclasses import dataclass

_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class ProcInfo:
    """The fields of /proc/<pid>/stat we need."""

    pid: int
    comm: str
    state: str
    ppid: int
    pgid: int


def read_proc(pid: int) -> ProcInfo | None:
    """Parse /proc/<pid>/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode(errors="replace")
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    comm = raw[raw.find("(") + 1 : raw.rfind(")")]
    fields = raw[raw.rfind(")") + 2 :].split()
    return ProcInfo(pid=pid, comm=comm, state=fields[0], ppid=int(fields[1]), pgid=int(fields[2]))


def all_procs() -> list[ProcInfo]:
    """Every process visible in /proc."""
    infos = (read_proc(int(name)) for name in os.listdir("/proc") if name.isdigit())
    return [info for info in infos if info is not None]


def is_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    info = read_proc(pid)
    return info is not None and info.state not in ("Z", "X")


def find_by_marker(marker: str) -> int | None:
    """The pid of the process whose command line contains ``marker`` (the browser)."""
    needle = marker.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if needle in fh.read():
                    return int(name)
        except OSError:
            continue
    return None


def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process; False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def kill_group(pgid: int) -> None:
    """SIGKILL every process left in a (crashed) browser's process group."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


#: comm (truncated to 15 characters by the kernel) of Chromium's crash handler.
CRASHPAD_COMM = "chrome_crashpad"
#: the process names of Chromium (browser, renderer, GPU, zygote) as /proc/PID/comm shows them
CHROMIUM_COMMS = ("chromium", "chrome")


def crashpad_children() -> set[int]:
    """Live crash-handler processes re-parented to this process."""
    me = os.getpid()
    return {
        info.pid
        for info in all_procs()
        if info.ppid == me and info.comm.startswith(CRASHPAD_COMM) and info.state != "Z"
    }


def kill_pids(pids: set[int]) -> None:
    """SIGKILL each of ``pids`` that still runs."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def reap_group(pgid: int) -> int:
    """Reap our zombie children from process group ``pgid`` and zombie crash handlers;
    return how many.

    Only those (and orphaned Chromium processes) are waited for, so asyncio's own child
    watchers (the Playwright driver lives in our group) never lose an exit status to us.
    """
    reaped = 0
    me = os.getpid()
    for info in all_procs():
        # Orphaned Chromium processes of any earlier browser come to us (we are a
        # subreaper) and nobody else will ever wait for them, so they are reaped too.
        ours = (
            info.pgid == pgid or info.comm.startswith(CRASHPAD_COMM) or info.comm in CHROMIUM_COMMS
        )
        if info.ppid == me and ours and info.state == "Z":
            try:
                os.waitpid(info.pid, os.WNOHANG)
                reaped += 1
            except ChildProcessError:
                pass
    return reaped


def group_members(pgid: int) -> list[ProcInfo]:
    """Processes (zombies included) still in process group ``pgid``."""
    return [info for info in all_procs() if info.pgid == pgid]


def descendants(roots: set[int]) -> set[int]:
    """``roots`` and every live process below them (by parent pid), zombies excluded."""
    children: dict[int, list[int]] = {}
    for info in all_procs():
        if info.state not in ("Z", "X"):
            children.setdefault(info.ppid, []).append(info.pid)
    found: set[int] = set()
    todo = [pid for pid in roots if is_alive(pid)]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found
