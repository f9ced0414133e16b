"""A site recipe (which templates, with what content) and ``compose`` that builds it.

The curated library writes recipes by hand; the random generator draws them
from vocabularies. Goals come with the templates: items collected, forms sent
with given values, wizards completed, settings switched on, items archived.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fsm_sites.generator.builder import SiteBuilder, cond, effect
from fsm_sites.generator.templates import (
    FieldDef,
    Item,
    catalog,
    collection,
    form_flow,
    modal_action,
    option_label,
    search,
    settings,
    wizard,
)
from fsm_sites.spec import SiteSpec


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


@dataclass(frozen=True)
class FormPart:
    key: str
    title: str
    fields: tuple[FieldDef, ...]
    submit: str
    goal: str  # what the user wants, e.g. "check out"
    confirm: bool = True
    needs_collection: bool = False  # entered from the collection page, only when it holds items
    wanted_items: tuple[str, ...] = ()  # with needs_collection: the item ids the goal wants (default: the first)


@dataclass(frozen=True)
class WizardPart:
    key: str
    title: str
    steps: tuple[tuple[FieldDef, ...], ...]
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
    max_states: int = 6000


def compose(recipe: SiteRecipe) -> SiteSpec:
    """Build the spec of a recipe: a home page, the parts, a nav bar, and goals."""
    b = SiteBuilder(recipe.name, recipe.title, recipe.domain, max_states=recipe.max_states)
    home = b.add_page("home", recipe.title, body=recipe.tagline)
    b.add_element(home, "promo", "text", f"New at {recipe.title}: see what's changed", distractor=True,
                  section="header")
    b.add_element(home, "legal", "text", "Privacy - Terms - Help", distractor=True, section="footer")
    nav = _catalog_part(b, recipe)
    for part in recipe.forms:
        nav += _form_part(b, recipe, part)
    if recipe.wizard:
        nav += _wizard_part(b, recipe.catalog, recipe.wizard)
    if recipe.settings:
        nav += _settings_part(b, recipe.settings)
    if recipe.search:
        items = {i.id: i for i in recipe.catalog.items}
        queries = {q: [(items[i].label, f"{recipe.catalog.key}_{i}") for i in ids] for q, ids in recipe.search.items()}
        page = search(b, "search", "Search", queries)
        nav.append((page, "Search"))
        first_q, ids = next(iter(recipe.search.items()))
        b.add_goal("search_open", f"find {items[ids[-1]].label} (searching for '{first_q}' lists it)",
                   page=f"{recipe.catalog.key}_{ids[-1]}")
    if recipe.modal:
        _modal_part(b, recipe)
    for target, label in nav:
        b.link(home, f"go_{target}", label, target, f"open {label}", kind="card")
    b.nav_bar([("home", "Home")] + nav[:4])
    return b.build()


def _catalog_part(b: SiteBuilder, recipe: SiteRecipe) -> list[tuple[str, str]]:
    c = recipe.catalog
    var = b.add_var(c.collection_key, "list", values=[i.id for i in c.items], max_len=c.max_len,
                    label=c.collection_title.lower())
    catalog(b, c.key, c.title, list(c.items), per_page=c.per_page, action=c.action, list_var=var)
    collection(b, c.collection_key, c.collection_title, var, list(c.items))
    verb = c.action[1]
    first, last = c.items[0], c.items[-1]
    b.add_goal(f"{verb}_{first.id}", f"make sure {first.label} is in your {c.collection_title.lower()}",
               conditions=[cond(var, first.id, "contains")])
    b.add_goal(f"{verb}_two", f"make sure both {first.label} and {last.label} are in your {c.collection_title.lower()}",
               conditions=[cond(var, first.id, "contains"), cond(var, last.id, "contains")])
    b.add_goal(f"open_{c.items[1].id}", f"open the page of {c.items[1].label}", page=f"{c.key}_{c.items[1].id}")
    return [(c.key, c.title), (c.collection_key, c.collection_title)]


def _form_part(b: SiteBuilder, recipe: SiteRecipe, part: FormPart) -> list[tuple[str, str]]:
    c = recipe.catalog
    extra = [cond(c.collection_key, op="nonempty")] if part.needs_collection else []
    pages = form_flow(b, part.key, part.title, list(part.fields), submit=part.submit, exit_to="home",
                      confirm=part.confirm, result_title=f"{part.title}: thank you", extra_when=extra)
    conditions = [_choice(f, part.key) for f in part.fields]
    details = _details(part.fields)
    if part.needs_collection:
        b.link(c.collection_key, "proceed", part.submit, pages["form"], f"proceed to {part.title.lower()}",
               kind="button", visible_when=[cond(c.collection_key, op="nonempty")])
        wanted = [_item(c, i) for i in part.wanted_items] or [c.items[0]]
        conditions += [cond(c.collection_key, item.id, "contains") for item in wanted]
        names = " and ".join(item.label for item in wanted)
        b.add_goal(part.key, f"{part.goal} for {names} ({details})", page=pages["result"], conditions=conditions)
        return []
    b.add_goal(part.key, f"{part.goal} ({details})", page=pages["result"], conditions=conditions)
    return [(pages["form"], part.title)]


def _details(fields: tuple[FieldDef, ...] | list[FieldDef]) -> str:
    """The wanted field values in words, so an instruction names everything the goal checks."""
    words = [f"tick '{f.label}'" if f.kind == "checkbox"
             else f"{f.label.lower()} '{f.options[-1] if f.kind == 'text' else option_label(f.options[-1])}'"
             for f in fields]
    return ", ".join(words)


def _choice(f: FieldDef, key: str) -> dict:
    """The goal's wanted value of a field: the last accepted value, a checked box."""
    var = f"{key}_{f.id}"
    if f.kind == "checkbox":
        return cond(var, True)
    return cond(var, f.options[-1])


def _item(c: CatalogPart, item_id: str) -> Item:
    for item in c.items:
        if item.id == item_id:
            return item
    raise ValueError(f"expected an item id of catalog {c.key!r} ({[i.id for i in c.items]}), got {item_id!r}")


def _wizard_part(b: SiteBuilder, c: CatalogPart, w: WizardPart) -> list[tuple[str, str]]:
    pages = wizard(b, w.key, w.title, [list(s) for s in w.steps], exit_to="home")
    wanted = [(f, f"{w.key}{i + 1}") for i, step in enumerate(w.steps) for f in step if f.kind != "select"]
    conditions = [_choice(f, key) for f, key in wanted]
    goal = w.goal
    if w.from_items:
        if "{item}" not in w.goal:
            raise ValueError(f"expected the goal of wizard {w.key!r} to name its item as '{{item}}', got {w.goal!r}")
        last = _wizard_entries(b, c, w, pages)
        conditions.append(cond(f"{w.key}_item", last.id))
        goal = w.goal.replace("{item}", last.label)
    b.add_goal(w.key, f"{goal} ({_details([f for f, _ in wanted])})", page=pages["result"], conditions=conditions)
    return [] if w.from_items else [(pages["steps"][0], w.title)]


def _wizard_entries(b: SiteBuilder, c: CatalogPart, w: WizardPart, pages: dict[str, Any]) -> Item:
    """A start button on each ``from_items`` detail page that records the item in a wizard-local
    variable, shown on every step and the review; returns the last item (the goal's)."""
    items = [_item(c, i) for i in w.from_items]
    var = b.add_var(f"{w.key}_item", "enum", values=["", *w.from_items], label=c.title.lower())
    shown_on = [*pages["steps"], pages["review"]]
    for item in items:
        b.add_element(f"{c.key}_{item.id}", "start", "button", w.start_label)
        b.add_transition(f"{c.key}_{item.id}", "start", f"{w.start_label.lower()} ({item.label})",
                         target=pages["steps"][0], effects=[effect("set", var, item.id)])
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


def _modal_part(b: SiteBuilder, recipe: SiteRecipe) -> None:
    m = recipe.modal
    assert m is not None
    c = recipe.catalog
    var = b.add_var(m.list_key, "list", values=list(m.items), max_len=1, label=m.list_label.lower())
    verb = m.label.lower()
    slug = verb.replace(" ", "_")
    labels = {i.id: i.label for i in c.items}
    for item in m.items:
        page = f"{c.key}_{item}"
        modal_action(b, page, slug, m.label, m.question, f"{verb} {labels[item]}",
                     effects=[{"op": "append", "var": var, "value": item}],
                     when=[{"var": var, "op": "not_contains", "value": item}])
    b.add_goal(f"{slug}_{m.items[-1]}", f"{verb} {labels[m.items[-1]]}",
               conditions=[cond(var, m.items[-1], "contains")])
