"""A control group per sandbox: its memory and process limits, and a way to end all of it.

``SandboxCgroup`` makes a child of the cgroup this process is in (so whatever accounts
for this process accounts for its sandboxes too) for the controllers it needs:

- cgroup v1 (a hierarchy per controller, as on this project's machines): one directory
  under ``memory`` (``memory.limit_in_bytes``; only with a memory limit) and one under
  ``pids`` (``pids.max``; always, since it is what ``kill_all`` reads);
- cgroup v2 (one unified hierarchy): one directory with ``memory.max`` and ``pids.max``,
  which needs both controllers enabled for this process's cgroup (a delegated subtree).

A launcher joins a process by writing its pid into every file of ``procs_files``
(``echo $$ > FILE`` before ``exec``); its descendants inherit the group. ``kill_all``
SIGKILLs every member until none is left (the pids controller keeps a fork from slipping
out), and ``close`` removes the directories.
"""

from __future__ import annotations

import os
import signal
import time

from sandboxes.errors import SandboxStartError

CGROUP_ROOT = "/sys/fs/cgroup"


def _own_paths() -> dict[str, str]:
    """controller (or "" for cgroup v2) -> this process's cgroup path in that hierarchy."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    return paths


def _v1_mount(controller: str) -> str | None:
    with open("/proc/mounts") as fh:
        for line in fh:
            _, mount_point, fstype, options, *_ = line.split()
            if fstype == "cgroup" and controller in options.split(","):
                return mount_point
    return None


def parent_dirs() -> list[str]:
    """The directories this process's sandbox cgroups are made in (one per hierarchy)."""
    own = _own_paths()
    mounts = {c: _v1_mount(c) for c in ("memory", "pids")}
    if any(mounts.values()):
        return [os.path.join(m, own.get(c, "/").lstrip("/")) for c, m in mounts.items() if m]
    return [os.path.join(CGROUP_ROOT, own.get("", "/").lstrip("/"))]


def _write(path: str, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


class SandboxCgroup:
    """One sandbox's control group (see the module docstring)."""

    def __init__(self, name: str, *, memory_mb: int | None, max_processes: int | None) -> None:
        self.name = name
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.directories: list[str] = []

    def open(self) -> None:
        """Create the group(s) and set the limits; ``SandboxStartError`` where cgroups
        cannot be written."""
        try:
            if _v1_mount("memory") or _v1_mount("pids"):
                self._open_v1()
            else:
                self._open_v2()
        except OSError as exc:
            self.close()
            raise SandboxStartError(
                f"expected a writable cgroup for the sandbox's limits, got {exc}; run as root "
                "with /sys/fs/cgroup writable, or set IsolationConfig.memory_limit_mb and "
                "max_processes to None") from exc

    def _open_v1(self) -> None:
        own = _own_paths()
        limits = {"memory": ("memory.limit_in_bytes", self.memory_mb),
                  "pids": ("pids.max", self.max_processes)}
        for controller, (limit_file, value) in limits.items():
            if controller == "memory" and value is None:
                continue  # no limit: the pids hierarchy alone holds the members
            mount = _v1_mount(controller)
            if mount is None:
                raise OSError(f"no cgroup v1 hierarchy for {controller}")
            directory = os.path.join(mount, own.get(controller, "/").lstrip("/"), self.name)
            os.mkdir(directory)
            self.directories.append(directory)
            if value is not None:
                _write(os.path.join(directory, limit_file),
                       str(value * 2**20) if controller == "memory" else str(value))

    def _open_v2(self) -> None:
        parent = os.path.join(CGROUP_ROOT, _own_paths().get("", "/").lstrip("/"))
        directory = os.path.join(parent, self.name)
        os.mkdir(directory)
        self.directories.append(directory)
        if self.memory_mb is not None:
            _write(os.path.join(directory, "memory.max"), str(self.memory_mb * 2**20))
        if self.max_processes is not None:
            _write(os.path.join(directory, "pids.max"), str(self.max_processes))

    @property
    def procs_files(self) -> list[str]:
        """The files a launcher writes its pid into to join the group."""
        return [os.path.join(d, "cgroup.procs") for d in self.directories]

    def pids(self) -> set[int]:
        """Every process in the group."""
        members: set[int] = set()
        for path in self.procs_files:
            try:
                with open(path) as fh:
                    members.update(int(line) for line in fh if line.strip())
            except FileNotFoundError:
                continue
        return members

    def kill_all(self, timeout_s: float = 5.0) -> set[int]:
        """SIGKILL every member until the group is empty; return the pids still there
        after ``timeout_s`` (normally none)."""
        deadline = time.monotonic() + timeout_s
        while (members := self.pids()) and time.monotonic() < deadline:
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)  # the kernel needs a moment to take killed processes out
        return self.pids()

    def close(self) -> None:
        """End every member and remove the group. Idempotent."""
        self.kill_all()
        for directory in self.directories:
            for _ in range(100):  # rmdir fails while an exiting member is still counted
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.directories = []
