"""Templates for structured state: a cart with quantities (a map), folders that items move
between (a map to an enum, one parameterized page per folder), and bookings (a set of
records made by a form, listed with a cancel button each)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fsm_sites.generator.builder import SiteBuilder
from fsm_sites.generator.templates import FormField, option_label


@dataclass(frozen=True)
class FoldersPart:
    key: str  # the map variable, e.g. "box"
    title: str  # e.g. "Mailbox"
    folders: tuple[tuple[str, str], ...]  # (id, label); items start in the first
    moves: tuple[tuple[str, str], ...]  # (button label, folder id): "Archive" -> archive
    wanted: tuple[tuple[str, str], ...]  # (item id, folder id) the deepest goal asks for


@dataclass(frozen=True)
class BookingsPart:
    key: str  # the set variable, e.g. "meetings"
    title: str  # list page title, e.g. "My meetings"
    form_title: str  # e.g. "New meeting"
    fields: tuple[FormField, ...]  # selects (options) and checkboxes: the record's fields
    slot: tuple[str, ...]  # fields no two bookings may share, e.g. ("day", "time")
    item_text: str  # a row, e.g. "{it.day} at {it.time}"
    max_len: int
    wanted: tuple[tuple[str, tuple[tuple[str, str | bool], ...]], ...]  # (words, record) the goals ask for
    submit: str = "Book"


def quantity_cart(b: SiteBuilder, key: str, title: str, item_type: str, max_qty: int) -> str:
    """A cart holding a quantity of each item; rows with +, - and remove; returns its page."""
    b.add_var(key, "map", keys=item_type, value={"type": "int", "min": 0, "max": max_qty}, label=title.lower())
    page = b.add_page(key, f"{title} ({{sum({key})}} items)", body=f"What is in your {title.lower()}.")
    shown = [f"{key}[it] > 0"]
    b.add_element(page, "row", "text", f"{{it}} x {{{key}[it]}}", repeat=key, visible_when=shown)
    b.add_element(page, "more", "button", "+", repeat=key, visible_when=shown)
    b.add_transition(page, "more", "add one more {it}", when=[f"{key}[it] < {max_qty}"],
                     effects=[{"set": f"{key}[it]", "to": f"{key}[it] + 1"}])
    b.add_element(page, "less", "button", "-", repeat=key, visible_when=shown)
    b.add_transition(page, "less", "take one {it} out", effects=[{"set": f"{key}[it]", "to": f"{key}[it] - 1"}])
    b.add_element(page, "rm", "button", "Remove {it}", repeat=key, visible_when=shown)
    b.add_transition(page, "rm", f"remove {{it}} from the {title.lower()}", effects=[{"set": f"{key}[it]", "to": 0}],
                     toast=f"Removed from your {title.lower()}")
    b.add_element(page, "empty", "text", f"Your {title.lower()} is empty", visible_when=[f"sum({key}) == 0"])
    return page


def folders(b: SiteBuilder, part: FoldersPart, item_type: str, detail: str) -> tuple[str, str]:
    """Folder pages ``{key}_folder(<folder>)`` listing their items with move buttons, and move
    buttons on the items' detail page; returns (the folder page, its first folder)."""
    ftype = b.add_type(f"{part.key}_folder", "enum", values=[f for f, _ in part.folders],
                       labels={f: label for f, label in part.folders})
    var = b.add_var(part.key, "map", keys=item_type, value=ftype, label=part.title.lower())
    labels = dict(part.folders)
    page = b.add_page(f"{part.key}_folder", "{f}", params=[{"name": "f", "type": ftype}], route=f"/{part.key}/{{f}}")
    for fid, label in part.folders:
        b.link(page, f"tab_{fid}", label, page, f"open the {label} folder", kind="tab", section="header",
               args={"f": f"'{fid}'"})
    b.add_element(page, "row", "text", "{it}", repeat=var, visible_when=[f"{var}[it] == f"])
    for label, to in part.moves:
        here = [f"{var}[it] == f", f"f != '{to}'"]
        b.add_element(page, f"to_{to}", "button", label, repeat=var, visible_when=here)
        b.add_transition(page, f"to_{to}", f"move {{it}} to {labels[to]}", effects=[{"set": f"{var}[it]", "to": f"'{to}'"}],
                         toast=f"Moved to {labels[to]}")
        b.add_element(detail, f"to_{to}", "button", label, visible_when=[f"{var}[item] != '{to}'"])
        b.add_transition(detail, f"to_{to}", f"move {{item}} to {labels[to]}",
                         effects=[{"set": f"{var}[item]", "to": f"'{to}'"}], toast=f"Moved to {labels[to]}")
    b.add_element(page, "empty", "text", "Nothing here", visible_when=[f"not any({var}, it == f)"])
    return page, part.folders[0][0]


def bookings(b: SiteBuilder, part: BookingsPart, exit_to: str) -> tuple[str, str]:
    """A form whose fields make a record, added to a set of at most ``max_len`` (never two in
    one slot), and a page listing them with a cancel button each; returns (form, list) pages."""
    fields = []
    for f in part.fields:
        if f.kind == "checkbox":
            fields.append({"name": f.id, "type": "bool", "label": f.label.lower()})
            continue
        type_name = b.add_type(f"{part.key}_{f.id}", "enum", values=list(f.options),
                               labels={o: option_label(o) for o in f.options if option_label(o) != o})
        fields.append({"name": f.id, "type": type_name, "label": f.label.lower()})
    record = b.add_type(f"{part.key}_entry", "record", fields=fields)
    var = b.add_var(part.key, "set", item=record, max_len=part.max_len, label=part.title.lower())
    form = b.add_page(f"{part.key}_new", part.form_title)
    listing = b.add_page(part.key, f"{part.title} ({{count({var})}})")
    form_vars = []
    for f, spec in zip(part.fields, fields, strict=True):
        name = b.add_var(f"{part.key}_{f.id}", spec["type"], label=f.label.lower())
        form_vars.append((f, name))
        if f.kind == "checkbox":
            b.add_element(form, f.id, "checkbox", f.label, bind=name)
            b.add_transition(form, f.id, f"tick '{f.label}'", event="check", when=[f"not {name}"],
                             effects=[{"set": name, "to": True}])
            b.add_transition(form, f.id, f"untick '{f.label}'", event="uncheck", when=[name],
                             effects=[{"set": name, "to": False}])
        else:
            b.add_element(form, f.id, "select", f.label, bind=name)
            b.add_transition(form, f.id, f"choose '$value' as the {f.label.lower()}", event="select",
                             effects=[{"set": name, "to": "value"}])
    taken = " and ".join(f"it.{f.id} == {name}" for f, name in form_vars if f.id in part.slot)
    b.add_element(form, "taken", "text", "That slot is taken; pick another.", visible_when=[f"any({var}, {taken})"])
    item = "{" + ", ".join(f"{f.id}: {name}" for f, name in form_vars) + "}"
    b.add_element(form, "submit", "button", part.submit)
    b.add_transition(form, "submit", f"press '{part.submit}'", target=listing, effects=[{"add": var, "item": item}],
                     when=[f"count({var}) < {part.max_len}", f"not any({var}, {taken})"],
                     toast=f"Added: you have {{count({var})}} now")
    b.link(form, "cancel", "Cancel", exit_to, f"leave {part.form_title.lower()}", section="footer")
    b.add_element(listing, "row", "text", part.item_text, repeat=var)
    b.add_element(listing, "cancel", "button", "Cancel", repeat=var)
    b.add_transition(listing, "cancel", f"cancel {part.item_text}", effects=[{"remove": var, "item": "it"}],
                     toast="Cancelled")
    b.add_element(listing, "none", "text", "Nothing booked yet", visible_when=[f"count({var}) == 0"])
    b.link(listing, "new", part.form_title, form, f"open {part.form_title}", kind="button", section="header")
    b.local_group({form}, [name for _, name in form_vars])
    return form, listing


@dataclass(frozen=True)
class RowAction:
    """A per-row action that changes its row: a bool field of the records (drawn as a badge
    on the rows where it holds), set by a button on the rows named in ``rows`` and cleared by
    another on each row that has it set, each updating its own row (``row``). Every row it
    applies to doubles the states the site can reach (the field persists), so it names few."""

    field: str  # the records' bool field, e.g. "flagged"
    heading: str  # its label, the badge on a row where it holds, e.g. "Flagged"
    labels: tuple[str, str]  # the buttons that set and clear it, e.g. ("Flag", "Unflag")
    rows: tuple[str, ...]  # the rows (their first field) that have the button
    goals: tuple[tuple[str, str, tuple[str, ...]], ...]  # (goal id, words, rows that have the field set)


@dataclass(frozen=True)
class TablePart:
    """A data table of records (a fixed list: a bank's transactions, an order history) with
    sortable column headings, ``per_page`` rows a page, and an Open button per row that shows
    the row's detail page; optionally a per-row action (``RowAction``). Its sort and page are
    local to the table and its detail page."""

    key: str  # the list variable and the page, e.g. "activity"
    title: str  # e.g. "Activity"
    fields: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]  # (field, heading, ((value, label), ...)
    # in ascending order); the first field names the row (its detail page's parameter)
    rows: tuple[tuple[str, ...], ...]  # each row's values, one per field
    orders: tuple[str, ...]  # the sort variable's values (`field`, `-field`: descending); the first is the default
    per_page: int
    goals: tuple[tuple[str, str, str | None, str], ...]  # (goal id, words, order wanted or None, row opened)
    action: RowAction | None = None
    # (goal id, words, row, place): goals that the table, on its page, shows the row at that
    # place of its order (0: first), whatever the sort that puts it there (a `rank` condition)
    placed: tuple[tuple[str, str, str, int], ...] = ()


def table(b: SiteBuilder, part: TablePart) -> tuple[str, str]:
    """The table page (rows sorted by the headings, paged) and the row detail page
    ``{key}_row(<row>)``; returns (table page, detail page)."""
    types = []
    for name, heading, values in part.fields:
        labels = {v: label for v, label in values if label != v}
        types.append({"name": name, "type": b.add_type(f"{part.key}_{name}", "enum", values=[v for v, _ in values],
                                                       labels=labels), "label": heading.lower()})
    action = part.action
    flag = [{"name": action.field, "type": "bool", "label": action.heading.lower()}] if action else []
    record = b.add_type(f"{part.key}_entry", "record", fields=types + flag)
    rows = [dict(zip([n for n, _, _ in part.fields], row, strict=True)) | {f["name"]: False for f in flag}
            for row in part.rows]
    var = b.add_var(part.key, "list", item=record, max_len=len(rows), default=rows, label=part.title.lower())
    headings = {n: heading.lower() for n, heading, _ in part.fields}
    order = b.add_var(f"{part.key}_sort", "enum", values=list(part.orders), label="sort order",
                      labels={o: f"{headings[o.lstrip('-')]} ({'descending' if o.startswith('-') else 'ascending'})"
                              for o in part.orders})
    pager = b.add_var(f"{part.key}_page", "int", min=1, max=-(-len(rows) // part.per_page), label="page")
    key_field, key_type = part.fields[0][0], types[0]["type"]
    page = b.add_page(part.key, part.title, body=f"{len(rows)} entries. Sort by a column heading.")
    detail = b.add_page(f"{part.key}_row", f"{part.title}: {{{key_field}}}", params=[{"name": key_field, "type": key_type}],
                        route=f"/{part.key}/{{{key_field}}}")
    shown = ", ".join(f"{{it.{n}}}" for n, _, _ in part.fields[1:])
    b.add_element(page, "row", "text", shown, repeat=var, sort=order, per_page=part.per_page, pager=pager)
    b.add_element(page, "open", "button", "Open", repeat=var)
    b.add_transition(page, "row", f"sort {part.title.lower()} by $value", event="sort",
                     effects=[{"set": order, "to": "value"}, {"set": pager, "to": 1}])
    b.add_transition(page, "row", f"go to page $value of {part.title.lower()}", event="page",
                     effects=[{"set": pager, "to": "value"}])
    b.add_transition(page, "open", f"open {{it.{key_field}}}", target=detail, args={key_field: f"it.{key_field}"})
    if action is not None:
        _row_action(b, page, var, key_field, action)
    shown_as = {n: dict(values) for n, _, values in part.fields}
    for row in part.rows:
        words = ", ".join(f"{heading}: {shown_as[n][v]}"
                          for (n, heading, _), v in zip(part.fields[1:], row[1:], strict=True))
        b.add_element(detail, f"about_{row[0]}", "text", words, visible_when=[f"{key_field} == '{row[0]}'"])
    b.link(detail, "back", f"Back to {part.title.lower()}", page, f"go back to {part.title.lower()}", section="header")
    b.local_group({page, detail}, [order, pager])
    return page, detail


def _row_action(b: SiteBuilder, page: str, var: str, key_field: str, action: RowAction) -> None:
    """The buttons of a ``RowAction``: each changes its own row, the one its event came from
    (``row``; inside ``where``, ``it`` is the item scanned)."""
    mine = f"it.{key_field} == row.{key_field}"
    (on, off), rows = action.labels, ", ".join(f"'{r}'" for r in action.rows)
    for label, value, shown in ((on, True, [f"it.{key_field} in [{rows}]", f"not it.{action.field}"]),
                                (off, False, [f"it.{action.field}"])):
        eid = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
        b.add_element(page, eid, "button", label, repeat=var, visible_when=shown)
        b.add_transition(page, eid, f"{label.lower()} {{row.{key_field}}}",
                         effects=[{"update": var, "where": mine, "fields": {action.field: value}}])
