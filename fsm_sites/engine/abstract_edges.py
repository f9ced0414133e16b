"""The abstract machine behind ``fsm_sites.engine.heuristic``: atoms, page instances and edges.

An abstract edge says, for one transition fired on one page instance with one event
value, which atoms it needs (its guard), where it can go, and what happens to each atom:
kept, set to a value its constant effects decide, free (either way), may become true or
false, or may become true only when other atoms hold (an ``add`` of a record built from
form fields: ``form_day == 'mon'`` must hold for ``{..., day: 'mon'} in bookings`` to
become true). Every outcome a concrete step can have is allowed, so the abstraction
over-approximates the machine, which keeps its distances admissible.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import product
from typing import Any

from fsm_sites.engine.atoms import entry_key, field_nodes, item_shape
from fsm_sites.engine.tables import CTrans, Tables
from fsm_sites.spec.check import Ctx, compile_bool, compile_expr
from fsm_sites.spec.expr import (
    ITEM_NAMES,
    Attr,
    Binary,
    Index,
    Lit,
    Name,
    Node,
    Unary,
    conjuncts,
    names,
)
from fsm_sites.spec.model_goals import page_string
from fsm_sites.spec.schema import TOAST_VAR
from fsm_sites.spec.types import BoolT, EnumT, IntT, VType

_INSTANCES_PER_PAGE = 30
_UNKNOWN = object()


def page_instances(tables: Tables) -> dict[str, list[tuple[str, dict[str, Any] | None]]]:
    """Each page's instances ``(page string, parameters)``; one ``(id, None)`` for a page
    whose parameters have too many values to tell apart."""
    out: dict[str, list[tuple[str, dict[str, Any] | None]]] = {}
    for pid in tables.model.pages:
        params = tables.params.get(pid, ())
        domains = [_domain(t) for _, t in params]
        size = 1
        for d in domains:
            size *= len(d) if d is not None else 10**9
        if not params:
            out[pid] = [(pid, {})]
        elif size <= _INSTANCES_PER_PAGE:
            out[pid] = [(page_string(pid, combo), dict(zip([p for p, _ in params], combo, strict=True)))
                        for combo in product(*domains)]  # type: ignore[arg-type]
        else:
            out[pid] = [(pid, None)]
    return out


def _domain(t: VType) -> list[Any] | None:
    if isinstance(t, EnumT):
        return list(t.values)
    if isinstance(t, BoolT):
        return [False, True]
    if isinstance(t, IntT) and t.hi - t.lo < _INSTANCES_PER_PAGE:
        return list(range(t.lo, t.hi + 1))
    return None


@dataclass(frozen=True)
class AbstractEdge:
    source: str
    targets: tuple[str, ...]
    req_mask: int
    req_val: int
    keep: int  # atoms the step cannot change
    set_mask: int
    set_val: int
    up: int  # may become true
    down: int  # may become false
    conds: tuple[tuple[int, int, int], ...]  # (bit, needs mask, needs values): may become true only then
    width: int

    def subs(self) -> list[int]:
        """The values the changeable atoms may have had before, that meet the guard there."""
        free = ((1 << self.width) - 1) & ~self.keep
        need, need_val = self.req_mask & free, self.req_val & free
        out, sub = [], free
        while True:
            if sub & need == need_val:
                out.append(sub)
            if sub == 0:
                break
            sub = (sub - 1) & free
        return out

    def predecessors(self, m2: int, subs: list[int]) -> Iterator[int]:
        """Every mask from which this edge can lead to ``m2`` (``subs``: from ``subs()``)."""
        if m2 & self.set_mask != self.set_val:
            return
        base = m2 & self.keep
        kept_req = self.req_mask & self.keep
        if base & kept_req != self.req_val & kept_req:
            return
        up, down, conds = self.up, self.down, self.conds
        for sub in subs:
            m = base | sub
            if (up and m & ~m2 & up) or (down and m2 & ~m & down) or (conds and not self._conds_ok(m, m2)):
                continue
            yield m

    def _conds_ok(self, m: int, m2: int) -> bool:
        for bit, need, need_val in self.conds:
            before, after = m >> bit & 1, m2 >> bit & 1
            if after != before and not (after and m & need == need_val):
                return False
        return True


def build_edges(tables: Tables, compiled: list[CTrans], atoms: list[Node],
                instances: dict[str, list[tuple[str, dict[str, Any] | None]]]) -> list[AbstractEdge]:
    builder = _Builder(tables, atoms, instances)
    out: set[AbstractEdge] = set()
    for ct in compiled:
        for inst, args in instances.get(ct.page, ()):
            for value in (ct.values if ct.values is not None else (_UNKNOWN,)):
                edge = builder.edge(ct, inst, args, value)
                if edge is not None:
                    out.add(edge)
    return sorted(out, key=lambda e: (e.source, e.targets, e.req_mask, e.req_val, e.keep, e.set_mask, e.set_val))


class _Builder:
    def __init__(self, tables: Tables, atoms: list[Node], instances: dict) -> None:
        self.tables = tables
        self.atoms = atoms
        self.instances = instances
        self.index = {a: i for i, a in enumerate(atoms)}
        env = tables.model.env("")
        env.position = tables.position
        self.atom_fns = [compile_bool(a, env) for a in atoms]
        self.atom_reads = [names(a) for a in atoms]
        self.shapes = [item_shape(a, tables) for a in atoms]
        self.entry_keys = [entry_key(a) for a in atoms]
        self.defaults = [tables.model.schema.defaults[n] for n in tables.layout]

    def _const(self, node: Node, ct: CTrans, args: dict | None, value: Any) -> tuple[bool, Any]:
        """(known, value) of an expression that may read only parameters and the event value."""
        read = names(node)
        if read & set(self.tables.model.schema.variables) or read & ITEM_NAMES:
            return False, None
        if (args is None and read - {"value"}) or (value is _UNKNOWN and "value" in read):
            return False, None
        env = self.tables._env(ct.page, value=ct.tm.value_type)
        try:
            return True, compile_expr(node, env)[0](tuple(self.defaults), Ctx(args or {}, None if value is _UNKNOWN else value))
        except Exception:  # noqa: BLE001 - an expression this instance cannot decide stays unknown
            return False, None

    def edge(self, ct: CTrans, inst: str, args: dict | None, value: Any) -> AbstractEdge | None:
        req = req_val = 0
        for part in conjuncts(ct.tm.guard):
            negated = isinstance(part, Unary) and part.op == "not"
            inner = part.operand if negated else part  # type: ignore[attr-defined]
            if isinstance(inner, Binary) and inner.op == "not in":
                negated, inner = not negated, Binary("in", inner.left, inner.right)
            if inner in self.index:
                bit = 1 << self.index[inner]
                req |= bit
                req_val |= 0 if negated else bit
                continue
            known, holds = self._const(part, ct, args, value)
            if known and not holds:
                return None  # the guard fails on this page instance or for this value
        targets = self._targets(ct, inst, args, value)
        return self._outcomes(ct, inst, targets, args, value, req, req_val)

    def _targets(self, ct: CTrans, inst: str, args: dict | None, value: Any) -> tuple[str, ...]:
        if ct.target is None:
            return (inst,)
        choices = self.instances.get(ct.target, [(ct.target, {})])
        if len(choices) == 1:
            return (choices[0][0],)
        picked = []
        for _, node in ct.tm.args:
            known, arg = self._const(node, ct, args, value)
            if not known:
                return tuple(i for i, _ in choices)
            picked.append(arg)
        params = self.tables.params.get(ct.target, ())
        converted = tuple(conv(a) for (_, conv), a in zip(ct.args, picked, strict=True)) if ct.args else ()
        target = page_string(ct.target, converted) if params else ct.target
        return (target,)

    def _outcomes(self, ct: CTrans, inst: str, targets: tuple[str, ...], args: dict | None, value: Any,
                  req: int, req_val: int) -> AbstractEdge:
        plans = [p for p in ct.tm.plans if p.var in self.tables.position]
        written = {p.var for p in plans}
        constant = self._constant_vars(ct, plans, args, value)
        if ct.toast:  # the toast variable: set by every transition, to a constant
            written.add(TOAST_VAR)
            constant.add(TOAST_VAR)
        after = self._after(ct, args, value) if constant else None
        keep = set_mask = set_val = up = down = 0
        conds = []
        for i, read in enumerate(self.atom_reads):
            bit = 1 << i
            if not read & written:
                keep |= bit
            elif after is not None and read <= constant:
                set_mask |= bit
                set_val |= bit if self.atom_fns[i](after, Ctx()) else 0
            else:
                kind, need = self._regress(i, ct, plans, args, value)
                if kind == "keep":
                    keep |= bit
                elif kind == "up":
                    up |= bit
                elif kind == "down":
                    down |= bit
                elif kind == "cond":
                    conds.append((i, need[0], need[1]))
                # else: free either way
        return AbstractEdge(inst, targets, req, req_val, keep, set_mask, set_val, up, down, tuple(conds), len(self.atoms))

    def _constant_vars(self, ct: CTrans, plans: list, args: dict | None, value: Any) -> set[str]:
        out: set[str] = set()
        for plan in plans:
            if plan.kind == "clear" or (plan.kind == "set" and isinstance(plan.target, Name)
                                        and self._const(plan.expr, ct, args, value)[0]):
                out.add(plan.var)
            else:
                out.discard(plan.var)
        return out

    def _after(self, ct: CTrans, args: dict | None, value: Any) -> tuple | None:
        w = list(self.defaults)
        try:
            for effect in ct.effects:
                effect(w, Ctx(args or {}, None if value is _UNKNOWN else value))
            if ct.toast:
                w[ct.toast[0]] = ct.toast[1]
        except Exception:  # noqa: BLE001 - effects that need more than the defaults: not decided
            return None
        return tuple(w)

    def _entry_untouched(self, i: int, ct: CTrans, plans: list, args: dict | None, value: Any) -> bool:
        """An atom on one map entry (``m['k'] ...``) that the effects leave alone: they set other
        entries only (their keys known on this page instance)."""
        key = self.entry_keys[i]
        if key is None:
            return False
        var, wanted = key
        for plan in plans:
            if plan.var != var:
                continue
            target = plan.target
            if plan.kind != "set" or not isinstance(target, (Index, Attr)) or not isinstance(target.obj, Name):
                return False
            node = target.key if isinstance(target, Index) else Lit(target.name)
            known, got = self._const(node, ct, args, value)
            if not known or got == wanted:
                return False
        return True

    def _regress(self, i: int, ct: CTrans, plans: list, args: dict | None, value: Any) -> tuple[str, Any]:
        """How an atom ``X in S`` / ``any(S, ...)`` changes through the effects on S."""
        if self._entry_untouched(i, ct, plans, args, value):
            return "keep", None
        shape = self.shapes[i]
        if shape is None or self.atom_reads[i] != {shape[0]}:
            return "free", None
        var, wanted = shape
        mine = [p for p in plans if p.var == var]
        if len(mine) != 1:
            return "free", None
        plan = mine[0]
        if plan.kind in ("remove", "remove_where"):
            return "down", None
        if plan.kind != "add":
            return "free", None
        need = need_val = 0
        for node, want in field_nodes(plan.expr, wanted):
            known, got = self._const(node, ct, args, value)
            if known:
                if got != want:
                    return "keep", None  # this add makes another item: the atom is unchanged
                continue
            atom = Binary("==", node, Lit(want))
            if atom not in self.index:
                return "up", None
            need |= 1 << self.index[atom]
            need_val |= 1 << self.index[atom]
        return ("cond", (need, need_val)) if need else ("up", None)
