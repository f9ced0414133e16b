"""An X display of its own: Xvfb (display number picked by ``-displayfd``), openbox, and the
processes started on it, all ended together.

Every process starts in a session of its own, so a terminal's shell or a browser's
renderers are found again as its descendants (by parent pid) and killed with it; in a
tracker (``sandboxes.isolation.tracked``: a cgroup, or an environment tag where cgroups cannot be
written), so that a daemon it started that detached (``setsid``, a double fork) is killed
with it too (in a bubblewrap jail, each launch's PID namespace does that); and with
``PR_SET_PDEATHSIG``, so that it dies with the thread that started it should this process
die without closing its sandboxes (no Xvfb outlives a crashed harness).
Waiting is always on a condition (the X server writing its display number, the window
manager's ``_NET_SUPPORTING_WM_CHECK``, a process being gone), never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from sandboxes.errors import SandboxStartError
from sandboxes.isolation.tracked import Tracker
from sandboxes.procs import descendants, is_alive, kill_pids, read_proc

if TYPE_CHECKING:
    from sandboxes.isolation.jail import Isolation

#: How often conditions are polled while waiting.
POLL_S = 0.005
_PR_SET_PDEATHSIG = 1
_prctl: Callable[[int, int, int, int, int], int] | None
try:  # looked up now: the child between fork and exec must not import or load anything
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None


def _die_with_parent() -> None:
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll ``condition`` until it holds; SandboxStartError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SandboxStartError(f"expected {what} within {timeout_s}s, got a timeout")
        time.sleep(POLL_S)


class Processes:
    """Processes started for one display; ``kill_all`` ends them and all they started.
    With a ``jail``, each runs inside it (its network namespace, cgroup, limits, bwrap)
    with exactly ``env`` (bwrap's own ``HOME`` is overridden)."""

    def __init__(self, jail: Isolation | None = None) -> None:
        self.started: list[subprocess.Popen[bytes]] = []
        self.jail = jail
        # A bwrap jail gives each launch a PID namespace, whose end ends all in it; a jail
        # without bwrap makes its launches join its own cgroup, so only the tag can track.
        bwrap = jail is not None and jail.config.bubblewrap
        self.tracker = None if bwrap else Tracker(use_cgroup=jail is None)

    def spawn(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None,
              pass_fds: Sequence[int] = (), log: str | os.PathLike[str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``argv`` in a session of its own, its output written to ``log`` (appended)
        or discarded."""
        binary = shutil.which(argv[0]) or argv[0]
        if not os.path.isfile(binary):
            raise SandboxStartError(f"expected the program {argv[0]!r} on PATH, got none; install it "
                                    "(`make setup` installs xvfb, openbox, xterm)")
        command = [binary, *argv[1:]]
        preexec = _die_with_parent
        if self.tracker is not None:
            env = {**env, **self.tracker.env()}
            preexec = self.tracker.before_exec(_die_with_parent)
        if self.jail is not None:
            inner = ["/usr/bin/env", *(f"{key}={value}" for key, value in env.items()), *command]
            command = ["/bin/sh", "-c", self.jail.shell_command(inner)]
        with open(log, "ab") if log is not None else contextlib.nullcontext(subprocess.DEVNULL) as out:
            proc = subprocess.Popen(command, env=dict(env), cwd=cwd, pass_fds=tuple(pass_fds),
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=preexec)
        self.started.append(proc)
        return proc

    def pids(self) -> set[int]:
        """Every live process started here, their descendants and what the tracker holds."""
        tracked = self.tracker.pids() if self.tracker is not None else set()
        return descendants({p.pid for p in self.started} | tracked)

    def started_pid_of(self, ns_pid: int) -> int | None:
        """The started process under which a process runs whose pid in its own (bwrap) PID
        namespace is ``ns_pid``, e.g. a window's ``_NET_WM_PID``; None unless exactly one."""
        owners = {proc.pid for proc in self.started for pid in descendants({proc.pid})
                  if _ns_pids(pid)[1:][-1:] == [ns_pid]}
        return owners.pop() if len(owners) == 1 else None

    def kill_all(self, timeout_s: float = 5.0) -> None:
        """SIGKILL every process started here and all it started; reap our children."""
        self._kill(set(), timeout_s)
        self.started.clear()

    def kill_descendants(self, timeout_s: float = 5.0) -> None:
        """SIGKILL all that the started programs started, keeping those programs (in a
        bwrap jail, with the bwrap processes that hold them): what a window manager's own
        menu launched, say, while the window manager stays."""
        keep = {p.pid for p in self.started}
        if self.jail is not None and self.jail.config.bubblewrap:  # bwrap's init is 1, its program 2
            keep |= {pid for pid in descendants(keep) if _ns_pids(pid)[1:][-1:] in ([1], [2])}
        self._kill(keep, timeout_s)

    def _kill(self, keep: set[int], timeout_s: float) -> None:
        doomed = self.pids() - keep
        kill_pids(doomed)
        if self.tracker is not None:  # a fork that raced the kill above
            doomed |= self.tracker.kill_all(timeout_s, keep=keep)
        for proc in self.started:
            if proc.pid not in keep:
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    pass
        wait_until(lambda: not any(is_alive(pid) for pid in doomed), timeout_s,
                   f"processes {sorted(doomed)} to end")
        # Grandchildren re-parented to us (a subreaper) become our zombies, some only once
        # their own parent has died: reap until every one is gone, within the same limit.
        with contextlib.suppress(SandboxStartError):
            wait_until(lambda: _reaped(doomed), timeout_s, f"processes {sorted(doomed)} to be reaped")

    def close(self) -> None:
        """``kill_all``, then remove the tracker's cgroup. Idempotent."""
        self.kill_all()
        if self.tracker is not None:
            self.tracker.close()


def _reaped(pids: set[int]) -> bool:
    """Reap those of ``pids`` that are our zombies; True once none of them exists but
    zombies that another live process (PID 1, when this process is no subreaper) is to
    reap: one whose parent is us, or is one of ``pids`` (it will be re-parented), counts."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    me = os.getpid()
    for pid in pids:
        info = read_proc(pid)
        if info is not None and (info.state not in ("Z", "X") or info.ppid == me or info.ppid in pids):
            return False
    return True


def start_xvfb(procs: Processes, xvfb: str, width: int, height: int, env: Mapping[str, str],
               timeout_s: float, *, auth: str | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """Start Xvfb on a free display number (``-displayfd``); return it and the number.
    ``auth``: an X authority file (``sandboxes.desktop.xauth``); only clients with its cookie connect."""
    read_fd, write_fd = os.pipe()
    try:
        proc = procs.spawn([xvfb, "-displayfd", str(write_fd), *(["-auth", auth] if auth else []),
                            "-screen", "0", f"{width}x{height}x24",
                            "-nolisten", "tcp", "-noreset", "-dpi", "96"], env=env, pass_fds=[write_fd])
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    os.close(write_fd)
    try:
        number = _read_display_number(read_fd, proc, timeout_s)
    finally:
        os.close(read_fd)
    return proc, number


def _read_display_number(fd: int, proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise SandboxStartError(f"expected Xvfb to report its display number within {timeout_s}s, "
                                    "got a timeout; check that Xvfb runs here (`Xvfb -help`)")
        ready, _, _ = select.select([fd], [], [], left)
        chunk = os.read(fd, 64) if ready else b""
        if ready and not chunk:
            code = proc.wait()
            raise SandboxStartError(f"expected Xvfb to start, got it exiting with code {code}; "
                                    "run `Xvfb -displayfd 1` to see why")
        data += chunk
    return int(data.strip())


def _ns_pids(pid: int) -> list[int]:
    """A process's pid in each PID namespace it is in, outermost first (``NSpid``)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return [int(part) for part in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []
