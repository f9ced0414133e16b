"""The pure FSM engine: events, transitions, goals, and verification by goal-directed search.

Imports no browser, server or I/O. A ``Machine`` compiles a ``SiteSpec`` once (its model,
``fsm_sites.spec.model``, into closures, ``fsm_sites.engine.tables``); ``compile_site`` shares one per
spec between the validator, the library, the CLI and the servers.

Semantics (see docs/fsm_spec.md):
- An event fires a transition only if the element exists on the state's page, is visible,
  the transition's ``when`` holds and the value matches: a transition with ``values``
  accepts exactly those; a select or radio group with no ``values`` accepts its options;
  an input bound to a text variable accepts any text (classified by the variable); a
  repeated element's event carries the position (or map key) of its item; a data table's
  ``sort`` the order a heading asks for and ``page`` a page the table has but the one shown
  (both decided per state); any other transition takes no value. A paged table's rows are
  shown (and their buttons fire) only on their page. The first transition of the spec that fires wins.
- Effects apply in order (``fsm_sites.spec.effects``), then the page changes to ``target``
  (with its ``args``). A transition with a ``toast`` shows it until the next one fires.
- ``distance``, ``shortest_paths`` and ``on_shortest_path`` come from a search from the
  state asked about (``fsm_sites.engine.search``), never from the whole reachable graph;
  ``machine.graphs`` (``fsm_sites.engine.fullgraph``) still builds that graph, for small sites
  and to check the search.

What a page shows of a state (elements, copies, text, routes, toasts) is ``machine.views``
(``fsm_sites.engine.views``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from threading import Lock
from typing import Any

from fsm_sites.engine.cache import spec_hash
from fsm_sites.engine.fullgraph import FullGraph, StateGraph
from fsm_sites.engine.goals import EXPR_PREFIX, GoalSpec, exact_state_node
from fsm_sites.engine.projection import relevant_variables
from fsm_sites.engine.search import GoalSearch
from fsm_sites.engine.state import Edge, State, UIEvent
from fsm_sites.engine.tables import Tables
from fsm_sites.engine.views import PageViews
from fsm_sites.errors import SpecInvalid, UnknownGoal
from fsm_sites.spec.check import Ctx, compile_bool
from fsm_sites.spec.conditions import conditions_node
from fsm_sites.spec.expr import ExprSyntaxError, parse_expr
from fsm_sites.spec.model_build import build_model
from fsm_sites.spec.model_goals import parse_page, start_values
from fsm_sites.spec.site import Condition, Element, SiteSpec
from fsm_sites.spec.types import Typed, from_json, to_json, untagged

Goal = Callable[[State], bool]
_CACHE_SIZE = 64

__all__ = ["Edge", "Goal", "GoalSpec", "Machine", "StateGraph", "compile_site", "transition"]


class Machine:
    """A compiled site: pure functions of (state, event), and goal-directed verification.
    It owns two helpers: what a page shows of a state, ``machine.views``
    (``fsm_sites.engine.views.PageViews``), and the whole reachable graph by BFS,
    ``machine.graphs`` (``fsm_sites.engine.fullgraph.FullGraph``)."""

    def __init__(self, spec: SiteSpec) -> None:
        model = build_model(spec)
        if model.problems:
            raise SpecInvalid(model.problems, f"site {spec.name!r}")
        self.spec = spec
        self.model = model
        self.schema = model.schema
        self.layout = self.schema.order
        self.full = Tables(model, self.layout)
        self.variables = {v.name: v for v in spec.variables}
        self.pages = {p.id: p for p in spec.pages}
        self.elements: dict[tuple[str, str], Element] = {(p.id, e.id): e for p in spec.pages for e in p.elements}
        self.transitions = {t.id: t for t in spec.transitions}
        self.initial = State(spec.start_page, tuple((n, self.schema.defaults[n]) for n in self.layout))
        self._goals: dict[str, GoalSpec] = {}
        self._searches: OrderedDict[str, tuple[GoalSearch, Callable[[tuple], tuple]]] = OrderedDict()
        self._projections: dict[frozenset[str], Tables] = {}
        self._conditions: dict[Any, Callable] = {}
        self._reachable: set[tuple[str, tuple]] = set()
        self._lock = Lock()
        self.report: dict[str, Any] | None = None  # the validation report, once validated
        self._known: dict[str, dict[tuple[str, tuple], int | None]] = {}  # imported exact distances per goal
        self.views = PageViews(self)
        self.graphs = FullGraph(self)

    def import_report(self, report: dict[str, Any]) -> None:
        """Take a validation report (from the cache beside the spec) instead of validating again."""
        self.report = report

    def export_knowledge(self, per_goal: int = 20_000) -> dict[str, list]:
        """Exact distances the searches learned, per goal (for the cache beside the spec): a goal
        key -> [[page, values as JSON, distance], ...] in its projection."""
        out: dict[str, list] = {}
        for key, (search, _) in list(self._searches.items()):
            if key.startswith("fn:") or not search.exact:
                continue
            rows = list(search.exact.items())[-per_goal:]
            out[key] = [[page, to_json(vals), d] for (page, vals), d in rows]
        return out

    def import_knowledge(self, data: dict[str, list]) -> None:
        """Take exact distances learned in an earlier process (``export_knowledge``)."""
        for key, rows in data.items():
            self._known[key] = {(page, from_json(vals)): d for page, vals, d in rows}

    def named_start(self, start_id: str) -> State:
        """The state of a start state the spec names (``starts``)."""
        start = next((s for s in self.spec.starts if s.id == start_id), None)
        if start is None:
            raise UnknownGoal(f"expected a start state of site {self.spec.name!r} "
                              f"({[s.id for s in self.spec.starts]}), got {start_id!r}")
        values = start_values(self.model, start.vars, f"starts.{start_id}")
        assert values is not None  # validated with the model
        return State(start.page, tuple((n, values[n]) for n in self.layout))

    # ---- states ------------------------------------------------------------------------
    def complete(self, state: State) -> State:
        """``state`` with each variable it lacks at its initial value: a state key written
        before the site gained a variable (an older tasks file) still names its state.
        ValueError for a variable the site does not have."""
        names = tuple(k for k, _ in state.vars)
        if names == self.layout:
            return state
        unknown = sorted(set(names) - set(self.layout))
        if unknown:
            raise ValueError(f"expected the variables {list(self.layout)} of site {self.spec.name!r}, "
                             f"got unknown {unknown}")
        have = dict(state.vars)
        return State(state.page, tuple((n, have.get(n, self.schema.defaults[n])) for n in self.layout))

    def node(self, state: State) -> tuple[str, tuple]:
        """(page, values in layout order) of a state; ValueError if its variables are not the site's."""
        names = tuple(k for k, _ in state.vars)
        if names != self.layout:
            raise ValueError(f"expected the variables {list(self.layout)} of site {self.spec.name!r}, got {list(names)}")
        self.full.page_of(state.page)
        return state.page, tuple(v for _, v in state.vars)

    def state(self, node: tuple[str, tuple]) -> State:
        return State(node[0], tuple(zip(self.layout, node[1], strict=True)))

    def canonical(self, state: State) -> State:
        """The state with free text replaced by its class: what the machine tells apart."""
        page, vals = self.node(state)
        canon = self.full.canonical(vals)
        return state if canon == vals else State(page, tuple(zip(self.layout, canon, strict=True)))

    # ---- predicates --------------------------------------------------------------------
    def holds(self, state: State, conditions: Iterable[Condition | str]) -> bool:
        """Whether every condition holds in ``state``."""
        conds = tuple(conditions)
        if not conds:
            return True
        fn = self._conditions.get(conds)
        if fn is None:
            env = self.model.env(self.full.page_of(state.page)[0])
            fn = self._conditions[conds] = compile_bool(conditions_node(conds, self.schema.variables), env)
        page, vals = self.node(state)
        return bool(fn(self.full.canonical(vals), Ctx(self.full.page_of(page)[1])))

    def make_goal(self, key: str, node: Any, page: str | None = None, exact: bool = False,
                  params: tuple[str, ...] = ()) -> GoalSpec:
        """A goal from a condition AST (``key`` names it in the caches), on ``page`` if given."""
        goal = GoalSpec(key, node, page, exact, params=params)
        compiled: list = []  # compiled on first use, once ``goal.exact`` may be set

        def holds(state: State) -> bool:
            if not compiled:
                compiled.append(goal.compile(self.full))
            return compiled[0](*_canon(self, state))

        goal.holds = holds
        return goal

    def goal_start(self, goal_id: str) -> State | None:
        """The start state a named goal names (its tasks begin there); None for any other goal."""
        start = next((g.start for g in self.spec.goals if g.id == goal_id), None)
        return self.named_start(start) if start else None

    def goal_predicate(self, goal_id: str) -> GoalSpec:
        """The predicate of a named goal (the same object on every call, so caches hit)."""
        key = "goal:" + goal_id
        if key not in self._goals:
            goal = next((g for g in self.spec.goals if g.id == goal_id), None)
            if goal is None:
                raise UnknownGoal(f"expected a goal of site {self.spec.name!r} "
                                  f"({[g.id for g in self.spec.goals]}), got {goal_id!r}")
            exact = goal.page is not None and "(" in goal.page
            params = () if exact or goal.page is None else tuple(p for p, _ in self.schema.params.get(goal.page, ()))
            self._goals[key] = self.make_goal(key, self.model.goals[goal_id], goal.page, exact, params)
        return self._goals[key]

    def state_goal(self, target: State | str) -> GoalSpec:
        """A predicate that holds exactly in ``target`` (a State or a state key), free text by class."""
        state = State.from_key(target) if isinstance(target, str) else target
        try:
            state = self.complete(state)
        except ValueError:
            pass  # not a state of this site: node() below says so
        key = "state:" + state.key()
        if key not in self._goals:
            try:
                page, vals = self.node(state)
            except ValueError:  # not a state of this site: a goal no state meets
                self._goals[key] = GoalSpec(key, None, fn=lambda s: False, holds=lambda s: False)
                return self._goals[key]
            values = dict(zip(self.layout, self.full.canonical(vals), strict=True))
            goal = self.make_goal(key, exact_state_node(values, self.schema.variables), page, True)
            goal.exact = values
            self._goals[key] = goal
        return self._goals[key]

    def expr_goal(self, text: str, page: str | None = None) -> GoalSpec:
        """A goal written as an expression (task synthesis writes these), optionally on a page."""
        key = EXPR_PREFIX + text + (f"@{page}" if page else "")
        if key not in self._goals:
            try:
                node = parse_expr(text)
                compile_bool(node, self.model.env(""))
                if page is not None:
                    parse_page(self.model, page, any_args=True)
            except (ExprSyntaxError, ValueError) as exc:
                raise UnknownGoal(f"expected a goal expression over the variables of {self.spec.name!r}, got {text!r}: {exc}") from None
            self._goals[key] = self.make_goal(key, node, page, page is not None and "(" in page)
        return self._goals[key]

    def resolve_goal(self, goal: Goal | str) -> GoalSpec:
        """A goal id, an ``expr:...`` text, a state key, a GoalSpec or any predicate, as a GoalSpec."""
        if isinstance(goal, GoalSpec):
            return goal
        if isinstance(goal, str):
            if goal.startswith(EXPR_PREFIX):
                return self.expr_goal(goal[len(EXPR_PREFIX):])
            if any(g.id == goal for g in self.spec.goals) or not ("{" in goal or goal in self.pages):
                return self.goal_predicate(goal)
            return self.state_goal(goal)
        key = f"fn:{id(goal)}"
        if key not in self._goals:  # an opaque predicate: searched without projection or guidance
            self._goals[key] = GoalSpec(key, None, fn=goal, holds=goal)
        return self._goals[key]

    # ---- transitions -------------------------------------------------------------------
    def enabled(self, state: State) -> list[tuple[Edge, State]]:
        """Every transition enabled in ``state``, one edge per accepted value, in spec order
        (free text by its class: the next states hold the class)."""
        page, vals = self.node(state)
        out = []
        for ct, value, nxt in self.full.successors(page, self.full.canonical(vals)):
            out.append((Edge(ct.id, page, ct.element, ct.event, value), self.state(nxt)))
        return out

    def step(self, state: State, event: UIEvent) -> tuple[Edge, State] | None:
        """The edge ``event`` fires in ``state`` and the next state; None if it fires nothing."""
        if event.page != state.page:
            return None
        page, raw = self.node(state)
        full = self.full
        vals = full.canonical(raw)
        # free text the user typed rides along with its class (``Typed``) wherever effects copy it
        tagged = full.canonical(raw, tag=True) if raw != vals else vals
        pid, args = full.page_of(page)
        for ct in full.by_trigger.get((pid, event.element, event.event), ()):
            ctx = Ctx(args)
            accepted = full.accept(ct, tagged, ctx, event.value)
            if accepted is None or (ct.guard is not None and not ct.guard(tagged, ctx)):
                continue
            value, typed = accepted
            if typed is not None and value is not None:
                ctx.value = Typed(value, typed)
            npage, nvals = full.fire(ct, page, tagged, ctx)
            if tagged is not vals or typed is not None:
                nvals = untagged(nvals)
            return Edge(ct.id, page, ct.element, ct.event, value), self.state((npage, nvals))
        return None

    # ---- verification by search ----------------------------------------------------------
    def search_for(self, goal: Goal | str) -> tuple[GoalSearch, Callable[[tuple], tuple]]:
        """The goal's search and the projection of full values onto its layout (cached)."""
        spec = self.resolve_goal(goal)
        with self._lock:
            found = self._searches.get(spec.key)
            if found is not None:
                self._searches.move_to_end(spec.key)
                return found
        keep = relevant_variables(self.model, spec.reads)
        layout = tuple(n for n in self.layout if n in keep)
        tables = self._projections.get(keep)
        if tables is None:
            tables = self._projections[keep] = Tables(self.model, layout, set(keep))
        index = [self.layout.index(n) for n in layout]
        def project(vals: tuple) -> tuple:
            return tuple(vals[i] for i in index)

        reference = (self.initial.page, project(self.full.canonical(self.node(self.initial)[1])))
        search = GoalSearch(tables, spec, reference=reference)
        search.exact.update(self._known.pop(spec.key, {}))
        found = (search, project)
        with self._lock:
            self._searches[spec.key] = found
            while len(self._searches) > _CACHE_SIZE:
                self._searches.popitem(last=False)
        return found

    def _projected(self, state: State, goal: Goal | str) -> tuple[GoalSearch, tuple[str, tuple]]:
        search, project = self.search_for(goal)
        page, vals = self.node(state)
        return search, (page, project(self.full.canonical(vals)))

    def distance(self, state: State, goal: Goal | str) -> int | None:
        """Shortest distance from ``state`` to the goal, None if unreachable."""
        search, node = self._projected(state, goal)
        return search.distance(node)

    def shortest_paths(self, start: State, goal: Goal | str, *, limit: int = 64) -> list[list[Edge]]:
        """Up to ``limit`` distinct shortest edge sequences from ``start`` to the goal, in spec order
        (``limit=1``: one shortest path, not necessarily the first in spec order)."""
        search, node = self._projected(start, goal)
        dag = search.dag(node, complete=limit > 1)  # one path: the first the search finds
        if dag.distance is None:
            return []
        paths: list[list[Edge]] = []
        stack: list[tuple[tuple[str, tuple], list[Edge]]] = [(node, [])]
        while stack and len(paths) < limit:
            current, path = stack.pop()
            if len(path) == dag.distance:
                paths.append(path)
                continue
            for ct, value, nxt in reversed(dag.next.get(current, [])):
                stack.append((nxt, path + [Edge(ct.id, current[0], ct.element, ct.event, value)]))
        return paths

    def on_shortest_path(self, state: State, edge_next: State, goal: Goal | str) -> bool:
        """Whether moving from ``state`` to ``edge_next`` lowers the distance to the goal by one."""
        before = self.distance(state, goal)
        if before is None or before == 0:
            return False
        after = self.distance(edge_next, goal)
        return after is not None and after == before - 1

    def is_reachable(self, state: State) -> bool:
        """Whether ``state`` (free text by class) can be reached from the initial state."""
        canon = self.canonical(state)
        node = self.node(canon)
        if node in self._reachable or canon == self.initial:
            return True
        search, start = self._projected(self.initial, self.state_goal(canon))
        found = search.reachable(start)
        if found:
            self._reachable.add(node)
        return found

    def mark_reachable(self, state: State) -> None:
        """Record a state known to be reachable (a session walked into it)."""
        page, vals = self.node(state)
        if len(self._reachable) >= 200_000:
            self._reachable.clear()
        self._reachable.add((page, self.full.canonical(vals)))


def _canon(machine: Machine, state: State) -> tuple[str, tuple]:
    page, vals = machine.node(state)
    return page, machine.full.canonical(vals)


_COMPILED: OrderedDict[Any, Machine] = OrderedDict()
_COMPILED_LOCK = Lock()


def compile_site(spec: SiteSpec) -> Machine:
    """The shared Machine of ``spec``: one compile per spec per process, shared by the
    validator, the library, the CLI and the servers (keyed by the spec object, then by
    its content, so an equal spec loaded twice shares it too)."""
    with _COMPILED_LOCK:
        machine = _COMPILED.get(id(spec))
        if machine is not None and machine.spec is spec:
            _COMPILED.move_to_end(id(spec))
            return machine
    digest = spec_hash(spec)
    with _COMPILED_LOCK:
        machine = _COMPILED.get(digest)
    if machine is None or machine.spec != spec:
        machine = Machine(spec)
    with _COMPILED_LOCK:
        for key in (id(spec), digest):
            _COMPILED[key] = machine
            _COMPILED.move_to_end(key)
        while len(_COMPILED) > 2 * _CACHE_SIZE:
            _COMPILED.popitem(last=False)
    return machine


def transition(spec_or_machine: SiteSpec | Machine, state: State, event: UIEvent) -> State | None:
    """Convenience: the next state after ``event``, or None when it fires no transition."""
    machine = spec_or_machine if isinstance(spec_or_machine, Machine) else compile_site(spec_or_machine)
    result = machine.step(state, event)
    return None if result is None else result[1]
