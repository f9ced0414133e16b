"""A state's page as data: what a native (non-HTML) renderer draws, e.g. the Tk app.

``describe_page(machine, state)`` lists the live elements of the state's page (a
modal's own elements when a modal is open) in spec order, with their texts filled in,
each copy of a repeated element as its own entry (its event ``value``), and what a
widget needs to show: the bound value, checked, disabled, the options. It is served by
the control API (``GET /sessions/{id}/view``) and is pure, like the engine.
"""

from __future__ import annotations

from typing import Any

from fsm_sites.engine.state import State
from fsm_sites.render.elements import radio_checked, show
from fsm_sites.spec.site import Element
from fsm_sites.spec.value_widgets import heading_orders


def describe_page(machine: Any, state: State) -> dict[str, Any]:
    """The page ``state`` shows: title, body, toast, route and its live elements."""
    pages = {p.id: p for p in machine.spec.pages}
    page = pages[state.page_id]
    elements: list[dict[str, Any]] = []
    for el in machine.views.visible_elements(state):
        if el.distractor:
            continue
        if el.repeat:
            for value, item in machine.views.instances(state, el.id):
                elements.append(_element(machine, state, el, value, item))
            if el.sort:  # the table's sortable headings (the orders they ask for now), as one choice
                order = next(v for v in machine.spec.variables if v.name == el.sort)
                values = heading_orders(order.values, state.get(el.sort))
                elements.append({"id": el.id, "kind": "sort", "value": None, "section": el.section or "main",
                                 "label": "Sort by", "description": "", "placeholder": "", "disabled": False,
                                 "text": show(state.get(el.sort)),
                                 "options": [{"value": v, "label": v.lstrip("-").replace("_", " ").capitalize()
                                              + (" (descending)" if v.startswith("-") else "")} for v in values]})
            paging = machine.views.table_pages(state, el.id) if el.per_page else None
            if paging is not None:  # the table's pager: Previous, the page numbers, Next
                elements.append(_pager(el, *paging))
        else:
            elements.append(_element(machine, state, el, None, None))
    return {"page": state.page, "kind": page.kind, "site": machine.spec.title,
            "title": machine.views.text(state, page.title), "body": machine.views.text(state, page.body),
            "toast": machine.views.toast(state), "route": machine.views.route(state), "elements": elements}


def _pager(el: Element, current: int, pages: int, rows: int) -> dict[str, Any]:
    """A paged table's pager as one choice: each option sends ``page`` with its number."""
    options = [{"value": str(current - 1), "label": "Previous"}] if current > 1 else []
    options += [{"value": str(n), "label": str(n)} for n in range(1, pages + 1)]
    options += [{"value": str(current + 1), "label": "Next"}] if current < pages else []
    return {"id": el.id, "kind": "pager", "value": None, "section": el.section or "main", "label": f"Page ({rows} rows)",
            "description": "", "placeholder": "", "disabled": False, "text": str(current), "options": options}


def _element(machine: Any, state: State, el: Element, value: str | None, item: Any) -> dict[str, Any]:
    bound = state.get(el.bind) if el.bind else None
    out: dict[str, Any] = {
        "id": el.id, "kind": el.kind, "value": value, "section": el.section or "main",
        "label": machine.views.text(state, el.label, element=el.id, item=item),
        "description": machine.views.text(state, el.description, element=el.id, item=item),
        "placeholder": el.placeholder or "",
        "disabled": bool(machine.views.disabled(state, el, value)),
    }
    if el.inside is not None:
        out["inside"] = el.inside
    if el.invalid_when and machine.views.invalid(state, el.id):  # shown invalid, with its message
        out["error"] = machine.views.text(state, el.error or "Please check this field")
    if el.kind == "text_input":
        out["text"] = "" if bound is None else show(bound)
    elif el.kind == "checkbox":
        out["checked"] = bound is True
    elif el.kind == "select":
        options = machine.views.options(state.page, el.id)
        out["options"] = [{"value": o.value, "label": o.label or o.value} for o in options]
        out["text"] = machine.views.text(state, "{" + el.bind + "}") if el.bind else ""
    elif el.kind in ("menu", "accordion", "tooltip"):
        out["open"] = bound is True
        out["inside"] = el.inside
    elif el.kind == "combobox":
        out["text"] = "" if bound is None else show(bound)
        out["options"] = [{"value": o.value, "label": o.label or o.value} for o in el.options]
    elif el.kind == "stepper":
        out["options"] = [{"value": o.value, "label": o.label or o.value} for o in el.options]
        out["current"] = el.current
    elif el.kind in ("slider", "date_picker"):  # the accepted values: a slider's stops, a picker's days
        options = machine.views.options(state.page, el.id)
        out["options"] = [{"value": o.value, "label": o.label or o.value} for o in options]
        out["text"] = "" if bound is None else show(bound)
        if el.kind == "date_picker":
            out["open"] = bool(machine.views.is_open(state, el.id))
    elif el.kind == "radio":
        out["options"] = [{"value": o.value, "label": o.label or o.value} for o in el.options]
        out["checked"] = [o.value for o in el.options if bound is not None and show(bound) == o.value]
        if not el.options:
            out["checked"] = bool(el.bind) and radio_checked(el, bound)
    return out
