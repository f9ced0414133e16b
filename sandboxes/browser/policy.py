"""The enterprise policy that locks down a windowed Chromium, and how it reaches Chromium.

A windowed Chromium shows its own chrome (address bar, menus, shortcuts), so the agent
can try what a user could: a ``javascript:`` URL, ``chrome://`` pages, DevTools (F12),
an incognito window (ctrl+shift+N), a ``data:`` or ``file:`` URL. Chromium's enterprise
policies refuse every one of those in the browser itself, whatever route the agent takes
to them (keys, menus, dragged text):

- ``URLBlocklist ["*"]`` with ``URLAllowlist`` holding only the episode's origins: no
  navigation anywhere else, ``javascript:``, ``chrome:``, ``view-source:``, ``file:`` and
  ``data:`` included (each also listed explicitly);
- no DevTools: their frontend (``devtools://``) is blocked, and F12, ctrl+shift+I and the
  menu answer "DevTools not allowed on this page". (``DeveloperToolsAvailability 2`` would
  also refuse the harness's own CDP connection to the page: Playwright sees no page.)
- ``IncognitoModeAvailability 1``, no guest mode, no new profile: every window is in the
  one browser context the harness routes;
- no network prediction: the address bar does not preconnect to what is typed there
  (it did, to any loopback port, blocked address or not), no search engine;
- no downloads, no file dialogs, no bookmarks edited, no task manager ending processes.

Chromium on Linux reads managed policies only from a fixed directory compiled into it
(``/etc/chromium/policies/managed`` for Debian's Chromium, ``/etc/opt/chrome/...`` for
Chrome); the ``--policy`` switch exists only in Android debug builds. Writing there would
lock down every Chromium on the machine, the headless sandbox's too (whose tests load
``data:`` URLs). So each windowed Chromium runs under ``bwrap`` in a mount namespace of
its own where a private copy of that directory, holding this episode's policy, is bound
over the real one; the rest of the filesystem is the host's, unchanged. Without bwrap
the launch is refused: a windowed Chromium never runs unlocked.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from sandboxes.errors import SandboxStartError
from sandboxes.origins import origin_of, web_origin

#: URL schemes refused explicitly, on top of the blocklist's "*" (documents the intent,
#: and keeps them refused should an allowlist entry ever be a pattern).
BLOCKED_SCHEMES = ("javascript://*", "chrome://*", "chrome-untrusted://*", "devtools://*",
                   "view-source:*", "file://*", "data:*", "filesystem:*", "blob:*", "about:*")

#: Policies besides the URL lists (names and values: chromeenterprise.google/policies).
LOCKDOWN: dict[str, object] = {
    "IncognitoModeAvailability": 1,  # incognito disabled
    "BrowserGuestModeEnabled": False,
    "BrowserAddPersonEnabled": False,
    "BrowserSignin": 0,
    "DownloadRestrictions": 3,  # every download blocked
    "AllowFileSelectionDialogs": False,
    "EditBookmarksEnabled": False,
    "BookmarkBarEnabled": False,
    "TaskManagerEndProcessEnabled": False,
    "ExtensionInstallBlocklist": ["*"],
    "PasswordManagerEnabled": False,
    "TranslateEnabled": False,
    "NetworkPredictionOptions": 2,  # no preconnect to what is typed in the address bar
    "SearchSuggestEnabled": False,
    "DefaultSearchProviderEnabled": False,  # typed text is not sent to a search engine
    "RemoteDebuggingAllowed": True,  # the harness's CDP connection
}

#: Where each Chromium build reads its policies (``chrome::DIR_POLICY_FILES``'s parent).
_POLICY_ROOTS = {"chrome": "/etc/opt/chrome", "chromium": "/etc/chromium"}


def managed_policy(origins: Iterable[str]) -> dict[str, object]:
    """The managed policy of one episode: only ``origins`` (``scheme://host:port``) reachable."""
    allowed = sorted({web_origin(o) for o in (origin_of(u) for u in origins) if o and o != "file://"})
    if not allowed:
        raise SandboxStartError("expected at least one origin for a windowed Chromium, got none")
    return {"URLBlocklist": ["*", *BLOCKED_SCHEMES], "URLAllowlist": allowed, **LOCKDOWN}


def policy_root(chromium: str) -> str:
    """The directory whose ``policies/managed`` the Chromium at ``chromium`` reads."""
    name = Path(os.path.realpath(chromium)).name
    return _POLICY_ROOTS["chrome" if "chrome" in name and "chromium" not in name else "chromium"]


def locked_down(argv: list[str], origins: Iterable[str], private_dir: Path) -> list[str]:
    """``argv`` (a Chromium command line) run under this episode's managed policy: ``bwrap``
    binds ``private_dir`` (a copy of the policy root with our policy) over the policy root,
    for this process and its children only."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxStartError(
            "expected bubblewrap (bwrap) to give windowed Chromium its managed policy, got none on "
            "PATH; install it (`apt-get install bubblewrap`, `make setup`): a windowed Chromium "
            "never runs without its lockdown")
    root = policy_root(argv[0])
    if not os.path.isdir(root):
        raise SandboxStartError(
            f"expected Chromium's policy directory {root} to exist (bwrap mounts the episode's policy "
            f"over it), got none; create it empty (`mkdir -p {root}`)")
    if private_dir.exists():
        shutil.rmtree(private_dir)
    shutil.copytree(root, private_dir, ignore=lambda d, names: ["policies"] if d == root else [])
    managed = private_dir / "policies" / "managed"
    managed.mkdir(parents=True)
    (managed / "cua.json").write_text(json.dumps(managed_policy(origins), indent=1), encoding="utf-8")
    return [bwrap, "--dev-bind", "/", "/", "--ro-bind", str(private_dir), root, "--die-with-parent", *argv]
