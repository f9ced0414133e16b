"""What every element renderer shares: the drawing context (``Ctx``), an element's data
attributes, its label and a value's display text. ``elements.py`` and the widget renderers
(``widgets.py``, ``value_widgets.py``) build on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from fsm_sites.render.look import PLAIN, Look
from fsm_sites.spec.site import Element, Option, VarValue

CLICK_KINDS = frozenset({"button", "link", "tab", "list_item", "card", "pagination", "radio"})


@dataclass(frozen=True)
class Ctx:
    """What an element needs to know to draw itself in the current state."""

    value_of: Callable[[Element], VarValue | None]  # the bound variable's value, None if unbound
    is_active: Callable[[Element], bool]  # tab/pagination/nav link that matches the state
    live: bool  # interactive (False beneath a modal)
    text: Callable[[Element, str | None], str] = lambda el, s: s or ""  # a label with {expr} filled in
    is_disabled: Callable[[Element], bool] = lambda el: False
    options: Callable[[Element], tuple[Option, ...]] = lambda el: el.options
    show_value: Callable[[Element, VarValue | None], str] = lambda el, v: show(v)
    instance: str | None = None  # the event value of one copy of a repeated element
    look: Look = PLAIN  # seeded presentation: icons, pictures, switches
    inner: Callable[[Element], str] = lambda el: ""  # the HTML of the elements inside a menu or accordion
    is_open: Callable[[Element], bool] = lambda el: False  # a date picker's month grid is shown
    error: Callable[[Element], str | None] = lambda el: None  # an invalid field's message (None: valid)
    # how many items a text bound to a set or list shows (None: bound to something else)
    tally: Callable[[Element], str | None] = lambda el: None


def attrs(el: Element, ctx: Ctx, *extra: str) -> str:
    """The data attributes of an element (none when it is inert); a disabled one says so,
    but still sends its click, which the site records as a step that changed nothing."""
    if not ctx.live:
        return " " + " ".join(extra) if extra else ""
    parts = [f'data-el="{escape(el.id)}"', f'data-kind="{el.kind}"']
    if el.kind in CLICK_KINDS:
        parts.append('data-ev="click"')
    if ctx.instance is not None:
        parts.append(f'data-value="{escape(ctx.instance)}"')
    if ctx.is_disabled(el):
        parts.append('aria-disabled="true"')
    return " " + " ".join([*parts, *extra])


def show(value: VarValue | None) -> str:
    """A variable's value as display text (when its type is unknown)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) if value else "(none)"
    return str(value)


def label(el: Element, ctx: Ctx) -> str:
    return escape(ctx.text(el, el.label))
