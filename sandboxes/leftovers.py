"""What sandboxes may leave behind, listed, so tests and benchmarks can check that nothing
was: processes (under a given root, and in a jail's or a process tracker's cgroup),
network namespaces, veth ends and service addresses, jail homes, cgroup directories (a
jail's, or a desktop's process tracker's, ``sandboxes.isolation.tracked``) and host display links.
By default only what this process made counts (``sandboxes.isolation.owned``), so other runs on a
shared machine do not.

Other programs on a shared machine run their own Chromium; only processes that descend
from ``root`` (our process, which is the subreaper of its browsers) or sit in one of our
cgroups count as ours.
"""

from __future__ import annotations

import glob
import os
import tempfile
from dataclasses import dataclass

from sandboxes import procs
from sandboxes.desktop.xlink import leftover_links
from sandboxes.isolation.cgroups import parent_dirs
from sandboxes.isolation.jail import HOME_PREFIX
from sandboxes.isolation.netns import (
    DEFAULT_SUBNET,
    leftover_interfaces,
    leftover_namespaces,
    leftover_service_addresses,
)
from sandboxes.isolation.owned import made
from sandboxes.isolation.tracked import CGROUP_PREFIX

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
    display_links: tuple[str, ...] = ()  # host sockets linked to a jail's X server (sandboxes.desktop.xlink)

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


def jail_cgroup_dirs(*, everyone: bool = False) -> list[str]:
    """Cgroup directories of the jails and process trackers (``sandboxes.isolation.tracked``) this
    process made (``everyone``: any made by a process in this process's cgroups) that
    still exist."""
    ours = None if everyone else {os.path.basename(h) for h in made("home")} | made("cgroup")
    found: list[str] = []
    for parent in parent_dirs():
        for prefix in (HOME_PREFIX, CGROUP_PREFIX):
            found.extend(d for d in glob.glob(os.path.join(parent, f"{prefix}*"))
                         if ours is None or os.path.basename(d) in ours)
    return sorted(found)


def jail_processes(*, everyone: bool = False) -> set[int]:
    """Processes in the cgroup of a jail this process made (``everyone``: of any jail)."""
    pids: set[int] = set()
    for directory in jail_cgroup_dirs(everyone=everyone):
        try:
            with open(os.path.join(directory, "cgroup.procs")) as fh:
                pids.update(int(line) for line in fh if line.strip())
        except OSError:
            continue
    return pids


def sandbox_processes(root: int | None = None, *, everyone: bool = False) -> list[procs.ProcInfo]:
    """Sandbox processes under ``root`` (default: this process) or in the cgroup of a jail
    this process made (``everyone``: of any jail)."""
    under = descendants(os.getpid() if root is None else root)
    jailed = [info for pid in jail_processes(everyone=everyone) if (info := procs.read_proc(pid)) is not None]
    found = {info.pid: info for info in under + jailed
             if info.comm.startswith(SANDBOX_COMMS) or info.state == "Z"}
    return sorted(found.values(), key=lambda info: info.pid)


def _points_into(link: str, homes: frozenset[str]) -> bool:
    try:
        target = os.readlink(link)
    except OSError:  # removed since it was listed
        return False
    return any(target.startswith(home + os.sep) for home in homes)


def leftovers(root: int | None = None, *, subnet: str = DEFAULT_SUBNET, everyone: bool = False) -> Leftovers:
    """What the isolated sandboxes this process made left behind right now.

    ``everyone``: what any run's sandboxes left on this machine (namespaces, homes and
    links by our name prefixes), for a clean-up after a crash; by default another run's
    live sandboxes on the same machine never count as ours (``sandboxes.isolation.owned``)."""
    if everyone:
        homes = sorted(glob.glob(os.path.join(tempfile.gettempdir(), f"{HOME_PREFIX}*")))
        namespaces, interfaces = leftover_namespaces(), leftover_interfaces()
        addresses, links = leftover_service_addresses(subnet), leftover_links()
    else:
        homes = sorted(h for h in made("home") if os.path.lexists(h))
        names = made("namespace")
        namespaces = [n for n in leftover_namespaces() if n in names]
        interfaces = [i for i in leftover_interfaces() if i[:-1] in names]
        addresses = [a for a in leftover_service_addresses(subnet) if a in made("address")]
        links = [link for link in leftover_links() if _points_into(link, made("home"))]
    return Leftovers(
        processes=tuple(f"{i.pid} {i.comm} {i.state}" for i in sandbox_processes(root, everyone=everyone)),
        namespaces=tuple(namespaces),
        interfaces=tuple(interfaces),
        service_addresses=tuple(addresses),
        homes=tuple(homes),
        cgroups=tuple(jail_cgroup_dirs(everyone=everyone)),
        display_links=tuple(links),
    )
