"""Capture (mss) and window queries on one X display; blocking calls, run in a thread.

``Screen.grab`` reads the root window's pixels through mss; ``settle`` waits until they
stop changing for a quiet window (what an action's effect takes to be drawn);
``windows`` lists the window manager's client windows (``_NET_CLIENT_LIST``) with their
titles, icon names, pids, root-relative geometry and which one has the focus
(``_NET_ACTIVE_WINDOW``).
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Literal

import mss
from PIL import Image
from Xlib import X, Xatom
from Xlib.display import Display

from sandboxes.base import Screenshot


@dataclass(frozen=True)
class Window:
    """A top-level client window on the display."""

    id: int
    title: str
    pid: int | None
    x: int
    y: int
    width: int
    height: int
    viewable: bool  # mapped, and so are its ancestors: input reaches it
    focused: bool = False  # the window manager's active window: typing goes to it
    icon_name: str = ""  # not drawn by openbox; an app may signal through it (the xterm tasks)


class Screen:
    """Pixels and windows of one display."""

    def __init__(self, display_name: str, width: int, height: int) -> None:
        self.display_name = display_name
        self.size = (width, height)
        self._mss = mss.MSS(display=display_name)
        self._x = Display(display_name)
        self._atoms = {name: self._x.intern_atom(name) for name in (
            "_NET_CLIENT_LIST", "_NET_ACTIVE_WINDOW", "_NET_WM_NAME", "_NET_WM_ICON_NAME", "_NET_WM_PID",
            "_NET_SUPPORTING_WM_CHECK", "UTF8_STRING")}

    def close(self) -> None:
        self._mss.close()
        self._x.close()

    def grab_raw(self) -> bytes:
        """The screen as BGRA bytes."""
        width, height = self.size
        return bytes(self._mss.grab({"left": 0, "top": 0, "width": width, "height": height}).raw)

    def encode(self, raw: bytes, image_format: Literal["png", "jpeg"], quality: int) -> Screenshot:
        width, height = self.size
        image = Image.frombuffer("RGB", (width, height), raw, "raw", "BGRX", 0, 1)
        out = io.BytesIO()
        if image_format == "png":
            image.save(out, format="PNG", compress_level=1)
        else:
            image.save(out, format="JPEG", quality=quality)
        return Screenshot(data=out.getvalue(), format=image_format, width=width, height=height)

    def settle(self, quiet_s: float, timeout_s: float) -> None:
        """Wait until the screen has not changed for ``quiet_s`` (or ``timeout_s`` passed)."""
        if quiet_s <= 0:
            return
        deadline = time.monotonic() + timeout_s
        last, since = self.grab_raw(), time.monotonic()
        while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
            time.sleep(min(0.01, quiet_s / 4))
            now = self.grab_raw()
            if now != last:
                last, since = now, time.monotonic()

    def wm_running(self) -> bool:
        """Whether a window manager has announced itself on the root window."""
        prop = self._x.screen().root.get_full_property(self._atoms["_NET_SUPPORTING_WM_CHECK"], X.AnyPropertyType)
        return prop is not None and len(prop.value) > 0

    def wm_manages_windows(self, wait_s: float = 0.2) -> bool:
        """Whether the window manager takes a new window now: map a probe window and see
        it reparented within ``wait_s``. openbox announces itself (``wm_running``) before it
        redirects maps; a client that maps its window in between is never reparented and
        waits out its toolkit's timeout (Xt's 5 s for xterm)."""
        root = self._x.screen().root
        probe = root.create_window(0, 0, 8, 8, 0, self._x.screen().root_depth, override_redirect=False)
        try:
            probe.map()
            self._x.sync()
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                if probe.query_tree().parent.id != root.id:
                    return True
                time.sleep(0.005)
            return False
        finally:
            probe.destroy()
            self._x.sync()

    def windows(self) -> list[Window]:
        """The window manager's client windows, oldest first."""
        root = self._x.screen().root
        prop = root.get_full_property(self._atoms["_NET_CLIENT_LIST"], X.AnyPropertyType)
        active = root.get_full_property(self._atoms["_NET_ACTIVE_WINDOW"], X.AnyPropertyType)
        active_id = int(active.value[0]) if active is not None and len(active.value) else None
        out = []
        for wid in (prop.value if prop is not None else ()):
            window = self._x.create_resource_object("window", int(wid))
            try:
                geometry = window.get_geometry()
                origin = window.translate_coords(root, 0, 0)
                viewable = window.get_attributes().map_state == X.IsViewable
                out.append(Window(id=int(wid), title=self._text(window, "_NET_WM_NAME", Xatom.WM_NAME),
                                  pid=self._pid(window), x=-origin.x, y=-origin.y, width=geometry.width,
                                  height=geometry.height, viewable=viewable, focused=int(wid) == active_id,
                                  icon_name=self._text(window, "_NET_WM_ICON_NAME", Xatom.WM_ICON_NAME)))
            except Exception:  # noqa: BLE001 - a window that closed while we looked
                continue
        return out

    def _text(self, window: object, utf8_name: str, fallback: int) -> str:
        """A text property: its EWMH UTF-8 form, else the ICCCM one (Latin-1)."""
        prop = window.get_full_property(self._atoms[utf8_name], self._atoms["UTF8_STRING"])  # type: ignore[attr-defined]
        if prop is not None:
            value = prop.value
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        prop = window.get_full_property(fallback, X.AnyPropertyType)  # type: ignore[attr-defined]
        if prop is None:
            return ""
        value = prop.value
        return value.decode("latin-1") if isinstance(value, bytes) else str(value)

    def _pid(self, window: object) -> int | None:
        prop = window.get_full_property(self._atoms["_NET_WM_PID"], Xatom.CARDINAL)  # type: ignore[attr-defined]
        return int(prop.value[0]) if prop is not None and len(prop.value) else None
