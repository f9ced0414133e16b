"""The renderer: an FSM state plus a layout seed -> a full, deterministic HTML page.

See docs/fsm_server.md for themes, layout seeds and how each element kind is operated.
"""

from fsm_sites.render.page import MachineView, render_page
from fsm_sites.render.themes import THEMES, Layout, Theme, choose_style

__all__ = ["THEMES", "Layout", "MachineView", "Theme", "choose_style", "render_page"]
