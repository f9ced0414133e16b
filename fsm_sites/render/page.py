"""Assemble a full HTML page for one FSM state under one layout seed."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from html import escape
from importlib import resources
from typing import Any, Protocol

from fsm_sites.engine.state import Edge, State, UIEvent
from fsm_sites.engine.views import PageViews
from fsm_sites.render.blocks import Copy, hero_html, record_fields, repeat_html
from fsm_sites.render.distractors import distractors
from fsm_sites.render.elements import Ctx, group_of, radio_checked, render_element, render_group
from fsm_sites.render.icons import icon_for, icon_svg
from fsm_sites.render.look import Look, choose_look, split_description
from fsm_sites.render.themes import Layout, Theme, choose_style
from fsm_sites.render.value_widgets import reading_pane, tab_panel, table_pager
from fsm_sites.spec.site import Element, Page, SiteSpec, VarValue


class MachineView(Protocol):
    """The part of ``fsm_sites.engine.machine.Machine`` the renderer uses: what a page shows
    of a state (``views``) and which transition a click fires (``step``)."""

    @property
    def views(self) -> PageViews: ...
    def step(self, state: State, event: UIEvent) -> tuple[Edge, State] | None: ...


#: Kinds whose choices are the machine's (a select bound to an enum, a slider's stops, a
#: date picker's days), not only the spec's ``options``.
OPTION_KINDS = frozenset({"select", "slider", "date_picker"})

#: The stylesheets of every page, in cascade order: the shared one, the page templates'
#: (templates.css), the widgets' (widgets.css), then the theme families' component styling and the viewport rules
#: (families.css, responsive.css).
STYLESHEETS = ("site.css", "templates.css", "widgets.css", "families.css", "responsive.css", "value_widgets.css")
#: The page's scripts, in order: the event wiring, then the widgets' drags (value_widgets.js).
SCRIPTS = ("site.js", "value_widgets.js")


@lru_cache(maxsize=1)
def _static() -> tuple[str, str]:
    """The page's stylesheets (``STYLESHEETS``, joined) and its script."""
    root = resources.files("fsm_sites.render") / "static"
    css = "\n".join((root / name).read_text(encoding="utf-8") for name in STYLESHEETS)
    return css, "\n".join((root / name).read_text(encoding="utf-8") for name in SCRIPTS)


def _theme_vars(theme: Theme, layout: Layout) -> str:
    pairs = {
        "font": theme.font, "heading-font": theme.heading_font, "bg": theme.bg, "surface": theme.surface,
        "text": theme.text, "muted": theme.muted, "accent": theme.accent, "accent-text": theme.accent_text,
        "nav-bg": theme.nav_bg, "nav-text": theme.nav_text, "border": theme.border,
        "radius": f"{theme.radius}px", "size": f"{theme.base_size}px", "gap": f"{theme.gap}px",
        "card-radius": f"{theme.card_radius}px", "elevation": theme.elevation,
        "control-h": f"{theme.control_height}px",
        "width": f"{layout.width}px", "cols": str(layout.columns),
        "thumb": f"color-mix(in srgb, {theme.accent} 16%, {theme.surface})",
    }
    return ":root{" + ";".join(f"--{k}:{v}" for k, v in pairs.items()) + "}"


def _body_classes(theme: Theme, layout: Layout) -> str:
    classes = [f"nav-{layout.nav}", f"sidebar-{layout.sidebar}", f"align-{layout.header_align}",
               f"labels-{layout.form_labels}", f"buttons-{layout.buttons}", f"theme-{theme.name}",
               f"family-{theme.family}", "scheme-dark" if theme.dark else "scheme-light"]
    if theme.shadow:
        classes.append("shadow")
    if theme.nav_bg == theme.accent:
        classes.append("nav-accent")
    return " ".join(classes)


def _make_ctx(state: State, machine: MachineView, look: Look, *, live: bool, page: str | None = None,
              collections: frozenset[str] = frozenset()) -> Ctx:
    """The drawing context of ``state``; ``collections``: the set and list variables (a text
    bound to one shows how many items it holds)."""
    page = page or state.page_id
    def value_of(el: Element) -> VarValue | None:
        return state.get(el.bind) if el.bind else None

    def is_active(el: Element) -> bool:
        if el.bind:
            return radio_checked(el, value_of(el))
        # Unbound tabs/links/pages are "current" when clicking them would change nothing.
        result = machine.step(state, UIEvent(state.page, el.id, "click")) if live else None
        return result is not None and result[1] == state

    return Ctx(value_of=value_of, is_active=is_active, live=live, look=look,
               text=lambda el, s: machine.views.text(state, s),
               is_disabled=lambda el: live and machine.views.disabled(state, el),
               options=lambda el: machine.views.options(page, el.id) if el.kind in OPTION_KINDS else el.options,
               is_open=lambda el: live and el.kind == "date_picker" and machine.views.is_open(state, el.id),
               error=lambda el: (machine.views.text(state, el.error or "Please check this field")
                                 if live and machine.views.invalid(state, el.id) else None),
               show_value=lambda el, v: machine.views.text(state, "{" + el.bind + "}") if el.bind else "",
               tally=lambda el: (machine.views.text(state, "{count(" + el.bind + ")}")
                                 if el.bind in collections else None))


def _copies(el: Element, ctx: Ctx, state: State, machine: MachineView) -> list[tuple[str, Any, Ctx]]:
    """One context per shown copy of a repeated element: its item in the text, its value on the event."""
    return [(value, item, _copy_ctx(ctx, state, machine, value, item))
            for value, item in machine.views.instances(state, el.id)]


def _copy_ctx(ctx: Ctx, state: State, machine: MachineView, value: str, item: Any) -> Ctx:
    """``ctx`` for the copy of a repeated element whose event value is ``value`` and item ``item``."""

    def text(e: Element, s: str | None) -> str:
        return machine.views.text(state, s, element=e.id, item=item)

    def is_disabled(e: Element) -> bool:
        return ctx.live and machine.views.disabled(state, e, value)

    return replace(ctx, instance=value if ctx.live else None, text=text, is_disabled=is_disabled)


def _repeat_block(block: list[Element], ctx: Ctx, state: State, machine: MachineView, spec: SiteSpec) -> str:
    """Elements repeated over one collection: one row (or table row) per item."""
    copies = {el.id: _copies(el, ctx, state, machine) for el in block}
    items: dict[str, Any] = {}
    for el in block:
        for value, item, _ in copies[el.id]:
            items.setdefault(value, item)
    rows = [Copy(value, item, tuple((el, c) for el in block for v, _, c in copies[el.id] if v == value))
            for value, item in items.items()]
    fields = record_fields(spec, block[0].repeat or "")
    sorter = next((el for el in block if el.sort), None)
    heads = None
    if sorter is not None and sorter.sort is not None:  # the rows come in its order (``machine.views.instances``)
        order = next(v for v in spec.variables if v.name == sorter.sort)
        heads = (sorter, ctx, order.values, state.get(sorter.sort))
    html = repeat_html(rows, fields, ctx.look, heads)
    paged = next((el for el in block if el.per_page), None)
    pages = machine.views.table_pages(state, paged.id) if paged is not None else None
    if paged is None or pages is None:
        return html
    return f'<div class="paged-table">{html}{table_pager(paged, ctx, *pages)}</div>'


def _sections(elements: list[Element]) -> dict[str, list[Element]]:
    out: dict[str, list[Element]] = {"nav": [], "header": [], "main": [], "sidebar": [], "footer": []}
    for el in elements:
        section = el.section or "main"
        out[section if section in out else "main"].append(el)
    return out


def _main_groups(elements: list[Element], ctx: Ctx, layout: Layout, state: State, machine: MachineView,
                 spec: SiteSpec) -> list[str]:
    """Runs of like elements become one component each, in spec order (a card grid, a form,
    stat tiles, a settings list; see ``render_group``); elements repeated over the same
    collection become one list of rows, or a data table when its items are records."""
    blocks: list[str] = []
    run: list[Element] = []

    def kind(el: Element) -> str:
        return "repeat:" + el.repeat if el.repeat else group_of(el)

    for el in [*elements, None]:
        if run and (el is None or kind(el) != kind(run[0])):
            if run[0].repeat:
                blocks.append(_repeat_block(run, ctx, state, machine, spec))
            else:
                blocks.append(render_group(group_of(run[0]), run, ctx, layout.collection))
            run = []
        if el is not None:
            run.append(el)
    return reading_pane(tab_panel(blocks))


#: The menu button narrow viewports show instead of the navigation links (responsive.css):
#: a label toggling a checkbox, so opening the menu is pure CSS and sends no event; the
#: links stay in the DOM, and the oracle clicks this first when a link is hidden in it.
_MENU_TOGGLE = ('<input type="checkbox" id="nav-toggle" class="nav-toggle" tabindex="-1" aria-hidden="true">'
                '<label for="nav-toggle" class="hamburger" role="button" aria-label="Menu">'
                '<span></span><span></span><span></span></label>')


def _nav(spec: SiteSpec, items: list[Element], ctx: Ctx, layout: Layout) -> str:
    symbol = icon_for(spec.domain.replace("_", " ")) or icon_for(spec.title)
    logo = icon_svg(symbol) if symbol else ""
    brand = f'<span class="brand"><span class="logo">{logo}</span>{escape(spec.title)}</span>'
    links = "".join(render_element(e, ctx) for e in items)
    toggle = _MENU_TOGGLE if links else ""
    if layout.nav == "left":
        return (f'<nav class="sidenav"><div class="sidenav-head">{brand}{toggle}</div>'
                f'<div class="navmenu">{links}</div></nav>')
    search = f'<span class="searchbox">{icon_svg("search")}Search…</span>'
    return (f'<header class="topnav"><div class="inner">{brand}{toggle}<nav class="navlinks navmenu">{links}</nav>'
            f'<span class="nav-spacer"></span>{search}</div></header>')


def _page_frame(spec: SiteSpec, page: Page | None, sections: dict[str, list[Element]], ctx: Ctx,
                layout: Layout, extras: dict[str, list[str]], state: State, machine: MachineView) -> str:
    """Navigation, header, main column, sidebar and footer of a full page."""
    raw_title = machine.views.text(state, page.title) if page else ""
    title = escape(raw_title)
    header = [f'<div class="crumbs">{escape(spec.title)} / {title}</div><h1>{title}</h1>']
    if page and page.body:
        header.append(f'<p class="body-text">{escape(machine.views.text(state, page.body))}</p>')
    if sections["header"]:
        header.append('<div class="toolbar">' + "".join(render_element(e, ctx) for e in sections["header"]) + "</div>")
    hero = ""
    if page and page.params:  # a detail page: one item's page shows its picture
        priced = any(split_description(machine.views.text(state, e.label)).price for e in sections["main"]
                     if e.kind == "text" and not e.repeat)
        hero = hero_html(raw_title, ctx.look, priced=priced)
    head = f'<div class="page-header">{"".join(header)}</div>'
    if hero:
        head = f'<div class="detail-head hero-{ctx.look.hero}">{hero}{head}</div>'
    main = [head, *extras["top"], *_main_groups(sections["main"], ctx, layout, state, machine, spec),
            *extras["bottom"]]
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


def _with_inner(ctx: Ctx, shown: list[Element]) -> Ctx:
    """``ctx`` drawing the shown elements inside a menu or accordion where it draws that one."""
    children: dict[str, list[Element]] = {}
    for el in shown:
        if el.inside is not None:
            children.setdefault(el.inside, []).append(el)

    def inner(container: Element) -> str:
        return "".join(render_element(e, ctx) for e in children.get(container.id, ()))

    ctx = replace(ctx, inner=inner)  # ``inner`` draws nested widgets with this same context
    return ctx


def render_page(spec: SiteSpec, state: State, *, seed: int, machine: MachineView) -> str:
    """The full HTML page of ``state`` under layout ``seed``; deterministic in (state, seed).

    The page script posts events to the relative URL ``event``, so the HTML is identical
    for every session.
    """
    theme, layout = choose_style(seed)
    look = choose_look(seed, spec.domain)
    pages = {p.id: p for p in spec.pages}
    page = pages[state.page_id]
    extras = distractors(seed, spec.name, spec.title, layout.distractors)
    shown = machine.views.visible_elements(state)
    visible = [e for e in shown if e.inside is None]
    collections = frozenset(v.name for v in spec.variables if v.type in ("set", "list"))
    live_ctx = _with_inner(_make_ctx(state, machine, look, live=True, collections=collections), shown)
    title = machine.views.text(state, page.title)
    if page.kind == "modal":
        parent = pages.get(page.parent) if page.parent else None
        # the page beneath is drawn as its own page instance in this state (a modal takes its
        # parent's parameters), so its rows, texts and tables are looked up under its own id
        beneath = State(state.page.replace(page.id, parent.id, 1), state.vars) if parent else state
        parent_elements = [e for e in (parent.elements if parent else ())
                           if e.inside is None and machine.views.element_shown(beneath, parent.id, e.id)] if parent else []
        inert_ctx = _make_ctx(beneath, machine, look, live=False, page=page.parent, collections=collections)
        base = _page_frame(spec, parent, _sections(parent_elements), inert_ctx, layout, extras, beneath, machine)
        body = _main_groups(visible, live_ctx, layout, state, machine, spec)
        overlay = (f'<div class="backdrop"><div class="modal" role="dialog" aria-modal="true">'
                   f'<h2>{escape(title)}</h2>'
                   + (f'<p class="body-text">{escape(machine.views.text(state, page.body))}</p>' if page.body else "")
                   + "".join(body) + "</div></div>")
        content = f'<div inert>{base}</div>{overlay}'
    else:
        content = _page_frame(spec, page, _sections(visible), live_ctx, layout, extras, state, machine)
    toast = machine.views.toast(state)
    if toast:
        content += f'<div class="toast" role="status">{escape(toast)}</div>'
    css, script = _static()
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · {escape(spec.title)}</title>"
        f"<style>{_theme_vars(theme, layout)}</style><style>{css}</style></head>"
        f'<body data-page="{escape(state.page)}" data-route="{escape(machine.views.route(state))}"'
        f' class="{_body_classes(theme, layout)}">{content}<script>{script}</script></body></html>'
    )
