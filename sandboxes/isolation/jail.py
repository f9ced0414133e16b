"""``Isolation``: one sandbox's jail, and the launcher that runs any program inside it.

A jail is, for one sandbox (a browser, or a desktop's Xvfb, window manager and app):

- its own **network namespace** (``sandboxes.isolation.netns.NetNamespace``): loopback, and one
  route to the run's service address, where only the granted TCP ports answer;
- its own **temporary home**: a fresh directory that is the jail's ``/tmp`` (shared by the
  jail's processes, so an X socket made by Xvfb is seen by the app), with ``$HOME`` at
  ``/tmp/home`` in it, removed when the jail closes;
- **bubblewrap** (``bwrap``): a read-only view of the host's filesystem with only the jail's
  ``/tmp`` writable, the directory of the jails' homes (when not ``/tmp``) an empty tmpfs,
  and this Python's own paths under either (a venv under /tmp) bound back read-only, a fresh ``/dev`` (its own ``/dev/shm``) and ``/proc``, its own PID
  and IPC namespaces, no capabilities (so nothing inside can change the network rules),
  and ``--die-with-parent``: when the launcher's parent dies, the jail's PID namespace
  and every process in it end;
- **resource limits**: a cgroup (``sandboxes.isolation.cgroups``) caps memory and the number of
  processes, and ``prlimit`` sets rlimits (open files, file size, no core dumps).
  ``RLIMIT_AS`` is not used: Chromium reserves terabytes of address space it never uses.

``wrap(argv)`` gives the command line that runs ``argv`` in the jail;
``write_launcher(program)`` writes an executable script that does the same with its own
arguments appended (what Playwright's ``executable_path`` takes). ``close`` kills every
process of the jail (the cgroup), deletes the namespace and removes the home. A desktop
sandbox uses it the same way::

    jail = Isolation(IsolationConfig(), service="10.213.0.1", ports={8000})
    await jail.open()
    xvfb = await asyncio.create_subprocess_exec(*jail.wrap(["Xvfb", ":1"]))
    app = await asyncio.create_subprocess_exec(*jail.wrap(["xterm"]), env={"DISPLAY": ":1"})
    ...
    await jail.close()   # Xvfb, the app and everything they started end here
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from sandboxes.errors import SandboxStartError
from sandboxes.isolation.cgroups import SandboxCgroup
from sandboxes.isolation.netns import DEFAULT_SUBNET, NetNamespace
from sandboxes.isolation.owned import remember
from sandboxes.teardown import finish_in_thread

#: What a jail's home directories are called (leak checks look for them).
HOME_PREFIX = "cua-jail-"


class IsolationConfig(BaseModel):
    """How each isolated sandbox is confined."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subnet: str = Field(default=DEFAULT_SUBNET, description="IPv4 block the namespaces' veth "
                        "pairs and the service address are taken from")
    bubblewrap: bool = Field(default=True, description="run programs under bwrap (read-only "
                             "filesystem, own PID/IPC namespaces, no capabilities); False: only "
                             "the network namespace, home, cgroup and rlimits")
    memory_limit_mb: int | None = Field(default=2048, ge=64, description="cgroup memory limit of "
                                        "the whole jail in MiB; None: no memory cgroup limit")
    max_processes: int | None = Field(default=512, ge=8, description="cgroup limit on processes "
                                      "and threads in the jail; None: no limit")
    max_open_files: int = Field(default=8192, ge=64, description="RLIMIT_NOFILE of each process")
    max_file_mb: int = Field(default=1024, ge=1, description="RLIMIT_FSIZE: the largest file a "
                             "process may write, MiB")
    capabilities: tuple[str, ...] = Field(default=(), description="capabilities a bwrap jail "
                                          "keeps (all others are dropped), e.g. CAP_CHOWN for "
                                          "xterm, which chowns its pty as root")
    home_root: str | None = Field(default=None, description="where temporary homes are made; "
                                  "None: the system's temp directory. A bwrap jail sees this "
                                  "directory empty but for its own home (other jails' files "
                                  "hidden), so give it a directory of its own")

    def uses_cgroup(self) -> bool:
        return self.memory_limit_mb is not None or self.max_processes is not None


class Isolation:
    """One sandbox's jail (see the module docstring). ``service`` and ``ports``: the address
    and TCP ports the jail may reach besides its own loopback."""

    def __init__(self, config: IsolationConfig | None = None, *, service: str,
                 ports: Iterable[int] = ()) -> None:
        self.config = config or IsolationConfig()
        #: Host directories a bwrap jail sees writable at the same path (``share``).
        self.shared: list[str] = []
        self.network = NetNamespace(service=service, ports=set(ports), subnet=self.config.subnet)
        self.cgroup: SandboxCgroup | None = None
        self.root = ""

    @property
    def tmp(self) -> str:
        """The jail's /tmp, as the host sees it."""
        return os.path.join(self.root, "tmp")

    @property
    def home(self) -> str:
        """The jail's $HOME, as the host sees it (``/tmp/home`` inside a bwrap jail)."""
        return os.path.join(self.tmp, "home")

    async def open(self) -> None:
        """Make the namespace, the home and the cgroup."""
        await finish_in_thread(self._open, self._close)  # a cancelled open leaves nothing

    def _open(self) -> None:
        _require_tools(self.config)
        self.root = tempfile.mkdtemp(prefix=HOME_PREFIX, dir=self.config.home_root)
        remember("home", self.root)
        os.makedirs(self.home)
        os.chmod(self.tmp, 0o1777)
        try:
            self.network.open()
            if self.config.uses_cgroup():
                self.cgroup = SandboxCgroup(os.path.basename(self.root),
                                            memory_mb=self.config.memory_limit_mb,
                                            max_processes=self.config.max_processes)
                self.cgroup.open()
        except BaseException:
            self._close()
            raise

    def grant(self, ports: Iterable[int]) -> None:
        """Let the jail reach more TCP ports of its service address."""
        self.network.grant(ports)

    def share(self, name: str) -> str:
        """A new directory under the jail's root that its programs see, writable, at the same
        path as the host does (a desktop's homes and task files); removed with the jail."""
        if not self.root:
            raise SandboxStartError("expected an opened Isolation, got one not opened; "
                                    "await isolation.open() first")
        path = os.path.join(self.root, name)
        os.makedirs(path, mode=0o700)
        self.shared.append(path)
        return path

    def wrap(self, argv: list[str]) -> list[str]:
        """The command line that runs ``argv`` inside the jail (without joining the cgroup:
        ``spawn`` and launcher scripts do that)."""
        if not self.root:
            raise SandboxStartError("expected an opened Isolation, got one not opened; "
                                    "await isolation.open() first")
        cfg = self.config
        limits = ["prlimit", f"--nofile={cfg.max_open_files}", f"--fsize={cfg.max_file_mb * 2**20}",
                  "--core=0", "--"]
        jail: list[str] = []
        if cfg.bubblewrap:
            jail = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                    *self._filesystem(), "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL",
                    *[a for cap in cfg.capabilities for a in ("--cap-add", cap)],
                    "--setenv", "HOME", "/tmp/home", "--setenv", "TMPDIR", "/tmp", "--"]
        return [*self.network.enter_prefix(), *limits, *jail, *argv]

    def _filesystem(self) -> list[str]:
        """bwrap's mounts after the read-only root: the directory that holds the jails'
        roots hidden (other jails' sockets and files), the jail's own ``/tmp``, this Python's
        paths that those two hid (read-only again), and the shared directories."""
        parent = os.path.dirname(self.root)
        hidden = ["/tmp"] if parent in ("/", "/tmp") else ["/tmp", parent]
        args = ["--tmpfs", parent] if len(hidden) > 1 else []
        args += ["--bind", self.tmp, "/tmp"]
        for path in _python_paths(hidden):
            args += ["--ro-bind", path, path]
        return args + [a for d in self.shared for a in ("--bind", d, d)]

    def shell_command(self, argv: list[str]) -> str:
        """A shell line that joins the cgroup and then runs ``argv`` in the jail."""
        joins = "".join(f"echo $$ > {shlex.quote(path)}; "
                        for path in (self.cgroup.procs_files if self.cgroup else []))
        env = "" if self.config.bubblewrap else f"HOME={shlex.quote(self.home)} TMPDIR={shlex.quote(self.tmp)} "
        return f"{joins}exec {env}{shlex.join(self.wrap(argv))}"

    def write_launcher(self, program: str, name: str = "launch") -> str:
        """An executable script that runs ``program`` (with the script's own arguments)
        inside the jail; its path, for ``executable_path`` and the like."""
        path = os.path.join(self.root, name)
        with open(path, "w") as fh:
            fh.write(f'#!/bin/sh\n{self.shell_command([program])} "$@"\n')
        os.chmod(path, 0o755)
        return path

    async def spawn(self, argv: list[str], **kwargs: object) -> asyncio.subprocess.Process:
        """Start ``argv`` in the jail (keyword arguments go to create_subprocess_exec)."""
        return await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", self.shell_command(argv), **kwargs)  # type: ignore[arg-type]

    def pids(self) -> set[int]:
        """The jail's processes (from its cgroup; empty without one)."""
        return self.cgroup.pids() if self.cgroup else set()

    async def close(self) -> None:
        """End every process of the jail, delete its namespace, remove its home. Idempotent."""
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        try:  # the namespace and the home go even if the cgroup's removal failed
            if self.cgroup is not None:
                self.cgroup.close()
                self.cgroup = None
        finally:
            try:
                self.network.close()
            finally:
                if self.root:
                    shutil.rmtree(self.root, ignore_errors=True)
                    self.root = ""


def _python_paths(hidden: list[str]) -> list[str]:
    """This Python's interpreter, environment, project and import paths that lie under a
    ``hidden`` directory (a checkout or a venv under /tmp), none holding a hidden one."""
    project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, project,
                  os.path.dirname(os.path.realpath(sys.executable)),
                  *(entry for entry in sys.path if entry)}
    under = sorted(path for path in {os.path.abspath(c) for c in candidates}
                   if os.path.isdir(path) and any(path.startswith(h + os.sep) for h in hidden))
    kept: list[str] = []
    for path in under:  # sorted, so a parent comes before what lies under it
        holds_hidden = any(h == path or h.startswith(path + os.sep) for h in hidden)
        if not holds_hidden and not any(path.startswith(k + os.sep) for k in kept):
            kept.append(path)
    return kept


def _require_tools(config: IsolationConfig) -> None:
    tools = ["ip", "nft", "nsenter", "prlimit"] + (["bwrap"] if config.bubblewrap else [])
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        raise SandboxStartError(
            f"expected {', '.join(tools)} on PATH for isolated sandboxes, got none for "
            f"{', '.join(missing)}; install iproute2, nftables, util-linux and bubblewrap "
            "(`make setup`)")
    if os.geteuid() != 0:
        raise SandboxStartError(f"expected root for network namespaces, got uid {os.geteuid()}; "
                                "run as root (or in a container with CAP_NET_ADMIN, CAP_SYS_ADMIN)")
