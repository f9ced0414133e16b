"""X authority: a secret cookie per X display, known only to its own apps and to this process.

Without it an X server accepts any local client, so an app of one desktop sandbox (or a
jail that can reach the socket) could read another sandbox's screen and inject its input.
Each display gets a fresh ``MIT-MAGIC-COOKIE-1`` cookie (``new_cookie``):

- ``write_authority(path, cookie)`` writes the file that Xvfb reads (``-auth path``) and
  that the display's apps get as ``XAUTHORITY``: one ``FamilyLocal`` entry for this host
  with no display number, so it matches the display whatever number the apps know it by
  (python-xlib and libXau both take an empty number for any).
- ``HostAuthority`` is this process's own file (``XAUTHORITY`` of this process, set once):
  an entry per display number that this process's X clients (XTEST input, mss capture)
  reach, added when a display starts and removed when it stops. Only this process and
  root can read it (mode 0600 in a 0700 directory).

The file format is Xau's: per entry, a big-endian 16-bit family, then address, display
number, auth name and auth data, each as a 16-bit length and its bytes.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import struct
import tempfile
import threading

#: Xau's family for a local (Unix-socket) connection to this host.
FAMILY_LOCAL = 256
AUTH_NAME = b"MIT-MAGIC-COOKIE-1"


def new_cookie() -> bytes:
    """A fresh 128-bit cookie."""
    return os.urandom(16)


def _entry(number: str, cookie: bytes) -> bytes:
    fields = [socket.gethostname().encode(), number.encode(), AUTH_NAME, cookie]
    return struct.pack(">H", FAMILY_LOCAL) + b"".join(struct.pack(">H", len(f)) + f for f in fields)


def _write_atomically(path: str, data: bytes) -> None:
    """Readers (a client connecting now) see the old file or the new one, never half."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".xauth-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_authority(path: str, cookie: bytes) -> None:
    """The file a display's server (``-auth``) and apps (``XAUTHORITY``) read: ``cookie``
    for any display number of this host."""
    _write_atomically(path, _entry("", cookie))


class HostAuthority:
    """This process's X authority file: the cookie of each display it talks to, by the
    number it uses (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cookies: dict[int, bytes] = {}
        self._dir: str | None = None

    @property
    def path(self) -> str | None:
        return None if self._dir is None else os.path.join(self._dir, "Xauthority")

    def add(self, number: int, cookie: bytes) -> None:
        """Let this process connect to display ``:number`` with ``cookie``."""
        with self._lock:
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="cua-xauth-")  # mode 0700
                atexit.register(shutil.rmtree, self._dir, True)
                os.environ["XAUTHORITY"] = os.path.join(self._dir, "Xauthority")
            self._cookies[number] = cookie
            self._write()

    def remove(self, number: int) -> None:
        """Forget display ``:number`` (its server is gone). Idempotent."""
        with self._lock:
            if self._cookies.pop(number, None) is not None:
                self._write()

    def _write(self) -> None:
        assert self.path is not None
        _write_atomically(self.path, b"".join(_entry(str(n), c) for n, c in self._cookies.items()))


#: The one authority of this process (``XAUTHORITY`` is per process).
HOST = HostAuthority()
