"""Goals proved unreachable without enumerating states: abstract interpretation of the spec.

Two over-approximations of what the machine can reach from its initial state and the
start states the spec names (a goal may begin in one), each cheap whatever the number of
states:

1. **Bounds** (``Bounds``): per variable, every value any reachable state can give it (a
   set for a scalar: the initial value, then each value an enabled transition can write)
   and, for a list or set, how few and how many items it can hold (it grows by one per
   ``add`` up to ``max_len``, shrinks only by ``remove``/``clear``; a list nobody removes
   from never gets shorter). A transition counts only while its guard may hold under the
   bounds found so far, so a guard that can never hold adds nothing. Iterated to a
   fixpoint. A goal whose condition is false for every combination of these values is
   unreachable (``count(bookings) > 2`` with ``max_len: 2``, ``count(pets) == 0`` on a
   list that starts with items and never shrinks).
2. **Invariant** (``_never_becomes_true``): the goal's condition is false in those states, and
   no transition can make it true from a state where it is false, for every combination
   of the bounded values of what that transition and the goal read. This proves goals
   that tie variables together: ``sms and phone == ''`` when texts can be turned on only
   with a phone number, and the number cannot be cleared while they are on.

Both are sound (a goal they call unreachable is unreachable) but incomplete: a goal they
cannot prove unreachable is decided by search, or left undecided when the search runs
out of budget.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from itertools import product
from typing import Any

from fsm_sites.engine.goals import GoalSpec
from fsm_sites.spec.check import Ctx, compile_bool
from fsm_sites.spec.expr import Binary, Call, Const, ListLit, Lit, Name, Node, Unary, names
from fsm_sites.spec.schema import TOAST_VAR
from fsm_sites.spec.types import BoolT, EnumT, IntT, SeqT, TextT, VType

_MAX_SET = 512  # scalar domains tracked value by value up to this size
_MAX_PAIRS = 10_000  # value combinations one operator is evaluated on
_MAX_COMBOS = 50_000  # states one transition is tried in by the invariant check
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge, "+": operator.add, "-": operator.sub, "*": operator.mul}
_BOTH = frozenset((False, True))

Abs = frozenset | None  # the values an expression may have (None: any)


@dataclass(frozen=True)
class Span:
    """How many items a list or set may hold: from ``lo`` to ``hi``."""

    lo: int
    hi: int

    def join(self, other: Span) -> Span:
        return Span(min(self.lo, other.lo), max(self.hi, other.hi))


def domain(t: VType) -> frozenset | None:
    """Every value of a scalar type, when there are few enough to track one by one."""
    if isinstance(t, BoolT):
        return _BOTH
    if isinstance(t, EnumT):
        return frozenset(t.values)
    if isinstance(t, TextT):
        return frozenset(t.classes())
    if isinstance(t, IntT) and t.hi - t.lo < _MAX_SET:
        return frozenset(range(t.lo, t.hi + 1))
    return None


class Bounds:
    """Per variable, the values (or, for a list or set, the sizes) reachable states can hold."""

    def __init__(self, machine: Any) -> None:
        self.machine = machine
        self.variables: dict[str, VType] = machine.schema.variables
        self.values: dict[str, Any] = {}
        for state in self.origins(machine):  # a goal's own start may not be proved reachable yet
            for name, t in self.variables.items():
                init = state.get(name)
                got = Span(len(init), len(init)) if isinstance(t, SeqT) else (
                    frozenset((init,)) if domain(t) is not None else None)
                self.values[name] = self._join(self.values[name], got) if name in self.values else got
        self._fixpoint()

    @staticmethod
    def origins(machine: Any) -> list[Any]:
        """The states the bounds start from: the initial state and every start state the spec names."""
        return [machine.canonical(machine.initial), *(machine.canonical(machine.named_start(s.id))
                                                      for s in machine.spec.starts)]

    # ---- the fixpoint ------------------------------------------------------------------
    def _fixpoint(self) -> None:
        changed = True
        while changed:
            changed = False
            for tm in self.machine.model.transitions:
                for var, got in self._writes(tm).items():
                    joined = self._join(self.values[var], got)
                    if joined != self.values[var]:
                        self.values[var], changed = joined, True

    def _writes(self, tm: Any) -> dict[str, Any]:
        """What firing ``tm`` may leave in each variable it writes (nothing if it cannot fire)."""
        env = self._env(tm.t.page, tm.edge_values)
        if self.truth(tm.guard, env) == frozenset((False,)):
            return {}
        local = dict(self.values)
        for plan in tm.plans:
            local[plan.var] = self._effect(plan, local, env)
        out = {plan.var: local[plan.var] for plan in tm.plans}
        if TOAST_VAR in self.variables:  # every transition sets the toast: its own message, or none
            out[TOAST_VAR] = frozenset((tm.t.id if tm.t.toast else "",))
        return out

    def _effect(self, plan: Any, local: dict[str, Any], env: dict[str, Any]) -> Any:
        var = plan.var
        t, now = self.variables[var], local[var]
        if isinstance(t, SeqT):
            assert isinstance(now, Span)
            if plan.kind == "clear":
                return Span(0, 0)
            if plan.kind == "add":
                return Span(now.lo, min(now.hi + 1, t.max_len))
            if plan.kind == "remove" and (t.unique or not t.ordered):
                return Span(max(0, now.lo - 1), now.hi)  # one item at most: no duplicates
            if plan.kind in ("update", "move"):
                return now
            return Span(0, t.max_len)  # remove_where, a whole new value: any size
        if plan.kind == "clear":
            return frozenset((self.machine.schema.defaults[var],))
        if plan.kind == "set" and isinstance(plan.target, Name):
            return self._fit(t, self.value_of(plan.expr, {**local, **env}))
        return domain(t)  # a field, an entry, the pager's clamp: anything of its type

    @staticmethod
    def _fit(t: VType, got: Abs) -> Abs:
        """Values written to a variable of type ``t``: ints clamped, text by its class."""
        if got is None:
            return domain(t)
        try:  # as the effect converts them (``fsm_sites.spec.check.converter``)
            if isinstance(t, IntT):
                return frozenset(t.clamp(int(v)) for v in got)
            if isinstance(t, BoolT):
                return frozenset(v if isinstance(v, bool) else str(v).strip().lower() in ("true", "1", "yes", "on")
                                 for v in got)
            if isinstance(t, TextT):
                return frozenset(t.classify(t.normalize(v)) for v in got)
        except (TypeError, ValueError):
            return domain(t)
        return got

    @staticmethod
    def _join(a: Any, b: Any) -> Any:
        if isinstance(a, Span) and isinstance(b, Span):
            return a.join(b)
        if a is None or b is None:
            return None
        return a | b

    def _env(self, page: str, values: tuple | None = None) -> dict[str, Any]:
        env: dict[str, Any] = {name: domain(t) for name, t in self.machine.schema.params.get(page, ())}
        env["value"] = None if values is None or values == (None,) else frozenset(values)
        return env

    # ---- abstract evaluation -------------------------------------------------------------
    def truth(self, node: Node, env: dict[str, Any]) -> frozenset:
        """The truth values ``node`` may take."""
        got = self.value_of(node, env)
        return _BOTH if got is None else frozenset(bool(v) for v in got)

    def value_of(self, node: Node, env: dict[str, Any]) -> Abs:
        """The values ``node`` may take in ``env`` (None: any value); an abstract
        interpretation of the parsed expression, nothing is executed."""
        if isinstance(node, (Lit, Const)):
            return frozenset((node.value,))
        if isinstance(node, Name):
            got = self._lookup(node.name, env)
            return None if isinstance(got, Span) else got
        if isinstance(node, Unary):
            inner = self.truth(node.operand, env) if node.op == "not" else self.value_of(node.operand, env)
            if inner is None:
                return None
            return frozenset((not v) if node.op == "not" else -v for v in inner)
        if isinstance(node, Binary):
            return self._binary(node, env)
        if isinstance(node, Call):
            return self._call(node, env)
        return None

    def _lookup(self, name: str, env: dict[str, Any]) -> Any:
        """A parameter, ``value`` or an effect's earlier result (``env``), else the variable's bounds."""
        return env[name] if name in env else self.values.get(name)

    def _binary(self, node: Binary, env: dict[str, Any]) -> Abs:
        if node.op in ("and", "or"):
            lt, rt = self.truth(node.left, env), self.truth(node.right, env)
            return frozenset((a and b) if node.op == "and" else (a or b) for a in lt for b in rt)
        if node.op in ("in", "not in"):
            found = self._member(node, env)
            return None if found is None else frozenset(v if node.op == "in" else not v for v in found)
        left, right = self.value_of(node.left, env), self.value_of(node.right, env)
        fn = _COMPARE.get(node.op)
        if fn is None or left is None or right is None or len(left) * len(right) > _MAX_PAIRS:
            return None
        if len({type(v) for v in left | right}) > 1:
            return None  # a number against its text (a select's value): the compiled code converts, we do not
        try:
            return frozenset(fn(a, b) for a in left for b in right)
        except TypeError:
            return None

    def _member(self, node: Binary, env: dict[str, Any]) -> Abs:
        """The truth of ``x in S``: false while S is empty; for a list of literals, by value."""
        coll = node.right
        span = self._lookup(coll.name, env) if isinstance(coll, Name) else None
        if isinstance(span, Span):
            return frozenset((False,)) if span.hi == 0 else None
        if isinstance(coll, ListLit):
            left = self.value_of(node.left, env)
            items = [self.value_of(item, env) for item in coll.items]
            if left is None or any(i is None for i in items):
                return None
            out = set()
            for v in left:
                out.add(any(v in i for i in items))  # type: ignore[operator]
                out.add(not any(i == frozenset((v,)) for i in items))
            return frozenset(out)
        return None

    def _call(self, node: Call, env: dict[str, Any]) -> Abs:
        first = node.args[0] if node.args else None
        span = self._lookup(first.name, env) if isinstance(first, Name) else None
        if not isinstance(span, Span):
            return None
        if node.fn == "count":
            return frozenset(range(span.lo if len(node.args) == 1 else 0, span.hi + 1))
        if node.fn == "any" and span.hi == 0:
            return frozenset((False,))
        if node.fn == "all" and span.hi == 0:
            return frozenset((True,))
        return None

    # ---- reporting ---------------------------------------------------------------------
    def describe(self, var: str) -> str:
        """What the bounds say of one variable, for a message."""
        got, t = self.values.get(var), self.variables.get(var)
        if isinstance(got, Span):
            if got.lo == got.hi:
                return f"{var} always holds {got.lo} item(s)"
            return f"{var} holds {got.lo} to {got.hi} items"
        if got is None or t is None or got == domain(t):
            return f"{var} may hold any value of its type"
        shown = ", ".join(repr(v) for v in sorted(got, key=str))
        return f"{var} is only ever {shown}"


def unreachable_because(machine: Any, bounds: Bounds, goal: GoalSpec) -> str | None:
    """Why ``goal`` holds in no reachable state, or None when that cannot be proved here."""
    if goal.node is None:
        return None
    env = bounds._env(goal.page.split("(")[0]) if goal.page else {"value": None}
    if bounds.truth(goal.node, env) == frozenset((False,)):
        read = sorted(names(goal.node) & set(bounds.variables))
        said = "; ".join(bounds.describe(v) for v in read)
        return f"its condition is false for every value its variables can reach ({said})"
    if _never_becomes_true(machine, bounds, goal):
        return ("its condition is false at the start and no transition can make it true from a state where it "
                "is false (each transition's guard rules that out)")
    return None


def _never_becomes_true(machine: Any, bounds: Bounds, goal: GoalSpec) -> bool:
    """Whether the goal's condition is an invariant's negation: false initially and kept false
    by every transition, tried on every combination of the bounded values it reads."""
    node = goal.node
    assert node is not None
    if goal.params or goal.reads is None:
        return False
    tables = machine.full
    env = tables.model.env("")
    env.position = tables.position
    try:
        condition = compile_bool(node, env)
    except Exception:  # noqa: BLE001 - a condition that needs a page's parameters: not decided here
        return False
    origins = [tables.canonical(machine.node(state)[1]) for state in Bounds.origins(machine)]
    if any(condition(vals, Ctx({})) for vals in origins):
        return False
    initial = origins[0]
    reads = set(goal.reads)
    for cts in tables.by_page.values():
        for ct in cts:
            if ct.tm.writes & reads and not _keeps_false(tables, bounds, ct, reads, condition, initial):
                return False
    return True


def _keeps_false(tables: Any, bounds: Bounds, ct: Any, reads: set[str], condition: Any, initial: tuple) -> bool:
    tm = ct.tm
    if ct.values is None or names(tm.guard) & {"it", "row"}:
        return False  # a repeated element's copies depend on the collection: not tried here
    variables = sorted((reads | set(tm.reads)) & set(tables.position))
    choices = []
    for var in variables:
        got = bounds.values.get(var)
        if got is None or isinstance(got, Span):
            return False
        choices.append(sorted(got, key=str))
    params = tables.params.get(ct.page, ())
    param_choices = []
    for _, t in params:
        d = domain(t)
        if d is None:
            return False
        param_choices.append(sorted(d, key=str))
    total = len(ct.values)
    for c in (*choices, *param_choices):
        total *= len(c)
    if total > _MAX_COMBOS:
        return False
    positions = [tables.position[v] for v in variables]
    for combo in product(*choices):
        w = list(initial)
        for at, v in zip(positions, combo, strict=True):
            w[at] = v
        vals = tuple(w)
        if condition(vals, Ctx({})):
            continue
        for args in product(*param_choices):
            ctx = Ctx(dict(zip([p for p, _ in params], args, strict=True)))
            for value in ct.values:
                ctx.value = value
                if ct.guard is not None and not ct.guard(vals, ctx):
                    continue
                _, after = tables.fire(ct, ct.page, vals, ctx)
                if condition(tables.canonical(after), Ctx({})):
                    return False
    return True


__all__ = ["Bounds", "Span", "domain", "unreachable_because"]
