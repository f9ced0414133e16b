"""The whole reachable state graph, by breadth-first search: for small sites, for counting
states, and as the reference the goal-directed search is checked against.

``FullGraph`` is owned by each ``fsm_sites.engine.machine.Machine`` as ``machine.graphs``
(``machine.graphs.graph()``, ``.distances(goal)``, ``.count_states(budget)``); every method
explores canonical states (free text by its class).
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fsm_sites.engine.state import Edge, State
from fsm_sites.errors import StateGraphTooLarge

if TYPE_CHECKING:
    from fsm_sites.engine.goals import GoalSpec
    from fsm_sites.engine.tables import Tables
    from fsm_sites.spec.site import SiteSpec

FULL_GRAPH_LIMIT = 250_000  # states graph() explores when neither the caller nor the spec bounds it
_CACHE_SIZE = 16


@dataclass
class StateGraph:
    """The states reachable from ``start`` (BFS order) and every enabled edge out of each."""

    start: State
    states: list[State]
    edges: dict[State, list[tuple[Edge, State]]]
    _reverse: dict[State, list[State]] | None = field(default=None, repr=False)
    _by_index: list[list[int]] | None = field(default=None, repr=False)
    nodes: list[tuple[str, tuple]] = field(default_factory=list, repr=False)  # (page, values) of each state

    def __len__(self) -> int:
        return len(self.states)

    def __contains__(self, state: object) -> bool:
        return state in self.edges

    def reverse_index(self) -> list[list[int]]:
        """For each state (by its position in ``states``), the positions of its predecessors."""
        if self._by_index is None:
            position = {s: i for i, s in enumerate(self.states)}
            reverse: list[list[int]] = [[] for _ in self.states]
            for i, state in enumerate(self.states):
                for _, target in self.edges[state]:
                    reverse[position[target]].append(i)
            self._by_index = reverse
        return self._by_index

    def predecessors(self) -> dict[State, list[State]]:
        """For each state, the states with an edge into it (computed once)."""
        if self._reverse is None:
            reverse: dict[State, list[State]] = {s: [] for s in self.states}
            for source, out in self.edges.items():
                for _, target in out:
                    reverse[target].append(source)
            self._reverse = reverse
        return self._reverse


@dataclass
class StateCount:
    """How many states are reachable: exactly, or at least ``count`` when the budget ran out."""

    count: int
    exact: bool
    values_seen: dict[str, int]  # distinct values each variable took in the states counted

    def culprits(self, top: int = 4) -> list[tuple[str, int]]:
        """The variables that multiply the states most (most distinct values seen)."""
        ranked = sorted(self.values_seen.items(), key=lambda kv: (-kv[1], kv[0]))
        return [(name, n) for name, n in ranked if n > 1][:top]


class GraphSource(Protocol):
    """What ``FullGraph`` reads of its machine (``fsm_sites.engine.machine.Machine``)."""

    spec: SiteSpec
    full: Tables
    layout: tuple[str, ...]
    initial: State

    def canonical(self, state: State) -> State: ...
    def resolve_goal(self, goal: Callable[[State], bool] | str) -> GoalSpec: ...


class FullGraph:
    """Breadth-first exploration of a machine's whole graph (``graph``, ``distances``,
    ``count_states``), with the graphs and distances it built cached."""

    def __init__(self, machine: GraphSource) -> None:
        self.machine = machine
        self._graphs: OrderedDict[State, StateGraph] = OrderedDict()
        self._distances: OrderedDict[tuple[Any, State], dict[State, int]] = OrderedDict()

    def _bound(self, max_states: int | None) -> int:
        if max_states is not None:
            return max_states
        return self.machine.spec.max_states or FULL_GRAPH_LIMIT

    def graph(self, *, start: State | None = None, max_states: int | None = None) -> StateGraph:
        """The reachable state graph from ``start`` (default: initial) by BFS; cached per start.
        Raises ``StateGraphTooLarge`` naming the variables that multiply the states."""
        start = self.machine.canonical(start or self.machine.initial)
        bound = self._bound(max_states)
        cached = self._graphs.get(start)
        if cached is not None and len(cached) <= bound:
            self._graphs.move_to_end(start)
            return cached
        full, layout = self.machine.full, self.machine.layout
        root = (start.page, tuple(v for _, v in start.vars))
        states: dict[tuple, State] = {root: start}
        edges: dict[State, list[tuple[Edge, State]]] = {}
        queue = deque([root])
        while queue:
            node = queue.popleft()
            out = []
            for ct, value, nxt in full.expand(*node):
                target = states.get(nxt)
                if target is None:
                    if len(states) >= bound:
                        raise self._too_large(bound)
                    target = states[nxt] = State(nxt[0], tuple(zip(layout, nxt[1], strict=True)))
                    queue.append(nxt)
                out.append((Edge(ct.id, node[0], ct.element, ct.event, value), target))
            edges[states[node]] = out
        graph = StateGraph(start, list(states.values()), edges, nodes=list(states))
        _remember(self._graphs, start, graph)
        return graph

    def _too_large(self, bound: int) -> StateGraphTooLarge:
        counted = self.count_states(bound)
        return StateGraphTooLarge(bound, self.machine.spec.name, counted.culprits())

    def distances(self, goal: Callable[[State], bool] | str, graph: StateGraph | None = None) -> dict[State, int]:
        """Shortest number of steps from each state of ``graph`` to a goal state, by reverse BFS
        over the whole graph (the reference the search is checked against). Cached."""
        predicate = self.machine.resolve_goal(goal)
        graph = graph or self.graph()
        key = (predicate.key, graph.start)
        cached = self._distances.get(key)
        if cached is not None:
            self._distances.move_to_end(key)
            return cached
        reverse = graph.reverse_index()
        test = predicate.compile(self.machine.full)
        far: list[int | None] = [None] * len(graph.states)
        queue: deque[tuple[int, int]] = deque()  # (state index, its distance)
        nodes = graph.nodes or [(s.page, tuple(v for _, v in s.vars)) for s in graph.states]
        for i, node in enumerate(nodes):
            if test(*node):
                far[i] = 0
                queue.append((i, 0))
        while queue:
            i, d = queue.popleft()
            for prev in reverse[i]:
                if far[prev] is None:
                    far[prev] = d + 1
                    queue.append((prev, d + 1))
        dist = {s: d for s, d in zip(graph.states, far, strict=True) if d is not None}
        _remember(self._distances, key, dist)
        return dist

    def count_states(self, budget: int, *, progress: Callable[[int], None] | None = None) -> StateCount:
        """Reachable states counted by BFS, up to ``budget`` (then a lower bound)."""
        full = self.machine.full
        start = self.machine.canonical(self.machine.initial)
        root = (start.page, tuple(v for _, v in start.vars))
        seen = {root}
        queue = deque([root])
        exact = True
        while queue:
            node = queue.popleft()
            for _, _, nxt in full.expand(*node):
                if nxt not in seen:
                    if len(seen) >= budget:
                        exact = False
                        queue.clear()
                        break
                    seen.add(nxt)
                    queue.append(nxt)
                    if progress is not None and len(seen) % 10_000 == 0:
                        progress(len(seen))
        layout = self.machine.layout
        values: list[set] = [set() for _ in layout]
        for _, vals in seen:
            for i, v in enumerate(vals):
                values[i].add(v)
        pages = Counter(p for p, _ in seen)
        return StateCount(len(seen), exact, {"(page)": len(pages)} | {n: len(s) for n, s in zip(layout, values, strict=True)})


def _remember(cache: OrderedDict, key: Any, value: Any) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
