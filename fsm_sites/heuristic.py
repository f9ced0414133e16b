"""An admissible, consistent heuristic for a goal: the distance in an abstract machine.

The abstract state is (page id, which of a few *atoms* hold), where the atoms are the
goal's comparisons plus, space permitting, the guard comparisons of the transitions that
can change them. Every transition becomes abstract transitions: it requires the atoms its
guard names, keeps the atoms it cannot change, sets the ones its constant effects decide,
and may leave the others either way. Every concrete step is an abstract step, so the
abstract distance to the (abstract) goal never overestimates the real one, and it obeys
the triangle inequality; an abstract state that cannot reach the goal proves a dead end.
The abstract machine is small (pages x 2^atoms), solved once per goal by a backward
breadth-first search.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from itertools import product
from fsm_sites.check import Ctx, compile_bool
from fsm_sites.expr import SPECIAL_NAMES, Binary, Lit, Node, Unary, conjuncts, names
from fsm_sites.goals import GoalSpec
from fsm_sites.model import TransitionModel
from fsm_sites.tables import Tables

_ABSTRACT_STATES = 6000  # pages x 2^atoms at most


def _leaves(node: Node) -> list[Node]:
    if isinstance(node, Binary) and node.op in ("and", "or"):
        return _leaves(node.left) + _leaves(node.right)
    if isinstance(node, Unary) and node.op == "not":
        return _leaves(node.operand)
    return [] if isinstance(node, Lit) else [node]


def _kleene(node: Node, index: dict[Node, int]) -> Callable[[int], bool | None]:
    """The goal's truth for a mask of atoms: True, False, or None (unknown: an untracked leaf)."""
    if isinstance(node, Binary) and node.op in ("and", "or"):
        a, b = _kleene(node.left, index), _kleene(node.right, index)
        if node.op == "and":
            return lambda m: False if (x := a(m)) is False or (y := b(m)) is False else (None if None in (x, y) else True)
        return lambda m: True if (x := a(m)) is True or (y := b(m)) is True else (None if None in (x, y) else False)
    if isinstance(node, Unary) and node.op == "not":
        inner = _kleene(node.operand, index)
        return lambda m: None if (x := inner(m)) is None else not x
    if isinstance(node, Lit):
        value = bool(node.value)
        return lambda m: value
    bit = index.get(node)
    if bit is None:
        return lambda m: None
    return lambda m: bool(m >> bit & 1)


class AbstractHeuristic:
    """``h(page, values)``: a lower bound on the steps to the goal, or None where none exists."""

    def __init__(self, tables: Tables, goal: GoalSpec) -> None:
        self.tables = tables
        self.compiled = [ct for cts in tables.by_page.values() for ct in cts]
        kept = [ct.tm for ct in self.compiled]
        self.transitions = kept
        pages = sorted(tables.model.pages)
        self.atoms = self._choose_atoms(goal, kept, max(1, len(pages)))
        index = {atom: i for i, atom in enumerate(self.atoms)}
        self.atom_fns = [compile_bool(a, self._env()) for a in self.atoms]
        goal_page = None
        if goal.page:
            goal_page = tables.page_of(goal.page)[0] if goal.page_exact else goal.page
        truth = _kleene(goal.node, index) if goal.node is not None else (lambda m: None)
        self.dist = self._solve(pages, goal_page, truth, index)

    def _env(self):
        env = self.tables.model.env("")
        env.position = self.tables.position
        return env

    def _trackable(self, node: Node) -> bool:
        read = names(node)
        return not (read & set(SPECIAL_NAMES)) and read <= set(self.tables.position)

    def _choose_atoms(self, goal: GoalSpec, kept: list[TransitionModel], pages: int) -> list[Node]:
        limit = max(0, (_ABSTRACT_STATES // pages).bit_length() - 1)
        atoms: list[Node] = []
        candidates = _leaves(goal.node) if goal.node is not None else []
        for atom in candidates:
            if len(atoms) < limit and atom not in atoms and self._trackable(atom):
                atoms.append(atom)
        frontier = set().union(*(names(a) for a in atoms)) if atoms else set()
        for tm in kept:  # the guards of the transitions that change what the goal reads
            if tm.writes & frontier:
                for atom in conjuncts(tm.guard):
                    if len(atoms) < limit and atom not in atoms and not isinstance(atom, Lit) and self._trackable(atom):
                        atoms.append(atom)
        return atoms

    def _effect_of(self, ct) -> tuple[int, int, int, int, int]:
        """(required mask, required values, kept mask, decided mask, decided values) of a transition."""
        tm = ct.tm
        req = req_val = 0
        for part in conjuncts(tm.guard):
            negated = isinstance(part, Unary) and part.op == "not"
            atom = part.operand if negated else part  # type: ignore[attr-defined]
            if atom in self.atoms:
                bit = 1 << self.atoms.index(atom)
                req |= bit
                req_val |= 0 if negated else bit
        written = tm.writes
        keep = decided = decided_val = 0
        constants = _constant_writes(tm)
        after = self._after_on_defaults(ct) if constants else None
        for i, atom in enumerate(self.atoms):
            read = names(atom) - set(SPECIAL_NAMES)
            if not read & written:
                keep |= 1 << i
            elif after is not None and read <= constants:
                decided |= 1 << i
                decided_val |= (1 << i) if self.atom_fns[i](after, Ctx()) else 0
        return req, req_val, keep, decided, decided_val

    def _after_on_defaults(self, ct) -> tuple | None:
        """The values after the transition's effects, run on the defaults (only the variables it
        sets to constants are read from this); None if they need more than the variables."""
        defaults = self.tables.model.schema.defaults
        w = [defaults[n] for n in self.tables.layout]
        try:
            for effect in ct.effects:
                effect(w, Ctx())
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            return None
        return tuple(w)

    def _solve(self, pages: list[str], goal_page: str | None, truth: Callable[[int], bool | None],
               index: dict[Node, int]) -> dict[tuple[str, int], int]:
        masks = range(1 << len(self.atoms))
        dist: dict[tuple[str, int], int] = {}
        queue: deque[tuple[str, int]] = deque()
        for page in pages:
            if goal_page is not None and page != goal_page:
                continue
            for m in masks:
                if truth(m) is not False:
                    dist[(page, m)] = 0
                    queue.append((page, m))
        into: dict[str, list[tuple[str, tuple[int, int, int, int, int]]]] = {}
        for ct in self.compiled:
            into.setdefault(ct.target or ct.page, []).append((ct.page, self._effect_of(ct)))
        n = len(self.atoms)
        while queue:
            page, m2 = queue.popleft()
            d = dist[(page, m2)] + 1
            for source, (req, req_val, keep, decided, decided_val) in into.get(page, ()):
                if m2 & decided != decided_val:
                    continue
                free = [i for i in range(n) if not keep >> i & 1]
                base = m2 & keep
                for bits in product((0, 1), repeat=len(free)):
                    m = base
                    for i, b in zip(free, bits, strict=True):
                        m |= b << i
                    if m & req == req_val and (source, m) not in dist:
                        dist[(source, m)] = d
                        queue.append((source, m))
        return dist

    def __call__(self, page: str, vals: tuple) -> int | None:
        pid, args = self.tables.page_of(page)
        m = 0
        ctx = Ctx(args)
        for i, fn in enumerate(self.atom_fns):
            if fn(vals, ctx):
                m |= 1 << i
        return self.dist.get((pid, m))


def _constant_writes(tm: TransitionModel) -> set[str]:
    """Variables the effects set to a value known in advance (clear, or set to a literal),
    unless a later effect changes them again in a way that depends on the state."""
    from fsm_sites.expr import Const, Name

    out: set[str] = set()
    for plan in tm.plans:
        if plan.kind == "clear" or (plan.kind == "set" and isinstance(plan.target, Name)
                                    and isinstance(plan.expr, (Lit, Const))):
            out.add(plan.var)
        else:
            out.discard(plan.var)
    return out
