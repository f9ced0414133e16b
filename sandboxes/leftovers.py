"""What isolated sandboxes may leave behind, listed, so tests and benchmarks can check that
nothing was: processes (under a given root, and in any jail's cgroup), network
namespaces, veth ends and service addresses, jail homes and cgroup directories.

Other programs on a shared machine run their own Chromium; only processes that descend
from ``root`` (our process, which is the subreaper of its browsers) or sit in a jail's
cgroup count as ours.
"""

from __future__ import annotations

import glob
import os
import tempfile
from dataclasses import dataclass

from sandboxes import procs
from sandboxes.cgroups import parent_dirs
from sandboxes.isolation import HOME_PREFIX
from sandboxes.netns import (
    DEFAULT_SUBNET,
    leftover_interfaces,
    leftover_namespaces,
    leftover_service_addresses,
)
from sandboxes.xlink import leftover_links

#: process names that count as a sandbox's (browser, display, window manager, Playwright)
SANDBOX_COMMS = ("chromium", "chrome", "chrome_crashpad", "bwrap", "Xvfb", "openbox", "node",
                 "nsenter", "prlimit", "xterm")


@dataclass(frozen=True)
class Leftovers:
    """One look at what is left (see the module docstring)."""

    processes: tuple[str, ...]  # "pid comm state" of sandbox processes, zombies included
    namespaces: tuple[str, ...]
    interfaces: tuple[str, ...]
    service_addresses: tuple[str, ...]
    homes: tuple[str, ...]
    cgroups: tuple[str, ...]
    display_links: tuple[str, ...] = ()  # host sockets linked to a jail's X server (sandboxes.xlink)

    def empty(self, *, processes: bool = True) -> bool:
        """Nothing left (``processes=False``: ignoring processes)."""
        kinds = [self.namespaces, self.interfaces, self.service_addresses, self.homes, self.cgroups,
                 self.display_links]
        return not any(kinds + ([self.processes] if processes else []))


def descendants(root: int) -> list[procs.ProcInfo]:
    """Every process under ``root`` (zombies included), not ``root`` itself."""
    infos = procs.all_procs()
    children: dict[int, list[procs.ProcInfo]] = {}
    for info in infos:
        children.setdefault(info.ppid, []).append(info)
    found, stack = [], list(children.get(root, []))
    while stack:
        info = stack.pop()
        found.append(info)
        stack.extend(children.get(info.pid, []))
    return found


def jail_cgroup_dirs() -> list[str]:
    """Cgroup directories of jails made by processes in this process's cgroups."""
    found: list[str] = []
    for parent in parent_dirs():
        found.extend(glob.glob(os.path.join(parent, f"{HOME_PREFIX}*")))
    return sorted(found)


def jail_processes() -> set[int]:
    """Processes in any jail's cgroup."""
    pids: set[int] = set()
    for directory in jail_cgroup_dirs():
        try:
            with open(os.path.join(directory, "cgroup.procs")) as fh:
                pids.update(int(line) for line in fh if line.strip())
        except OSError:
            continue
    return pids


def sandbox_processes(root: int | None = None) -> list[procs.ProcInfo]:
    """Sandbox processes under ``root`` (default: this process) or in a jail's cgroup."""
    under = descendants(os.getpid() if root is None else root)
    jailed = [info for pid in jail_processes() if (info := procs.read_proc(pid)) is not None]
    found = {info.pid: info for info in under + jailed
             if info.comm.startswith(SANDBOX_COMMS) or info.state == "Z"}
    return sorted(found.values(), key=lambda info: info.pid)


def leftovers(root: int | None = None, *, subnet: str = DEFAULT_SUBNET) -> Leftovers:
    """What isolated sandboxes left behind right now."""
    homes = glob.glob(os.path.join(tempfile.gettempdir(), f"{HOME_PREFIX}*"))
    return Leftovers(
        processes=tuple(f"{i.pid} {i.comm} {i.state}" for i in sandbox_processes(root)),
        namespaces=tuple(leftover_namespaces()),
        interfaces=tuple(leftover_interfaces()),
        service_addresses=tuple(leftover_service_addresses(subnet)),
        homes=tuple(sorted(homes)),
        cgroups=tuple(jail_cgroup_dirs()),
        display_links=tuple(leftover_links()),
    )
