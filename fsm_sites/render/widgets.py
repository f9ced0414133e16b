"""HTML of the widget kinds: dropdown menus, accordions, tooltips, comboboxes and steppers.

Each widget's host carries ``data-el``/``data-kind`` like any element, and ``data-open``
(whether its bound bool variable holds) for the openable ones; what is open is the
machine's state, so the same state always draws the same widget. The parts that send
events: a menu's or an accordion's toggle (``data-ev="click"``), a tooltip's trigger
(hover: the page script sends it when the pointer moves onto it), a tooltip's close
button and Escape (close), a combobox's field (input) and its suggestions (select).
Elements ``inside`` a menu or an accordion are drawn in it (``Ctx.inner``).
"""

from __future__ import annotations

from html import escape

from fsm_sites.render.base import Ctx, attrs, label, show
from fsm_sites.spec.site import Element


def _open_attrs(el: Element, ctx: Ctx) -> tuple[bool, str]:
    """Whether the widget is open, and its host's attributes saying so."""
    is_open = bool(el.bind) and ctx.value_of(el) is True
    return is_open, attrs(el, ctx, f'data-open="{str(is_open).lower()}"')


def _toggle(el: Element, ctx: Ctx, cls: str, is_open: bool, popup: bool) -> str:
    click = ' data-ev="click"' if ctx.live else ""
    haspopup = ' aria-haspopup="menu"' if popup else ""
    return (f'<button type="button" class="{cls}"{click}{haspopup} aria-expanded="{str(is_open).lower()}">'
            f'<span>{label(el, ctx)}</span><span class="caret" aria-hidden="true">{"▴" if is_open else "▾"}</span></button>')


def menu(el: Element, ctx: Ctx) -> str:
    """A button whose items (the elements inside it) pop over the page while it is open."""
    is_open, host = _open_attrs(el, ctx)
    pop = f'<div class="menu-pop" role="menu">{ctx.inner(el)}</div>' if is_open else ""
    return f'<div class="menu-widget"{host}>{_toggle(el, ctx, "btn secondary menu-toggle", is_open, True)}{pop}</div>'


def accordion(el: Element, ctx: Ctx) -> str:
    """A section whose heading expands or collapses its content (the elements inside it)."""
    is_open, host = _open_attrs(el, ctx)
    desc = f'<p class="body-text">{escape(ctx.text(el, el.description))}</p>' if el.description else ""
    body = f'<div class="acc-body" role="region">{desc}{ctx.inner(el)}</div>' if is_open else ""
    cls = "accordion open" if is_open else "accordion"
    return f'<section class="{cls}"{host}>{_toggle(el, ctx, "acc-head", is_open, False)}{body}</section>'


def tooltip(el: Element, ctx: Ctx) -> str:
    """A label with an info mark; hovering it shows the description in a bubble, which its
    close button (or Escape) hides."""
    is_open, host = _open_attrs(el, ctx)
    bubble = ""
    if is_open:
        close = '<button type="button" class="tip-close" aria-label="Close">×</button>' if ctx.live else ""
        bubble = f'<span class="tip-bubble" role="tooltip">{escape(ctx.text(el, el.description))}{close}</span>'
    return (f'<span class="tip-host"{host}><span class="tip-trigger" tabindex="0">'
            f'<span class="tip-mark" aria-hidden="true">i</span><span class="tip-label">{label(el, ctx)}</span></span>'
            f'{bubble}</span>')


def combobox(el: Element, ctx: Ctx) -> str:
    """A text field with suggestions: typing filters them (in the page), Enter sends the text
    (an input event), a click on a suggestion chooses it (a select event)."""
    value = show(ctx.value_of(el)) if el.bind else ""
    placeholder = f' placeholder="{escape(el.placeholder)}"' if el.placeholder else ""
    input_id = f"in-{escape(el.id)}"
    options = "".join(
        f'<li class="combo-option{" selected" if (o.label or o.value).lower() == value.lower() else ""}"'
        f' role="option" data-value="{escape(o.value)}">{escape(o.label or o.value)}</li>'
        for o in ctx.options(el))
    return (
        f'<div class="field"><label class="field-label" for="{input_id}">{label(el, ctx)}</label>'
        f'<div class="combo"{attrs(el, ctx)}><input class="input" id="{input_id}" type="text" role="combobox"'
        f' aria-autocomplete="list" autocomplete="off" spellcheck="false" value="{escape(value)}"{placeholder}>'
        f'<ul class="combo-list" role="listbox">{options}</ul></div></div>'
    )


def stepper(el: Element, ctx: Ctx) -> str:
    """Step N of M: the steps in order, those before the current one done."""
    steps = ctx.options(el)
    at = next((i for i, o in enumerate(steps) if o.value == el.current), 0)
    items = []
    for i, o in enumerate(steps):
        state = "done" if i < at else "current" if i == at else "todo"
        aria = ' aria-current="step"' if i == at else ""
        items.append(f'<li class="step {state}"{aria}><span class="step-no">{"✓" if i < at else i + 1}</span>'
                     f'<span class="step-label">{escape(o.label or o.value)}</span></li>')
    caption = f'<span class="step-caption">{label(el, ctx)} · Step {at + 1} of {len(steps)}</span>'
    return f'<nav class="stepper"{attrs(el, ctx)} aria-label="progress">{caption}<ol>{"".join(items)}</ol></nav>'


RENDERERS = {"menu": menu, "accordion": accordion, "tooltip": tooltip, "combobox": combobox, "stepper": stepper}
