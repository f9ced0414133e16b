"""Goals over structured state for task synthesis, and the words that name them.

From a reachable state, a goal says what one variable must hold there, as an expression
(``expr:`` goals) that an instruction can name: "make sure your cart holds exactly 2 Coffee
mug and 1 Desk lamp", "make sure Lunch on Friday? is in Archive", "make sure your
appointments include Rex, Vaccination, Monday, 09:00".
"""

from __future__ import annotations

import random
from typing import Any

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State
from fsm_sites.spec.expr import Lit as _Lit
from fsm_sites.spec.expr import unparse
from fsm_sites.spec.types import BoolT, EnumT, IntT, MapT, Rec, RecordT, SeqT, TextT, VType, to_json


def literal(value: Any) -> str:
    """A value as expression text."""
    if isinstance(value, Rec):
        return "{" + ", ".join(f"{k}: {literal(v)}" for k, v in value) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return unparse(_Lit(value))


def subjects(machine: Machine) -> list[str]:
    """The variables a goal may be about: all but the toast and those the spec marks
    ``internal`` (helpers the user never sets on purpose)."""
    return [n for n in machine.layout if not n.startswith("_")
            and not (n in machine.variables and machine.variables[n].internal)]


def structured(machine: Machine) -> list[str]:
    """The variables a structured goal can be about: lists, sets, maps, records (not internal)."""
    return [n for n in subjects(machine) if isinstance(machine.schema.variables[n], (SeqT, MapT, RecordT))]


def goal_about(machine: Machine, state: State, var: str, rng: random.Random,
               start: State | None = None) -> tuple[str, str] | None:
    """(expression, description) of a goal that ``state`` meets on ``var`` and ``start`` does
    not (the initial state when None); None if ``var`` holds there what it holds at the start."""
    vtype = machine.schema.variables[var]
    value = state.get(var)
    base = start.get(var) if start is not None else vtype.default()
    if value == base or not nameable(vtype, value):
        return None
    label = machine.schema.label(var)
    if isinstance(vtype, SeqT):
        return _about_items(var, vtype, value, base, label, rng)
    if isinstance(vtype, MapT):
        return _about_map(var, vtype, value, base, label, rng)
    if isinstance(vtype, RecordT):
        return f"{var} == {literal(value)}", f"set your {label} to {vtype.show(value)}"
    return None


def nameable(vtype: VType, value: Any) -> bool:
    """Whether a goal can name ``value``: every free text in it is ``""`` or one of its type's
    values (a condition cannot name "any other text", e.g. a pet's typed name)."""
    if isinstance(vtype, TextT):
        return value == "" or value in vtype.values
    if isinstance(vtype, RecordT):
        return all(nameable(t, v) for (_, t), (_, v) in zip(vtype.fields, value, strict=True))
    if isinstance(vtype, SeqT):
        return all(nameable(vtype.item, v) for v in value)
    return True


def _about_items(var: str, vtype: SeqT, value: tuple, base: tuple, label: str,
                 rng: random.Random) -> tuple[str, str]:
    if not value:  # emptied since the start (an empty list literal has no item type to check)
        return f"count({var}) == 0", f"make sure there is nothing in your {label}"
    shown = [vtype.item.show(x) for x in value]
    new = [x for x in value if x not in base]  # an item the start already holds asks for nothing
    if len(value) > 1 and new and rng.random() < 0.5:  # one of the items
        item = rng.choice(new)
        return f"{literal(item)} in {var}", f"make sure your {label} include {vtype.item.show(item)}"
    return f"{var} == {literal(value)}", f"make sure your {label} hold exactly {' and '.join(shown)}"


def _about_map(var: str, vtype: MapT, value: Rec, base: Rec, label: str, rng: random.Random) -> tuple[str, str]:
    default = vtype.value.default()
    before = dict(base)
    changed = [(k, v) for k, v in value if v != before.get(k, default)]
    keys = vtype.keys
    if isinstance(vtype.value, IntT):
        parts = [f"{v} {keys.show(k)}" for k, v in changed]
        return (f"{var} == {literal(value)}",
                f"make sure your {label} holds exactly {' and '.join(parts)} and nothing else")
    k, v = rng.choice(changed)
    if isinstance(vtype.value, BoolT):
        return f"{var}[{literal(k)}] == {literal(v)}", f"make sure {keys.show(k)} is {'on' if v else 'off'} in your {label}"
    return f"{var}[{literal(k)}] == {literal(v)}", f"make sure {keys.show(k)} is in {vtype.value.show(v)}"


def random_walk(machine: Machine, start: State, steps: int, rng: random.Random) -> State:
    """Where ``steps`` random enabled transitions from ``start`` lead (free text by class).
    Half the time a step that changes structured state is preferred, so walks fill carts
    and book appointments rather than only wander between pages."""
    state = machine.canonical(start)
    keep = structured(machine)
    for _ in range(steps):
        options = machine.enabled(state)
        if not options:
            break
        changing = [o for o in options if any(o[1].get(v) != state.get(v) for v in keep)]
        state = rng.choice(changing if changing and rng.random() < 0.5 else options)[1]
    return state


def scalar_goal(machine: Machine, state: State, var: str, start: State | None = None) -> tuple[str, str] | None:
    """A goal on a scalar variable (a toggle, a choice), for sites without structured state;
    None where ``var`` holds what it holds at ``start`` (the initial state when None)."""
    vtype: VType = machine.schema.variables[var]
    value = state.get(var)
    if value == (start.get(var) if start is not None else vtype.default()) or isinstance(vtype, TextT):
        return None
    label = machine.schema.label(var)
    if isinstance(vtype, BoolT):
        return f"{var} == {literal(value)}", f"turn {'on' if value else 'off'} {label}"
    if isinstance(vtype, (EnumT, IntT)):
        return f"{var} == {literal(value)}", f"set the {label} to {vtype.show(value)}"
    return None


__all__ = ["goal_about", "literal", "random_walk", "scalar_goal", "structured", "subjects", "to_json"]
