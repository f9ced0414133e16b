"""Composable page-flow templates: catalog (list -> detail), collection, form (-> confirm),
wizard, settings tabs, search and confirm-in-a-modal. Each adds pages, variables,
transitions and goals to a ``SiteBuilder`` and returns the page ids it made."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fsm_sites.generator.builder import Cond, FormField, Guard, SiteBuilder, cond, effect
from fsm_sites.generator.widgets import add_stepper, add_widget_field, field_var


@dataclass(frozen=True)
class Item:
    id: str
    label: str
    blurb: str = ""


def option_label(value: str) -> str:
    """How a select or radio option's value is shown on the page ("next_month" -> "Next Month")."""
    return value.replace("_", " ").title()


def _field_var(b: SiteBuilder, key: str, f: FormField) -> str:
    name = f"{key}_{f.id}"
    if f.kind in ("combobox", "tooltip"):
        return field_var(b, name, f)
    if f.kind == "checkbox":
        return b.add_var(name, "bool", label=f.label.lower())
    if f.kind == "select":
        return b.add_var(name, "enum", values=list(f.options), label=f.label.lower())
    if f.kind == "slider":
        return b.add_var(name, "int", min=int(f.options[0]), max=int(f.options[1]), label=f.label.lower())
    return b.add_var(name, "enum", values=["", *f.options], label=f.label.lower())


def add_fields(b: SiteBuilder, page: str, key: str, fields: list[FormField]) -> tuple[list[str], list[Cond]]:
    """Field elements and their transitions; returns (variables, conditions that make it complete)."""
    variables, required = [], []
    for f in fields:
        var = _field_var(b, key, f)
        variables.append(var)
        label = f.label.lower()
        if f.kind in ("combobox", "tooltip"):
            required += add_widget_field(b, page, f, var)
        elif f.kind == "text":
            b.add_element(page, f.id, "text_input", f.label, placeholder=f"Enter {label}", bind=var)
            b.add_transition(page, f.id, f"type '$value' into the {label} field", event="input",
                             values=f.options, effects=[effect("set", var, "$value")])
            required.append(cond(var, op="nonempty"))
        elif f.kind == "select":
            opts = [{"value": o, "label": option_label(o)} for o in f.options]
            b.add_element(page, f.id, "select", f.label, options=opts, bind=var)
            b.add_transition(page, f.id, f"choose '$value' as the {label}", event="select",
                             effects=[effect("set", var, "$value")])
        elif f.kind == "radio":
            opts = [{"value": o, "label": option_label(o)} for o in f.options]
            b.add_element(page, f.id, "radio", f.label, options=opts, bind=var)
            b.add_transition(page, f.id, f"pick '$value' for {label}", effects=[effect("set", var, "$value")])
            required.append(cond(var, op="nonempty"))
        elif f.kind in ("slider", "date"):
            variables += _widget_field(b, page, f, var)
            required += [] if f.kind == "slider" else [cond(var, op="nonempty")]
        else:
            b.add_element(page, f.id, "checkbox", f.label, bind=var)
            b.add_transition(page, f.id, f"tick '{f.label}'", event="check", when=[cond(var, False)],
                             effects=[effect("set", var, True)])
            b.add_transition(page, f.id, f"untick '{f.label}'", event="uncheck", when=[cond(var, True)],
                             effects=[effect("set", var, False)])
    return variables, required


def _inline_validation(b: SiteBuilder, form: str, key: str, fields: list[FormField], submit: str) -> list[str]:
    """A submit attempt with required fields empty marks the form tried; each such field then
    shows its message until it is filled. Returns the form-local variable it adds."""
    tried = b.add_var(f"{key}_tried", "bool")
    empty = [f for f in fields if f.kind in ("text", "combobox", "radio", "date")]
    if not empty:
        return [tried]
    missing = " or ".join(f"{key}_{f.id} == ''" for f in empty)
    b.add_transition(form, "submit", f"press '{submit}' with a required field empty", when=[missing],
                     effects=[effect("set", tried, True)])
    elements = b.pages[form]["elements"]
    for f in empty:
        element = next(e for e in elements if e["id"] == f.id)
        element["invalid_when"] = [tried, f"{key}_{f.id} == ''"]
        element["error"] = f"{'Enter the' if f.kind in ('text', 'combobox') else 'Choose a'} {f.label.lower()}"
    return [tried]


def _widget_field(b: SiteBuilder, page: str, f: FormField, var: str) -> list[str]:
    """A slider (``change`` sets the int) or a date picker (``open`` shows its month grid,
    ``pick`` sets the date and closes it); returns the extra variables it needs."""
    label = f.label.lower()
    if f.kind == "slider":
        b.add_element(page, f.id, "slider", f.label, bind=var)
        b.add_transition(page, f.id, f"set the {label} to $value", event="change", effects=[{"set": var, "to": "value"}])
        return []
    shown = b.add_var(f"{var}_open", "bool")
    b.add_element(page, f.id, "date_picker", f.label, bind=var, open_when=shown)
    b.add_transition(page, f.id, f"open the {label} calendar", event="open", when=[cond(shown, False)],
                     effects=[effect("set", shown, True)])
    b.add_transition(page, f.id, f"pick {{{var}}} as the {label}", event="pick",
                     effects=[{"set": var, "to": "value"}, effect("set", shown, False)])
    return [shown]


def ranking(b: SiteBuilder, key: str, title: str, item_type: str, order: Sequence[str]) -> str:
    """A page listing ``order``'s items in a list the user reorders by dragging (a sortable);
    returns the page id."""
    var = b.add_var(key, "list", item=item_type, max_len=len(order), default=list(order), label=title.lower())
    page = b.add_page(key, title, body="Drag an item by its handle to change the order.")
    b.add_element(page, "item", "sortable", "{it}", repeat=var)
    b.add_transition(page, "item", f"drag {{it}} to another place in {title.lower()}", event="move",
                     effects=[{"move": var}])
    return page


def catalog(b: SiteBuilder, key: str, title: str, items: list[Item], *, per_page: int = 4,
            action: tuple[str, str] | None = None, effects: list[Cond] | None = None,
            when: Sequence[Guard] | None = None, toast: str | None = None, split: bool = False,
            tabs: Sequence[tuple[str, str, Sequence[str]]] = ()) -> str:
    """List pages (paginated) of cards and one detail page whose parameter is the item
    (``{key}_item(<id>)``); returns the detail page's id.

    ``action`` = (button label, verb) on the detail page applies ``effects`` (which may name
    the page's ``item``), enabled while ``when`` holds, showing ``toast``. ``split``: the
    detail page keeps every item's card above the open item's content (an inbox and its
    reading pane), each opening its own item. ``tabs`` (see ``detail_tabs``): tabs under the
    action whose panel shows one text per item; the open one is ``{key}_tab``, which the
    action sets back to the first tab.
    """
    item_type = b.add_type(f"{key}_item", "enum", values=[i.id for i in items], labels={i.id: i.label for i in items})
    chunks = [items[i:i + per_page] for i in range(0, len(items), per_page)]
    list_pages = [b.add_page(key if n == 0 else f"{key}_p{n + 1}", title if n == 0 else f"{title} - page {n + 1}")
                  for n in range(len(chunks))]
    detail = b.add_page(f"{key}_item", "{item}", params=[{"name": "item", "type": item_type}],
                        route=f"/{key}/{{item}}")
    for item in items if split else ():
        b.link(detail, item.id, item.label, detail, f"open {item.label}", kind="card",
               description_text=item.blurb or None, args={"item": f"'{item.id}'"})
    for item in items:
        if item.blurb:
            b.add_element(detail, f"about_{item.id}", "text", item.blurb, visible_when=[f"item == '{item.id}'"])
    b.link(detail, "back", f"Back to {title.lower()}", list_pages[0], f"go back to {title.lower()}", section="header")
    b.add_element(detail, "share", "text", "Share", distractor=True, section="sidebar")
    tab = b.add_var(f"{key}_tab", "enum", values=[t for t, _, _ in tabs], label=f"{key} tab") if tabs else None
    if action and effects:
        label, verb = action
        b.add_element(detail, "act", "button", label)
        # the page comes back on its first tab, as a shop's page reloads after adding to the cart
        reset = [effect("set", tab, tabs[0][0])] if tab else []
        b.add_transition(detail, "act", f"{verb} {{item}}", effects=[*effects, *reset], when=when or [], toast=toast)
    if tab:
        detail_tabs(b, detail, tab, items, tabs)
    for n, (page, chunk) in enumerate(zip(list_pages, chunks, strict=True)):
        for item in chunk:
            b.link(page, item.id, item.label, detail, f"open {item.label}", kind="card",
                   description_text=item.blurb or None, args={"item": f"'{item.id}'"})
        if n + 1 < len(list_pages):
            b.link(page, "next", "Next page", list_pages[n + 1], f"go to page {n + 2} of {title.lower()}",
                   kind="pagination", section="footer")
        if n > 0:
            b.link(page, "prev", "Previous page", list_pages[n - 1], f"go back to page {n} of {title.lower()}",
                   kind="pagination", section="footer")
    return detail


def detail_tabs(b: SiteBuilder, detail: str, var: str, items: Sequence[Item],
                tabs: Sequence[tuple[str, str, Sequence[str]]]) -> None:
    """Tabs (id, label, one text per item in ``items``' order) on a detail page: a click on
    one shows its text of the page's item; the first is shown on arrival. The open tab is
    ``var`` (an enum of the tab ids), local to the page."""
    for tab, label, _ in tabs:
        b.add_element(detail, f"tab_{tab}", "tab", label)
        b.add_transition(detail, f"tab_{tab}", f"open the {label} tab of {{item}}", effects=[effect("set", var, tab)])
    for tab, label, texts in tabs:
        if len(texts) != len(items):
            raise ValueError(f"expected one {label!r} text per item ({len(items)}), got {len(texts)}")
        for item, text in zip(items, texts, strict=True):
            b.add_element(detail, f"{tab}_{item.id}", "text", text,
                          visible_when=[f"item == '{item.id}'", cond(var, tab)])
    b.local_group({detail}, [var])


def collection(b: SiteBuilder, page: str, title: str, list_var: str, remove_label: str = "Remove",
               confirm: tuple[str, str] | None = None) -> str:
    """A page listing the items held in ``list_var``, one row each with a remove button.

    ``confirm``: (the item type, the dialog's question) makes a row's remove button open a
    confirm dialog over the list (the row's item kept in ``<page>_pending`` while it is open)."""
    b.add_page(page, f"{title} ({{count({list_var})}})", body=f"Items in your {title.lower()}.")
    b.add_element(page, "row", "text", "{it}", repeat=list_var)
    b.add_element(page, "rm", "button", f"{remove_label} {{it}}", repeat=list_var)
    toast = f"Removed from your {title.lower()}"
    if confirm is None:
        b.add_transition(page, "rm", f"{remove_label.lower()} {{it}} from the {title.lower()}",
                         effects=[{"remove": list_var, "item": "it"}], toast=toast)
    else:
        _confirm_remove(b, page, title, list_var, remove_label, confirm, toast)
    b.add_element(page, "empty", "text", f"Your {title.lower()} is empty", visible_when=[cond(list_var, op="empty")])
    return page


def _confirm_remove(b: SiteBuilder, page: str, title: str, list_var: str, remove_label: str,
                    confirm: tuple[str, str], toast: str) -> None:
    """A row's remove button opens a dialog naming the row's item; confirming removes it."""
    item_type, question = confirm
    pending = b.add_var(f"{page}_pending", item_type)
    modal = b.add_page(f"{page}_remove", f"{question} {{{pending}}}", modal_of=page)
    b.add_transition(page, "rm", f"press '{remove_label}' on {{it}}", target=modal,
                     effects=[{"set": pending, "to": "it"}])
    b.add_element(modal, "ok", "button", remove_label)
    b.add_transition(modal, "ok", f"confirm: {remove_label.lower()} {{{pending}}} from the {title.lower()}",
                     target=page, effects=[{"remove": list_var, "item": pending}, {"clear": pending}], toast=toast)
    b.add_element(modal, "keep", "button", "Keep it")
    b.add_transition(modal, "keep", f"keep {{{pending}}}", target=page, effects=[{"clear": pending}])


def form_flow(b: SiteBuilder, key: str, title: str, fields: list[FormField], *, submit: str,
              exit_to: str, confirm: bool = True, result_title: str = "Done",
              extra_when: list[Cond] | None = None, on_done: list[Cond] | None = None,
              validate: bool = False) -> dict[str, str]:
    """Form page -> (confirm modal) -> result page; returns the page ids {form, confirm, result}.

    ``validate``: pressing submit with a required field empty is a transition too, after
    which each empty required field shows its message beside it (inline validation)."""
    form = b.add_page(key, title)
    variables, required = add_fields(b, form, key, fields)
    if validate:
        variables += _inline_validation(b, form, key, fields, submit)
    result = b.add_page(f"{key}_done", result_title, body=f"{title}: done.")
    pages = {"form": form, "result": result}
    b.add_element(form, "submit", "button", submit)
    when = required + list(extra_when or [])
    if confirm:
        modal = b.add_page(f"{key}_confirm", f"Confirm: {title.lower()}", modal_of=form)
        pages["confirm"] = modal
        b.add_transition(form, "submit", f"press '{submit}'", when=when, target=modal)
        _confirm_buttons(b, modal, result, form, on_done or [])
    else:
        b.add_transition(form, "submit", f"press '{submit}'", when=when, target=result, effects=on_done or [])
    b.link(form, "cancel", "Cancel", exit_to, f"leave {title.lower()}", section="footer")
    b.link(result, "continue", "Continue", exit_to, "continue", kind="button")
    b.local_group(set(pages.values()), variables)
    return pages


def wizard(b: SiteBuilder, key: str, title: str, steps: list[list[FormField]], *, exit_to: str,
           result_title: str = "All set") -> dict[str, Any]:
    """A multi-step form: step pages with Next/Back, a review page, confirm modal, result."""
    step_pages = [b.add_page(f"{key}_s{i + 1}", title)  # its stepper says which step
                  for i in range(len(steps))]
    review = b.add_page(f"{key}_review", f"{title} - review")
    variables: list[str] = []
    for i, (page, fields) in enumerate(zip(step_pages, steps, strict=True)):
        add_stepper(b, page, title, [f"Step {n + 1}" for n in range(len(steps))] + ["Review"], i)
        vars_i, required = add_fields(b, page, f"{key}{i + 1}", fields)
        variables += vars_i
        nxt = step_pages[i + 1] if i + 1 < len(step_pages) else review
        b.add_element(page, "next", "button", "Next")
        b.add_transition(page, "next", f"continue to step {i + 2}" if nxt != review else "continue to the review",
                         when=required, target=nxt)
        back = step_pages[i - 1] if i else exit_to
        b.link(page, "back", "Back" if i else "Cancel", back, "go back a step" if i else f"leave {title.lower()}",
               section="footer")
    add_stepper(b, review, title, [f"Step {n + 1}" for n in range(len(steps))] + ["Review"], len(steps))
    b.link(review, "back", "Back", step_pages[-1], "go back to the last step", section="footer")
    flow = form_flow_tail(b, key, title, review, exit_to, result_title)
    b.local_group(set(step_pages) | {review} | set(flow.values()), variables)
    return {"steps": step_pages, "review": review, **flow}


def form_flow_tail(b: SiteBuilder, key: str, title: str, page: str, exit_to: str, result_title: str) -> dict[str, str]:
    modal = b.add_page(f"{key}_confirm", f"Submit {title.lower()}?", modal_of=page)
    result = b.add_page(f"{key}_done", result_title, body=f"{title}: submitted.")
    b.link(page, "submit", "Submit", modal, f"submit the {title.lower()}", kind="button")
    _confirm_buttons(b, modal, result, page)
    b.link(result, "continue", "Continue", exit_to, "continue", kind="button")
    return {"confirm": modal, "result": result}


def _confirm_buttons(b: SiteBuilder, modal: str, result: str, back: str, on_confirm: Sequence[Cond] = ()) -> None:
    """A confirm modal's Confirm (to ``result``, applying ``on_confirm``) and Cancel (to ``back``)."""
    b.link(modal, "ok", "Confirm", result, "confirm", kind="button", effects=on_confirm)
    b.link(modal, "cancel", "Cancel", back, "cancel the confirmation", kind="button")


def settings(b: SiteBuilder, key: str, title: str, tabs: list[tuple[str, str, list[tuple[str, str]]]]) -> list[str]:
    """Tabbed settings pages of persistent on/off toggles; returns the tab page ids."""
    pages = [b.add_page(f"{key}_{tab}", f"{title} - {label}") for tab, label, _ in tabs]
    for page, (_, _, toggles) in zip(pages, tabs, strict=True):
        for other, (tab, label, _) in zip(pages, tabs, strict=True):
            if other != page:
                b.link(page, f"tab_{tab}", label, other, f"open the {label} tab", kind="tab", section="header")
            else:
                b.add_element(page, f"tab_{tab}", "text", label, section="header")
        add_fields(b, page, key, [FormField("checkbox", tid, tlabel) for tid, tlabel in toggles])
    return pages


def search(b: SiteBuilder, key: str, title: str, queries: dict[str, list[tuple[str, str, str]]]) -> str:
    """A search page with a text box; results (label, detail page, item id) link to detail pages."""
    var = b.add_var(f"{key}_q", "text", values=list(queries), other="unicorn", label="search")  # other: a word nothing matches
    page = b.add_page(key, title)
    results = b.add_page(f"{key}_results", f"{title} - results for '{{{var}}}'")
    b.add_element(page, "q", "text_input", "Search", placeholder="Search...", bind=var)
    b.add_transition(page, "q", "search for '$value'", event="input", effects=[effect("set", var, "$value")])
    b.add_element(results, "none", "text", f"No results for '{{{var}}}'. Try another word.",
                  visible_when=[cond(var, q, "ne") for q in queries])
    b.add_element(page, "go", "button", "Search")
    b.add_transition(page, "go", "run the search", when=[cond(var, op="nonempty")], target=results)
    for n, (query, hits) in enumerate(queries.items()):
        for m, (label, target, item) in enumerate(hits):
            b.link(results, f"hit{n}_{m}", label, target, f"open the result '{label}'", kind="list_item",
                   visible_when=[cond(var, query)], args={"item": f"'{item}'"})
    b.link(results, "again", "New search", page, "start a new search", section="header")
    b.local_group({page, results}, [var])
    return page


def modal_action(b: SiteBuilder, page: str, eid: str, label: str, question: str, description: str, *,
                 effects: list[Cond], when: Sequence[Guard] | None = None, visible_when: list[str] | None = None,
                 per_item: dict[str, list[Cond]] | None = None, toast: str | None = None) -> str:
    """A button that opens a confirm modal (over a page with an ``item`` parameter, keeping
    it); confirming applies ``effects``, or, with ``per_item``, the effects of the page's item."""
    modal = b.add_page(f"{page}_{eid}", question, modal_of=page)
    b.add_element(page, eid, "button", label, visible_when=visible_when)
    b.add_transition(page, eid, f"press '{label}'", target=modal, when=when or [], args={"item": "item"})
    b.add_element(modal, "ok", "button", "Yes")
    for item, item_effects in (per_item or {"": effects}).items():
        b.add_transition(modal, "ok", description, target=page, effects=item_effects, args={"item": "item"},
                         when=[f"item == '{item}'"] if item else [], toast=toast)
    b.link(modal, "cancel", "No", page, "cancel", kind="button", args={"item": "item"})
    return modal
