"""The value-carrying widgets: sliders, date pickers and sortable lists.

Each is an element kind whose every interaction is an event of the machine:

- ``slider`` (bound to an int variable) sends ``change`` with the chosen int as its text
  (``"4"``); it accepts every int of the variable's range, or only its ``options`` (the
  stops, ints of that range, whose labels are tick labels).
- ``date_picker`` sends ``open`` (a click on the field; the spec keeps whether its month
  grid is open in a variable and says so in ``open_when``) and ``pick`` with the chosen
  day: a date ``YYYY-MM-DD`` when it is bound to an enum of such dates (``""`` = none
  chosen), or the day of the month (``"13"``) when it is bound to an int and names its
  ``month``.
- ``sortable`` is repeated over a list; dragging one item's handle sends ``move`` with
  ``"from>to"`` (positions), and the effect ``{move: LIST}`` moves the item so.

This module checks their bindings and works out what each accepts (as the element's
options, which the engine turns into edge values); it is pure, like the engine.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from fsm_sites.spec.site import Element, Option
from fsm_sites.spec.types import EnumT, IntT, SeqT, VType

WIDGET_KINDS = frozenset({"slider", "date_picker", "sortable"})
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


class WidgetError(ValueError):
    """A widget bound to the wrong thing; the message says what was expected."""


@dataclass(frozen=True)
class Month:
    """The month a date picker shows."""

    year: int
    month: int

    @property
    def days(self) -> int:
        return calendar.monthrange(self.year, self.month)[1]

    @property
    def first_weekday(self) -> int:
        """0 is Monday."""
        return calendar.monthrange(self.year, self.month)[0]

    @property
    def title(self) -> str:
        return f"{calendar.month_name[self.month]} {self.year}"

    def day(self, n: int) -> date:
        return date(self.year, self.month, n)


def parse_month(text: str) -> Month:
    found = _MONTH.match(text)
    if not found or not 1 <= int(found.group(2)) <= 12:
        raise WidgetError(f"expected a month written YYYY-MM such as 2026-06, got {text!r}")
    return Month(int(found.group(1)), int(found.group(2)))


def parse_date(text: str) -> date:
    found = _DATE.match(text)
    try:
        if not found:
            raise ValueError
        return date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    except ValueError:
        raise WidgetError(f"expected a date written YYYY-MM-DD such as 2026-06-13, got {text!r}") from None


def date_label(day: date) -> str:
    """How a picked date reads on the field: ``Sat, Jun 13, 2026``."""
    return f"{day.strftime('%a, %b')} {day.day}, {day.year}"


def picker_month(el: Element, bound: VType | None) -> Month:
    """The month a date picker shows: its ``month``, else the month of its enum's dates."""
    if el.month:
        return parse_month(el.month)
    if isinstance(bound, EnumT):
        dates = [v for v in bound.values if v]
        if dates:
            first = parse_date(dates[0])
            return Month(first.year, first.month)
    raise WidgetError("expected `month` (YYYY-MM) on a date picker bound to an int, got none")


def widget_options(el: Element, bound: VType | None, repeated: VType | None) -> tuple[Option, ...]:
    """What a widget accepts, as options (value, label); ``WidgetError`` if it is bound wrong."""
    if el.kind == "slider":
        return _slider_options(el, bound)
    if el.kind == "date_picker":
        return _date_options(el, bound)
    if not isinstance(repeated, SeqT) or not repeated.ordered:
        got = repeated.describe() if repeated is not None else "no `repeat`"
        raise WidgetError(f"expected a sortable repeated over a list (its order is what it changes), got {got}")
    return ()


def _slider_options(el: Element, bound: VType | None) -> tuple[Option, ...]:
    if not isinstance(bound, IntT):
        got = bound.describe() if bound is not None else "no `bind`"
        raise WidgetError(f"expected a slider bound to an int variable, got {got}")
    if not el.options:
        if bound.hi - bound.lo > 200:
            raise WidgetError(f"expected a slider range of at most 200 steps, got {bound.describe()}; give `options`")
        return tuple(Option(value=str(v)) for v in range(bound.lo, bound.hi + 1))
    for option in el.options:
        if not option.value.lstrip("-").isdigit() or not bound.contains(int(option.value)):
            raise WidgetError(f"expected slider stops that are ints of {bound.describe()}, got {option.value!r}")
    return el.options


def _date_options(el: Element, bound: VType | None) -> tuple[Option, ...]:
    month = picker_month(el, bound)
    if isinstance(bound, IntT):
        days = range(max(bound.lo, 1), min(bound.hi, month.days) + 1)
        if not days:
            raise WidgetError(f"expected an int range holding days of {month.title}, got {bound.describe()}")
        return tuple(Option(value=str(d), label=date_label(month.day(d))) for d in days)
    if not isinstance(bound, EnumT):
        got = bound.describe() if bound is not None else "no `bind`"
        raise WidgetError(f"expected a date picker bound to an enum of dates (YYYY-MM-DD) or an int, got {got}")
    out = []
    for value in bound.values:
        if not value:
            continue
        day = parse_date(value)
        if (day.year, day.month) != (month.year, month.month):
            raise WidgetError(f"expected every date in {month.title} (the month the picker shows), got {value!r}")
        labels = dict(bound.labels)
        out.append(Option(value=value, label=labels.get(value, date_label(day))))
    if not out:
        raise WidgetError(f"expected dates among the values of the bound enum, got {list(bound.values)}")
    return tuple(out)


def picked_day(value: object, month: Month) -> int | None:
    """The day of the month a date picker's bound value names (None: none chosen)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 1 <= value <= month.days else None
    if isinstance(value, str) and value:
        day = parse_date(value)
        return day.day
    return None


def move_positions(value: object, size: int) -> tuple[int, int] | None:
    """(from, to) of a sortable's ``move`` value ``"from>to"``; None unless both are positions
    of a list of ``size`` items and differ."""
    if not isinstance(value, str):
        return None
    found = re.fullmatch(r"(\d+)>(\d+)", value)
    if not found:
        return None
    src, dst = int(found.group(1)), int(found.group(2))
    return (src, dst) if src != dst and src < size and dst < size else None


def moved(items: tuple, src: int, dst: int) -> tuple:
    """``items`` with the one at ``src`` taken out and put back at ``dst``."""
    rest = items[:src] + items[src + 1:]
    return rest[:dst] + (items[src],) + rest[dst:]


def move_values(size: int) -> list[str]:
    """Every ``move`` value of a list of ``size`` items, in order."""
    return [f"{i}>{j}" for i in range(size) for j in range(size) if i != j]


def table_order(items: Sequence[Any], order: str, fields: dict[str, VType]) -> list[int]:
    """The positions of a data table's records in the order a sort value names: ``field``
    ascending, ``-field`` descending, each by its type's order (an enum by its values'), ties
    in the stored order; ``""`` or an unknown field: as stored."""
    name = order.lstrip("-")
    ftype = fields.get(name)
    if not order or ftype is None:
        return list(range(len(items)))
    return sorted(range(len(items)), key=lambda i: ftype.sort_key(items[i].get(name)), reverse=order.startswith("-"))


def table_rank(items: Sequence[Any], item: Any, order: str, fields: dict[str, VType]) -> int:
    """Where ``item`` is shown in its table (0: first), -1 when the table lacks it."""
    if item not in items:
        return -1
    return table_order(items, order, fields).index(list(items).index(item))


def page_count(rows: int, per_page: int) -> int:
    """The pages a table of ``rows`` rows has at ``per_page`` a page (one, when it is empty)."""
    return max(1, -(-rows // per_page))


def heading_order(values: Sequence[str], current: object, field: str) -> str | None:
    """The order a click on ``field``'s column heading asks for (``values``: the sort
    variable's): the other direction when the rows are in this one already, else ascending
    when the variable has it; None when it cannot order by ``field``."""
    if field not in values and f"-{field}" not in values:
        return None
    if current == field and f"-{field}" in values:
        return f"-{field}"
    return field if field in values else f"-{field}"


def heading_orders(values: Sequence[str], current: object) -> list[str]:
    """What each heading of a sortable table asks for, in the order of the fields' first values."""
    fields = dict.fromkeys(v.lstrip("-") for v in values)
    return [order for f in fields if (order := heading_order(values, current, f)) is not None]
