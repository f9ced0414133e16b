"""Conditions of every form as expression ASTs: expression text, or the older
``{var, op, value}`` mappings (whose meaning is kept exactly, see docs/fsm_spec.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fsm_sites.spec.check import CheckError
from fsm_sites.spec.expr import (
    Binary,
    Call,
    Const,
    ExprSyntaxError,
    Lit,
    Name,
    Node,
    all_of,
    parse_expr,
)
from fsm_sites.spec.site import Condition
from fsm_sites.spec.types import BoolT, EnumT, IntT, SeqT, TextT, VType

_ORDER_OPS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def condition_node(cond: Condition | str, variables: dict[str, VType]) -> Node:
    """The AST of one condition; ``CheckError`` (with ``at`` naming the field) if it is wrong."""
    if isinstance(cond, str):
        try:
            return parse_expr(cond)
        except ExprSyntaxError as exc:
            raise CheckError(str(exc)) from None
    vtype = variables.get(cond.var)
    if vtype is None or cond.var.startswith("_"):
        known = sorted(v for v in variables if not v.startswith("_"))
        raise CheckError(f"{cond.var!r} is not a variable; expected one of {known}", at=".var")
    return _legacy(cond, vtype)


def conditions_node(conds: Iterable[Condition | str], variables: dict[str, VType]) -> Node:
    return all_of([condition_node(c, variables) for c in conds])


def _legacy(cond: Condition, vtype: VType) -> Node:
    var, op = Name(cond.var), cond.op
    is_list = isinstance(vtype, SeqT)
    if op in ("contains", "not_contains"):
        if not is_list:
            raise CheckError(f"{op!r} needs a list variable, got {vtype.kind} {cond.var!r}", at=".op")
        item = _operand(cond, vtype.item)  # type: ignore[attr-defined]
        return Binary("in" if op == "contains" else "not in", Lit(item), var)
    if op in ("empty", "nonempty"):
        if is_list:
            return Binary("==" if op == "empty" else ">", Call("count", (var,)), Lit(0))
        return Binary("==" if op == "empty" else "!=", var, Const(vtype.default(), vtype))
    if op in _ORDER_OPS and not isinstance(vtype, (IntT, SeqT)):
        raise CheckError(f"{op!r} needs an int or list variable, got {vtype.kind} {cond.var!r}", at=".op")
    symbol = _ORDER_OPS.get(op) or ("==" if op == "eq" else "!=")
    if is_list:
        if not isinstance(cond.value, int) or isinstance(cond.value, bool):
            raise CheckError(f"a list compares by length: expected an int, got {cond.value!r}", at=".value")
        return Binary(symbol, Call("count", (var,)), Lit(cond.value))
    return Binary(symbol, var, Lit(_operand(cond, vtype)))


def _operand(cond: Condition, vtype: VType) -> Any:
    """The condition's value in the variable's type, as the older engine coerced it."""
    raw = cond.value
    try:
        if isinstance(vtype, BoolT):
            if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
                return raw.strip().lower() == "true"
            if isinstance(raw, bool):
                return raw
        elif isinstance(vtype, IntT):
            if raw is not None and not isinstance(raw, bool) and vtype.lo <= int(raw) <= vtype.hi:
                return int(raw)
        elif isinstance(vtype, (EnumT, TextT)) and raw is not None:
            text = str(raw)
            if text in vtype.values or (isinstance(vtype, TextT) and text == ""):
                return text
        else:
            raise CheckError(f"{cond.op!r} cannot test {vtype.describe()}; write an expression", at=".op")
    except (TypeError, ValueError):
        pass
    raise CheckError(f"{raw!r} is outside the domain of {cond.var!r} ({vtype.describe()})", at=".value")
