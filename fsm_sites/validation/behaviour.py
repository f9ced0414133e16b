"""Behavioural checks of a statically sound spec, by goal-directed search (no whole graph).

- nondeterminism: two transitions of one element and event that can both fire for the
  same value in some reachable state (a copy-pasted transition, say): guards that
  contradict each other are told apart at once, the rest by a search for a reachable
  state where both hold;
- every page, goal and named start state reachable from the initial state: a goal is first
  tried by abstract interpretation (``fsm_sites.validation.bounds``), which proves some goals
  unreachable at any size, then searched for within the search budget; each goal ends
  proved reachable, proved unreachable (a problem) or undecided (a note);
- warnings where an element's `disabled_when` and its transitions' `when` disagree;
- the reachable states counted up to a budget, and ``max_states`` enforced, naming the
  variables that multiply the states.
"""

from __future__ import annotations

from contextlib import contextmanager
from itertools import combinations

from fsm_sites.engine.machine import Machine, compile_site
from fsm_sites.errors import SEARCH_BUDGET, SearchBudgetExceeded, SpecProblem, StateGraphTooLarge
from fsm_sites.spec.expr import (
    SPECIAL_NAMES,
    Binary,
    Const,
    Lit,
    Node,
    Unary,
    all_of,
    conjuncts,
    names,
    replace_names,
)
from fsm_sites.spec.model import TransitionModel
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.bounds import Bounds, unreachable_because


@contextmanager
def _bounded(machine: Machine, goal, budget: int = SEARCH_BUDGET):
    """The goal's search, with validation's budget while the check runs."""
    search, _ = machine.search_for(goal)
    saved, search.budget = search.budget, budget
    try:
        yield
    finally:
        search.budget = saved


def check_behaviour(spec: SiteSpec, report, count_budget: int, search_budget: int = SEARCH_BUDGET) -> None:
    machine = compile_site(spec)
    report.search_budget = search_budget
    _nondeterminism(machine, report)
    if report.problems:
        return
    _reachability(machine, report, search_budget)
    _disagreements(machine, report)
    _count(machine, report, count_budget)
    machine.report = report.to_json()


def _values(tm: TransitionModel) -> set | None:
    """The values a transition accepts (None: any, as a value-less click or a repeated element)."""
    if tm.edge_values is None or tm.edge_values == (None,):
        return None
    return set(tm.edge_values)


def _nondeterminism(machine: Machine, report) -> None:
    by_trigger: dict[tuple[str, str, str], list[TransitionModel]] = {}
    for tm in machine.model.transitions:
        by_trigger.setdefault((tm.t.page, tm.t.element, tm.t.event), []).append(tm)
    for (page, element, event), group in by_trigger.items():
        for a, b in combinations(group, 2):
            va, vb = _values(a), _values(b)
            common = None if va is None and vb is None else (va if vb is None else vb if va is None else va & vb)
            if common is not None and not common:
                continue
            if _exclusive(a.guard, b.guard):
                continue
            for value in sorted(common, key=str) if common is not None else [None]:
                found = _both_enabled(machine, a, b, value, report)
                if found is not None:
                    report.problems.append(SpecProblem(
                        f"transitions.{b.t.id}",
                        f"{b.t.id!r} and {a.t.id!r} are both enabled for ({page}, {element}, {event}, "
                        f"{value}) in state {found}; make their `when` conditions exclusive"))
                    break


def _both_enabled(machine: Machine, a: TransitionModel, b: TransitionModel, value, report) -> str | None:
    """A reachable state where both fire (its key), or None."""
    mapping = {"value": Lit(value)} if value is not None else {}
    guard = all_of([replace_names(a.guard, mapping), replace_names(b.guard, mapping)])
    if names(guard).intersection(SPECIAL_NAMES):
        report.notes.append(f"could not check whether {a.t.id!r} and {b.t.id!r} can both fire (their guards read "
                            "the repeated item); make them exclusive by hand")
        return None
    return _reachable_where(machine, f"both:{a.t.id}:{b.t.id}:{value}", guard, a.t.page, report,
                            f"whether {a.t.id!r} and {b.t.id!r} can both fire")


def _disagreements(machine: Machine, report) -> None:
    """Warnings where an element's `disabled_when` and its transitions' `when` disagree: a
    `when` that holds while the control is drawn disabled (so it fires nothing), or a control
    drawn enabled whose every `when` fails (a click on it does nothing)."""
    by_element: dict[tuple[str, str], list[TransitionModel]] = {}
    for tm in machine.model.transitions:
        if tm.disabled is not None:
            by_element.setdefault((tm.t.page, tm.t.element), []).append(tm)
    for (page, element), group in by_element.items():
        disabled = group[0].disabled
        assert disabled is not None
        if any(names(n).intersection(SPECIAL_NAMES) for tm in group for n in (tm.open_guard, disabled)):
            report.notes.append(f"could not check whether the `disabled_when` of {page}.{element} agrees with its "
                                "transitions' `when` (they read the repeated item or the event's value); check by hand")
            continue
        for tm in group:
            if not tm.t.when:
                continue
            found = _reachable_where(machine, f"blocked:{tm.t.id}", all_of([tm.open_guard, disabled]), page, report,
                                     f"whether {tm.t.id!r} is blocked by `disabled_when`")
            if found is not None:
                report.warnings.append(f"transitions.{tm.t.id}: its `when` holds while `disabled_when` holds too, "
                                       f"e.g. in {found}: the control is drawn disabled and fires nothing there; make "
                                       "them agree, or drop `when` (`disabled_when` alone decides)")
        em = machine.model.elements[(page, element)]
        idle = all_of([em.visible, Unary("not", disabled), *(Unary("not", tm.open_guard) for tm in group)])
        found = _reachable_where(machine, f"idle:{page}:{element}", idle, page, report,
                                 f"whether {page}.{element} can be drawn enabled with nothing to fire")
        if found is not None:
            report.warnings.append(f"pages.{page}.elements.{element}: drawn enabled (its `disabled_when` does not "
                                   f"hold) but fires nothing, e.g. in {found}; make `disabled_when` hold wherever "
                                   "no `when` of its transitions does")


def _reachable_where(machine: Machine, key: str, node: Node, page: str, report, what: str) -> str | None:
    """The key of a reachable state on ``page`` (any parameters) where ``node`` holds, or
    None (a note when the search ran out of budget)."""
    params = tuple(p for p, _ in machine.schema.params.get(page, ()))
    goal = machine.make_goal(key, node, page, False, params)
    try:
        with _bounded(machine, goal, report.search_budget):
            paths = machine.shortest_paths(machine.initial, goal, limit=1)
    except SearchBudgetExceeded as exc:
        report.notes.append(f"could not decide {what}: {exc}")
        return None
    if not paths:
        return None
    state = machine.initial
    for edge in paths[0]:
        stepped = machine.step(state, edge.to_event())
        assert stepped is not None  # each edge of a shortest path fires from the state before it
        state = stepped[1]
    return state.key()


def _exclusive(ga: Node, gb: Node) -> bool:
    """Whether two guards contradict each other on their face (no search needed)."""
    return any(_contradict(x, y) for x in conjuncts(ga) for y in conjuncts(gb))


def _negation(node: Node) -> Node:
    if isinstance(node, Unary) and node.op == "not":
        return node.operand
    if isinstance(node, Binary) and node.op in ("in", "not in"):
        return Binary("not in" if node.op == "in" else "in", node.left, node.right)
    return Unary("not", node)


def _contradict(x: Node, y: Node) -> bool:
    if _negation(x) == y or _negation(y) == x:
        return True
    if not (isinstance(x, Binary) and isinstance(y, Binary) and x.left == y.left):
        return False
    cx, cy = x.right, y.right
    if not (isinstance(cx, (Lit, Const)) and isinstance(cy, (Lit, Const))):
        return False
    ops = {x.op, y.op}
    if ops == {"=="}:
        return cx.value != cy.value
    if ops == {"==", "!="}:
        return cx.value == cy.value
    if all(isinstance(c.value, int) and not isinstance(c.value, bool) for c in (cx, cy)) and "!=" not in ops:
        tests = {"==": int.__eq__, "<": int.__lt__, "<=": int.__le__, ">": int.__gt__, ">=": int.__ge__}
        if x.op in tests and y.op in tests:
            points = {c + d for c in (cx.value, cy.value) for d in (-1, 0, 1)}
            return not any(tests[x.op](p, cx.value) and tests[y.op](p, cy.value) for p in points)
    return False


def _reachability(machine: Machine, report, budget: int) -> None:
    spec = machine.spec
    for page in spec.pages:
        page_goal = machine.make_goal(f"page:{page.id}", Lit(True), page.id, False)
        if _distance(machine, page_goal, report, f"page {page.id!r}", budget) is None:
            report.problems.append(SpecProblem(f"pages.{page.id}", f"page {page.id!r} is unreachable from start page "
                                               f"{spec.start_page!r}; add a transition that leads to it"))
    bounds = Bounds(machine)
    for goal in spec.goals:
        predicate = machine.goal_predicate(goal.id)
        why = unreachable_because(machine, bounds, predicate)  # proved without a search, at any size
        first = machine.goal_start(goal.id) or machine.initial  # where its tasks begin
        depth = None if why is not None else _distance(machine, predicate, report, f"goal {goal.id!r}", budget, first)
        report.goal_depths[goal.id] = None if depth == -1 else depth
        report.goal_status[goal.id] = "undecided" if depth == -1 else "unreachable" if depth is None else "reachable"
        if depth is None:
            why = why or "a search of every state it could be reached through found none"
            origin = f"its start state {goal.start!r}" if goal.start else "the start"
            report.problems.append(SpecProblem(f"goals.{goal.id}", f"goal {goal.id!r} holds in no state reachable "
                                               f"from {origin}: {why}; change the goal or the transitions"))
    for start in spec.starts:
        state = machine.named_start(start.id)
        try:
            with _bounded(machine, machine.state_goal(machine.canonical(state)), budget):
                reachable = machine.is_reachable(state)
        except SearchBudgetExceeded as exc:
            report.notes.append(f"could not decide whether start state {start.id!r} is reachable: {exc}")
            continue
        if not reachable:
            report.problems.append(SpecProblem(f"starts.{start.id}", f"start state {start.id!r} cannot be reached from "
                                               "the initial state; change its variables or the transitions"))


def _distance(machine: Machine, goal, report, what: str, budget: int = SEARCH_BUDGET, start=None) -> int | None:
    try:
        with _bounded(machine, goal, budget):
            return machine.distance(start or machine.initial, goal)
    except SearchBudgetExceeded as exc:
        report.notes.append(f"could not decide whether {what} is reachable: {exc}")
        return -1


def _count(machine: Machine, report, budget: int) -> None:
    bound = machine.spec.max_states
    counted = machine.graphs.count_states(bound + 1 if bound else budget)
    report.states, report.states_exact = counted.count, counted.exact
    if bound and counted.count > bound:
        report.problems.append(SpecProblem("max_states", str(StateGraphTooLarge(bound, machine.spec.name, counted.culprits()))))


__all__ = ["check_behaviour"]
