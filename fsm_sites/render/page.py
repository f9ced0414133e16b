"""Assemble a full HTML page for one FSM state under one layout seed."""

from __future__ import annotations

from functools import lru_cache
from html import escape
from importlib import resources
from typing import Protocol

from fsm_sites.render.distractors import distractors
from fsm_sites.render.elements import Ctx, group_of, radio_checked, render_element, render_group
from fsm_sites.render.themes import Layout, Theme, choose_style
from fsm_sites.spec import Condition, Element, Page, SiteSpec, VarValue
from fsm_sites.state import State, UIEvent


class MachineView(Protocol):
    """The part of ``fsm_sites.engine.Machine`` the renderer uses."""

    def holds(self, state: State, conditions: tuple[Condition, ...]) -> bool: ...
    def visible_elements(self, state: State) -> list[Element]: ...
    def step(self, state: State, event: UIEvent) -> object | None: ...


@lru_cache(maxsize=1)
def _static() -> tuple[str, str]:
    root = resources.files("fsm_sites.render") / "static"
    return (root / "site.css").read_text(encoding="utf-8"), (root / "site.js").read_text(encoding="utf-8")


def _theme_vars(theme: Theme, layout: Layout) -> str:
    pairs = {
        "font": theme.font, "heading-font": theme.heading_font, "bg": theme.bg, "surface": theme.surface,
        "text": theme.text, "muted": theme.muted, "accent": theme.accent, "accent-text": theme.accent_text,
        "nav-bg": theme.nav_bg, "nav-text": theme.nav_text, "border": theme.border,
        "radius": f"{theme.radius}px", "size": f"{theme.base_size}px", "gap": f"{theme.gap}px",
        "width": f"{layout.width}px", "cols": str(layout.columns),
        "thumb": f"color-mix(in srgb, {theme.accent} 16%, {theme.surface})",
    }
    return ":root{" + ";".join(f"--{k}:{v}" for k, v in pairs.items()) + "}"


def _body_classes(theme: Theme, layout: Layout) -> str:
    classes = [f"nav-{layout.nav}", f"sidebar-{layout.sidebar}", f"align-{layout.header_align}",
               f"labels-{layout.form_labels}", f"buttons-{layout.buttons}", f"theme-{theme.name}"]
    if theme.shadow:
        classes.append("shadow")
    return " ".join(classes)


def _make_ctx(state: State, machine: MachineView, *, live: bool) -> Ctx:
    def value_of(el: Element) -> VarValue | None:
        return state.get(el.bind) if el.bind else None

    def is_active(el: Element) -> bool:
        if el.bind:
            return radio_checked(el, value_of(el))
        # Unbound tabs/links/pages are "current" when clicking them would change nothing.
        result = machine.step(state, UIEvent(state.page, el.id, "click")) if live else None
        return result is not None and result[1] == state  # type: ignore[index]

    return Ctx(value_of=value_of, is_active=is_active, live=live)


def _sections(elements: list[Element]) -> dict[str, list[Element]]:
    out: dict[str, list[Element]] = {"nav": [], "header": [], "main": [], "sidebar": [], "footer": []}
    for el in elements:
        section = el.section or "main"
        out[section if section in out else "main"].append(el)
    return out


def _main_groups(elements: list[Element], ctx: Ctx, layout: Layout) -> list[str]:
    """Runs of like elements become one component each, in spec order."""
    blocks: list[str] = []
    run: list[Element] = []
    for el in [*elements, None]:
        if run and (el is None or group_of(el) != group_of(run[0])):
            blocks.append(render_group(group_of(run[0]), run, ctx, layout.collection))
            run = []
        if el is not None:
            run.append(el)
    return blocks


def _nav(spec: SiteSpec, items: list[Element], ctx: Ctx, layout: Layout) -> str:
    brand = f'<span class="brand"><span class="logo"></span>{escape(spec.title)}</span>'
    links = "".join(render_element(e, ctx) for e in items)
    if layout.nav == "left":
        return f'<nav class="sidenav">{brand}{links}</nav>'
    search = '<span class="searchbox">Search…</span>'
    return (f'<header class="topnav"><div class="inner">{brand}<nav class="navlinks">{links}</nav>'
            f'<span class="nav-spacer"></span>{search}</div></header>')


def _page_frame(spec: SiteSpec, page: Page | None, sections: dict[str, list[Element]], ctx: Ctx,
                layout: Layout, extras: dict[str, list[str]]) -> str:
    """Navigation, header, main column, sidebar and footer of a full page."""
    title = escape(page.title) if page else ""
    header = [f'<div class="crumbs">{escape(spec.title)} / {title}</div><h1>{title}</h1>']
    if page and page.body:
        header.append(f'<p class="body-text">{escape(page.body)}</p>')
    if sections["header"]:
        header.append('<div class="toolbar">' + "".join(render_element(e, ctx) for e in sections["header"]) + "</div>")
    main = [f'<div class="page-header">{"".join(header)}</div>', *extras["top"],
            *_main_groups(sections["main"], ctx, layout), *extras["bottom"]]
    side_items = [render_element(e, ctx) for e in sections["sidebar"]]
    side = ""
    if side_items or (extras["side"] and layout.sidebar != "none"):
        side = '<aside class="sidebar">' + (f'<div class="panel form">{"".join(side_items)}</div>' if side_items else "")
        side += "".join(extras["side"]) + "</aside>"
    elif extras["side"]:
        main.extend(extras["side"])
    nav = _nav(spec, sections["nav"], ctx, layout)
    footer_links = "".join(render_element(e, ctx) for e in sections["footer"])
    footer = (f'<footer class="site-footer"><div class="inner"><span>© {escape(spec.title)}</span>'
              f'<span class="links">{footer_links}</span><span>Privacy · Terms · Accessibility</span></div></footer>')
    frame = (f'<div class="frame">{nav if layout.nav == "left" else ""}{side}'
             f'<main>{"".join(main)}</main></div>')
    return f'<div class="shell">{nav if layout.nav == "top" else ""}{frame}{footer}</div>'


def render_page(spec: SiteSpec, state: State, *, seed: int, machine: MachineView) -> str:
    """The full HTML page of ``state`` under layout ``seed``; deterministic in (state, seed).

    The page script posts events to the relative URL ``event``, so the HTML is identical
    for every session.
    """
    theme, layout = choose_style(seed)
    pages = {p.id: p for p in spec.pages}
    page = pages[state.page]
    live_ctx = _make_ctx(state, machine, live=True)
    extras = distractors(seed, spec.name, spec.title, layout.distractors)
    visible = machine.visible_elements(state)
    if page.kind == "modal":
        parent = pages.get(page.parent) if page.parent else None
        parent_elements = [e for e in (parent.elements if parent else ()) if machine.holds(state, e.visible_when)]
        inert_ctx = _make_ctx(state, machine, live=False)
        base = _page_frame(spec, parent, _sections(parent_elements), inert_ctx, layout, extras)
        body = _main_groups(visible, live_ctx, layout)
        overlay = (f'<div class="backdrop"><div class="modal" role="dialog" aria-modal="true">'
                   f'<h2>{escape(page.title)}</h2>'
                   + (f'<p class="body-text">{escape(page.body)}</p>' if page.body else "")
                   + "".join(body) + "</div></div>")
        content = f'<div inert>{base}</div>{overlay}'
    else:
        content = _page_frame(spec, page, _sections(visible), live_ctx, layout, extras)
    css, script = _static()
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(page.title)} · {escape(spec.title)}</title>"
        f"<style>{_theme_vars(theme, layout)}</style><style>{css}</style></head>"
        f'<body data-page="{escape(state.page)}" class="{_body_classes(theme, layout)}">'
        f"{content}<script>{script}</script></body></html>"
    )
