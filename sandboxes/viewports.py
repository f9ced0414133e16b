"""Named viewports and the ``WIDTHxHEIGHT`` syntax every ``--viewport`` option takes.

The names are the devices the FSM sites are designed for (their stylesheets switch
layouts at these widths, see docs/fsm_spec.md "Viewports"): a desktop monitor, a laptop,
a tablet held upright and a phone.
"""

from __future__ import annotations

import re

from sandboxes.errors import ConfigError

#: name -> (width, height) in CSS pixels.
VIEWPORTS: dict[str, tuple[int, int]] = {
    "desktop": (1280, 800),
    "laptop": (1366, 768),
    "tablet": (768, 1024),
    "phone": (390, 844),
}
#: The smallest and largest side a browser sandbox takes (``BrowserConfig``'s bounds).
MIN_SIDE, MAX_SIDE = 64, 4096

_SIZE = re.compile(r"(\d+)x(\d+)")


def parse_viewport(text: str, option: str | None = "--viewport") -> tuple[int, int]:
    """``"390x844"`` or a name (``"phone"``) as (width, height); a ConfigError naming
    ``option`` (None: where the caller names the field), what was expected and what
    arrived otherwise."""
    where = f"{option}: " if option else ""
    value = str(text).strip().lower()
    if value in VIEWPORTS:
        return VIEWPORTS[value]
    match = _SIZE.fullmatch(value)
    expected = (f"WIDTHxHEIGHT in CSS pixels such as 390x844, or one of "
                f"{', '.join(VIEWPORTS)}")
    if match is None:
        raise ConfigError(f"{where}expected {expected}, got {text!r}")
    width, height = int(match.group(1)), int(match.group(2))
    if not (MIN_SIDE <= width <= MAX_SIDE and MIN_SIDE <= height <= MAX_SIDE):
        raise ConfigError(f"{where}expected each side between {MIN_SIDE} and {MAX_SIDE} "
                          f"pixels, got {width}x{height}")
    return width, height


def viewport_name(size: tuple[int, int]) -> str:
    """The name of a size (``"phone"``), else ``"WIDTHxHEIGHT"``."""
    for name, known in VIEWPORTS.items():
        if known == tuple(size):
            return name
    return f"{size[0]}x{size[1]}"
