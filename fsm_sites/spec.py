"""The FSM site spec: pydantic models, loadable from YAML or JSON.

A site is an extended finite-state machine (as in AutoWebWorld). A *state* is a
page plus a small record of typed, finite variables. Pages hold UI elements; a
*transition* is (page, element, event, optional value) guarded by preconditions
on the variables, with effects that give the next state. *Goals* are named
predicates over states.

Every variable has a finite domain, so the reachable state graph is finite and
the engine can compute exact shortest paths. Text inputs take a finite set of
accepted values (``values`` on the transition); anything else typed maps to no
transition.

This module only declares the shape. ``fsm_sites.validate`` checks a spec as a
whole (references, determinism, reachability), ``fsm_sites.engine`` runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Scalar = bool | int | str
VarValue = bool | int | str | tuple[str, ...]

ElementKind = Literal[
    "button", "link", "text_input", "select", "checkbox", "radio", "tab",
    "list_item", "card", "pagination", "text",
]
EventKind = Literal["click", "input", "select", "check", "uncheck"]
ConditionOp = Literal["eq", "ne", "lt", "le", "gt", "ge", "contains", "not_contains", "empty", "nonempty"]
EffectOp = Literal["set", "clear", "increment", "decrement", "append", "remove"]

# Which events each element kind can send.
EVENTS_BY_KIND: dict[str, tuple[str, ...]] = {
    "button": ("click",), "link": ("click",), "tab": ("click",), "list_item": ("click",),
    "card": ("click",), "pagination": ("click",), "radio": ("click",),
    "text_input": ("input",), "select": ("select",), "checkbox": ("check", "uncheck"),
    "text": (),
}

VALUE_PLACEHOLDER = "$value"  # in an effect: the value the event carried


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Variable(_Model):
    """A typed state variable with a finite domain."""

    name: str = Field(description="identifier, unique in the site")
    type: Literal["bool", "int", "enum", "list"] = Field(description="the variable's type")
    values: tuple[str, ...] = Field(
        default=(), description="domain of an enum, or of the items of a list"
    )
    min: int = Field(default=0, description="smallest value of an int")
    max: int = Field(default=9, description="largest value of an int")
    max_len: int = Field(default=4, description="most items a list may hold")
    default: VarValue | None = Field(
        default=None, description="initial value; False, min, the first enum value, or () if omitted"
    )
    label: str | None = Field(default=None, description="human name used in instructions")


class Condition(_Model):
    """A predicate on one variable, e.g. {var: cart, op: contains, value: laptop}."""

    var: str = Field(description="the variable tested")
    op: ConditionOp = Field(default="eq", description="the comparison")
    value: Scalar | None = Field(default=None, description="the operand (unused by empty/nonempty)")


class Effect(_Model):
    """A change to one variable when a transition fires."""

    op: EffectOp = Field(description="set, clear (back to default), increment, decrement, append, remove")
    var: str = Field(description="the variable changed")
    value: Scalar | None = Field(
        default=None, description=f"operand of set/append/remove; {VALUE_PLACEHOLDER!r} = the event's value"
    )
    by: int = Field(default=1, description="step of increment/decrement (clamped to min/max)")


class Option(_Model):
    """A choice of a select or a radio group."""

    value: str
    label: str | None = None


class Element(_Model):
    """A UI element on a page."""

    id: str = Field(description="identifier, unique within its page")
    kind: ElementKind = Field(description="what the element is")
    label: str = Field(description="visible text")
    description: str | None = Field(default=None, description="secondary text (cards, list items)")
    placeholder: str | None = Field(default=None, description="placeholder of a text input")
    options: tuple[Option, ...] = Field(default=(), description="choices of a select")
    bind: str | None = Field(
        default=None, description="variable whose value the element shows (input text, checkbox, select)"
    )
    visible_when: tuple[Condition, ...] = Field(
        default=(), description="the element is shown only when all of these hold"
    )
    section: str | None = Field(
        default=None, description="layout region: nav, header, main, sidebar, footer, modal"
    )
    distractor: bool = Field(default=False, description="decoration with no transition")


class Page(_Model):
    """A page (or a modal over a page) of the site."""

    id: str = Field(description="identifier, unique in the site")
    title: str = Field(description="page heading")
    kind: Literal["page", "modal"] = Field(default="page", description="a full page or a modal")
    parent: str | None = Field(default=None, description="for a modal: the page rendered beneath it")
    elements: tuple[Element, ...] = Field(default=(), description="the page's elements")
    body: str | None = Field(default=None, description="static paragraph text of the page")


class Transition(_Model):
    """(page, element, event, value) guarded by `when`, with `effects`, leading to `target`."""

    id: str = Field(description="identifier, unique in the site")
    page: str = Field(description="page the element is on")
    element: str = Field(description="element id on that page")
    event: EventKind = Field(default="click", description="the UI event")
    values: tuple[str, ...] = Field(
        default=(), description="accepted values of an input/select event; one edge per value"
    )
    when: tuple[Condition, ...] = Field(default=(), description="preconditions, all must hold")
    effects: tuple[Effect, ...] = Field(default=(), description="changes to variables, in order")
    target: str | None = Field(default=None, description="next page; None stays on the page")
    description: str = Field(
        description=f"imperative phrase for instructions, may use {VALUE_PLACEHOLDER!r}, e.g. 'open the cart'"
    )


class Goal(_Model):
    """A named predicate over states."""

    id: str = Field(description="identifier, unique in the site")
    description: str = Field(description="what the user wants, e.g. 'buy a laptop'")
    page: str | None = Field(default=None, description="the state must be on this page")
    conditions: tuple[Condition, ...] = Field(default=(), description="all must hold")


class SiteSpec(_Model):
    """A whole site."""

    name: str = Field(description="short identifier, e.g. 'shop'")
    title: str = Field(description="brand name shown in the navigation bar")
    domain: str = Field(default="generic", description="the kind of site: shop, mail, bank, ...")
    start_page: str = Field(description="page of the initial state")
    variables: tuple[Variable, ...] = Field(default=(), description="state variables")
    pages: tuple[Page, ...] = Field(description="pages and modals")
    transitions: tuple[Transition, ...] = Field(description="the machine's edges")
    goals: tuple[Goal, ...] = Field(default=(), description="named goals")
    max_states: int = Field(default=20000, description="bound on the reachable state graph")


def load_spec(path: str | Path) -> SiteSpec:
    """Load a spec from a .yaml/.yml/.json file (shape only; see fsm_sites.validate)."""
    import json

    import yaml

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    return SiteSpec.model_validate(data)


def dump_spec(spec: SiteSpec, path: str | Path) -> None:
    """Write a spec as YAML (or JSON for a .json path), omitting defaults."""
    import json

    import yaml

    path = Path(path)
    data = spec.model_dump(mode="json", exclude_defaults=True)
    if path.suffix == ".json":
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
