"""An admissible, consistent heuristic for a goal: the distance in an abstract machine.

The abstract state is (page instance, which of a few *atoms* hold). The atoms are the
goal's comparisons; then, for a goal such as ``{pet: 'rex', day: 'mon'} in bookings``,
the comparisons an ``add`` needs to produce that item (``form_day == 'mon'``: the form
must hold it before the submit); then the guards of the transitions that change them.
Pages with small parameter domains are told apart by their parameters (``book(rex)`` vs
``book(milo)``), so a comparison with a parameter is decided per page.

Every concrete step maps to an abstract step (``fsm_sites.engine.abstract_edges`` builds them,
with each atom kept, set, left free, or set when the atoms it needs hold), so the
abstract distance to the abstract goal never overestimates the real one and obeys the
triangle inequality (consistent), and an abstract state that cannot reach the goal proves
a dead end. The abstract machine (instances x 2^atoms) is solved once per goal by a
backward breadth-first search.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from fsm_sites.engine.abstract_edges import AbstractEdge, build_edges, page_instances
from fsm_sites.engine.atoms import choose_atoms, leaves, reads_vars, relax
from fsm_sites.engine.goals import GoalSpec
from fsm_sites.engine.numeric import NumericBound
from fsm_sites.engine.tables import Tables
from fsm_sites.spec.check import Ctx, compile_bool
from fsm_sites.spec.expr import Binary, Lit, Node, Unary

LEVELS = (1_500, 24_000)  # page instances x 2^atoms at most: a small abstraction first, a finer one if needed


def kleene(node: Node, index: dict[Node, int], fixed: Callable[[Node], bool | None]) -> Callable[[int], bool | None]:
    """The goal's truth for a mask of atoms: True, False, or None (unknown: an untracked leaf).
    ``fixed`` decides leaves that depend only on the page's parameters."""
    if isinstance(node, Binary) and node.op in ("and", "or"):
        a, b = kleene(node.left, index, fixed), kleene(node.right, index, fixed)
        if node.op == "and":
            return lambda m: False if (x := a(m)) is False or (y := b(m)) is False else (None if None in (x, y) else True)
        return lambda m: True if (x := a(m)) is True or (y := b(m)) is True else (None if None in (x, y) else False)
    if isinstance(node, Unary) and node.op == "not":
        inner = kleene(node.operand, index, fixed)
        return lambda m: None if (x := inner(m)) is None else not x
    if isinstance(node, Binary) and node.op == "not in":
        return kleene(Unary("not", Binary("in", node.left, node.right)), index, fixed)
    if isinstance(node, Lit):
        value = bool(node.value)
        return lambda m: value
    bit = index.get(node)
    if bit is None:
        known = fixed(node)
        return lambda m: known
    return lambda m: bool(m >> bit & 1)


class AbstractHeuristic:
    """``h(page, values)``: a lower bound on the steps to the goal, or None where none exists."""

    def __init__(self, tables: Tables, goal: GoalSpec, reference: tuple[str, tuple] | None = None,
                 level: int = 0) -> None:
        self.tables = tables
        self.level = level
        compiled = [ct for cts in tables.by_page.values() for ct in cts]
        self.instances = page_instances(tables)
        count = sum(len(v) for v in self.instances.values())
        limit = max(0, (LEVELS[level] // max(1, count)).bit_length() - 1)
        self.goal_node = relax(goal.node, tables)
        self.atoms = choose_atoms(tables, self.goal_node, compiled, limit, reference)
        env = tables.model.env("")
        env.position = tables.position
        self.atom_fns = [compile_bool(a, env) for a in self.atoms]
        edges = build_edges(tables, compiled, self.atoms, self.instances)
        self.dist = self._solve(goal, edges)
        self._known = {inst for insts in self.instances.values() for inst, _ in insts}
        self.numeric = NumericBound(tables, self.goal_node)
        self._memo: dict[tuple[str, tuple], int | None] = {}

    def _goal_states(self, goal: GoalSpec) -> list[tuple[str, int]]:
        index = {atom: i for i, atom in enumerate(self.atoms)}
        out: list[tuple[str, int]] = []
        for pid, insts in self.instances.items():
            for inst, args in insts:
                if goal.page is not None:
                    if goal.page_exact and inst != goal.page and not (args is None and pid == self.tables.page_of(goal.page)[0]):
                        continue
                    if not goal.page_exact and pid != goal.page:
                        continue
                truth = (kleene(self.goal_node, index, self._param_leaf(pid, args))
                         if self.goal_node is not None else (lambda m: None))
                out.extend((inst, m) for m in range(1 << len(self.atoms)) if truth(m) is not False)
        return out

    def _param_leaf(self, pid: str, args: dict | None) -> Callable[[Node], bool | None]:
        """A leaf that reads only page parameters, decided on this page instance."""
        def decide(node: Node) -> bool | None:
            if args is None or reads_vars(node, self.tables) or not self.tables.model.schema.params.get(pid):
                return None
            try:
                env = self.tables.model.env(pid)
                env.position = self.tables.position
                return bool(compile_bool(node, env)((), Ctx(args)))
            except Exception:  # noqa: BLE001 - a leaf this page cannot decide stays unknown
                return None

        return decide

    def _solve(self, goal: GoalSpec, edges: list[AbstractEdge]) -> dict[tuple[str, int], int]:
        dist: dict[tuple[str, int], int] = {}
        queue: deque[tuple[str, int]] = deque()
        for state in self._goal_states(goal):
            dist[state] = 0
            queue.append(state)
        into: dict[str, list[tuple[AbstractEdge, list[int]]]] = {}
        for edge in edges:
            subs = edge.subs()
            for target in edge.targets:
                into.setdefault(target, []).append((edge, subs))
        while queue:
            inst, m2 = queue.popleft()
            d = dist[(inst, m2)] + 1
            for edge, subs in into.get(inst, ()):
                for m in edge.predecessors(m2, subs):
                    key = (edge.source, m)
                    if key not in dist:
                        dist[key] = d
                        queue.append(key)
        return dist

    def __call__(self, page: str, vals: tuple) -> int | None:
        key = (page, vals)
        if key in self._memo:
            return self._memo[key]
        if len(self._memo) >= 200_000:
            self._memo.clear()
        self._memo[key] = h = self._compute(page, vals)
        return h

    def _compute(self, page: str, vals: tuple) -> int | None:
        pid, args = self.tables.page_of(page)
        inst = page if page in self._known else pid
        m = 0
        ctx = Ctx(args)
        for i, fn in enumerate(self.atom_fns):
            if fn(vals, ctx):
                m |= 1 << i
        h = self.dist.get((inst, m))
        if h is None or not self.numeric.parts:
            return h
        return max(h, self.numeric(vals))


__all__ = ["AbstractHeuristic", "kleene", "leaves"]
