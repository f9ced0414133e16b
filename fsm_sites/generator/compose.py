"""A site recipe (which templates, with what content) and ``compose`` that builds it.

The curated library writes recipes by hand; the random generator draws them
from vocabularies. Goals come with the templates: items collected, forms sent
with given values, wizards completed, settings switched on, items archived.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fsm_sites.generator.builder import Cond, Guard, SiteBuilder, cond, split_target
from fsm_sites.generator.structured import (
    BookingsPart,
    FoldersPart,
    TablePart,
    bookings,
    folders,
    quantity_cart,
    table,
)
from fsm_sites.generator.templates import (
    FormField,
    Item,
    catalog,
    collection,
    form_flow,
    modal_action,
    option_label,
    ranking,
    search,
    settings,
    wizard,
)
from fsm_sites.generator.widgets import FaqPart, MenuPart, account_menu, faq
from fsm_sites.spec.site import SiteSpec
from fsm_sites.spec.value_widgets import date_label, parse_date


@dataclass(frozen=True)
class CatalogPart:
    key: str
    title: str
    items: tuple[Item, ...]
    action: tuple[str, str]  # (button label, verb), e.g. ("Add to cart", "add")
    collection_key: str
    collection_title: str
    max_len: int = 2
    per_page: int = 3
    quantities: int = 0  # > 0: the collection holds up to this many of each item (a cart with quantities)
    split: bool = False  # the detail page keeps the list beside the open item (an inbox's reading pane)
    # tabs on the detail page: (id, label, one text per item, in ``items``' order); the goal
    # wants the last tab of the first item open
    tabs: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # the collection's items at the start; with ``confirm_remove`` (the dialog's question), a
    # row's remove button opens a confirm dialog, and a goal wants the first held item gone
    held: tuple[str, ...] = ()
    confirm_remove: str | None = None


@dataclass(frozen=True)
class FormPart:
    key: str
    title: str
    fields: tuple[FormField, ...]
    submit: str
    goal: str  # what the user wants, e.g. "check out"
    confirm: bool = True
    needs_collection: bool = False  # entered from the collection page, only when it holds items
    wanted_items: tuple[str, ...] = ()  # with needs_collection: the item ids the goal wants (default: the first)
    validate: bool = False  # a submit with a required field empty shows each one's message beside it


@dataclass(frozen=True)
class WizardPart:
    key: str
    title: str
    steps: tuple[tuple[FormField, ...], ...]
    goal: str  # with from_items, names the wanted item as "{item}"
    # catalog item ids whose detail pages start the wizard with a ``start_label`` button, instead of
    # the nav bar; the goal wants it started from the last of them
    from_items: tuple[str, ...] = ()
    start_label: str = "Start"


@dataclass(frozen=True)
class SettingsPart:
    key: str
    title: str
    tabs: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]


@dataclass(frozen=True)
class ModalPart:
    label: str  # button label, e.g. "Archive"
    question: str
    list_key: str
    list_label: str
    items: tuple[str, ...]  # item ids of the catalog that get the button


@dataclass(frozen=True)
class RankPart:
    """A list of catalog items the user puts in order by dragging (a sortable list)."""

    key: str
    title: str
    order: tuple[str, ...]  # catalog item ids, in their first order
    wanted: tuple[tuple[str, ...], ...]  # one goal per order wanted, each a permutation of `order`


@dataclass(frozen=True)
class SiteRecipe:
    name: str
    title: str
    domain: str
    tagline: str
    catalog: CatalogPart
    forms: tuple[FormPart, ...] = ()
    wizard: WizardPart | None = None
    settings: SettingsPart | None = None
    search: dict[str, tuple[str, ...]] = field(default_factory=dict)  # query -> item ids
    modal: ModalPart | None = None
    folders: FoldersPart | None = None
    bookings: BookingsPart | None = None
    menu: MenuPart | None = None  # a dropdown menu in the home page's header
    faq: FaqPart | None = None  # a help page of accordions
    max_states: int | None = None
    ranking: RankPart | None = None
    # the home page's dashboard: stat tiles (label, variable) showing what the variables hold;
    # one bound to the catalog's collection gets a goal that ends on the dashboard
    stats: tuple[tuple[str, str], ...] = ()
    table: TablePart | None = None  # a sortable, paged data table of records


def compose(recipe: SiteRecipe) -> SiteSpec:
    """Build the spec of a recipe: a home page, the parts, a nav bar, and goals."""
    b = SiteBuilder(recipe.name, recipe.title, recipe.domain, max_states=recipe.max_states)
    home = b.add_page("home", recipe.title, body=recipe.tagline)
    b.add_element(home, "promo", "text", f"New at {recipe.title}: see what's changed", distractor=True,
                  section="header")
    b.add_element(home, "legal", "text", "Privacy - Terms - Help", distractor=True, section="footer")
    for n, (label, var) in enumerate(recipe.stats):
        b.add_element(home, f"stat{n + 1}", "text", label, bind=var)
    nav, detail = _catalog_part(b, recipe)
    for part in recipe.forms:
        nav += _form_part(b, recipe, part)
    if recipe.wizard:
        nav += _wizard_part(b, recipe.catalog, recipe.wizard, detail)
    if recipe.settings:
        nav += _settings_part(b, recipe.settings)
    if recipe.folders:
        nav += _folders_part(b, recipe, detail)
    if recipe.bookings:
        nav += _bookings_part(b, recipe.bookings)
    if recipe.ranking:
        nav += _rank_part(b, recipe.catalog, recipe.ranking)
    if recipe.table:
        nav += _table_part(b, recipe.table)
    if recipe.search:
        items = {i.id: i for i in recipe.catalog.items}
        queries = {q: [(items[i].label, detail, i) for i in ids] for q, ids in recipe.search.items()}
        page = search(b, "search", "Search", queries)
        nav.append((page, "Search"))
        first_q, ids = next(iter(recipe.search.items()))
        b.add_goal("search_open", f"find {items[ids[-1]].label} (searching for '{first_q}' lists it)",
                   page=f"{detail}({ids[-1]})")
    if recipe.modal:
        _modal_part(b, recipe, detail)
    if recipe.faq:
        page, contact = faq(b, recipe.faq)
        nav.append((page, recipe.faq.title))
        question = recipe.faq.questions[-1][1]
        b.add_goal(f"{recipe.faq.key}_contact", f"open '{recipe.faq.contact}' from the answer to '{question}' "
                   f"on the {recipe.faq.title} page", page=contact)
    if recipe.menu:
        item_pages = account_menu(b, home, recipe.menu)
        b.add_goal(f"{recipe.menu.key}_{recipe.menu.items[-1][0]}",
                   f"choose '{recipe.menu.items[-1][1]}' in the {recipe.menu.label} menu", page=item_pages[-1])
    for target, label in nav:
        target_id, args = split_target(target)
        b.link(home, "go_" + target.replace("(", "_").rstrip(")"), label, target_id, f"open {label}", kind="card",
               args=args)
    _dashboard_goal(b, recipe)
    b.nav_bar([("home", "Home")] + nav[:4])
    return b.build()


def _dashboard_goal(b: SiteBuilder, recipe: SiteRecipe) -> None:
    """A goal that ends on the dashboard with both ends of the catalog in its collection's tile."""
    c = recipe.catalog
    label = next((label for label, var in recipe.stats if var == c.collection_key), None)
    if label is None:
        return
    first, last = c.items[0], c.items[-1]
    b.add_goal(f"dashboard_{c.collection_key}", f"make the '{label}' tile of the home dashboard show both "
               f"{first.label} and {last.label}, and end on the dashboard", page="home",
               conditions=[_has(c, first.id), _has(c, last.id)])


def _catalog_part(b: SiteBuilder, recipe: SiteRecipe) -> tuple[list[tuple[str, str]], str]:
    c = recipe.catalog
    ck, verb = c.collection_key, c.action[1]
    if c.quantities:
        effects = [{"set": f"{ck}[item]", "to": f"{ck}[item] + 1"}]
        when = [f"{ck}[item] < {c.quantities}"]
    else:
        effects = [{"add": ck, "item": "item"}]
        when = [f"not (item in {ck})", f"count({ck}) < {c.max_len}"]
    toast = f"{c.action[0]}: {{item}}"
    detail = catalog(b, c.key, c.title, list(c.items), per_page=c.per_page, action=c.action, effects=effects,
                     when=when, toast=toast, split=c.split, tabs=c.tabs)
    item_type = f"{c.key}_item"
    if c.quantities:
        quantity_cart(b, ck, c.collection_title, item_type, c.quantities)
    else:
        b.add_var(ck, "set", item=item_type, max_len=c.max_len, label=c.collection_title.lower(),
                  **({"default": list(c.held)} if c.held else {}))
        collection(b, ck, c.collection_title, ck,
                   confirm=(item_type, c.confirm_remove) if c.confirm_remove else None)
    first, last, where = c.items[0], c.items[-1], c.collection_title.lower()
    b.add_goal(f"{verb}_{first.id}", f"make sure {first.label} is in your {where}", conditions=[_has(c, first.id)])
    if c.quantities:
        b.add_goal(f"{verb}_two", f"make sure your {where} holds exactly 2 {first.label} and 1 {last.label}",
                   conditions=[f"{ck}['{first.id}'] == 2", f"{ck}['{last.id}'] == 1", f"sum({ck}) == 3"])
    else:
        b.add_goal(f"{verb}_two", f"make sure both {first.label} and {last.label} are in your {where}",
                   conditions=[_has(c, first.id), _has(c, last.id)])
    b.add_goal(f"open_{c.items[1].id}", f"open the page of {c.items[1].label}", page=f"{detail}({c.items[1].id})")
    if c.held and c.confirm_remove and not c.quantities:  # a swap: the collection is full, one must go
        gone, wanted = _item(c, c.held[0]), c.items[-2]
        b.add_goal(f"swap_{gone.id}", f"take {gone.label} out of your {where} (confirm it in the dialog) and put "
                   f"{wanted.label} in", conditions=[f"not ({_has(c, gone.id)})", _has(c, wanted.id)])
    if c.tabs:
        tab, label, _ = c.tabs[-1]
        b.add_goal(f"{c.key}_tab_{tab}", f"open the {label} tab of {first.label}", page=f"{detail}({first.id})",
                   conditions=[cond(f"{c.key}_tab", tab)])
    return [(c.key, c.title), (ck, c.collection_title)], detail


def _rank_part(b: SiteBuilder, c: CatalogPart, part: RankPart) -> list[tuple[str, str]]:
    page = ranking(b, part.key, part.title, f"{c.key}_item", part.order)
    for n, order in enumerate(part.wanted):
        if sorted(order) != sorted(part.order):
            raise ValueError(f"expected ranking {part.key!r}'s wanted orders to reorder {part.order}, got {order}")
        names = ", ".join(_item(c, i).label for i in order)
        listed = ", ".join(f"'{i}'" for i in order)
        b.add_goal(f"{part.key}_{n + 1}", f"order {part.title.lower()} as {names}", conditions=[f"{part.key} == [{listed}]"])
    return [(page, part.title)]


def _has(c: CatalogPart, item: str) -> str:
    """The collection holds the item (one or more of it, for a cart with quantities)."""
    return f"{c.collection_key}['{item}'] > 0" if c.quantities else f"'{item}' in {c.collection_key}"


def _form_part(b: SiteBuilder, recipe: SiteRecipe, part: FormPart) -> list[tuple[str, str]]:
    c = recipe.catalog
    extra = [cond(c.collection_key, op="nonempty")] if part.needs_collection else []
    pages = form_flow(b, part.key, part.title, list(part.fields), submit=part.submit, exit_to="home",
                      confirm=part.confirm, result_title=f"{part.title}: thank you", extra_when=extra,
                      validate=part.validate)
    wanted_fields = [f for f in part.fields if f.kind != "tooltip"]
    conditions: list[Guard] = [_choice(f, part.key) for f in wanted_fields]
    details = _details(wanted_fields)
    for f in part.fields:
        if f.kind == "tooltip":
            b.add_goal(f"{part.key}_{f.id}_tip", f"find out about '{f.label}' on the {part.title} page (point at it)",
                       page=pages["form"], conditions=[cond(f"{part.key}_{f.id}", True)])
    if part.needs_collection:
        b.link(c.collection_key, "proceed", part.submit, pages["form"], f"proceed to {part.title.lower()}",
               kind="button", visible_when=[cond(c.collection_key, op="nonempty")])
        wanted = [_item(c, i) for i in part.wanted_items] or [c.items[0]]
        conditions += [_has(c, item.id) for item in wanted]
        names = " and ".join(item.label for item in wanted)
        b.add_goal(part.key, f"{part.goal} for {names} ({details})", page=pages["result"], conditions=conditions)
        return []
    b.add_goal(part.key, f"{part.goal} ({details})", page=pages["result"], conditions=conditions)
    return [(pages["form"], part.title)]


def _details(fields: tuple[FormField, ...] | list[FormField]) -> str:
    """The wanted field values in words, so an instruction names everything the goal checks."""
    words = [f"tick '{f.label}'" if f.kind == "checkbox"
             else f"{f.label.lower()} '{_wanted_text(f)}'"
             for f in fields]
    return ", ".join(words)


def _wanted_text(f: FormField) -> str:
    """A field's wanted value as the page shows it."""
    if f.kind == "date":
        return date_label(parse_date(f.options[-1]))
    return f.options[-1] if f.kind in ("text", "combobox", "slider") else option_label(f.options[-1])


def _choice(f: FormField, key: str) -> Cond:
    """The goal's wanted value of a field: the last accepted value, a checked box."""
    var = f"{key}_{f.id}"
    if f.kind == "checkbox":
        return cond(var, True)
    if f.kind == "slider":
        return cond(var, int(f.options[-1]))
    return cond(var, f.options[-1])


def _item(c: CatalogPart, item_id: str) -> Item:
    for item in c.items:
        if item.id == item_id:
            return item
    raise ValueError(f"expected an item id of catalog {c.key!r} ({[i.id for i in c.items]}), got {item_id!r}")


def _wizard_part(b: SiteBuilder, c: CatalogPart, w: WizardPart, detail: str) -> list[tuple[str, str]]:
    pages = wizard(b, w.key, w.title, [list(s) for s in w.steps], exit_to="home")
    wanted = [(f, f"{w.key}{i + 1}") for i, step in enumerate(w.steps) for f in step
              if f.kind not in ("select", "tooltip")]
    conditions: list[Guard] = [_choice(f, key) for f, key in wanted]
    goal = w.goal
    if w.from_items:
        if "{item}" not in w.goal:
            raise ValueError(f"expected the goal of wizard {w.key!r} to name its item as '{{item}}', got {w.goal!r}")
        last = _wizard_entries(b, c, w, pages, detail)
        conditions.append(cond(f"{w.key}_item", last.id))
        goal = w.goal.replace("{item}", last.label)
    b.add_goal(w.key, f"{goal} ({_details([f for f, _ in wanted])})", page=pages["result"], conditions=conditions)
    return [] if w.from_items else [(pages["steps"][0], w.title)]


def _wizard_entries(b: SiteBuilder, c: CatalogPart, w: WizardPart, pages: dict[str, Any], detail: str) -> Item:
    """A start button on the detail page of each ``from_items`` item that records the item in a
    wizard-local variable, shown on every step and the review; returns the last item (the goal's)."""
    items = [_item(c, i) for i in w.from_items]
    var = b.add_var(f"{w.key}_item", "enum", values=["", *w.from_items], label=c.title.lower())
    shown_on = [*pages["steps"], pages["review"]]
    listed = ", ".join(f"'{i.id}'" for i in items)
    b.add_element(detail, "start", "button", w.start_label, visible_when=[f"item in [{listed}]"])
    for item in items:
        b.add_transition(detail, "start", f"{w.start_label.lower()} ({item.label})", when=[f"item == '{item.id}'"],
                         target=pages["steps"][0], effects=[{"set": var, "to": f"'{item.id}'"}])
        for page in shown_on:
            b.add_element(page, f"item_{item.id}", "text", item.label, description=item.blurb or None,
                          section="header", visible_when=[cond(var, item.id)])
    b.local_group({*shown_on, pages["confirm"], pages["result"]}, [var])
    return items[-1]


def _settings_part(b: SiteBuilder, s: SettingsPart) -> list[tuple[str, str]]:
    pages = settings(b, s.key, s.title, [(t, label, list(toggles)) for t, label, toggles in s.tabs])
    first = s.tabs[0][2][0]
    last = s.tabs[-1][2][-1]
    b.add_goal(f"{s.key}_{first[0]}", f"turn on '{first[1]}'", conditions=[cond(f"{s.key}_{first[0]}", True)])
    b.add_goal(f"{s.key}_both", f"turn on '{first[1]}' and '{last[1]}'",
               conditions=[cond(f"{s.key}_{first[0]}", True), cond(f"{s.key}_{last[0]}", True)])
    return [(pages[0], s.title)]


def _modal_part(b: SiteBuilder, recipe: SiteRecipe, detail: str) -> None:
    m = recipe.modal
    assert m is not None
    c = recipe.catalog
    item_type = f"{c.key}_item"
    var = b.add_var(m.list_key, "set", item=item_type, max_len=1, label=m.list_label.lower())
    verb = m.label.lower()
    slug = verb.replace(" ", "_")
    labels = {i.id: i.label for i in c.items}
    listed = ", ".join(f"'{i}'" for i in m.items)
    modal_action(b, detail, slug, m.label, m.question, f"{verb} {{item}}",
                 effects=[], when=[f"not (item in {var})", f"count({var}) < 1"], visible_when=[f"item in [{listed}]"],
                 per_item={i: [{"add": var, "item": f"'{i}'"}] for i in m.items}, toast=f"{m.label}: done")
    b.add_goal(f"{slug}_{m.items[-1]}", f"{verb} {labels[m.items[-1]]}", conditions=[f"'{m.items[-1]}' in {var}"])


def _folders_part(b: SiteBuilder, recipe: SiteRecipe, detail: str) -> list[tuple[str, str]]:
    part = recipe.folders
    assert part is not None
    page, first = folders(b, part, f"{recipe.catalog.key}_item", detail)
    items = {i.id: i.label for i in recipe.catalog.items}
    labels = dict(part.folders)
    wants = [f"{part.key}['{item}'] == '{to}'" for item, to in part.wanted]
    words = [f"{items[item]} is in {labels[to]}" for item, to in part.wanted]
    b.add_goal(f"{part.key}_one", f"make sure {words[0]}", conditions=wants[:1])
    b.add_goal(f"{part.key}_all", f"make sure {' and '.join(words)}", conditions=wants)
    if recipe.catalog.split:  # the move made in the reading pane, the message left open there
        item, to = part.wanted[0]
        button = next(label for label, folder in part.moves if folder == to)
        b.add_goal(f"{part.key}_pane", f"open {items[item]} and press '{button}' in its reading pane, "
                   f"leaving it open beside the list (make sure {words[0]})", page=f"{detail}({item})",
                   conditions=wants[:1])
    return [(f"{page}({first})", part.title)]


def _bookings_part(b: SiteBuilder, part: BookingsPart) -> list[tuple[str, str]]:
    form, listing = bookings(b, part, "home")
    records = []
    for words, record in part.wanted:
        fields = ", ".join(f"{k}: {v!r}".replace("True", "true").replace("False", "false") for k, v in record)
        records.append(("{" + fields + "}" + f" in {part.key}", words))
    b.add_goal(f"{part.key}_one", records[0][1], conditions=[records[0][0]])
    b.add_goal(f"{part.key}_two", " and ".join(w for _, w in records), conditions=[r for r, _ in records])
    return [(listing, part.title)]


def _table_part(b: SiteBuilder, part: TablePart) -> list[tuple[str, str]]:
    page, detail = table(b, part)
    for gid, words, order, row in part.goals:
        conditions = [f"{part.key}_sort == '{order}'"] if order else []
        b.add_goal(gid, words, page=f"{detail}({row})", conditions=conditions)
    action, key_field = part.action, part.fields[0][0]
    for gid, words, row, place in part.placed:
        b.add_goal(gid, words, page=page, conditions=[
            f"any({part.key}, it.{key_field} == '{row}' and rank({part.key}, it, {part.key}_sort) == {place})"])
    if action is not None:
        for gid, words, rows in action.goals:
            b.add_goal(gid, words, conditions=[f"any({part.key}, it.{key_field} == '{r}' and it.{action.field})"
                                               for r in rows])
    return [(page, part.title)]
