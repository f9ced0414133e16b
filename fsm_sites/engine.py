"""The pure FSM engine: conditions, effects, transitions, reachable graph, distances.

Imports no browser, server or I/O. A ``Machine`` compiles a ``SiteSpec`` once
into lookup tables; ``compile_site`` shares one per spec between the validator,
the library and the servers, which call ``step`` per agent event, and
``distances`` per goal (cached).

Semantics (see docs/fsm_spec.md):
- An event fires a transition only if the element exists on ``state.page``, is
  visible (all ``visible_when`` hold), the transition's ``when`` holds, and the
  value matches: a transition with ``values`` accepts exactly those; a
  ``select``/radio transition with no ``values`` accepts its element's options;
  any other transition takes no value and ignores what the event carried.
- Effects apply in order. ``$value`` is the event's value, coerced to the
  variable's type. ``clear`` restores the default; ``increment``/``decrement``
  clamp to [min, max]; ``append`` is ignored when the list is full (max_len)
  or already holds the item; ``remove`` of an absent item is a no-op. Lists
  are sets: their items stay in the order of the variable's ``values``, so
  adding a then b and b then a give the same state.
- ``empty``/``nonempty`` on a list test for items; on any other variable,
  whether it holds its default. ``lt/le/gt/ge`` (and ``eq`` with an int) on a
  list compare its length.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

from fsm_sites.errors import StateGraphTooLarge, UnknownGoal
from fsm_sites.spec import (
    VALUE_PLACEHOLDER,
    Condition,
    Effect,
    Element,
    SiteSpec,
    Transition,
    Variable,
    VarValue,
)
from fsm_sites.state import State, UIEvent

Goal = Callable[[State], bool]
_CACHE_SIZE = 64


@dataclass(frozen=True)
class Edge:
    """One expanded transition: a transition id plus the concrete event that fires it."""

    transition_id: str
    page: str
    element: str
    event: str
    value: str | None

    def to_event(self) -> UIEvent:
        return UIEvent(self.page, self.element, self.event, self.value)

    def to_dict(self) -> dict[str, Any]:
        return {"transition_id": self.transition_id, "page": self.page, "element": self.element,
                "event": self.event, "value": self.value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edge:
        return cls(data["transition_id"], data["page"], data["element"], data["event"], data.get("value"))


@dataclass
class StateGraph:
    """The states reachable from ``start`` (BFS order) and every enabled edge out of each."""

    start: State
    states: list[State]
    edges: dict[State, list[tuple[Edge, State]]]
    _reverse: dict[State, list[State]] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.states)

    def __contains__(self, state: object) -> bool:
        return state in self.edges

    def predecessors(self) -> dict[State, list[State]]:
        """For each state, the states with an edge into it (computed once)."""
        if self._reverse is None:
            reverse: dict[State, list[State]] = {s: [] for s in self.states}
            for source, out in self.edges.items():
                for _, target in out:
                    reverse[target].append(source)
            self._reverse = reverse
        return self._reverse


def default_value(var: Variable) -> VarValue:
    """The variable's initial value: its ``default`` or False / min / first enum value / ()."""
    if var.default is not None:
        return tuple(var.default) if var.type == "list" else var.default
    return {"bool": False, "int": var.min, "list": ()}.get(var.type, var.values[0] if var.values else "")


def coerce(var: Variable, raw: Any) -> VarValue:
    """An operand (from YAML or an event's string value) converted to the variable's type."""
    if var.type == "bool":
        if isinstance(raw, str):
            return raw.strip().lower() in ("true", "1", "yes", "on")
        return bool(raw)
    if var.type == "int":
        return int(raw)
    return str(raw)


class Machine:
    """A compiled site: pure functions of (state, event), with cached graphs and distances."""

    def __init__(self, spec: SiteSpec) -> None:
        self.spec = spec
        self.variables: dict[str, Variable] = {v.name: v for v in spec.variables}
        self.pages = {p.id: p for p in spec.pages}
        self.elements: dict[tuple[str, str], Element] = {
            (p.id, e.id): e for p in spec.pages for e in p.elements
        }
        self.transitions = {t.id: t for t in spec.transitions}
        self._item_order = {v.name: {x: i for i, x in enumerate(v.values)} for v in spec.variables}
        self._by_trigger: dict[tuple[str, str, str], list[Transition]] = {}
        self._by_page: dict[str, list[Transition]] = {}
        for t in spec.transitions:
            self._by_trigger.setdefault((t.page, t.element, t.event), []).append(t)
            self._by_page.setdefault(t.page, []).append(t)
        self.initial = State(
            spec.start_page, tuple(sorted((v.name, default_value(v)) for v in spec.variables))
        )
        self._conditions: dict[Condition, Callable[[dict[str, VarValue]], bool]] = {}
        self._guards = {t.id: self._guard_of(t) for t in spec.transitions}
        self._goals: dict[str, Goal] = {}
        self._graphs: OrderedDict[State, StateGraph] = OrderedDict()
        self._distances: OrderedDict[tuple[Goal, State], dict[State, int]] = OrderedDict()

    # ---- predicates -------------------------------------------------------------------
    def holds(self, state: State, conditions: Iterable[Condition]) -> bool:
        """Whether every condition holds in ``state``."""
        values = dict(state.vars)
        return all(self._compiled(c)(values) for c in conditions)

    def _compiled(self, cond: Condition) -> Callable[[dict[str, VarValue]], bool]:
        """A closure testing ``cond`` on a variables dict, built once per condition (hot path)."""
        fn = self._conditions.get(cond)
        if fn is None:
            fn = self._conditions[cond] = self._compile(cond)
        return fn

    def _compile(self, cond: Condition) -> Callable[[dict[str, VarValue]], bool]:
        var = self.variables[cond.var]
        name, op = cond.var, cond.op
        if op in ("empty", "nonempty"):
            empty_value = () if var.type == "list" else default_value(var)
            want = op == "empty"
            return lambda v: (v[name] == empty_value) == want
        if op in ("contains", "not_contains"):
            item, want = str(cond.value), op == "contains"
            return lambda v: (isinstance(v[name], tuple) and item in v[name]) == want
        # lists compare by length against an int operand; other types by value
        rhs: Any = int(cond.value) if var.type in ("int", "list") else coerce(var, cond.value)
        size = len if var.type == "list" else (lambda x: x)
        compare = {"eq": lambda a: a == rhs, "ne": lambda a: a != rhs, "lt": lambda a: a < rhs,
                   "le": lambda a: a <= rhs, "gt": lambda a: a > rhs, "ge": lambda a: a >= rhs}[op]

        def test(v: dict[str, VarValue]) -> bool:
            try:
                return compare(size(v[name]))
            except TypeError:
                return False

        return test

    def goal_predicate(self, goal_id: str) -> Goal:
        """The predicate of a named goal (the same object on every call, so caches hit)."""
        if goal_id not in self._goals:
            goal = next((g for g in self.spec.goals if g.id == goal_id), None)
            if goal is None:
                raise UnknownGoal(
                    f"expected a goal of site {self.spec.name!r} "
                    f"({[g.id for g in self.spec.goals]}), got {goal_id!r}"
                )
            conditions = goal.conditions
            page = goal.page

            def predicate(state: State) -> bool:
                return (page is None or state.page == page) and self.holds(state, conditions)

            self._goals[goal_id] = predicate
        return self._goals[goal_id]

    def state_goal(self, target: State | str) -> Goal:
        """A predicate that holds exactly in ``target`` (a State or a state key); cached."""
        key = target if isinstance(target, str) else target.key()
        cache_key = "state:" + key
        if cache_key not in self._goals:
            wanted = State.from_key(key)
            self._goals[cache_key] = lambda state: state == wanted
        return self._goals[cache_key]

    def _resolve_goal(self, goal: Goal | str) -> Goal:
        return self.goal_predicate(goal) if isinstance(goal, str) else goal

    # ---- elements and transitions -----------------------------------------------------
    def visible_elements(self, state: State) -> list[Element]:
        """Elements of ``state.page`` whose ``visible_when`` holds (a modal: its own only)."""
        page = self.pages[state.page]
        return [e for e in page.elements if self.holds(state, e.visible_when)]

    def edge_values(self, t: Transition) -> tuple[str | None, ...]:
        """The concrete values a transition accepts; ``(None,)`` for a value-less event."""
        if t.values:
            return t.values
        element = self.elements.get((t.page, t.element))
        if element is not None and element.options and t.event in ("select", "click"):
            return tuple(o.value for o in element.options)
        return (None,)

    def apply(self, state: State, t: Transition, value: str | None) -> State:
        """The state after ``t`` fires with ``value`` (no guard check)."""
        if not t.effects:
            return state if t.target is None else State(t.target, state.vars)
        values = dict(state.vars)
        for effect in t.effects:
            values[effect.var] = self._apply_effect(values[effect.var], effect, value)
        return State(t.target or state.page, tuple(sorted(values.items())))

    def _apply_effect(self, current: VarValue, effect: Effect, value: str | None) -> VarValue:
        var = self.variables[effect.var]
        raw = value if effect.value == VALUE_PLACEHOLDER else effect.value
        op = effect.op
        if op == "clear":
            return default_value(var)
        if op == "set":
            return tuple(current) if var.type == "list" else coerce(var, raw)
        if op in ("increment", "decrement"):
            delta = effect.by if op == "increment" else -effect.by
            return max(var.min, min(var.max, int(current) + delta))
        items = tuple(current)  # list ops
        item = str(raw)
        if op == "append":
            if item in items or len(items) >= var.max_len:
                return items
            order = self._item_order[var.name]
            return tuple(sorted(items + (item,), key=lambda i: order.get(i, len(order))))
        return tuple(i for i in items if i != item)  # remove

    def _guard_of(self, t: Transition) -> tuple[Callable[[dict[str, VarValue]], bool], ...] | None:
        """The element's visibility plus the transition's preconditions; None if no such element."""
        element = self.elements.get((t.page, t.element))
        if element is None:
            return None
        return tuple(self._compiled(c) for c in (*element.visible_when, *t.when))

    def _fires(self, values: dict[str, VarValue], t: Transition) -> bool:
        guard = self._guards[t.id]
        return guard is not None and all(test(values) for test in guard)

    def enabled(self, state: State) -> list[tuple[Edge, State]]:
        """Every transition enabled in ``state``, one edge per accepted value, in spec order."""
        out: list[tuple[Edge, State]] = []
        values = dict(state.vars)
        for t in self._by_page.get(state.page, ()):
            if not self._fires(values, t):
                continue
            for value in self.edge_values(t):
                edge = Edge(t.id, t.page, t.element, t.event, value)
                out.append((edge, self.apply(state, t, value)))
        return out

    def step(self, state: State, event: UIEvent) -> tuple[Edge, State] | None:
        """The edge ``event`` fires in ``state`` and the next state; None if it fires nothing."""
        if event.page != state.page:
            return None
        values = dict(state.vars)
        for t in self._by_trigger.get((event.page, event.element, event.event), ()):
            if not self._fires(values, t):
                continue
            accepted = self.edge_values(t)
            if accepted == (None,):
                value = None
            elif event.value in accepted:
                value = event.value
            else:
                continue
            edge = Edge(t.id, t.page, t.element, t.event, value)
            return edge, self.apply(state, t, value)
        return None

    # ---- graph search ----------------------------------------------------------------
    def graph(self, *, start: State | None = None, max_states: int | None = None) -> StateGraph:
        """The reachable state graph from ``start`` (default: initial) by BFS; cached per start."""
        start = start or self.initial
        bound = max_states if max_states is not None else self.spec.max_states
        cached = self._graphs.get(start)
        if cached is not None and len(cached) <= bound:
            self._graphs.move_to_end(start)
            return cached
        edges: dict[State, list[tuple[Edge, State]]] = {}
        order: list[State] = [start]
        seen = {start}
        queue = deque([start])
        while queue:
            state = queue.popleft()
            out = self.enabled(state)
            edges[state] = out
            for _, nxt in out:
                if nxt not in seen:
                    if len(seen) >= bound:
                        raise StateGraphTooLarge(bound, self.spec.name)
                    seen.add(nxt)
                    order.append(nxt)
                    queue.append(nxt)
        graph = StateGraph(start, order, edges)
        self._remember(self._graphs, start, graph)
        return graph

    def distances(self, goal: Goal | str, graph: StateGraph | None = None) -> dict[State, int]:
        """Shortest number of steps from each state of ``graph`` to a goal state (reverse BFS).

        States that cannot reach the goal are absent. Cached per (goal, graph start).
        """
        goal = self._resolve_goal(goal)
        graph = graph or self.graph()
        key = (goal, graph.start)
        cached = self._distances.get(key)
        if cached is not None:
            self._distances.move_to_end(key)
            return cached
        reverse = graph.predecessors()
        dist = {s: 0 for s in graph.states if goal(s)}
        queue = deque(dist)
        while queue:
            state = queue.popleft()
            for prev in reverse[state]:
                if prev not in dist:
                    dist[prev] = dist[state] + 1
                    queue.append(prev)
        self._remember(self._distances, key, dist)
        return dist

    def distance(self, state: State, goal: Goal | str) -> int | None:
        """Shortest distance from ``state`` to the goal, None if unreachable."""
        return self.distances(goal, self._graph_containing(state)).get(state)

    def _graph_containing(self, state: State) -> StateGraph:
        graph = self.graph()
        return graph if state in graph else self.graph(start=state)

    def shortest_paths(self, start: State, goal: Goal | str, *, limit: int = 64) -> list[list[Edge]]:
        """Up to ``limit`` distinct shortest edge sequences from ``start`` to the goal."""
        goal = self._resolve_goal(goal)
        graph = self._graph_containing(start)
        dist = self.distances(goal, graph)
        if start not in dist:
            return []
        paths: list[list[Edge]] = []
        stack: list[tuple[State, list[Edge]]] = [(start, [])]
        while stack and len(paths) < limit:
            state, path = stack.pop()
            if dist[state] == 0:
                paths.append(path)
                continue
            nexts = [(e, n) for e, n in graph.edges[state] if dist.get(n) == dist[state] - 1]
            for edge, nxt in reversed(nexts):  # reversed so spec order is explored first
                stack.append((nxt, path + [edge]))
        return paths

    def on_shortest_path(self, state: State, edge_next: State, goal: Goal | str) -> bool:
        """Whether moving from ``state`` to ``edge_next`` lowers the distance to the goal by one."""
        dist = self.distances(goal, self._graph_containing(state))
        before, after = dist.get(state), dist.get(edge_next)
        return before is not None and after is not None and after == before - 1

    @staticmethod
    def _remember(cache: OrderedDict, key: Any, value: Any) -> None:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)


_COMPILED: OrderedDict[int, Machine] = OrderedDict()
_COMPILED_LOCK = Lock()


def compile_site(spec: SiteSpec) -> Machine:
    """The shared Machine of ``spec``: a spec that is validated, then loaded or served, is
    compiled and explored once. Keyed by the spec object (specs are frozen); the most
    recent ``_CACHE_SIZE`` are kept."""
    with _COMPILED_LOCK:
        machine = _COMPILED.get(id(spec))
        # a cached Machine holds its spec, so the id cannot name another object meanwhile
        if machine is not None and machine.spec is spec:
            _COMPILED.move_to_end(id(spec))
            return machine
    machine = Machine(spec)
    with _COMPILED_LOCK:
        Machine._remember(_COMPILED, id(spec), machine)
    return machine


def transition(spec_or_machine: SiteSpec | Machine, state: State, event: UIEvent) -> State | None:
    """Convenience: the next state after ``event``, or None when it fires no transition."""
    machine = spec_or_machine if isinstance(spec_or_machine, Machine) else compile_site(spec_or_machine)
    result = machine.step(state, event)
    return None if result is None else result[1]
