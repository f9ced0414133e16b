"""HTML of the value-carrying widgets (``fsm_sites.spec.value_widgets``): a slider, a date picker with
its month grid, and a list whose items are reordered by dragging a handle.

Every part an agent acts on is in the DOM with its wiring (``static/value_widgets.js`` turns a
press, drag or click into the widget's event): the slider's track (``data-stops``, the
accepted values in order, spread evenly over it), the picker's field (``data-ev="open"``)
and, while the state says the grid is open, its days (``data-ev="pick"`` with the value),
and each list item's handle (the copy's ``data-value`` is its position). Positions are
plain CSS percentages, so the same state always gives the same pixels.
"""

from __future__ import annotations

import calendar
import re
from datetime import date
from html import escape

from fsm_sites.render.base import Ctx, attrs, label, show
from fsm_sites.render.icons import icon_svg
from fsm_sites.spec.site import Element
from fsm_sites.spec.value_widgets import (
    Month,
    WidgetError,
    heading_order,
    parse_date,
    parse_month,
    picked_day,
)

WEEKDAY_HEADS = ("Mo", "Tu", "We", "Th", "Fr", "Sa", "Su")

#: Six dots: the grip every drag handle shows (drawn here: not an icon of the vendored set).
_GRIP = ('<svg class="grip" viewBox="0 0 10 16" width="10" height="16" aria-hidden="true">'
         + "".join(f'<circle cx="{x}" cy="{y}" r="1.6"/>' for y in (3, 8, 13) for x in (2.5, 7.5)) + "</svg>")


def slider(el: Element, ctx: Ctx) -> str:
    """A track with a filled part and a thumb at the bound value; stops' labels as ticks."""
    stops = ctx.options(el)
    values = [o.value for o in stops]
    current = show(ctx.value_of(el)) if el.bind else ""
    index = values.index(current) if current in values else 0
    span = max(len(values) - 1, 1)
    at = f"{100 * index / span:.4f}%"
    shown = stops[index].label or stops[index].value if stops else ""
    ticks = ""
    if any(o.label for o in stops):
        ticks = '<div class="slider-ticks" aria-hidden="true">' + "".join(
            f'<span style="left:{100 * i / span:.4f}%">{escape(o.label or o.value)}</span>'
            for i, o in enumerate(stops)) + "</div>"
    aria = (f'role="slider" tabindex="0" aria-valuemin="{escape(values[0] if values else "")}" '
            f'aria-valuemax="{escape(values[-1] if values else "")}" aria-valuenow="{escape(current)}" '
            f'aria-valuetext="{escape(shown)}" aria-label="{label(el, ctx)}" data-stops="{escape(",".join(values))}"')
    return (f'<div class="field slider-field"><span class="field-label">{label(el, ctx)}'
            f'<output class="slider-value">{escape(shown)}</output></span>'
            f'<div class="slider"{attrs(el, ctx, aria)}><div class="slider-track">'
            f'<div class="slider-fill" style="width:{at}"></div>'
            f'<div class="slider-thumb" style="left:{at}"></div></div></div>{ticks}</div>')


def date_picker(el: Element, ctx: Ctx) -> str:
    """A date field (its click is the ``open`` event) and, while open, the month grid."""
    stops = ctx.options(el)
    value = ctx.value_of(el) if el.bind else None
    current = show(value)
    chosen = next((o.label or o.value for o in stops if o.value == current), None)
    text = escape(chosen) if chosen else '<span class="placeholder">Choose a date</span>'
    open_ = ctx.is_open(el)
    toggle_ev = ' data-ev="open"' if ctx.live else ""
    toggle = (f'<button type="button" class="date-toggle input"{toggle_ev} aria-haspopup="grid" '
              f'aria-expanded="{str(open_).lower()}">{icon_svg("calendar-days")}<span>{text}</span></button>')
    grid = _month_grid(el, ctx, value) if open_ else ""
    cls = "datepicker open" if open_ else "datepicker"
    return (f'<div class="field date-field"><span class="field-label">{label(el, ctx)}</span>'
            f'<div class="{cls}"{attrs(el, ctx)}>{toggle}{grid}</div></div>')


def _month_grid(el: Element, ctx: Ctx, value: object) -> str:
    stops = ctx.options(el)
    if el.month:
        month = parse_month(el.month)
    else:
        first = parse_date(stops[0].value)
        month = Month(first.year, first.month)
    return month_grid(month, picker_days(el, ctx), picked_day(value, month), ctx.live)


def month_grid(month: Month, days: dict[int, str], picked: int | None, live: bool) -> str:
    """A month as seven columns (Monday first); ``days`` maps the days one may pick to the
    value their click sends; the others are drawn muted."""
    heads = "".join(f'<span class="dg-head" aria-hidden="true">{d}</span>' for d in WEEKDAY_HEADS)
    cells = ['<span class="dg-day blank"></span>'] * month.first_weekday
    for n in range(1, month.days + 1):
        if n not in days:
            cells.append(f'<span class="dg-day off">{n}</span>')
            continue
        cls = "dg-day selected" if n == picked else "dg-day"
        wiring = f' data-ev="pick" data-value="{escape(days[n])}"' if live else ""
        name = escape(month.day(n).strftime("%A, %B ") + str(n))
        cells.append(f'<button type="button" class="{cls}"{wiring} aria-label="{name}"'
                     f' aria-pressed="{str(n == picked).lower()}">{n}</button>')
    return (f'<div class="date-grid" role="grid" aria-label="{escape(month.title)}">'
            f'<div class="dg-title">{escape(month.title)}</div><div class="dg-cells">{heads}{"".join(cells)}</div></div>')


def sortable_rows(copies: list[tuple[Element, Ctx, str]]) -> str:
    """The items of a list, in order, each with a drag handle and its position."""
    rows = []
    for n, (el, ctx, _) in enumerate(copies):
        name = label(el, ctx)
        desc = f'<span class="desc">{escape(ctx.text(el, el.description))}</span>' if el.description else ""
        rows.append(f'<li class="sortable-item"{attrs(el, ctx)}><span class="drag-handle" role="button" '
                    f'aria-label="Drag {name}" title="Drag to reorder">{_GRIP}</span><span class="pos">{n + 1}</span>'
                    f'<span class="card-body"><span class="title">{name}</span>{desc}</span></li>')
    return f'<ol class="sortable-list panel">{"".join(rows)}</ol>'


def picker_days(el: Element, ctx: Ctx) -> dict[int, str]:
    """The days of its month a picker accepts, with the value each sends."""
    out = {}
    for option in ctx.options(el):
        day = int(option.value) if option.value.isdigit() else parse_date(option.value).day
        out[day] = option.value
    return out



_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): n for n, name in enumerate(calendar.month_abbr) if name}
_SPELLED = re.compile(r"^(?:[A-Za-z]{3,9},?\s+)?([A-Za-z]{3,9})\.?\s+(\d{1,2}),?\s+(\d{4})$")


def card_date(el: Element, ctx: Ctx) -> date | None:
    """The date a card's label names, if that is all it says: ``2026-06-13``, ``June 13, 2026``
    or ``Sat, Jun 13, 2026``."""
    text = ctx.text(el, el.label).strip()
    try:
        return parse_date(text)
    except WidgetError:
        pass
    found = _SPELLED.match(text)
    month = _MONTHS.get(found.group(1).lower()) if found else None
    if not found or month is None:
        return None
    try:
        return date(int(found.group(3)), month, int(found.group(2)))
    except ValueError:
        return None


def month_calendar(elements: list[Element], ctx: Ctx) -> str | None:
    """Cards named by dates of one month as a month calendar: a heading row of weekdays,
    a cell per day, each card in its day's cell; None when they are not such cards."""
    days = {}
    for el in elements:
        day = card_date(el, ctx) if el.kind == "card" else None
        if day is None or day.day in days:
            return None
        days[day.day] = (el, day)
    months = {(d.year, d.month) for _, d in days.values()}
    if len(days) < 2 or len(months) != 1:
        return None
    month = Month(*months.pop())
    heads = "".join(f'<div class="cal-head" aria-hidden="true">{d}</div>' for d in WEEKDAY_HEADS)
    cells = ['<div class="cal-cell blank"></div>'] * month.first_weekday
    for n in range(1, month.days + 1):
        if n not in days:
            cells.append(f'<div class="cal-cell"><span class="day-num">{n}</span></div>')
            continue
        el, _ = days[n]
        desc = f'<span class="desc">{escape(ctx.text(el, el.description))}</span>' if el.description else ""
        name = f'aria-label="{label(el, ctx)}"'
        cells.append(f'<div class="card cal-cell booked"{attrs(el, ctx, name)}><span class="day-num">{n}</span>'
                     f'{desc}</div>')
    return (f'<div class="collection calendar-month" role="grid" aria-label="{escape(month.title)}">'
            f'<div class="cal-title">{escape(month.title)}</div>{heads}{"".join(cells)}</div>')


def reading_pane(blocks: list[str]) -> list[str]:
    """An inbox list followed by more of the page (the open message: its text, its buttons)
    as a list and a reading pane beside it (stacked on narrow screens); other pages as they are."""
    start = next((i for i, b in enumerate(blocks) if b.startswith('<div class="collection list inbox')), None)
    if start is None or start + 1 >= len(blocks):
        return blocks
    pane = "".join(blocks[start + 1:])
    return [*blocks[:start], f'<div class="split-view"><div class="split-list">{blocks[start]}</div>'
            f'<section class="split-pane panel" aria-label="Reading pane">{pane}</section></div>']


def tab_panel(blocks: list[str]) -> list[str]:
    """Tabs in a page's main column (a detail page's Overview / Reviews) with what follows them
    in one tab panel under the tab bar; other pages as they are."""
    start = next((i for i, b in enumerate(blocks) if b.startswith('<div class="tabs" role="tablist">')), None)
    if start is None or start + 1 >= len(blocks):
        return blocks
    panel = "".join(blocks[start + 1:])
    return [*blocks[:start], f'<div class="tabbed">{blocks[start]}'
            f'<section class="tab-panel panel" role="tabpanel">{panel}</section></div>']


def sort_heading(title: str, field: str, sorter: tuple[Element, Ctx, tuple[str, ...], object] | None) -> str:
    """A column heading; with a sort variable that can order by ``field``, a button sending
    ``sort`` (the other direction when the rows are in this one already)."""
    if sorter is None:
        return f'<th scope="col">{escape(title)}</th>'
    el, ctx, values, current = sorter
    if field not in values and f"-{field}" not in values:
        return f'<th scope="col">{escape(title)}</th>'
    state = "ascending" if current == field else "descending" if current == f"-{field}" else "none"
    wanted = heading_order(values, current, field) or field
    arrow = {"ascending": "▲", "descending": "▼", "none": "↕"}[state]
    wiring = (f' data-el="{escape(el.id)}" data-kind="sort" data-ev="sort" data-value="{escape(wanted)}"'
              if ctx.live else "")
    return (f'<th scope="col" aria-sort="{state}"><button type="button" class="th-sort"{wiring}>'
            f'{escape(title)}<span class="sort-mark" aria-hidden="true">{arrow}</span></button></th>')


def table_pager(el: Element, ctx: Ctx, current: int, pages: int, rows: int) -> str:
    """A paged table's pager: what it shows of how many, then Previous, the page numbers and
    Next, each a button sending ``page`` with its number. The page shown is marked current,
    Previous on the first page and Next on the last are disabled: their clicks still reach
    the machine, which fires nothing for them."""
    size = el.per_page or 1
    first, last = (current - 1) * size + 1, min(current * size, rows)
    info = f"{first}-{last} of {rows}" if rows and first <= last else f"0 of {rows}"

    def button(text: str, number: int, name: str, *, current: bool = False, disabled: bool = False) -> str:
        wiring = (f' data-el="{escape(el.id)}" data-kind="page" data-ev="page" data-value="{number}"'
                  if ctx.live else "")
        marks = (' aria-current="page"' if current else "") + (' aria-disabled="true"' if disabled else "")
        cls = "page-btn active" if current else "page-btn"
        return f'<button type="button" class="{cls}" aria-label="{name}"{wiring}{marks}>{text}</button>'

    parts = [button('<span aria-hidden="true">‹</span> Previous', current - 1, "Previous page", disabled=current <= 1)]
    parts += [button(str(n), n, f"Page {n}", current=n == current) for n in range(1, pages + 1)]
    parts.append(button('Next <span aria-hidden="true">›</span>', current + 1, "Next page", disabled=current >= pages))
    return (f'<nav class="pager table-pager" aria-label="Pages"><span class="pager-info">{info}</span>'
            f'<span class="pager-pages">{"".join(parts)}</span></nav>')
