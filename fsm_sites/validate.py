"""Whole-spec validation: every problem at once, each naming its place in the file.

Three layers, each run only if the one before found nothing (a later layer
needs a well-formed spec to say anything meaningful):
1. shape: pydantic errors, turned into ``transitions[3].element``-style places;
2. references and domains: duplicate ids, dangling pages/elements/variables/goals,
   events that the element kind cannot send, values outside a variable's domain;
3. behaviour: the reachable graph within ``max_states``, no nondeterministic
   transitions in any reachable state, every page reachable, every goal reachable.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from fsm_sites.engine import Edge, compile_site
from fsm_sites.errors import SpecInvalid, SpecProblem, StateGraphTooLarge
from fsm_sites.spec import (
    EVENTS_BY_KIND,
    VALUE_PLACEHOLDER,
    Condition,
    SiteSpec,
    Transition,
    Variable,
)
from fsm_sites.state import State

_LIST_OPS = {"contains", "not_contains"}
# libyaml's loader when present: the library's files parse ~10x faster than in pure Python
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ORDER_OPS = {"lt", "le", "gt", "ge"}


def validate_spec(data: dict[str, Any] | SiteSpec) -> list[SpecProblem]:
    """Every problem of a spec (empty when it is valid)."""
    return _checked(data)[1]


def load_and_validate(path: str | Path) -> SiteSpec:
    """Load a YAML/JSON spec and validate it; raises ``SpecInvalid`` listing every problem.

    The spec's Machine, built and explored to validate it, is kept for
    ``fsm_sites.engine.compile_site`` (the library and the servers use that).
    """
    import json

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=_YAML_LOADER)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise SpecInvalid([SpecProblem("", f"expected a readable YAML/JSON file, got {exc}")], str(path)) from exc
    return validate_spec_data(data, source=str(path))


def validate_spec_data(data: object, *, source: str = "spec") -> SiteSpec:
    """A spec from decoded YAML/JSON data; raises ``SpecInvalid`` listing every problem."""
    if not isinstance(data, dict):
        problem = SpecProblem("", f"expected a mapping at the top, got {type(data).__name__}")
        raise SpecInvalid([problem], source)
    spec, problems = _checked(data)
    if spec is None or problems:
        raise SpecInvalid(problems, source)
    return spec


def _checked(data: dict[str, Any] | SiteSpec) -> tuple[SiteSpec | None, list[SpecProblem]]:
    """The parsed spec (None if its shape is wrong) and every problem found."""
    if isinstance(data, SiteSpec):
        spec = data
    else:
        try:
            spec = SiteSpec.model_validate(data)
        except ValidationError as exc:
            return None, [_shape_problem(err) for err in exc.errors()]
    problems = list(_static_problems(spec))
    if problems:
        return spec, problems
    return spec, list(_behaviour_problems(spec))


def _shape_problem(err: Any) -> SpecProblem:
    place = ""
    for part in err["loc"]:
        place += f"[{part}]" if isinstance(part, int) else (f".{part}" if place else str(part))
    return SpecProblem(place, f"{err['msg']} (got {err.get('input')!r})")


# ---- layer 2: references and domains --------------------------------------------------
def _duplicates(ids: Iterable[str], place: str, what: str) -> Iterator[SpecProblem]:
    seen: set[str] = set()
    for i, ident in enumerate(ids):
        if ident in seen:
            yield SpecProblem(f"{place}[{i}]", f"duplicate {what} {ident!r}; give each one a unique id")
        seen.add(ident)


def _static_problems(spec: SiteSpec) -> Iterator[SpecProblem]:
    yield from _duplicates((v.name for v in spec.variables), "variables", "variable")
    yield from _duplicates((p.id for p in spec.pages), "pages", "page")
    yield from _duplicates((t.id for t in spec.transitions), "transitions", "transition")
    yield from _duplicates((g.id for g in spec.goals), "goals", "goal")
    variables = {v.name: v for v in spec.variables}
    pages = {p.id: p for p in spec.pages}
    if spec.start_page not in pages:
        yield SpecProblem("start_page", f"expected one of the pages {sorted(pages)}, got {spec.start_page!r}")
    for i, var in enumerate(spec.variables):
        yield from _variable_problems(var, f"variables[{i}]")
    for i in range(len(spec.pages)):
        yield from _page_problems(spec, i, variables)
    for i, t in enumerate(spec.transitions):
        yield from _transition_problems(spec, t, f"transitions[{i}]", variables)
    for i, goal in enumerate(spec.goals):
        if goal.page is not None and goal.page not in pages:
            yield SpecProblem(f"goals[{i}].page", f"{goal.page!r} is not a page; expected one of {sorted(pages)}")
        yield from _conditions_problems(goal.conditions, f"goals[{i}].conditions", variables)


def _variable_problems(var: Variable, place: str) -> Iterator[SpecProblem]:
    if var.type == "enum" and not var.values:
        yield SpecProblem(f"{place}.values", f"enum {var.name!r} needs a non-empty list of values")
    if var.type == "int" and var.min > var.max:
        yield SpecProblem(f"{place}.min", f"expected min <= max, got {var.min} > {var.max}")
    if var.default is None:
        return
    if not _in_domain(var, var.default, allow_list=True):
        yield SpecProblem(f"{place}.default", f"{var.default!r} is outside the domain of {var.name!r} ({_domain(var)})")


def _domain(var: Variable) -> str:
    if var.type == "int":
        return f"int {var.min}..{var.max}"
    if var.type == "bool":
        return "true/false"
    if var.type == "list":
        return f"list of up to {var.max_len} items from {list(var.values)}"
    return f"one of {list(var.values)}"


def _in_domain(var: Variable, value: Any, *, allow_list: bool = False) -> bool:
    if var.type == "bool":
        return isinstance(value, bool) or value in ("true", "false")
    if var.type == "int":
        try:
            return not isinstance(value, bool) and var.min <= int(value) <= var.max
        except (TypeError, ValueError):
            return False
    if var.type == "list" and allow_list and isinstance(value, (list, tuple)):
        return len(value) <= var.max_len and all(str(v) in var.values for v in value)
    return str(value) in var.values


def _page_problems(spec: SiteSpec, index: int, variables: dict[str, Variable]) -> Iterator[SpecProblem]:
    page = spec.pages[index]
    place = f"pages[{index}]"
    page_ids = {p.id: p for p in spec.pages}
    if page.kind == "modal":
        parent = page_ids.get(page.parent or "")
        if parent is None:
            yield SpecProblem(f"{place}.parent", f"modal {page.id!r} needs a parent page; got {page.parent!r}")
        elif parent.kind == "modal":
            yield SpecProblem(f"{place}.parent", f"expected a full page as parent of {page.id!r}, got modal {parent.id!r}")
    elif page.parent is not None:
        yield SpecProblem(f"{place}.parent", f"only a modal has a parent; remove it or set kind: modal on {page.id!r}")
    yield from _duplicates((e.id for e in page.elements), f"{place}.elements", f"element of page {page.id!r}")
    for j, element in enumerate(page.elements):
        eplace = f"{place}.elements[{j}]"
        if element.bind is not None and element.bind not in variables:
            yield SpecProblem(f"{eplace}.bind", f"{element.bind!r} is not a variable; expected one of {sorted(variables)}")
        yield from _conditions_problems(element.visible_when, f"{eplace}.visible_when", variables)


def _conditions_problems(
    conditions: Iterable[Condition], place: str, variables: dict[str, Variable]
) -> Iterator[SpecProblem]:
    for k, cond in enumerate(conditions):
        cplace = f"{place}[{k}]"
        var = variables.get(cond.var)
        if var is None:
            yield SpecProblem(f"{cplace}.var", f"{cond.var!r} is not a variable; expected one of {sorted(variables)}")
            continue
        if cond.op in _LIST_OPS and var.type != "list":
            yield SpecProblem(f"{cplace}.op", f"{cond.op!r} needs a list variable, got {var.type} {var.name!r}")
        elif cond.op in _ORDER_OPS and var.type not in ("int", "list"):
            yield SpecProblem(f"{cplace}.op", f"{cond.op!r} needs an int or list variable, got {var.type} {var.name!r}")
        elif cond.op in ("empty", "nonempty"):
            continue
        elif var.type == "list" and cond.op in ("eq", "ne", *_ORDER_OPS):
            if not isinstance(cond.value, int) or isinstance(cond.value, bool):
                yield SpecProblem(f"{cplace}.value", f"a list compares by length: expected an int, got {cond.value!r}")
        elif not _in_domain(var, cond.value):
            yield SpecProblem(f"{cplace}.value", f"{cond.value!r} is outside the domain of {var.name!r} ({_domain(var)})")


def _transition_problems(
    spec: SiteSpec, t: Transition, place: str, variables: dict[str, Variable]
) -> Iterator[SpecProblem]:
    pages = {p.id: p for p in spec.pages}
    page = pages.get(t.page)
    if page is None:
        yield SpecProblem(f"{place}.page", f"{t.page!r} is not a page; expected one of {sorted(pages)}")
    if t.target is not None and t.target not in pages:
        yield SpecProblem(f"{place}.target", f"{t.target!r} is not a page; expected one of {sorted(pages)}")
    yield from _conditions_problems(t.when, f"{place}.when", variables)
    if page is None:
        return
    element = next((e for e in page.elements if e.id == t.element), None)
    if element is None:
        ids = [e.id for e in page.elements]
        yield SpecProblem(f"{place}.element", f"{t.element!r} is not an element of page {t.page!r}; it has {ids}")
        return
    allowed = EVENTS_BY_KIND[element.kind]
    if t.event not in allowed:
        yield SpecProblem(f"{place}.event", f"a {element.kind} sends {list(allowed) or 'no events'}, got {t.event!r}")
    if element.distractor:
        yield SpecProblem(f"{place}.element", f"{t.element!r} is a distractor and must have no transition")
    options = {o.value for o in element.options}
    if t.event == "input" and not t.values:
        yield SpecProblem(f"{place}.values", "an input transition needs the finite list of accepted values")
    if t.event == "select" and not t.values and not options:
        yield SpecProblem(f"{place}.values", f"select {t.element!r} has no options; give values or options")
    if options and t.values:
        for v in t.values:
            if v not in options:
                yield SpecProblem(f"{place}.values", f"{v!r} is not an option of {t.element!r} ({sorted(options)})")
    event_values = t.values or tuple(sorted(options))
    yield from _effects_problems(t, place, variables, event_values)


def _effects_problems(
    t: Transition, place: str, variables: dict[str, Variable], event_values: tuple[str, ...]
) -> Iterator[SpecProblem]:
    for k, effect in enumerate(t.effects):
        eplace = f"{place}.effects[{k}]"
        var = variables.get(effect.var)
        if var is None:
            yield SpecProblem(f"{eplace}.var", f"{effect.var!r} is not a variable; expected one of {sorted(variables)}")
            continue
        if effect.op in ("increment", "decrement") and var.type != "int":
            yield SpecProblem(f"{eplace}.op", f"{effect.op!r} needs an int variable, got {var.type} {var.name!r}")
            continue
        if effect.op in ("append", "remove") and var.type != "list":
            yield SpecProblem(f"{eplace}.op", f"{effect.op!r} needs a list variable, got {var.type} {var.name!r}")
            continue
        if effect.op == "set" and var.type == "list":
            yield SpecProblem(f"{eplace}.op", f"set cannot change list {var.name!r}; use append/remove/clear")
            continue
        if effect.op not in ("set", "append", "remove"):
            continue
        if effect.value == VALUE_PLACEHOLDER:
            if not event_values:
                yield SpecProblem(f"{eplace}.value", f"{VALUE_PLACEHOLDER!r} needs an event that carries values")
            operands: tuple[Any, ...] = event_values
        else:
            operands = (effect.value,)
        for operand in operands:
            if not _in_domain(var, operand):
                yield SpecProblem(f"{eplace}.value", f"{operand!r} is outside the domain of {var.name!r} ({_domain(var)})")


# ---- layer 3: behaviour ---------------------------------------------------------------
def _behaviour_problems(spec: SiteSpec) -> Iterator[SpecProblem]:
    machine = compile_site(spec)
    try:
        graph = machine.graph()
    except StateGraphTooLarge as exc:
        yield SpecProblem("max_states", str(exc))
        return
    yield from _nondeterminism(spec, graph.edges)
    reached = {s.page for s in graph.states}
    for i, page in enumerate(spec.pages):
        if page.id not in reached:
            yield SpecProblem(f"pages[{i}]", f"page {page.id!r} is unreachable from start page {spec.start_page!r}")
    for i, goal in enumerate(spec.goals):
        if not machine.distances(goal.id, graph):
            yield SpecProblem(f"goals[{i}]", f"goal {goal.id!r} holds in no state reachable from the start")


def _nondeterminism(spec: SiteSpec, edges_by_state: dict[State, list[tuple[Edge, State]]]) -> Iterator[SpecProblem]:
    index = {t.id: i for i, t in enumerate(spec.transitions)}
    reported: set[tuple[str, str]] = set()
    for state, out in edges_by_state.items():
        by_trigger: dict[tuple[str, str], list[Edge]] = {}
        for edge, _ in out:
            by_trigger.setdefault((edge.element, edge.event), []).append(edge)
        for edges in by_trigger.values():
            for a_i, a in enumerate(edges):
                for b in edges[a_i + 1:]:
                    clash = a.transition_id != b.transition_id and (
                        a.value is None or b.value is None or a.value == b.value)
                    pair = (a.transition_id, b.transition_id)
                    if clash and pair not in reported:
                        reported.add(pair)
                        yield SpecProblem(
                            f"transitions[{index[b.transition_id]}]",
                            f"{b.transition_id!r} and {a.transition_id!r} are both enabled for "
                            f"({a.page}, {a.element}, {a.event}, {a.value or b.value}) in state {state.key()}; "
                            "make their `when` conditions exclusive",
                        )
