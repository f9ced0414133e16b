"""Goal-directed search: exact distances and shortest paths without the whole state graph.

Per goal, a ``GoalSearch`` works in the projection onto the variables the goal depends on
(``fsm_sites.engine.projection``) and runs A* from the state asked about, guided by the abstract
heuristic (``fsm_sites.engine.heuristic``: admissible and consistent, so the first time A* takes
a state off its queue its distance from the start is exact). To list every shortest path
it keeps expanding until no state on the queue can lie on one, recording every parent on
an optimal path: the result is the DAG of all shortest paths. Each state on it has an
exact distance to the goal (the path length minus its depth), which is cached, so a step
verdict along any shortest path is a lookup.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fsm_sites.engine.goals import GoalSpec
from fsm_sites.engine.heuristic import LEVELS, AbstractHeuristic
from fsm_sites.engine.tables import CTrans, Tables
from fsm_sites.errors import SearchBudgetExceeded

Node = tuple[str, tuple]
Step = tuple[CTrans, Any, Node]  # (transition, event value, next state)
DEFAULT_BUDGET = 2_000_000  # states one search may expand before it gives up
REFINE_AFTER = 2_000  # expansions after which a search restarts with the finer abstraction
_EXACT_CACHE = 500_000  # exact distances kept per goal
_DAG_CACHE = 32


class _Refine(Exception):
    """A search is taking long: retry with the finer abstraction."""


@dataclass
class Dag:
    """Shortest paths from ``start``: ``next[state]`` are the steps that stay on one. When
    ``complete``, every shortest path is in it; else at least one (the first A* found)."""

    start: Node
    distance: int | None
    next: dict[Node, list[Step]]
    complete: bool = True


class GoalSearch:
    """Distances and shortest paths to one goal, from any state, by A* in a projection."""

    def __init__(self, tables: Tables, goal: GoalSpec, *, budget: int = DEFAULT_BUDGET,
                 reference: Node | None = None) -> None:
        self.tables = tables
        self.goal = goal
        self.budget = budget
        self.is_goal: Callable[[str, tuple], bool] = goal.compile(tables)
        self.reference = reference
        self.h = AbstractHeuristic(tables, goal, reference)
        self.exact: OrderedDict[Node, int | None] = OrderedDict()
        self.dags: OrderedDict[Node, Dag] = OrderedDict()
        self.expanded = 0  # states expanded by every search so far (for benchmarks)

    # ---- queries ----------------------------------------------------------------------
    def distance(self, node: Node) -> int | None:
        """Steps from ``node`` (projected) to the goal; None when it cannot be reached."""
        if node in self.exact:
            self.exact.move_to_end(node)
            return self.exact[node]
        return self.dag(node, complete=False).distance

    def dag(self, node: Node, *, complete: bool = True) -> Dag:
        """The shortest paths from ``node``; ``complete=False`` stops at the first one found."""
        cached = self.dags.get(node)
        if cached is not None and (cached.complete or not complete):
            self.dags.move_to_end(node)
            return cached
        known = self._from_exact(node)
        if known is not None:
            self.dags[node] = known
            return known
        try:
            dag = self._astar(node, complete, refine=self.h.level + 1 < len(LEVELS))
        except _Refine:
            self.h = AbstractHeuristic(self.tables, self.goal, self.reference, level=self.h.level + 1)
            dag = self._astar(node, complete, refine=False)
        self._learn(dag)
        self.dags[node] = dag
        while len(self.dags) > _DAG_CACHE:
            self.dags.popitem(last=False)
        return dag

    def reachable(self, start: Node) -> bool:
        """Whether the goal can be reached from ``start`` at all: greedy best-first search on
        the heuristic (no optimality needed, so it goes straight for the goal)."""
        if self.exact.get(start) is not None or self.is_goal(*start):
            return True
        if self.h(*start) is None:
            return False
        if self.h.level + 1 < len(LEVELS):
            self.h = AbstractHeuristic(self.tables, self.goal, self.reference, level=len(LEVELS) - 1)
        seen = {start}
        heap: list[tuple[int, int, Node]] = [(0, 0, start)]
        counter = 0
        while heap:
            _, _, node = heapq.heappop(heap)
            self.expanded += 1
            for _, _, nxt in self.tables.successors(*node):
                if nxt in seen:
                    continue
                seen.add(nxt)
                if self.is_goal(*nxt):
                    return True
                hn = self.h(*nxt)
                if hn is not None:
                    counter += 1
                    heapq.heappush(heap, (hn, counter, nxt))
            if len(seen) > self.budget:
                raise SearchBudgetExceeded(self.budget, self.goal.key)
        return False

    def _from_exact(self, start: Node) -> Dag | None:
        """Every shortest path from ``start`` read off the exact distances already known, when
        they settle every step (each successor's distance is known, or the heuristic rules it
        out); None when a search is still needed."""
        d0 = self.exact.get(start)
        if d0 is None:
            return None
        steps: dict[Node, list[Step]] = {}
        stack = [start]
        while stack:
            node = stack.pop()
            d = self.exact[node]
            assert d is not None  # start's is d0; every node stacked below had a known d - 1
            if d == 0 or node in steps:
                continue
            out = []
            for ct, value, nxt in self.tables.successors(*node):
                known = self.exact.get(nxt, -1)
                if known == -1:
                    h = self.h(*nxt)
                    if h is not None and h <= d - 1:
                        return None  # could lie on a shortest path: search
                elif known == d - 1:
                    out.append((ct, value, nxt))
            if not out:
                return None
            steps[node] = sorted(out, key=step_order)
            stack.extend(nxt for _, _, nxt in out)
        return Dag(start, d0, steps)

    # ---- A* ----------------------------------------------------------------------------
    def _astar(self, start: Node, complete: bool, refine: bool = False) -> Dag:
        if self.is_goal(*start):
            return Dag(start, 0, {})
        h0 = self.h(*start)
        if h0 is None:
            return Dag(start, None, {})
        g: dict[Node, int] = {start: 0}
        parents: dict[Node, list[tuple[Node, CTrans, Any]]] = {start: []}
        closed: set[Node] = set()
        goals: list[Node] = []
        best: int | None = None
        counter = 0
        heap: list[tuple[int, int, int, Node]] = [(h0, 0, 0, start)]
        successors, heuristic, is_goal = self.tables.successors, self.h, self.is_goal
        while heap:
            f, neg_g, _, node = heapq.heappop(heap)
            if best is not None and (f > best or not complete):
                break
            gn = g[node]
            if node in closed or -neg_g != gn:
                continue
            closed.add(node)
            if is_goal(*node):
                best = gn if best is None else best
                goals.append(node)
                continue
            self.expanded += 1
            if refine and len(closed) > REFINE_AFTER:
                raise _Refine()
            if len(closed) > self.budget:
                raise SearchBudgetExceeded(self.budget, self.goal.key)
            ng = gn + 1
            for ct, value, nxt in successors(*node):
                if nxt == node:
                    continue
                old = g.get(nxt)
                if old is None or ng < old:
                    hn = heuristic(*nxt)
                    if hn is None:
                        continue
                    g[nxt] = ng
                    parents[nxt] = [(node, ct, value)]
                    if best is None or ng + hn <= best:
                        counter += 1
                        heapq.heappush(heap, (ng + hn, -ng, counter, nxt))
                elif ng == old:
                    parents[nxt].append((node, ct, value))
        if best is None:
            return Dag(start, None, {})
        return Dag(start, best, _forward(goals, parents, g, best), complete)

    def _learn(self, dag: Dag) -> None:
        """Every state on a shortest path gets its exact distance to the goal."""
        if dag.distance is None:
            self._remember(dag.start, None)
            return
        depth = {dag.start: 0}
        order = [dag.start]
        for node in order:
            for _, _, nxt in dag.next.get(node, ()):
                if nxt not in depth:
                    depth[nxt] = depth[node] + 1
                    order.append(nxt)
        for node, d in depth.items():
            self._remember(node, dag.distance - d)

    def _remember(self, node: Node, distance: int | None) -> None:
        self.exact[node] = distance
        self.exact.move_to_end(node)
        while len(self.exact) > _EXACT_CACHE:
            self.exact.popitem(last=False)


def _forward(goals: list[Node], parents: dict[Node, list[tuple[Node, CTrans, Any]]], g: dict[Node, int],
             best: int) -> dict[Node, list[Step]]:
    """The optimal-parent links from the goals back to the start, turned into forward steps."""
    out: dict[Node, list[Step]] = {}
    seen = set(n for n in goals if g[n] == best)
    stack = list(seen)
    while stack:
        node = stack.pop()
        for parent, ct, value in parents.get(node, ()):
            if g[parent] + 1 != g[node]:
                continue
            out.setdefault(parent, []).append((ct, value, node))
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    for steps in out.values():
        steps.sort(key=step_order)
    return out


def step_order(step: Step) -> tuple[int, int]:
    """Spec order: the transition's place in the spec, then the value's place among its values."""
    ct, value, _ = step
    if ct.values is not None:
        return ct.tm.index, ct.values.index(value) if value in ct.values else 0
    if ct.repeat_keys is not None:
        return ct.tm.index, ct.repeat_keys.index(value)
    if ct.event == "move":  # a sortable's "from>to", in the order move_values lists them
        src, _, dst = value.partition(">")
        return ct.tm.index, int(src) * 1000 + int(dst)
    if ct.sorter is not None:  # a heading's order, in the sort variable's order
        return ct.tm.index, ct.sorter[1].index(value) if value in ct.sorter[1] else 0
    return ct.tm.index, int(value)
