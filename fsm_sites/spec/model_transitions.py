"""Static checks and the model of one transition (see ``fsm_sites.spec.model``)."""

from __future__ import annotations

from fsm_sites.errors import SpecProblem
from fsm_sites.spec.expr import ITEM_NAMES, Lit, Name, Unary, all_of, conjuncts, names
from fsm_sites.spec.model import (
    ElementModel,
    SiteModel,
    TransitionModel,
    check_template,
    compile_plans,
    convert_args,
    event_value,
    reads_of,
    when_node,
)
from fsm_sites.spec.model_paging import page_clamps
from fsm_sites.spec.schema import TOAST_VAR
from fsm_sites.spec.site import (
    EVENTS_BY_KIND,
    PAGE_EVENT,
    SORT_EVENT,
    VALUE_PLACEHOLDER,
    Transition,
    table_events,
)


def check_transition(model: SiteModel, index: int, t: Transition, em: ElementModel, place: str) -> None:
    el = em.element
    allowed = EVENTS_BY_KIND[el.kind] + table_events(el)
    if t.event not in allowed:
        model.problems.append(SpecProblem(f"{place}.event", f"a {el.kind} sends {list(allowed) or 'no events'}, got {t.event!r}"))
    if el.distractor:
        model.problems.append(SpecProblem(f"{place}.element", f"{t.element!r} is a distractor and must have no transition"))
    options = {o.value for o in em.options}
    if options and t.values:
        for v in t.values:
            if v not in options:
                model.problems.append(SpecProblem(f"{place}.values", f"{v!r} is not an option of {t.element!r} ({sorted(options)})"))
    value_type, edge_values = event_value(model, t, em, place)
    env = model.env(t.page, value=value_type, it=em.item_type)
    guard = when_node(model, t.when, f"{place}.when", env)
    # effects and arguments may use the choices the guard (its `when`, the element's visibility
    # and `disabled_when`) proves made, until an effect writes them
    shown = [n for n in (guard, em.visible, None if em.disabled is None else Unary("not", em.disabled)) if n is not None]
    scope = env.narrow(all_of(shown))
    plans = compile_plans(model, t, scope, place)
    for plan in plans:
        scope = scope.forget(plan.var)
    args = convert_args(model, t, scope, place)
    for text, where in ((t.toast, "toast"), (t.description.replace(VALUE_PLACEHOLDER, "value"), "description")):
        check_template(model, text, _after_env(model, t, env), f"{place}.{where}")
    for k, plan in enumerate(plans):
        if plan.kind == "move" and (el.kind != "sortable" or t.event != "move" or plan.var != el.repeat):
            model.problems.append(SpecProblem(f"{place}.effects[{k}].move", "expected `move` only in the `move` "
                                              f"transition of a sortable, naming the list it repeats over "
                                              f"({el.repeat!r}), got it on a {el.kind}'s {t.event!r} moving {plan.var!r}"))
    if guard is None or len(plans) != len(t.effects):
        return
    plans += page_clamps(model, plans)
    params = {p for p, _ in model.schema.params.get(t.page, ())}
    opened = em.opened if t.event == "pick" else None  # a date picker's days are there only while it is open
    # a heading or the pager acts on the whole table: shown whichever rows are on the page
    visible = em.table_visible if em.table_visible is not None and t.event in table_events(el) else em.visible
    open_guard = all_of([n for n in (visible, opened, guard)
                         if n is not None and not (isinstance(n, Lit) and n.value is True)])
    # a control drawn disabled fires nothing (its table's headings and pager are not the control)
    disabled = em.disabled if t.event not in table_events(el) else None
    full_guard = open_guard if disabled is None else all_of(
        [*([] if isinstance(open_guard, Lit) else [open_guard]), Unary("not", disabled)])
    guard_reads = reads_of(full_guard, params) | reads_of(em.repeat, params)
    if t.event == PAGE_EVENT and el.pager:
        guard_reads.add(el.pager)  # the pages it offers: those there are, but the one shown
    if t.event == SORT_EVENT and el.sort:
        guard_reads.add(el.sort)  # the orders its headings ask for: the shown one's other direction
    for _, node in args:
        guard_reads |= reads_of(node, params)
    plan_reads = []
    for plan in plans:
        got: set[str] = set()
        for part in (plan.expr, plan.where, *[n for _, n in plan.fields]):
            got |= reads_of(part, params)
        if plan.kind != "set" or not isinstance(plan.target, Name):
            got |= reads_of(plan.target, params)  # a field, entry or item update keeps the rest
        got |= reads_of(em.repeat, params) if _names(plan) & ITEM_NAMES else set()
        plan_reads.append((plan.var, frozenset(got)))
    reads = guard_reads.union(*(r for _, r in plan_reads))
    writes = {p.var for p in plans}
    if t.toast:
        writes.add(TOAST_VAR)
    target = t.target or t.page
    moves = t.target is not None and (target != t.page or bool(model.schema.params.get(target)))
    model.transitions.append(TransitionModel(
        t, index, full_guard, plans, args, value_type, edge_values,
        frozenset(reads), frozenset(guard_reads), tuple(plan_reads), frozenset(writes), moves,
        disabled=disabled, open_guard=open_guard,
    ))


def _names(plan) -> set[str]:
    out: set[str] = set()
    for node in (plan.expr, plan.where, plan.target, *[n for _, n in plan.fields]):
        if node is not None:
            out |= names(node)
    return out


def _after_env(model: SiteModel, t: Transition, env):
    """Descriptions and toasts may name the target page's parameters too."""
    if t.target is None:
        return env
    params = dict(model.schema.params.get(t.page, ())) | dict(model.schema.params.get(t.target, ()))
    out = model.env(t.page, value=env.value, it=env.it)
    out.params = params
    return out


def guard_parts(tm: TransitionModel) -> list:
    """The guard's conjuncts (for the heuristic's atoms)."""
    return [] if isinstance(tm.guard, Lit) else conjuncts(tm.guard)

