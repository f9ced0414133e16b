"""Locating Debian's Chromium and the flags every launch uses.

Playwright's bundled browsers are never downloaded (no ``playwright install``): the
sandbox drives the system Chromium through ``executable_path``.
"""

from __future__ import annotations

import os
import shutil

from sandboxes.errors import SandboxStartError

#: Environment variable that overrides where Chromium is looked for.
CHROMIUM_ENV_VAR = "CUA_CHROMIUM"

#: Tried in order when the environment variable is unset.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")

#: Flags for every launch. --no-sandbox because we run as root inside containers and
#: isolate with contexts/namespaces instead; the rest keep Chromium from talking to the
#: network on its own and from spending our 2 cores on GPU emulation or updates.
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def find_chromium() -> str:
    """Return the path of a Chromium executable.

    ``$CUA_CHROMIUM`` wins when set (it must point at an executable file); otherwise
    /usr/bin/chromium, then chromium, chromium-browser and google-chrome on PATH.
    Raises ``SandboxStartError`` saying what to install when none is found.
    """
    override = os.environ.get(CHROMIUM_ENV_VAR)
    if override:
        resolved = shutil.which(override) or override
        if os.path.isfile(resolved) and os.access(resolved, os.X_OK):
            return resolved
        raise SandboxStartError(
            f"expected ${CHROMIUM_ENV_VAR} to name an executable Chromium, got {override!r}; "
            f"point it at a Chromium binary or unset it to search {', '.join(CHROMIUM_CANDIDATES)}"
        )
    for candidate in CHROMIUM_CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    raise SandboxStartError(
        f"expected a Chromium executable ({', '.join(CHROMIUM_CANDIDATES)}), got none on PATH; "
        f"install it with `apt-get install chromium` (or `make setup`), or set ${CHROMIUM_ENV_VAR}"
    )
