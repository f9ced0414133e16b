"""A lower bound for goals that need counting: ``cart['mug'] == 2`` takes two "+1" steps.

For each top-level goal comparison that wants an int (a variable or a map entry) to be at
least some target, every step that can raise it raises one entry by one (checked on the
spec: the only writes that may increase it are ``x := x + 1`` / ``m[k] := m[k] + 1``, and no
transition has two of them). Then the sum of the shortfalls never overestimates the steps
left, and a step lowers it by at most one, so it is consistent and can be combined with the
abstract heuristic by taking the larger of the two.
"""

from __future__ import annotations

from collections.abc import Callable

from fsm_sites.engine.tables import Tables
from fsm_sites.spec.check import Ctx, compile_expr
from fsm_sites.spec.expr import Attr, Binary, Const, Index, Lit, Name, Node, conjuncts
from fsm_sites.spec.types import IntT, MapT


def _target(part: Node) -> tuple[Node, int] | None:
    """(the int expression, the least value the goal wants) of ``x == 3``, ``x >= 3``, ``x > 2``."""
    if not isinstance(part, Binary) or not isinstance(part.right, (Lit, Const)):
        return None
    value = part.right.value
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    wants = {"==": value, ">=": value, ">": value + 1}.get(part.op)
    return (part.left, wants) if wants is not None else None


def _slot(node: Node) -> tuple[str, str | None] | None:
    """(variable, map key or None) of ``x``, ``m['k']`` or ``m.k``."""
    if isinstance(node, Name):
        return node.name, None
    if isinstance(node, Index) and isinstance(node.obj, Name) and isinstance(node.key, Lit):
        return node.obj.name, str(node.key.value)
    if isinstance(node, Attr) and isinstance(node.obj, Name):
        return node.obj.name, node.name
    return None


def _only_plus_one(tables: Tables, var: str) -> bool:
    """Every write of ``var`` either adds one to one entry or never raises a value, and no
    transition adds one twice."""
    vtype = tables.model.schema.variables[var]
    lowest = vtype.lo if isinstance(vtype, IntT) else vtype.value.lo if isinstance(vtype, MapT) and isinstance(vtype.value, IntT) else None
    if lowest is None:
        return False
    for tm in tables.model.transitions:
        raises = 0
        for plan in tm.plans:
            if plan.var != var or plan.kind == "clear":
                continue
            expr, target = plan.expr, plan.target
            if plan.kind != "set":
                return False
            if isinstance(expr, Binary) and expr.op in ("+", "-") and expr.left == target and isinstance(expr.right, Lit):
                if expr.op == "+" and expr.right.value > 1:
                    return False
                raises += expr.op == "+" and expr.right.value > 0
            elif not (isinstance(expr, (Lit, Const)) and isinstance(expr.value, int) and expr.value <= lowest):
                return False
        if raises > 1:
            return False
    return True


class NumericBound:
    """``bound(values)``: the steps the goal's int targets still need (0 when there are none)."""

    def __init__(self, tables: Tables, goal: Node | None) -> None:
        self.parts: list[tuple[Callable, int]] = []
        env = tables.model.env("")
        env.position = tables.position
        for part in conjuncts(goal) if goal is not None else []:
            found = _target(part)
            slot = _slot(found[0]) if found else None
            if found is None or slot is None or slot[0] not in tables.position or not _only_plus_one(tables, slot[0]):
                continue
            self.parts.append((compile_expr(found[0], env)[0], found[1]))

    def __call__(self, vals: tuple) -> int:
        ctx = Ctx()
        return sum(max(0, want - fn(vals, ctx)) for fn, want in self.parts)
