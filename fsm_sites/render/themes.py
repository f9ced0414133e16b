"""Seeded visual variety: themes (colours, fonts, density) and layout variants.

A layout seed picks one theme and one layout; the same seed always picks the same
pair, so the same state rendered with the same seed is byte-identical. Only fonts
installed with Debian's base font packages are named (DejaVu, Liberation, URW), so
screenshots never depend on a web font download.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Theme:
    """Colours, fonts and density of a rendered site."""

    name: str
    font: str  # CSS font-family stack of installed system fonts
    heading_font: str
    bg: str  # page background
    surface: str  # cards, panels, navbar in light themes
    text: str
    muted: str
    accent: str  # primary buttons, active tab, links
    accent_text: str  # text on accent
    nav_bg: str
    nav_text: str
    border: str
    radius: int  # px corner radius
    base_size: int  # px body font size
    gap: int  # px spacing unit (density)
    shadow: bool


THEMES: tuple[Theme, ...] = (
    Theme("ocean", "'DejaVu Sans', sans-serif", "'DejaVu Sans', sans-serif", "#f3f6fa", "#ffffff",
          "#1d2733", "#5b6b7d", "#1f6feb", "#ffffff", "#0d2b4e", "#e8f0fb", "#d3dce6", 8, 15, 14, True),
    Theme("forest", "'Liberation Sans', sans-serif", "'Liberation Serif', serif", "#f4f7f2", "#ffffff",
          "#1f2a1c", "#5f6f58", "#2f7d32", "#ffffff", "#24452a", "#eef6ea", "#cfdccb", 4, 15, 12, False),
    Theme("sunset", "'URW Gothic', 'DejaVu Sans', sans-serif", "'URW Gothic', sans-serif", "#fff7f0",
          "#ffffff", "#3a2418", "#8a6a5a", "#d9480f", "#ffffff", "#ffffff", "#3a2418", "#f0d9c8", 14, 15,
          16, True),
    Theme("slate", "'DejaVu Sans Condensed', 'DejaVu Sans', sans-serif", "'DejaVu Sans', sans-serif",
          "#1e2228", "#2a3038", "#e6e9ee", "#9aa4b1", "#4dabf7", "#0b1520", "#14171c", "#e6e9ee",
          "#3a424d", 6, 14, 10, False),
    Theme("paper", "'Liberation Serif', 'DejaVu Serif', serif", "'C059', 'Liberation Serif', serif",
          "#fbfaf6", "#ffffff", "#222222", "#666666", "#7a3e9d", "#ffffff", "#fbfaf6", "#222222",
          "#dddad0", 2, 16, 14, False),
    Theme("candy", "'Nimbus Sans', 'Liberation Sans', sans-serif", "'Nimbus Sans', sans-serif",
          "#fdf2f8", "#ffffff", "#3b1d35", "#8c5d80", "#c2255c", "#ffffff", "#c2255c", "#ffffff",
          "#f3d1e3", 18, 15, 13, True),
    Theme("mono", "'DejaVu Sans Mono', 'Liberation Mono', monospace", "'DejaVu Sans Mono', monospace",
          "#f5f5f5", "#ffffff", "#111111", "#555555", "#111111", "#ffffff", "#111111", "#f5f5f5",
          "#bbbbbb", 0, 13, 9, False),
    Theme("teal", "'Liberation Sans Narrow', 'Liberation Sans', sans-serif", "'Liberation Sans', sans-serif",
          "#eef8f7", "#ffffff", "#12302c", "#4d6e69", "#0f8a7e", "#ffffff", "#ffffff", "#0f8a7e",
          "#c7e3df", 10, 16, 18, True),
)


@dataclass(frozen=True)
class Layout:
    """Where things go: navigation, sidebar, list style, widths, button placement."""

    nav: Literal["top", "left"]  # horizontal navbar or a vertical sidebar menu
    sidebar: Literal["left", "right", "none"]  # side of the page's sidebar section
    collection: Literal["grid", "list"]  # cards/list items as a card grid or a stacked list
    columns: int  # card grid columns
    header_align: Literal["left", "center"]
    form_labels: Literal["above", "inline"]
    width: int  # px max width of the content column
    buttons: Literal["start", "end"]  # alignment of button rows
    distractors: int  # seeded decorative elements with no transition


def choose_style(seed: int) -> tuple[Theme, Layout]:
    """The theme and layout of a layout seed (deterministic across processes)."""
    rng = random.Random(f"fsm-style:{seed}")
    theme = THEMES[rng.randrange(len(THEMES))]
    layout = Layout(
        nav=rng.choice(("top", "top", "left")),
        sidebar=rng.choice(("left", "right", "none")),
        collection=rng.choice(("grid", "list")),
        columns=rng.choice((2, 3)),
        header_align=rng.choice(("left", "center")),
        form_labels=rng.choice(("above", "inline")),
        width=rng.choice((880, 960, 1080)),
        buttons=rng.choice(("start", "end")),
        distractors=rng.choice((0, 1, 2, 3)),
    )
    return theme, layout
