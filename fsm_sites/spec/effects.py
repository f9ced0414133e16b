"""Effects: each form normalized, type-checked and compiled into an in-place update.

A compiled effect is ``apply(w, ctx)``: it changes the working list ``w`` of variable
values (layout order); effects of one transition run in order, each seeing the ones
before it. Semantics (docs/fsm_spec.md): an int is clamped to its range; ``add`` does
nothing when the list is full or (a set, a unique list) already holds the item;
``remove`` of an absent item does nothing; a set keeps its canonical order. The engine adds
one effect of its own, ``clamp_page``, after those of a transition that may shorten a paged
table: it brings the table's pager back onto its last page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fsm_sites.spec.check import (
    CheckError,
    Ctx,
    TypeEnv,
    compatible,
    compile_bool,
    compile_expr,
    converter,
)
from fsm_sites.spec.expr import Attr, Binary, ExprSyntaxError, Index, Lit, Name, Node, parse_expr
from fsm_sites.spec.site import VALUE_PLACEHOLDER, Effect
from fsm_sites.spec.types import IntT, MapT, RecordT, SeqT, VType
from fsm_sites.spec.value_widgets import move_positions, moved, page_count

Apply = Callable[[list, Ctx], None]


@dataclass(frozen=True)
class Plan:
    """One effect in a uniform shape."""

    kind: str  # set | clear | add | remove | remove_where | update | move | clamp_page (the engine's own)
    target: Node  # Name, or Attr/Index of a Name for `set`
    expr: Node | None = None  # clamp_page: the table's rows (its `repeat`)
    where: Node | None = None
    fields: tuple[tuple[str, Node], ...] = ()
    older: str | None = None  # the op of an older-form effect, for its error messages
    per_page: int = 0  # clamp_page: the table's rows a page

    @property
    def var(self) -> str:
        node = self.target
        while isinstance(node, (Attr, Index)):
            node = node.obj
        return node.name  # type: ignore[attr-defined]


def _expr(raw: Any, what: str) -> Node:
    if isinstance(raw, str):
        if raw == VALUE_PLACEHOLDER:
            return Name("value")
        try:
            return parse_expr(raw)
        except ExprSyntaxError as exc:
            raise CheckError(f"{what}: {exc}") from None
    if raw is None:
        raise CheckError(f"expected {what}, got nothing; add it")
    return Lit(raw)


def _var(name: str | None, at: str) -> Name:
    if not name:
        raise CheckError("expected a variable name, got nothing", at=at)
    return Name(name)


def plan_of(effect: Effect) -> Plan:
    """The uniform plan of an effect; ``CheckError`` if it mixes forms or misses a part."""
    forms = [k for k in ("op", "set", "clear", "add", "remove", "update", "move") if getattr(effect, k) is not None]
    if len(forms) != 1:
        raise CheckError(f"expected exactly one of op/set/clear/add/remove/update/move, got {forms or 'none'}")
    if effect.move is not None:
        return Plan("move", _var(effect.move, ".move"), Name("value"))
    if effect.op is not None:
        return _older(effect)
    if effect.set is not None:
        try:
            target = parse_expr(effect.set)
        except ExprSyntaxError as exc:
            raise CheckError(str(exc), at=".set") from None
        return Plan("set", target, _expr(effect.to, "`to`: the value to assign"))
    if effect.clear is not None:
        return Plan("clear", _var(effect.clear, ".clear"))
    if effect.add is not None:
        return Plan("add", _var(effect.add, ".add"), _expr(effect.item, "`item`: what to add"))
    if effect.remove is not None:
        if effect.where is not None:
            return Plan("remove_where", _var(effect.remove, ".remove"), where=_expr(effect.where, "`where`"))
        return Plan("remove", _var(effect.remove, ".remove"), _expr(effect.item, "`item` or `where`"))
    fields = tuple((k, _expr(v, f"`fields.{k}`")) for k, v in sorted(effect.fields.items()))
    if not fields:
        raise CheckError("expected `fields` to change in the updated items, got none", at=".fields")
    return Plan("update", _var(effect.update, ".update"), where=_expr(effect.where or "true", "`where`"), fields=fields)


def _older(effect: Effect) -> Plan:
    var, op = _var(effect.var, ".var"), effect.op
    if op == "clear":
        return Plan("clear", var, older=op)
    if op in ("increment", "decrement"):
        return Plan("set", var, Binary("+" if op == "increment" else "-", var, Lit(effect.by)), older=op)
    if effect.value is None:
        raise CheckError(f"expected a value for {op!r}, got none; add `value`", at=".value")
    value = Name("value") if effect.value == VALUE_PLACEHOLDER else Lit(effect.value)
    kind = {"set": "set", "append": "add", "remove": "remove"}[op or "set"]
    return Plan(kind, var, value, older=op)


def compile_plan(plan: Plan, env: TypeEnv) -> Apply:
    """The in-place update of ``plan``; ``CheckError`` if it is ill-typed."""
    name = plan.var
    if name not in env.variables or name.startswith("_"):
        known = sorted(v for v in env.variables if not v.startswith("_"))
        raise CheckError(f"{name!r} is not a variable; expected one of {known}", at=".var")
    pos, vtype = env.position[name], env.variables[name]
    if plan.kind == "clamp_page":
        return _compile_clamp(plan, env, pos)
    if plan.kind == "clear":
        default = vtype.default()

        def clear(w: list, c: Ctx) -> None:
            w[pos] = default

        return clear
    if plan.kind == "set":
        return _compile_set(plan, env, pos, vtype)
    if not isinstance(vtype, SeqT):
        verb = {"add": "append", "remove": "remove"}.get(plan.kind, plan.kind)
        raise CheckError(f"{verb!r} needs a list variable, got {vtype.kind} {name!r}", at=".op")
    if plan.kind == "move":
        return _compile_move(env, pos, vtype, name)
    return _compile_items(plan, env, pos, vtype)


def _compile_clamp(plan: Plan, env: TypeEnv, pos: int) -> Apply:
    """A paged table's pager (at ``pos``) brought back onto the table's last page, so a
    transition that removes rows while the last page is shown never leaves an empty page."""
    assert plan.expr is not None
    rows, size = compile_expr(plan.expr, env)[0], plan.per_page

    def clamp_page(w: list, c: Ctx) -> None:
        last = page_count(len(rows(w, c)), size)
        if w[pos] > last:
            w[pos] = last

    return clamp_page


def _compile_move(env: TypeEnv, pos: int, vtype: SeqT, name: str) -> Apply:
    """A sortable's drag: the event's value ``from>to`` moves one item; any other value
    (not two distinct positions of the list) changes nothing."""
    if not vtype.ordered:
        raise CheckError(f"'move' needs a list (a set keeps its own order), got a set {name!r}", at=".move")
    if env.value is None:
        raise CheckError("'move' takes the event's value: use it in a sortable's `move` transition", at=".move")

    def move(w: list, c: Ctx) -> None:
        where = move_positions(c.value, len(w[pos]))
        if where is not None:
            w[pos] = moved(w[pos], *where)

    return move


def _compile_set(plan: Plan, env: TypeEnv, pos: int, vtype: VType) -> Apply:
    assert plan.expr is not None
    fn, source = compile_expr(plan.expr, env)
    target = plan.target
    if isinstance(target, Name):
        if isinstance(vtype, SeqT) and plan.older:
            raise CheckError(f"set cannot change list {target.name!r}; use add/remove/clear", at=".op")
        if plan.older in ("increment", "decrement") and not isinstance(vtype, IntT):
            raise CheckError(f"{plan.older!r} needs an int variable, got {vtype.kind} {target.name!r}", at=".op")
        _check_literal(plan.expr, vtype, target.name)
        conv = _convert(vtype, source)

        def assign(w: list, c: Ctx) -> None:
            w[pos] = conv(fn(w, c))

        return assign
    key_fn, slot_type = _slot(target, env, vtype)
    conv = _convert(slot_type, source)

    def assign_slot(w: list, c: Ctx) -> None:
        key = key_fn(w, c)
        if key is not None:
            w[pos] = w[pos].replace(key, conv(fn(w, c)))

    return assign_slot


def _check_literal(expr: Node, vtype: VType, name: str) -> None:
    """A literal assigned must lie in the domain (an int is not clamped silently)."""
    if isinstance(expr, Lit) and not isinstance(expr.value, str) and not vtype.contains(expr.value):
        raise CheckError(f"{expr.value!r} is outside the domain of {name!r} ({vtype.describe()})", at=".value")


def _convert(target: VType, source: VType) -> Callable[[Any], Any]:
    try:
        return converter(target, source)
    except CheckError as exc:
        raise CheckError(str(exc), at=".value") from None


def _slot(target: Node, env: TypeEnv, vtype: VType) -> tuple[Callable[[list, Ctx], Any], VType]:
    """For ``var.field`` or ``var[key]``: the key in the Rec and the slot's type."""
    if not isinstance(getattr(target, "obj", None), Name):
        raise CheckError("expected `set` to name a variable, a field (var.field) or a map entry (var[key])", at=".set")
    if isinstance(target, Attr) and isinstance(vtype, RecordT):
        ftype = vtype.field_type(target.name)
        if ftype is None:
            raise CheckError(f"expected a field of {[n for n, _ in vtype.fields]}, got {target.name!r}", at=".set")
        field = target.name
        return (lambda w, c: field), ftype
    if isinstance(vtype, MapT):
        key: Node = Lit(target.name) if isinstance(target, Attr) else target.key  # type: ignore[attr-defined]
        kfn, ktype = compile_expr(key, env)
        problem = compatible(ktype, vtype.keys)
        if problem:
            raise CheckError(f"expected a key of {list(vtype.keys.values)}, got {problem}", at=".set")
        keys = set(vtype.keys.values)
        return (lambda w, c: (k if (k := kfn(w, c)) in keys else None)), vtype.value
    raise CheckError(f"expected a record field or a map entry to set, got {vtype.describe()}", at=".set")


def _compile_items(plan: Plan, env: TypeEnv, pos: int, vtype: SeqT) -> Apply:
    if plan.kind in ("remove_where", "update"):
        assert plan.where is not None
        pred = compile_bool(plan.where, env.with_it(vtype.item))
        if plan.kind == "remove_where":
            def remove_where(w: list, c: Ctx) -> None:
                w[pos] = tuple(x for x in w[pos] if not pred(w, c.scan(x)))

            return remove_where
        return _compile_update(plan, env, pos, vtype, pred)
    assert plan.expr is not None
    fn, source = compile_expr(plan.expr, env)
    conv = _convert(vtype.item, source)
    if plan.kind == "remove":
        def remove(w: list, c: Ctx) -> None:
            x = conv(fn(w, c))
            w[pos] = tuple(i for i in w[pos] if i != x)

        return remove
    limit, unique, canonical = vtype.max_len, vtype.unique or not vtype.ordered, vtype.canonical

    def add(w: list, c: Ctx) -> None:
        items, x = w[pos], conv(fn(w, c))
        if len(items) < limit and not (unique and x in items):
            w[pos] = canonical(items + (x,))

    return add


def _compile_update(plan: Plan, env: TypeEnv, pos: int, vtype: SeqT, pred: Callable) -> Apply:
    item = vtype.item
    if not isinstance(item, RecordT):
        raise CheckError(f"expected a list or set of records to update, got {vtype.describe()}", at=".update")
    inner = env.with_it(item)
    setters = []
    for name, node in plan.fields:
        ftype = item.field_type(name)
        if ftype is None:
            raise CheckError(f"expected fields of {[n for n, _ in item.fields]}, got {name!r}", at=".fields")
        fn, source = compile_expr(node, inner)
        setters.append((name, fn, _convert(ftype, source)))
    canonical = vtype.canonical

    def update(w: list, c: Ctx) -> None:
        out = []
        for x in w[pos]:
            ctx = c.scan(x)
            if pred(w, ctx):
                for name, fn, conv in setters:
                    x = x.replace(name, conv(fn(w, ctx)))
            out.append(x)
        w[pos] = canonical(tuple(out))

    return update
