"""Seeded visual variety: theme families modelled on design systems, and layout variants.

A **family** is one design system's look: its typeface, corner radii, elevation
(shadows), spacing and type scale; its component styling (buttons, inputs, tabs, cards,
navigation) lives in ``static/families.css`` under the body class ``family-<name>``. A
family has several **variants** (palettes), one of them dark. A layout seed picks one
family, one variant and one layout (``choose_style``, the one place that does); the same
seed always picks the same, so the same state rendered with the same seed is
byte-identical, and at the same viewport pixel-identical.

Only fonts installed by Debian font packages are named (the Makefile's SYSTEM_PACKAGES:
fonts-inter, fonts-roboto, fonts-noto-core, fonts-liberation, fonts-dejavu), so
screenshots never depend on a web font download.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Theme:
    """Colours, fonts and density of a rendered site: one variant of one family."""

    name: str  # "<family>-<variant>"
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
    radius: int  # px corner radius of controls (cards use the family's card radius)
    base_size: int  # px body font size
    gap: int  # px spacing unit (density)
    shadow: bool  # raised surfaces cast a shadow
    family: str = "plain"
    dark: bool = False
    elevation: str = "none"  # CSS box-shadow of raised surfaces (cards, panels, menus)
    card_radius: int = 8  # px corner radius of cards, panels and modals
    control_height: int = 36  # px height of buttons, inputs and dropdown toggles


@dataclass(frozen=True)
class Family:
    """One design system's constants; its variants differ only in colours."""

    name: str
    font: str
    heading_font: str
    radius: int
    card_radius: int
    base_size: int
    gap: int
    elevation: str  # "none" for a flat family
    control_height: int


@dataclass(frozen=True)
class Palette:
    """One variant's colours: bg, surface, text, muted, accent, accent text, nav bg,
    nav text, border."""

    name: str
    bg: str
    surface: str
    text: str
    muted: str
    accent: str
    accent_text: str
    nav_bg: str
    nav_text: str
    border: str
    dark: bool = False


FAMILIES: tuple[Family, ...] = (
    # Material Design 2: Roboto, 4px controls, elevation shadows, a coloured top app bar.
    Family("material", "Roboto, 'Noto Sans', sans-serif", "Roboto, 'Noto Sans', sans-serif", 4, 4, 14, 16,
           "0 2px 1px -1px rgba(0,0,0,.2), 0 1px 1px rgba(0,0,0,.14), 0 1px 3px rgba(0,0,0,.12)", 36),
    # Bootstrap 5: the system stack (Noto Sans / Liberation Sans on Linux), 6px radii, bordered cards.
    Family("bootstrap", "'Noto Sans', 'Liberation Sans', sans-serif", "'Noto Sans', 'Liberation Sans', sans-serif",
           6, 6, 16, 16, "none", 38),
    # Tailwind / shadcn/ui: Inter, zinc greys, 8px radii, hairline borders and a faint shadow.
    Family("shadcn", "Inter, 'Noto Sans', sans-serif", "Inter, 'Noto Sans', sans-serif", 6, 8, 14, 16,
           "0 1px 2px rgba(0,0,0,.05)", 36),
    # Fluent 2: Segoe's stand-in Noto Sans, 4px radii, soft two-layer shadows.
    Family("fluent", "'Noto Sans', 'DejaVu Sans', sans-serif", "'Noto Sans', 'DejaVu Sans', sans-serif", 4, 8,
           14, 12, "0 0 2px rgba(0,0,0,.12), 0 2px 4px rgba(0,0,0,.14)", 32),
    # A dense enterprise console: Arial's stand-in, 13px type, 2px radii, tight spacing.
    Family("enterprise", "'Liberation Sans', Arial, sans-serif", "'Liberation Sans', Arial, sans-serif", 2, 2,
           13, 8, "none", 28),
)

PALETTES: dict[str, tuple[Palette, ...]] = {
    "material": (
        Palette("indigo", "#fafafa", "#ffffff", "#212121", "#757575", "#3f51b5", "#ffffff", "#3f51b5", "#ffffff",
                "#e0e0e0"),
        Palette("purple", "#f5f5f5", "#ffffff", "#1c1b1f", "#625b71", "#6200ee", "#ffffff", "#6200ee", "#ffffff",
                "#e0e0e0"),
        Palette("teal", "#fafafa", "#ffffff", "#212121", "#616161", "#00796b", "#ffffff", "#00796b", "#ffffff",
                "#dcdcdc"),
        Palette("dark", "#121212", "#1e1e1e", "#e6e1e5", "#a8a8a8", "#bb86fc", "#000000", "#272727", "#e6e1e5",
                "#383838", dark=True),
    ),
    "bootstrap": (
        Palette("light", "#ffffff", "#ffffff", "#212529", "#6c757d", "#0d6efd", "#ffffff", "#f8f9fa", "#212529",
                "#dee2e6"),
        Palette("navbar-dark", "#f8f9fa", "#ffffff", "#212529", "#6c757d", "#0d6efd", "#ffffff", "#212529",
                "#f8f9fa", "#dee2e6"),
        Palette("success", "#ffffff", "#ffffff", "#212529", "#6c757d", "#198754", "#ffffff", "#198754", "#ffffff",
                "#dee2e6"),
        Palette("dark", "#212529", "#2b3035", "#dee2e6", "#adb5bd", "#0d6efd", "#ffffff", "#1a1d20", "#dee2e6",
                "#495057", dark=True),
    ),
    "shadcn": (
        Palette("zinc", "#ffffff", "#ffffff", "#09090b", "#71717a", "#18181b", "#fafafa", "#ffffff", "#09090b",
                "#e4e4e7"),
        Palette("blue", "#ffffff", "#ffffff", "#020817", "#64748b", "#2563eb", "#f8fafc", "#ffffff", "#020817",
                "#e2e8f0"),
        Palette("violet", "#fafafa", "#ffffff", "#030712", "#6b7280", "#7c3aed", "#f9fafb", "#ffffff", "#030712",
                "#e5e7eb"),
        Palette("dark", "#09090b", "#09090b", "#fafafa", "#a1a1aa", "#fafafa", "#18181b", "#09090b", "#fafafa",
                "#27272a", dark=True),
    ),
    "fluent": (
        Palette("light", "#fafafa", "#ffffff", "#242424", "#616161", "#0f6cbd", "#ffffff", "#ffffff", "#242424",
                "#d1d1d1"),
        Palette("teams", "#f5f5f5", "#ffffff", "#242424", "#616161", "#5b5fc7", "#ffffff", "#ebebeb", "#242424",
                "#d1d1d1"),
        Palette("dark", "#1f1f1f", "#292929", "#ffffff", "#adadad", "#115ea3", "#ffffff", "#141414", "#ffffff",
                "#3d3d3d", dark=True),
    ),
    "enterprise": (
        Palette("navy", "#f4f5f7", "#ffffff", "#172b4d", "#5e6c84", "#0052cc", "#ffffff", "#0747a6", "#ffffff",
                "#dfe1e6"),
        Palette("slate", "#eef1f4", "#ffffff", "#1d2d3e", "#556b82", "#0a6ed1", "#ffffff", "#354a5f", "#ffffff",
                "#d9dee3"),
        Palette("dark", "#1b1d21", "#23262b", "#e3e6ea", "#9aa3ad", "#4c9aff", "#0b1a33", "#121417", "#e3e6ea",
                "#3a3f46", dark=True),
    ),
}


def _theme(family: Family, palette: Palette) -> Theme:
    return Theme(
        f"{family.name}-{palette.name}", family.font, family.heading_font, palette.bg, palette.surface,
        palette.text, palette.muted, palette.accent, palette.accent_text, palette.nav_bg, palette.nav_text,
        palette.border, family.radius, family.base_size, family.gap, family.elevation != "none",
        family=family.name, dark=palette.dark, elevation=family.elevation, card_radius=family.card_radius,
        control_height=family.control_height,
    )


#: Every theme, family by family (each family's dark variant last).
THEMES: tuple[Theme, ...] = tuple(_theme(f, p) for f in FAMILIES for p in PALETTES[f.name])


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


def themes_of(family: str) -> tuple[Theme, ...]:
    """The variants of one family; a clear error for an unknown family."""
    found = tuple(t for t in THEMES if t.family == family)
    if not found:
        raise ValueError(f"expected a theme family ({', '.join(f.name for f in FAMILIES)}), got {family!r}")
    return found


def choose_style(seed: int) -> tuple[Theme, Layout]:
    """The theme (family, then variant) and layout of a layout seed (deterministic across
    processes). The family is drawn first, so every family is equally likely whatever
    its number of variants."""
    rng = random.Random(f"fsm-style:{seed}")
    family = FAMILIES[rng.randrange(len(FAMILIES))]
    variants = PALETTES[family.name]
    theme = _theme(family, variants[rng.randrange(len(variants))])
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
