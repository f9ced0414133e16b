"""The FSM site spec: pydantic models, loadable from YAML or JSON.

A site is an extended finite-state machine (as in AutoWebWorld). A *state* is a page
(with its parameters, if it has any) plus a record of typed variables: scalars (bool,
int, enum, free text), records, bounded lists and sets of records, and maps keyed by an
enum. Pages hold UI elements; a *transition* is (page, element, event, value) guarded by
a condition, with effects that give the next state. *Goals* are named conditions.

Conditions, effects and text templates use the expression language of
``fsm_sites.spec.expr`` (parsed, never ``eval``-ed). The older forms (``{var, op, value}``
conditions, ``{op, var, value}`` effects, ``$value``) keep working.

This module only declares the shape. ``fsm_sites.validation.validate`` checks a spec as a whole,
``fsm_sites.engine.machine`` runs it. See docs/fsm_spec.md for every construct with an example.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

Scalar = bool | int | str
VarValue = Any  # bool | int | str | Rec | tuple; see fsm_sites.spec.types

ElementKind = Literal[
    "button", "link", "text_input", "select", "checkbox", "radio", "tab",
    "list_item", "card", "pagination", "text",
    "menu", "accordion", "tooltip", "combobox", "stepper",
    "slider", "date_picker", "sortable",
]
EventKind = Literal[
    "click", "input", "select", "check", "uncheck", "hover", "close",
    "change", "open", "pick", "move", "sort", "page",
]
ConditionOp = Literal["eq", "ne", "lt", "le", "gt", "ge", "contains", "not_contains", "empty", "nonempty"]
EffectOp = Literal["set", "clear", "increment", "decrement", "append", "remove"]
TypeKind = Literal["bool", "int", "enum", "text", "list", "set", "map", "record"]

# Which events each element kind can send.
EVENTS_BY_KIND: dict[str, tuple[str, ...]] = {
    "button": ("click",), "link": ("click",), "tab": ("click",), "list_item": ("click",),
    "card": ("click",), "pagination": ("click",), "radio": ("click",),
    "text_input": ("input",), "select": ("select",), "checkbox": ("check", "uncheck"),
    "text": (),
    # Widgets (docs/fsm_spec.md, "Widgets"): every interaction is an event of the machine.
    "menu": ("click", "close"), "accordion": ("click",), "tooltip": ("hover", "close"),
    "combobox": ("input", "select"), "stepper": (),
    "slider": ("change",), "date_picker": ("open", "pick"), "sortable": ("move",),
}
#: Widget kinds whose ``bind`` must be a bool variable: whether the widget is open.
OPENABLE_KINDS = ("menu", "accordion", "tooltip")
#: Widget kinds that hold other elements (those whose ``inside`` names them).
CONTAINER_KINDS = ("menu", "accordion")
#: A repeated element with `sort` also sends `sort` (a click on its table's column heading).
SORT_EVENT = "sort"
#: A repeated element with `per_page` also sends `page` (a click on its table's pager).
PAGE_EVENT = "page"


def table_events(element: Element) -> tuple[str, ...]:
    """The events a repeated element sends for its whole table (headings, pager), not for a row."""
    return ((SORT_EVENT,) if element.sort else ()) + ((PAGE_EVENT,) if element.per_page is not None else ())

VALUE_PLACEHOLDER = "$value"  # in an old-style effect or a description: the event's value
ExprText = str | int | bool  # an expression (text) or a literal


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _as_tuple(value: Any) -> Any:
    """A single condition (text or mapping) as a one-item tuple."""
    return (value,) if isinstance(value, (str, dict)) else value


class TypeDef(_Model):
    """A value type: built in (``type: int``...) or the name of one in the spec's ``types``."""

    type: str = Field(description="bool, int, enum, text, list, set, map, record, or a named type")
    values: tuple[str, ...] = Field(
        default=(), description="enum values; the items of an old-style list; the text values that matter"
    )
    labels: dict[str, str] = Field(default_factory=dict, description="display label of enum values")
    min: int = Field(default=0, description="smallest value of an int")
    max: int = Field(default=9, description="largest value of an int")
    max_len: int = Field(default=4, description="most items a list or set may hold")
    item: TypeDef | str | None = Field(default=None, description="the item type of a list or set")
    fields: tuple[FieldDef, ...] = Field(default=(), description="the fields of a record")
    keys: TypeDef | str | None = Field(default=None, description="the enum a map is keyed by")
    value: TypeDef | str | None = Field(default=None, description="the value type of a map")
    other: str | None = Field(
        default=None, description="text: what stands for any text that is not one of `values`"
    )
    unique: bool = Field(default=True, description="a list refuses an item it already holds")
    optional: bool = Field(default=False, description="an enum that may hold none (nothing chosen yet), its default")


class FieldDef(TypeDef):
    """A field of a record type."""

    name: str = Field(description="identifier, unique in the record")
    label: str | None = Field(default=None, description="human name used in instructions")


class NamedType(TypeDef):
    """A type that variables, fields and parameters refer to by name."""

    name: str = Field(description="identifier, unique among the types")


class Variable(TypeDef):
    """A typed state variable."""

    name: str = Field(description="identifier, unique in the site; not starting with '_'")
    default: Any = Field(
        default=None, description="initial value; else False, min, the first enum value, '', empty or all defaults"
    )
    label: str | None = Field(default=None, description="human name used in instructions")
    internal: bool = Field(default=False, description="a helper the site keeps for itself (a form's step, a "
                           "flag a guard reads): task synthesis never makes it a goal's subject")


class Condition(_Model):
    """A predicate on one variable (the older form), e.g. {var: cart, op: contains, value: laptop}."""

    var: str = Field(description="the variable tested")
    op: ConditionOp = Field(default="eq", description="the comparison")
    value: Scalar | None = Field(default=None, description="the operand (unused by empty/nonempty)")


When = tuple[Condition | str, ...]


class Effect(_Model):
    """A change to the state when a transition fires: one of the forms below.

    ``{set: PATH, to: EXPR}`` (PATH: ``var``, ``var.field``, ``var[key]``),
    ``{clear: VAR}``, ``{add: VAR, item: EXPR}``, ``{remove: VAR, item: EXPR}`` or
    ``{remove: VAR, where: EXPR}``, ``{update: VAR, where: EXPR, fields: {f: EXPR}}``, and
    the older ``{op, var, value, by}``.
    """

    op: EffectOp | None = Field(default=None, description="older form: set, clear, increment, decrement, append, remove")
    var: str | None = Field(default=None, description="older form: the variable changed")
    value: Scalar | None = Field(default=None, description=f"older form: the operand; {VALUE_PLACEHOLDER!r} = the event's value")
    by: int = Field(default=1, description="older form: step of increment/decrement (clamped to min/max)")
    set: str | None = Field(default=None, description="a variable, field or map entry to assign")
    to: ExprText | None = Field(default=None, description="the value assigned by `set`")
    clear: str | None = Field(default=None, description="a variable set back to its default")
    add: str | None = Field(default=None, description="a list or set that gets `item`")
    remove: str | None = Field(default=None, description="a list or set that loses `item`, or the items `where` holds")
    update: str | None = Field(default=None, description="a list or set whose items `where` holds get `fields`")
    item: ExprText | None = Field(default=None, description="the item added or removed")
    where: str | None = Field(default=None, description="a condition on each item `it`")
    fields: dict[str, ExprText] = Field(default_factory=dict, description="new field values of updated items")
    move: str | None = Field(
        default=None, description="a list whose item a sortable's `move` event moves (the event's value, `from>to`)"
    )


class Option(_Model):
    """A choice of a select or a radio group."""

    value: str
    label: str | None = None


class Element(_Model):
    """A UI element on a page."""

    id: str = Field(description="identifier, unique within its page")
    kind: ElementKind = Field(description="what the element is")
    label: str = Field(description="visible text; may show values as {expr}")
    description: str | None = Field(default=None, description="secondary text (cards, list items); may show {expr}")
    placeholder: str | None = Field(default=None, description="placeholder of a text input")
    options: tuple[Option, ...] = Field(default=(), description="choices of a select (default: the bound enum's values)")
    bind: str | None = Field(
        default=None, description="variable whose value the element shows (input text, checkbox, select)"
    )
    visible_when: When = Field(default=(), description="the element is shown only when all of these hold")
    disabled_when: When = Field(
        default=(), description="disabled when all of these hold: drawn disabled, and its events fire nothing; "
        "a button is also drawn disabled when none of its transitions can fire"
    )
    repeat: str | None = Field(
        default=None, description="a list, set or map: one copy of the element per item (`it`); the event carries its position or key"
    )
    section: str | None = Field(
        default=None, description="layout region: nav, header, main, sidebar, footer, modal"
    )
    distractor: bool = Field(default=False, description="decoration with no transition")
    inside: str | None = Field(
        default=None, description="a menu or accordion of the same page: the element is drawn in it, shown only while it is open"
    )
    current: str | None = Field(default=None, description="a stepper: the value of the step this page is on")
    open_when: When = Field(
        default=(), description="date_picker: its month grid is shown open when all of these hold (a variable of the spec)"
    )
    month: str | None = Field(
        default=None, description="date_picker bound to an int (a day of the month): the month shown, YYYY-MM"
    )

    invalid_when: When = Field(
        default=(), description="a form field is shown invalid (with `error` beside it) when all of these hold"
    )
    error: str | None = Field(default=None, description="the message an invalid field shows; may show {expr}")
    sort: str | None = Field(
        default=None, description="a repeated element over records: an enum variable whose values are field names "
        "(`-field`: descending) ordering the rows; its table's headings send `sort` with the field"
    )
    per_page: int | None = Field(
        default=None, description="a repeated element over a list or set: the rows its table shows per page; its "
        "pager sends `page` with the page number (needs `pager`)"
    )
    pager: str | None = Field(
        default=None, description="with `per_page`: an int variable from 1 to the number of pages, the page shown"
    )

    _tuple = field_validator("visible_when", "disabled_when", "open_when", "invalid_when", mode="before")(_as_tuple)


class Param(_Model):
    """A parameter of a page: part of the page's state and of its URL."""

    name: str = Field(description="identifier, usable in the page's expressions")
    type: TypeDef | str = Field(description="an enum, int or bool type (or a named one)")


class Page(_Model):
    """A page (or a modal over a page) of the site."""

    id: str = Field(description="identifier, unique in the site")
    title: str = Field(description="page heading; may show values as {expr}")
    kind: Literal["page", "modal"] = Field(default="page", description="a full page or a modal")
    parent: str | None = Field(default=None, description="for a modal: the page rendered beneath it")
    params: tuple[Param, ...] = Field(default=(), description="parameters: `pet_detail(pet)` is one page per pet")
    route: str | None = Field(default=None, description="URL path shown for the page, e.g. /pets/{pet}")
    elements: tuple[Element, ...] = Field(default=(), description="the page's elements")
    body: str | None = Field(default=None, description="static paragraph text of the page; may show {expr}")


class Transition(_Model):
    """(page, element, event, value) guarded by `when`, with `effects`, leading to `target`."""

    id: str = Field(description="identifier, unique in the site")
    page: str = Field(description="page the element is on")
    element: str = Field(description="element id on that page")
    event: EventKind = Field(default="click", description="the UI event")
    values: tuple[str, ...] = Field(
        default=(), description="accepted values of an input/select event; one edge per value"
    )
    when: When = Field(default=(), description="preconditions, all must hold")
    effects: tuple[Effect, ...] = Field(default=(), description="changes to variables, in order")
    target: str | None = Field(default=None, description="next page; None stays on the page")
    args: dict[str, ExprText] = Field(default_factory=dict, description="the target page's parameters, as expressions")
    toast: str | None = Field(default=None, description="a message shown after the transition until the next one; may show {expr}")
    description: str = Field(
        description=f"imperative phrase for instructions, may use {VALUE_PLACEHOLDER!r} or {{expr}}, e.g. 'open the cart'"
    )

    _tuple = field_validator("when", mode="before")(_as_tuple)


class Goal(_Model):
    """A named predicate over states."""

    id: str = Field(description="identifier, unique in the site")
    description: str = Field(description="what the user wants, e.g. 'buy a laptop'")
    page: str | None = Field(default=None, description="the state must be on this page (any parameters, or e.g. pet(rex))")
    conditions: When = Field(default=(), description="all must hold")
    start: str | None = Field(default=None, description="the id of a start state (under `starts`) its tasks begin "
                              "in, e.g. 'cancel Milo's grooming' from a week with bookings; default: the initial state")

    _tuple = field_validator("conditions", mode="before")(_as_tuple)


class StartState(_Model):
    """A named state tasks may start in: a page and the variables that differ from their defaults."""

    id: str = Field(description="identifier, unique among the start states")
    description: str | None = Field(default=None, description="what the state is, e.g. 'a returning customer'")
    page: str = Field(description="the page, with parameters if it has any, e.g. pet(rex)")
    vars: dict[str, Any] = Field(default_factory=dict, description="variable values that differ from the defaults")


class SiteSpec(_Model):
    """A whole site."""

    name: str = Field(description="short identifier, e.g. 'shop'")
    title: str = Field(description="brand name shown in the navigation bar")
    domain: str = Field(default="generic", description="the kind of site: shop, mail, bank, ...")
    start_page: str = Field(description="page of the initial state")
    types: tuple[NamedType, ...] = Field(default=(), description="named types")
    variables: tuple[Variable, ...] = Field(default=(), description="state variables")
    pages: tuple[Page, ...] = Field(description="pages and modals")
    transitions: tuple[Transition, ...] = Field(description="the machine's edges")
    goals: tuple[Goal, ...] = Field(default=(), description="named goals")
    starts: tuple[StartState, ...] = Field(default=(), description="named start states for tasks")
    max_states: int | None = Field(
        default=None, description="optional bound: validation fails when more states are reachable"
    )


def load_spec(path: str | Path) -> SiteSpec:
    """Load a spec from a .yaml/.yml/.json file (shape only; see fsm_sites.validation.validate)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    return SiteSpec.model_validate(data)


def dump_spec(spec: SiteSpec, path: str | Path) -> None:
    """Write a spec as YAML (or JSON for a .json path), omitting defaults."""
    path = Path(path)
    data = spec.model_dump(mode="json", exclude_defaults=True)
    if path.suffix == ".json":
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
