"""A host display number for an X server that runs in a jail (``sandboxes.isolation.jail``).

Xvfb in a bubblewrap jail makes its sockets where the host's X clients do not look: its
path socket in the jail's own ``/tmp/.X11-unix`` (``<jail.tmp>/.X11-unix/X<n>`` on the
host) and its abstract socket in the jail's network namespace. python-xlib (input) and
libxcb (mss, capture) only know ``/tmp/.X11-unix/X<n>`` and ``@/tmp/.X11-unix/X<n>``
(this libxcb, 1.15, takes no socket path in a display name). So the host side reserves a
display number of its own, the way an X server does (an exclusive ``/tmp/.X<m>-lock``
holding our pid, which other X servers on the host respect), and links
``/tmp/.X11-unix/X<m>`` to the jail's socket: ``:m`` on the host is the jail's display.
Nothing in the jail sees the host's ``/tmp``, so the link gives the jail no way out.
"""

from __future__ import annotations

import glob
import os

from sandboxes.errors import SandboxStartError

SOCKET_DIR = "/tmp/.X11-unix"
#: Host display numbers are looked for from here up (well above what desktops use).
FIRST = 200
LAST = 2000


def lock_path(number: int) -> str:
    return f"/tmp/.X{number}-lock"


def socket_path(number: int) -> str:
    return os.path.join(SOCKET_DIR, f"X{number}")


class HostDisplay:
    """``/tmp/.X11-unix/X<number>`` on the host linked to ``target`` (a jail's X socket)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.number: int | None = None

    @property
    def name(self) -> str:
        if self.number is None:
            raise SandboxStartError("expected a linked HostDisplay, got none; call link() first")
        return f":{self.number}"

    def link(self) -> str:
        """Reserve a free host display number and link its socket; the display name."""
        os.makedirs(SOCKET_DIR, mode=0o1777, exist_ok=True)
        for number in range(FIRST, LAST):
            if os.path.lexists(socket_path(number)):
                continue
            try:
                fd = os.open(lock_path(number), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(f"{os.getpid():10d}\n")  # the X servers' lock format: a live pid
            try:
                os.symlink(self.target, socket_path(number))
            except FileExistsError:
                os.unlink(lock_path(number))
                continue
            self.number = number
            return self.name
        raise SandboxStartError(f"expected a free host display number in {FIRST}..{LAST - 1}, got "
                                f"none; remove stale {lock_path(FIRST)}-style lock files")

    def unlink(self) -> None:
        """Remove the link and the lock. Idempotent."""
        if self.number is None:
            return
        for path in (socket_path(self.number), lock_path(self.number)):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self.number = None


def leftover_links(marker: str = "cua-jail-") -> list[str]:
    """Host X sockets that are links into a jail (``marker`` in the target): what closed
    isolated desktops should not leave."""
    found = []
    for path in glob.glob(os.path.join(SOCKET_DIR, "X*")):
        if os.path.islink(path) and marker in os.readlink(path):
            found.append(path)
    return sorted(found)
