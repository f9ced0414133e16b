"""The sandbox's openbox configuration: the system's, less everything that starts a program.

Debian's openbox offers a terminal, a web browser and "Exit" on a right-click of the
desktop (the root menu), and runs programs from key bindings (W-e, Print). With ordinary
clicks an agent would start a shell, or a Chromium outside the task's routing and policy,
or end the window manager. The sandbox runs openbox with a copy of the system's
``rc.xml`` in which no binding executes a program or opens the root menu, and whose only
menu file is an empty one; window moves, focus and the window menu (close, maximise) stay
as they are, so screenshots do not change.
"""

from __future__ import annotations

import re
from pathlib import Path

SYSTEM_RC = Path("/etc/xdg/openbox/rc.xml")

_EMPTY_MENU = """<?xml version="1.0" encoding="UTF-8"?>
<openbox_menu xmlns="http://openbox.org/3.4/menu">
  <menu id="root-menu" label="Desktop"></menu>
</openbox_menu>
"""

# A binding that runs a program, opens the root menu, or ends or restarts openbox.
_STARTS_SOMETHING = re.compile(
    r'name="(Execute|Exit|Restart|SessionLogout|Reconfigure)"|<menu>\s*root-menu\s*</menu>')
_BINDING = re.compile(r"<(keybind|mousebind)\b[^>]*>.*?</\1>", re.DOTALL)
_MENU_FILES = re.compile(r"<file>[^<]*</file>")


def locked_config(system_rc: str, menu_file: Path) -> str:
    """``system_rc`` with every program-starting binding removed and ``menu_file`` as its
    only menu file."""
    without_bindings = _BINDING.sub(
        lambda m: "" if _STARTS_SOMETHING.search(m.group(0)) else m.group(0), system_rc)
    files = _MENU_FILES.findall(without_bindings)
    if not files:
        raise ValueError(f"expected a <menu><file> entry in openbox's rc.xml, got none in {SYSTEM_RC}")
    first = without_bindings.index(files[0])
    rest = _MENU_FILES.sub("", without_bindings[first + len(files[0]):])
    return f"{without_bindings[:first]}<file>{menu_file}</file>{rest}"


def write_locked_config(directory: Path, system_rc: Path = SYSTEM_RC) -> Path:
    """Write the locked ``rc.xml`` and its empty menu into ``directory``; return the rc path
    (for ``openbox --config-file``)."""
    menu = directory / "menu.xml"
    menu.write_text(_EMPTY_MENU)
    rc = directory / "rc.xml"
    rc.write_text(locked_config(system_rc.read_text(), menu))
    return rc
