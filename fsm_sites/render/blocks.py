"""Page templates made of several elements: a collection's rows or data table, and a
detail page's hero picture.

A collection whose items are records with several fields is a table with one column per
field and the item's buttons in a last column (a yes/no field that no heading sorts by is a
badge on its row, shown while it holds, not a column of "Yes" and "No": a row's own toggle,
such as a Flag button, adds no column a phone has no room for); any other collection is a
list of rows, each led by the item's picture on sites whose items are products or people.
Every copy keeps its element's ``data-el``/``data-value`` wiring, so what an agent can do is
the same in every template.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import Any

from fsm_sites.render.elements import Ctx, attrs, label, render_element
from fsm_sites.render.images import picture
from fsm_sites.render.look import PEOPLE_DOMAINS, PRODUCT_DOMAINS, Look, picture_kind
from fsm_sites.render.value_widgets import sort_heading, sortable_rows
from fsm_sites.spec.site import Element, SiteSpec, TypeDef
from fsm_sites.spec.types import Rec

_BUILT_IN = frozenset({"bool", "int", "enum", "text", "record", "list", "set", "map"})


@dataclass(frozen=True)
class Copy:
    """One item of a repeated block: its event value, its item, and each element's context."""

    value: str
    item: Any
    cells: tuple[tuple[Element, Ctx], ...]


def record_fields(spec: SiteSpec, collection: str) -> tuple[tuple[str, str, bool], ...]:
    """(field, column heading, whether it is a yes/no field) of the records a list or set
    variable holds; () when its items are not records."""
    named = {t.name: t for t in spec.types}
    var = next((v for v in spec.variables if v.name == collection), None)
    item: TypeDef | str | None = var.item if var is not None else None
    for _ in range(len(named) + 1):  # named types may refer to named types; never loop forever
        if isinstance(item, str):
            item = named.get(item)
        elif item is not None and item.type not in _BUILT_IN:
            item = named.get(item.type)
        else:
            break
    if not isinstance(item, TypeDef) or item.type != "record":
        return ()
    return tuple((f.name, (f.label or f.name.replace("_", " ")).capitalize(), f.type == "bool") for f in item.fields)


def _only_fields(text: str) -> bool:
    """The label shows nothing but fields of the item (``{it.day} at {it.time}``)."""
    holes = re.findall(r"\{([^{}]*)\}", text.replace("{{", "").replace("}}", ""))
    return bool(holes) and all(re.fullmatch(r"\s*it\.\w+\s*", h) for h in holes)


def _table(copies: list[Copy], fields: tuple[tuple[str, str, bool], ...], look: Look, sorter: Any = None) -> str:
    """Records as a data table: a heading per field, the buttons in a last column; a yes/no
    field no heading sorts by is a badge in the row's first cell while it holds. A text
    element that only shows fields marks the row itself (its label is the row's name)."""
    block = [el for el, _ in copies[0].cells]
    row_texts = [el for el in block if el.kind == "text" and _only_fields(el.label)]
    shown = [el for el in block if el not in row_texts and el.kind == "text"]
    orders = {v.lstrip("-") for v in sorter[2]} if sorter is not None else set()
    flags = [(name, title) for name, title, yes_no in fields if yes_no and name not in orders]
    columns = [(name, title) for name, title, _ in fields if (name, title) not in flags]
    heads = [sort_heading(title, name, sorter) for name, title in columns]
    heads += ['<th scope="col"></th>' for _ in shown]
    heads.append('<th scope="col"><span class="visually-hidden">Actions</span></th>')
    rows = []
    for copy in copies:
        host = next(((el, c) for el, c in copy.cells if el in row_texts), None)
        marks = (attrs(host[0], host[1], f'aria-label="{label(host[0], host[1])}"') if host else "")
        first = copy.cells[0][1]
        cells = [f"<td>{escape(first.text(block[0], '{it.' + name + '}'))}</td>" for name, _ in columns]
        held = [title for name, title in flags if isinstance(copy.item, Rec) and copy.item.get(name) is True]
        if held and cells:
            badges = "".join(f' <span class="badge row-mark">{escape(title)}</span>' for title in held)
            cells[0] = cells[0][:-len("</td>")] + badges + "</td>"
        cells += [f"<td>{render_element(el, c)}</td>" for el, c in copy.cells if el in shown]
        actions = "".join(render_element(el, c, secondary=True) for el, c in copy.cells if el.kind != "text")
        cells.append(f'<td class="actions">{actions}</td>')
        rows.append(f"<tr{marks}>{''.join(cells)}</tr>")
    striped = " striped" if look.striped else ""
    return (f'<div class="table-wrap"><table class="data-table{striped}"><thead><tr>{"".join(heads)}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _rows(copies: list[Copy], look: Look) -> str:
    """Items as rows; on product and people sites each row starts with the item's picture."""
    pictured = look.domain in PRODUCT_DOMAINS | PEOPLE_DOMAINS
    rows = []
    for copy in copies:
        cells = [render_element(el, c, secondary=True) for el, c in copy.cells]
        if pictured and isinstance(copy.item, str):
            first_el, first_ctx = copy.cells[0]
            name = first_ctx.text(first_el, "{it}")
            kind = picture_kind(look.domain)
            cells.insert(0, f'<span class="row-media {kind}">{picture(kind, name, look.seed, thumbnail=True)}</span>')
        rows.append(f'<div class="repeat-row">{"".join(cells)}</div>')
    return f'<div class="collection list repeat">{"".join(rows)}</div>'


def repeat_html(copies: list[Copy], fields: tuple[tuple[str, str, bool], ...], look: Look, sorter: Any = None) -> str:
    """A repeated block as a table (records of two or more fields) or as rows; ``sorter``
    (element, context, the sort variable's values, its value) makes the headings sort it."""
    if not copies:
        return ""
    if copies[0].cells[0][0].kind == "sortable":
        return sortable_rows([(el, c, copy.value) for copy in copies for el, c in copy.cells if el.kind == "sortable"])
    records = len(fields) > 1 and all(isinstance(c.item, Rec) for c in copies)
    return _table(copies, fields, look, sorter) if records else _rows(copies, look)


def hero_html(title: str, look: Look, *, priced: bool) -> str:
    """A detail page's picture: the item's product shot, portrait or scene."""
    kind = picture_kind(look.domain, priced=priced)
    return f'<div class="hero hero-{look.hero} {kind}">{picture(kind, title, look.seed)}</div>'
