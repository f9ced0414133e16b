"""Every process that a sandbox's launches started, found again however it detached.

A daemon that calls ``setsid`` and double-forks is no longer below the process that
started it (its parent is now init or a subreaper), so a walk of the process tree misses
it. ``Tracker`` finds it anyway:

- **a cgroup** (``sandboxes.isolation.cgroups.SandboxCgroup`` without limits, named
  ``cua-procs-<our pid>-<tag>``), made at the first launch: each launched process joins
  it between fork and exec, and the kernel keeps every descendant in it whatever it does
  to its session or parent. A process leaves only by writing its pid into another
  cgroup's ``cgroup.procs``, which needs write access to the cgroup filesystem (a root
  process on the host has it: see docs/security.md). ``close`` removes the cgroup; the
  empty ones of a harness that was killed are removed by the next tracker made.
- **where cgroups cannot be written** (a container without a delegated cgroup; checked
  once per tracker by a child that joins, and logged once per process), an environment
  tag (``CUA_SANDBOX_TAG``) that every launch gets: a process that keeps the environment
  it inherited is found by it in ``/proc/PID/environ``. A daemon that clears its
  environment (``env -i``) and detaches escapes this fallback.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable

from sandboxes.errors import SandboxStartError
from sandboxes.isolation.cgroups import SandboxCgroup, parent_dirs
from sandboxes.isolation.owned import remember

log = logging.getLogger(__name__)
_warned: list[bool] = []  # the fallback is logged once per process

#: The environment variable that tags a tracker's processes (the fallback).
TAG_VAR = "CUA_SANDBOX_TAG"
#: What tracking cgroups are called (leak checks look for them).
CGROUP_PREFIX = "cua-procs-"


class Tracker:
    """One sandbox part's launched processes and all they started (see the module docstring).

    ``use_cgroup=False``: the tag alone (for launches that join another cgroup themselves,
    such as a jail's)."""

    def __init__(self, *, use_cgroup: bool = True) -> None:
        self.tag = secrets.token_hex(8)
        self._use_cgroup = use_cgroup
        self._group: SandboxCgroup | None = None
        #: Why no cgroup tracks the processes (None while one does, or before the first launch).
        self.fallback_reason: str | None = None if use_cgroup else "the launcher joins a cgroup itself"

    @property
    def group(self) -> SandboxCgroup | None:
        return self._group

    def env(self) -> dict[str, str]:
        """The variables every launched process gets."""
        return {TAG_VAR: self.tag}

    def before_exec(self, then: Callable[[], None]) -> Callable[[], None]:
        """A ``preexec_fn`` that joins the cgroup (made now if need be), then calls ``then``."""
        if self._group is None and self._use_cgroup and self.fallback_reason is None:
            self._open_group()
        join = _joiner(self._group.procs_files if self._group is not None else [])

        def before() -> None:
            join()
            then()

        return before

    def _open_group(self) -> None:
        """Make the cgroup, and check that a child can join it (cgroup v2 may let us make
        a directory but not move processes into it); else fall back to the tag."""
        name = f"{CGROUP_PREFIX}{os.getpid()}-{self.tag}"  # the owner's pid: see _remove_orphans
        remember("cgroup", name)
        group = SandboxCgroup(name, memory_mb=None, max_processes=None)
        try:
            _remove_orphans()
            group.open()
            subprocess.run(["/bin/sh", "-c", ":"], preexec_fn=_joiner(group.procs_files), check=True)
        except (SandboxStartError, OSError, subprocess.SubprocessError) as exc:
            group.close()
            self.fallback_reason = f"{type(exc).__name__}: {exc.__cause__ or exc}"
            if not _warned:
                _warned.append(True)
                log.warning("desktop processes are tracked by an environment tag, not a cgroup "
                            "(%s): a daemon that clears its environment can outlive its "
                            "episode; run as root with /sys/fs/cgroup writable to close that",
                            self.fallback_reason)
        else:
            self._group = group

    def pids(self) -> set[int]:
        """Every live process tracked: the cgroup's members, else those carrying the tag."""
        return self._group.pids() if self._group is not None else tagged(self.tag)

    def kill_all(self, timeout_s: float = 5.0, *, keep: set[int] | frozenset[int] = frozenset()) -> set[int]:
        """SIGKILL every tracked process but ``keep`` until none is left (a fork racing
        the kill is caught on the next round); every pid it killed."""
        killed: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while (members := self.pids() - {os.getpid(), *keep}) and time.monotonic() < deadline:
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)  # the kernel takes a moment to take killed processes out
        return killed

    def close(self) -> None:
        """End every tracked process and remove the cgroup. Idempotent."""
        self.kill_all()
        if self._group is not None:
            self._group.close()
            self._group = None


def _remove_orphans() -> None:
    """Remove the empty tracking cgroups of processes that died without closing their
    sandboxes (a killed harness: its apps died with it, their cgroups stayed)."""
    for parent in parent_dirs():
        for directory in glob.glob(os.path.join(parent, f"{CGROUP_PREFIX}*")):
            owner = os.path.basename(directory)[len(CGROUP_PREFIX):].split("-")[0]
            if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                with contextlib.suppress(OSError):  # not empty, or another run removed it
                    os.rmdir(directory)


def _joiner(files: list[str]) -> Callable[[], None]:
    """What a child runs between fork and exec to join the cgroup whose ``cgroup.procs``
    are ``files`` (nothing imported or allocated beyond the writes)."""

    def join() -> None:
        for path in files:  # "0": the writing process itself
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    return join


def tagged(tag: str) -> set[int]:
    """Live processes whose environment carries ``TAG_VAR=tag`` (zombies have none)."""
    needle = f"{TAG_VAR}={tag}".encode()
    found: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.add(int(name))
        except OSError:  # gone, or not ours to read
            continue
    return found
