"""HTML for single UI elements and for groups of like elements.

Every live element carries ``data-el`` (its id) and ``data-kind``; clickable kinds
also carry ``data-ev="click"``, which the page script turns into a click event.
Elements drawn beneath a modal are rendered inert (``live=False``): no ``data-el``.
"""

from __future__ import annotations

from html import escape

from fsm_sites.render import value_widgets, widgets
from fsm_sites.render.base import Ctx, attrs, label, show
from fsm_sites.render.icons import icon_for, icon_svg
from fsm_sites.render.images import avatar, picture
from fsm_sites.render.look import picture_kind, sender, split_description
from fsm_sites.spec.site import Element, VarValue


def icon(el: Element, ctx: Ctx, wanted: bool) -> str:
    """The icon the element's label (or id) calls for, when the look wants one."""
    name = icon_for(ctx.text(el, el.label), el.id) if wanted else None
    return icon_svg(name) if name else ""


def _button(el: Element, ctx: Ctx, secondary: bool) -> str:
    cls = "btn secondary" if secondary else "btn"
    if ctx.live and ctx.is_disabled(el):
        cls += " disabled"
    mark = icon(el, ctx, ctx.look.button_icons)
    return f'<button type="button" class="{cls}"{attrs(el, ctx)}>{mark}{label(el, ctx)}</button>'


def _link(el: Element, ctx: Ctx) -> str:
    active = ' class="active"' if ctx.is_active(el) else ""
    return f'<a href="#"{active}{attrs(el, ctx)}>{icon(el, ctx, ctx.look.nav_icons)}{label(el, ctx)}</a>'


def _text_input(el: Element, ctx: Ctx) -> str:
    value = show(ctx.value_of(el)) if el.bind else ""
    placeholder = f' placeholder="{escape(el.placeholder)}"' if el.placeholder else ""
    input_id = f"in-{escape(el.id)}"
    return (
        f'<div class="field"><label class="field-label" for="{input_id}">{label(el, ctx)}</label>'
        f'<input class="input" id="{input_id}" type="text" autocomplete="off" spellcheck="false"'
        f' value="{escape(value)}"{placeholder}{attrs(el, ctx)}></div>'
    )


def _select(el: Element, ctx: Ctx) -> str:
    current = show(ctx.value_of(el)) if el.bind else ""
    options = ctx.options(el)
    shown = next((o.label or o.value for o in options if o.value == current), "Choose…")
    items = "".join(
        f'<li class="dd-option{" selected" if o.value == current else ""}" role="option"'
        f' data-value="{escape(o.value)}">{escape(o.label or o.value)}</li>'
        for o in options
    )
    return (
        f'<div class="field"><span class="field-label">{label(el, ctx)}</span>'
        f'<div class="dropdown"{attrs(el, ctx)}><button type="button" class="dd-toggle">'
        f'<span>{escape(shown)}</span><span class="caret">▾</span></button>'
        f'<ul class="dd-menu" role="listbox" hidden>{items}</ul></div></div>'
    )


def _checkbox(el: Element, ctx: Ctx, switch: bool = False) -> str:
    """A check box, or (in a settings list) a switch: the same input, drawn as a track."""
    checked = " checked" if el.bind and ctx.value_of(el) is True else ""
    cls, track = ("check switch", '<span class="track" aria-hidden="true"></span>') if switch else ("check", "")
    return (
        f'<div class="field"><label class="{cls}"{attrs(el, ctx)}>'
        f'<input type="checkbox"{checked}><span>{label(el, ctx)}</span>{track}</label></div>'
    )


def radio_checked(el: Element, value: VarValue | None) -> bool:
    """A radio is on when its bound variable holds its id or its label."""
    if value is None or isinstance(value, tuple):
        return False
    text = show(value).lower()
    return text in (el.id.lower(), el.label.lower()) or any(o.value.lower() == text for o in el.options)


def _radio(el: Element, ctx: Ctx) -> str:
    """A single radio (click, no value) or, with options, a radio group (click with the option's value)."""
    value = ctx.value_of(el) if el.bind else None
    if not el.options:
        on = el.bind is not None and radio_checked(el, value)
        return (
            f'<div class="{"radio checked" if on else "radio"}" role="radio" aria-checked="{str(on).lower()}"'
            f'{attrs(el, ctx)}><span class="dot"></span><span>{label(el, ctx)}</span></div>'
        )
    items = []
    for option in el.options:
        on = value is not None and show(value) == option.value
        click = ' data-ev="click"' if ctx.live else ""
        items.append(
            f'<div class="{"radio checked" if on else "radio"}" role="radio" aria-checked="{str(on).lower()}"'
            f' data-value="{escape(option.value)}"{click}><span class="dot"></span>'
            f"<span>{escape(option.label or option.value)}</span></div>"
        )
    holder = f' data-el="{escape(el.id)}" data-kind="radio"' if ctx.live else ""
    return (
        f'<div class="field"><span class="field-label">{label(el, ctx)}</span>'
        f'<div class="radio-group" role="radiogroup"{holder}>{"".join(items)}</div></div>'
    )


def _tab(el: Element, ctx: Ctx) -> str:
    cls = "tab active" if ctx.is_active(el) else "tab"
    return f'<div class="{cls}" role="tab"{attrs(el, ctx)}>{icon(el, ctx, ctx.look.nav_icons)}{label(el, ctx)}</div>'


def _card(el: Element, ctx: Ctx) -> str:
    """A card with a description: a picture (a product, a person or a scene, by the site's
    domain), its title, a badge and price taken out of the description, and the rest of it.
    A card without one is a tile: an icon and a title. A list item: a small picture. A
    message ("From: ...") shows its sender's avatar."""
    name = ctx.text(el, el.label)
    title = f'<span class="title">{escape(name)}</span>'
    if el.kind == "card" and not el.description:
        symbol = icon_for(name, el.id)
        mark = icon_svg(symbol, "icon tile-icon") if symbol else avatar(name, ctx.look.seed)
        return f'<div class="card tile"{attrs(el, ctx)}><span class="tile-mark">{mark}</span>{title}</div>'
    text = ctx.text(el, el.description) if el.description else ""
    who = sender(text)
    if who:
        return (f'<div class="card media message"{attrs(el, ctx)}><span class="card-media avatar">'
                f'{avatar(who, ctx.look.seed)}</span><span class="card-body">{title}'
                f'<span class="desc">{escape(text)}</span></span></div>')
    parts = split_description(text) if el.description else None
    kind = picture_kind(ctx.look.domain, priced=parts is not None and parts.price is not None)
    thumbnail = el.kind == "list_item"
    media = f'<span class="card-media {kind}">{picture(kind, name, ctx.look.seed, thumbnail=thumbnail)}</span>'
    body = [title]
    if parts and parts.badge:
        body.append(f'<span class="badge">{escape(parts.badge)}</span>')
    if parts and parts.rest:
        body.append(f'<span class="desc">{escape(parts.rest)}</span>')
    if parts and parts.price:
        body.append(f'<span class="price">{escape(parts.price)}</span>')
    cls = "card media" if el.kind == "card" else "card media item"
    return f'<div class="{cls}"{attrs(el, ctx)}>{media}<span class="card-body">{"".join(body)}</span></div>'


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def weekday(el: Element, ctx: Ctx) -> int | None:
    """The day of the week (0 is Monday) an element's label names, if that is all it says."""
    text = ctx.text(el, el.label).strip().lower()
    return next((i for i, day in enumerate(WEEKDAYS) if text in (day, day[:3])), None)


def _week(elements: list[Element], ctx: Ctx) -> str:
    """Cards named by weekdays as a week calendar: a column per day, each card in its day's
    column under a heading row; days without a card are empty cells."""
    cards = {weekday(e, ctx): e for e in elements}
    heads = "".join(f'<div class="cal-head" aria-hidden="true">{day[:3].title()}</div>' for day in WEEKDAYS)
    cells = []
    for i in range(len(WEEKDAYS)):
        el = cards.get(i)
        if el is None:
            cells.append('<div class="cal-day empty"></div>')
            continue
        desc = f'<span class="desc">{escape(ctx.text(el, el.description))}</span>' if el.description else ""
        cells.append(f'<div class="card cal-day"{attrs(el, ctx)}><span class="title">{label(el, ctx)}</span>{desc}</div>')
    return f'<div class="collection calendar-week">{heads}{"".join(cells)}</div>'


def _pagination(el: Element, ctx: Ctx) -> str:
    cls = "page-btn active" if ctx.is_active(el) else "page-btn"
    return f'<span class="{cls}"{attrs(el, ctx)}>{icon(el, ctx, ctx.look.button_icons)}{label(el, ctx)}</span>'


def _text(el: Element, ctx: Ctx) -> str:
    """A bound text is a value under its label (a set or list: how many, its items under
    that); others a paragraph."""
    if el.bind:
        value = escape(ctx.show_value(el, ctx.value_of(el)))
        count = ctx.tally(el)
        items = f'<span class="stat-items">{value}</span>' if count not in (None, "0") else ""
        shown = escape(count) if count is not None else value
        return (f'<div class="stat"{attrs(el, ctx)}><span>{label(el, ctx)}</span><span class="value">{shown}</span>'
                f'{items}</div>')
    return f'<p class="body-text"{attrs(el, ctx)}>{label(el, ctx)}</p>'


def render_element(el: Element, ctx: Ctx, *, secondary: bool = False) -> str:
    """One element's HTML; a form field the state shows invalid has its message beside it."""
    html = _render_element(el, ctx, secondary=secondary)
    message = ctx.error(el) if el.invalid_when else None
    return with_error(html, message, el.id) if message is not None else html


def with_error(html: str, message: str, eid: str) -> str:
    """A field's HTML (``<div class="field">...</div>``) marked invalid, its message last inside."""
    if not html.startswith('<div class="field'):
        return html
    error_id = f"err-{escape(eid)}"
    html = html.replace('<div class="field', '<div class="field invalid', 1)
    html = html.replace(' data-el=', f' aria-invalid="true" aria-describedby="{error_id}" data-el=', 1)
    return f'{html[:-len("</div>")]}<span class="field-error" id="{error_id}" role="alert">{escape(message)}</span></div>'


def _render_element(el: Element, ctx: Ctx, *, secondary: bool = False) -> str:
    kind = el.kind
    if kind == "button":
        return _button(el, ctx, secondary)
    if kind == "link":
        return _link(el, ctx)
    if kind == "text_input":
        return _text_input(el, ctx)
    if kind == "select":
        return _select(el, ctx)
    if kind == "checkbox":
        return _checkbox(el, ctx)
    if kind == "radio":
        return _radio(el, ctx)
    if kind == "tab":
        return _tab(el, ctx)
    if kind in ("card", "list_item"):
        return _card(el, ctx)
    if kind == "pagination":
        return _pagination(el, ctx)
    if kind in WIDGET_KINDS:
        return widgets.RENDERERS[kind](el, ctx)
    if kind in ("slider", "date_picker"):
        return value_widgets.slider(el, ctx) if kind == "slider" else value_widgets.date_picker(el, ctx)
    return _text(el, ctx)


#: The widget kinds (render/widgets.py draws them).
WIDGET_KINDS = frozenset({"menu", "accordion", "tooltip", "combobox", "stepper"})
#: The class of the block a run of menus, accordions or steppers forms (tooltips and
#: comboboxes sit in forms).
WIDGET_GROUPS = {"menu": "btn-row menus", "accordion": "accordions", "stepper": "steppers"}


GROUP_OF_KIND = {
    "button": "buttons", "link": "links", "tab": "tabs", "list_item": "collection", "card": "collection",
    "pagination": "pager", "radio": "radios", "text_input": "form", "select": "form", "checkbox": "form",
    "text": "text", "menu": "menu", "accordion": "accordion", "tooltip": "form", "combobox": "form",
    "stepper": "stepper", "slider": "form", "date_picker": "form", "sortable": "collection",
}


def group_of(el: Element) -> str:
    """The component a run of elements of this kind forms; radio groups sit in forms."""
    return "form" if el.kind == "radio" and el.options else GROUP_OF_KIND[el.kind]


def render_group(group: str, elements: list[Element], ctx: Ctx, collection_cls: str) -> str:
    """A run of like elements as one component (tab bar, card grid, form panel, ...)."""
    if group == "buttons":
        inner = "".join(render_element(e, ctx, secondary=i > 0) for i, e in enumerate(elements))
        return f'<div class="btn-row">{inner}</div>'
    inner = "".join(render_element(e, ctx) for e in elements)
    if group == "tabs":
        return f'<div class="tabs" role="tablist">{inner}</div>'
    if group == "collection" and len(elements) > 1:
        month = value_widgets.month_calendar(elements, ctx)
        if month is not None:
            return month
    days = {weekday(e, ctx) for e in elements if e.kind == "card"} - {None}
    if group == "collection" and len(elements) > 1 and len(days) == len(elements):
        return _week(elements, ctx)
    if group == "collection" and all(sender(ctx.text(e, e.description)) for e in elements):
        rows = "".join(render_element(e, ctx).replace('class="card media message"', 'class="card media message active"', 1)
                       if ctx.is_active(e) else render_element(e, ctx) for e in elements)  # the open message
        return f'<div class="collection list inbox">{rows}</div>'
    if group == "collection":
        tiles = " tiles" if all(e.kind == "card" and not e.description for e in elements) else ""
        return f'<div class="collection {collection_cls}{tiles}">{inner}</div>'
    if group == "pager":
        return f'<nav class="pager" aria-label="pages">{inner}</nav>'
    if group == "radios":
        return f'<div class="panel"><div class="radio-group" role="radiogroup">{inner}</div></div>'
    if group == "form" and ctx.look.toggles and all(e.kind == "checkbox" for e in elements):
        rows = "".join(_checkbox(e, ctx, switch=True) for e in elements)
        return f'<form class="panel form settings-list" onsubmit="return false">{rows}</form>'
    if group == "form":
        return f'<form class="panel form" onsubmit="return false">{inner}</form>'
    if group == "text" and len(elements) > 1 and all(e.bind for e in elements):
        return f'<div class="stat-tiles">{inner}</div>'
    if group in WIDGET_GROUPS:
        return f'<div class="{WIDGET_GROUPS[group]}">{inner}</div>'
    if group == "links":
        return f'<div class="links">{inner}</div>'
    return f'<div class="panel">{inner}</div>'
