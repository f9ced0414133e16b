"""Typed compilation of expressions: type-check an AST and turn it into a closure, in one pass.

The validator and the engine call the same functions, so a spec that validates is exactly
the spec that runs. A closure has the signature ``fn(values, ctx)``: ``values`` is the
state's variable values in layout order (a tuple or list), ``ctx`` a ``Ctx`` with the
page's parameters, the event's value, the current item ``it`` and the copy's item ``row``.
A type error raises ``CheckError`` saying what was expected and what was found.
"""

from __future__ import annotations

from collections.abc import Callable
from copy import copy
from dataclasses import dataclass, field, replace
from typing import Any

from fsm_sites.spec.expr import (
    Attr,
    Binary,
    Call,
    Const,
    Index,
    ListLit,
    Lit,
    Name,
    Node,
    RecordLit,
    Unary,
    conjuncts,
    unparse,
)
from fsm_sites.spec.types import (
    NONE,
    BoolT,
    EnumT,
    IntT,
    MapT,
    Rec,
    RecordT,
    SeqT,
    TextT,
    VType,
    same_shape,
)
from fsm_sites.spec.value_widgets import table_rank

Fn = Callable[[Any, Any], Any]
_BIG = 2**31


class CheckError(ValueError):
    """An expression that does not type-check; ``at`` is a sub-place such as ``.value``."""

    def __init__(self, message: str, at: str = "") -> None:
        super().__init__(message)
        self.at = at


class Ctx:
    """What an expression sees besides the variables: ``row`` is the item of the repeated
    element's copy (``it`` at the top of its expressions), which a predicate or an effect's
    ``where`` keeps while ``it`` scans a collection."""

    __slots__ = ("args", "value", "it", "row")

    def __init__(self, args: dict[str, Any] | None = None, value: Any = None, it: Any = None, row: Any = None) -> None:
        self.args = args or {}
        self.value = value
        self.it = it
        self.row = row

    def scan(self, item: Any) -> Ctx:
        """The context of a predicate over ``item``: ``it`` is that item, the rest stays."""
        return Ctx(self.args, self.value, item, self.row)


EMPTY_CTX = Ctx()


@dataclass(frozen=True)
class StrT(VType):
    """A string not yet bound to an enum: a literal, or what an event carries (``values``
    known, or None for any text)."""

    values: tuple[str, ...] | None = None
    kind: str = field(init=False, default="str")

    def describe(self) -> str:
        return "any text" if self.values is None else f"text {list(self.values)}"


@dataclass
class TypeEnv:
    """The names an expression may use, with their types and where their values are."""

    variables: dict[str, VType]
    position: dict[str, int]
    params: dict[str, VType] = field(default_factory=dict)
    value: VType | None = None  # None: the context has no event value
    it: VType | None = None
    row: VType | None = None  # the copy's item: set in a repeated element's expressions only
    # the paths (``pet``, ``draft.pet``, ``row.pet``) of optional enums a guard proves chosen (``proven_chosen``)
    narrowed: frozenset[str] = frozenset()

    def with_it(self, it: VType) -> TypeEnv:
        # ``it`` names another item here: what a guard proved of the copy's ``it`` no longer applies
        keep = frozenset(p for p in self.narrowed if _root(p) != "it")
        return TypeEnv(self.variables, self.position, self.params, self.value, it, self.row, keep)

    def narrow(self, guard: Node | None) -> TypeEnv:
        """This env where ``guard`` holds: the optional enums it proves chosen are narrowed."""
        out = copy(self)
        out.narrowed = self.narrowed | proven_chosen(guard)
        return out

    def forget(self, var: str) -> TypeEnv:
        """This env after an effect writes ``var``: what a guard proved of it no longer holds."""
        out = copy(self)
        out.narrowed = frozenset(p for p in self.narrowed if _root(p) != var)
        return out


def _root(path: str) -> str:
    return path.split(".", 1)[0]


def proven_chosen(guard: Node | None) -> frozenset[str]:
    """The paths ``guard`` proves hold a choice (not none): its conjuncts ``x != none``,
    ``none != x`` and ``not (x == none)``, ``x`` a name or a field of one, also inside a
    negated ``or`` (``not (x == none or y == none or ...)``, as a ``disabled_when`` that
    lists the form's unchosen fields gives)."""
    out: set[str] = set()
    for part in conjuncts(guard) if guard is not None else ():
        if isinstance(part, Unary) and part.op == "not" and isinstance(part.operand, Binary) and part.operand.op == "or":
            out |= proven_chosen(Binary("and", Unary("not", part.operand.left), Unary("not", part.operand.right)))
            continue
        op = "!="
        if isinstance(part, Unary) and part.op == "not" and isinstance(part.operand, Binary):
            part, op = part.operand, "=="
        if not isinstance(part, Binary) or part.op != op:
            continue
        for a, b in ((part.left, part.right), (part.right, part.left)):
            if isinstance(b, Lit) and b.value == NONE and _is_path(a):
                out.add(unparse(a))
    return frozenset(out)


def _is_path(node: Node) -> bool:
    while isinstance(node, Attr):
        node = node.obj
    return isinstance(node, Name)


def _chosen(node: Node, vtype: VType, env: TypeEnv) -> VType:
    """An optional enum's type at ``node``: narrowed where a guard proved it chosen, else
    marked with where it came from (for the message if it fills a place that needs a choice)."""
    if not isinstance(vtype, EnumT) or NONE not in vtype.values:
        return vtype
    path = unparse(node)
    return vtype.narrowed() if path in env.narrowed else replace(vtype, origin=path)


INT = IntT(-_BIG, _BIG)
BOOL = BoolT()


def compile_expr(node: Node, env: TypeEnv) -> tuple[Fn, VType]:
    """The closure and type of ``node``; ``CheckError`` if it is ill-typed."""
    handler = _HANDLERS.get(type(node))
    if handler is None:
        raise CheckError(f"expected an expression, got {type(node).__name__}")
    return handler(node, env)


def compile_bool(node: Node, env: TypeEnv) -> Fn:
    fn, vtype = compile_expr(node, env)
    if not isinstance(vtype, BoolT):
        raise CheckError(f"expected a condition (true/false), got {vtype.describe()} in {unparse(node)!r}")
    return fn


def _lit(node: Lit, env: TypeEnv) -> tuple[Fn, VType]:
    value = node.value
    vtype: VType = BOOL if isinstance(value, bool) else INT if isinstance(value, int) else StrT((value,))
    return (lambda v, c: value), vtype


def _name(node: Name, env: TypeEnv) -> tuple[Fn, VType]:
    name = node.name
    if name == "it":
        if env.it is None:
            raise CheckError("'it' is only defined in a repeated element or in any/all/count(items, ...)")
        return (lambda v, c: c.it), env.it
    if name == "row":
        if env.row is None:
            raise CheckError("'row' is only defined in a repeated element's expressions (its copy's item, the one "
                             "the event came from); use it in a transition, label or condition of an element with "
                             "`repeat`")
        return (lambda v, c: c.row), env.row
    if name == "value":
        if env.value is None:
            raise CheckError("'value' is only defined in a transition whose event carries a value")
        return (lambda v, c: c.value), env.value
    if name in env.params:
        return (lambda v, c: c.args[name]), env.params[name]
    if name in env.variables:
        pos = env.position[name]
        return (lambda v, c: v[pos]), _chosen(node, env.variables[name], env)
    known = sorted(set(env.variables) - {"_toast"} | set(env.params))
    raise CheckError(f"{name!r} is not a variable or parameter; expected one of {known} (quote text: '{name}')")


def _attr(node: Attr, env: TypeEnv) -> tuple[Fn, VType]:
    obj, otype = compile_expr(node.obj, env)
    if isinstance(otype, RecordT):
        ftype = otype.field_type(node.name)
        if ftype is None:
            raise CheckError(f"expected a field of {[n for n, _ in otype.fields]}, got {node.name!r} in {unparse(node)!r}")
        i = otype.index(node.name)
        return (lambda v, c: obj(v, c)[i][1]), _chosen(node, ftype, env)
    if isinstance(otype, MapT):
        return _map_get(obj, otype, Lit(node.name), env, node)
    raise CheckError(f"expected a record or map before '.{node.name}', got {otype.describe()} in {unparse(node)!r}")


def _index(node: Index, env: TypeEnv) -> tuple[Fn, VType]:
    obj, otype = compile_expr(node.obj, env)
    if not isinstance(otype, MapT):
        raise CheckError(f"expected a map before '[...]', got {otype.describe()} in {unparse(node)!r}")
    return _map_get(obj, otype, node.key, env, node)


def _map_get(obj: Fn, mtype: MapT, key: Node, env: TypeEnv, whole: Node) -> tuple[Fn, VType]:
    kfn, ktype = compile_expr(key, env)
    problem = compatible(ktype, mtype.keys)
    if problem:
        raise CheckError(f"expected a key of {list(mtype.keys.values)} in {unparse(whole)!r}, got {problem}")
    slot = {k: i for i, k in enumerate(sorted(mtype.keys.values))}
    fallback = mtype.value.default()
    if isinstance(key, Lit):
        i = slot[key.value]
        return (lambda v, c: obj(v, c)[i][1]), mtype.value

    def get(v: Any, c: Any) -> Any:
        i = slot.get(kfn(v, c))
        return fallback if i is None else obj(v, c)[i][1]

    return get, mtype.value


def _unary(node: Unary, env: TypeEnv) -> tuple[Fn, VType]:
    fn, vtype = compile_expr(node.operand, env)
    if node.op == "not":
        if not isinstance(vtype, BoolT):
            raise CheckError(f"expected a condition after 'not', got {vtype.describe()} in {unparse(node)!r}")
        return (lambda v, c: not fn(v, c)), BOOL
    if not isinstance(vtype, IntT):
        raise CheckError(f"expected an int after '-', got {vtype.describe()} in {unparse(node)!r}")
    return (lambda v, c: -fn(v, c)), INT


_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
_ORDER = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _binary(node: Binary, env: TypeEnv) -> tuple[Fn, VType]:
    a, at = compile_expr(node.left, env)
    b, bt = compile_expr(node.right, env)
    op, text = node.op, unparse(node)
    if op in ("and", "or"):
        if not (isinstance(at, BoolT) and isinstance(bt, BoolT)):
            raise CheckError(f"expected conditions on both sides of {op!r}, got {at.describe()} and {bt.describe()} in {text!r}")
        if op == "and":
            return (lambda v, c: a(v, c) and b(v, c)), BOOL
        return (lambda v, c: a(v, c) or b(v, c)), BOOL
    if op in _ARITH or op in _ORDER:
        if not (isinstance(at, IntT) and isinstance(bt, IntT)):
            raise CheckError(f"expected ints on both sides of {op!r}, got {at.describe()} and {bt.describe()} in {text!r}; "
                             "count a list or set with count(...)")
        f = _ARITH.get(op) or _ORDER[op]
        return (lambda v, c: f(a(v, c), b(v, c))), INT if op in _ARITH else BOOL
    if op in ("==", "!="):
        problem = compatible(at, bt)
        if problem:
            raise CheckError(f"expected comparable values in {text!r}, got {problem}")
        if op == "==":
            return (lambda v, c: a(v, c) == b(v, c)), BOOL
        return (lambda v, c: a(v, c) != b(v, c)), BOOL
    return _membership(op, a, at, b, bt, text)


def _membership(op: str, a: Fn, at: VType, b: Fn, bt: VType, text: str) -> tuple[Fn, VType]:
    if not isinstance(bt, SeqT):
        raise CheckError(f"expected a list or set after {op!r}, got {bt.describe()} in {text!r}")
    problem = compatible(at, bt.item)
    if problem:
        raise CheckError(f"expected an item of {bt.item.describe()} before {op!r} in {text!r}, got {problem}")
    if op == "in":
        return (lambda v, c: a(v, c) in b(v, c)), BOOL
    return (lambda v, c: a(v, c) not in b(v, c)), BOOL


def _call(node: Call, env: TypeEnv) -> tuple[Fn, VType]:
    text = unparse(node)
    if node.fn == "rank":
        return _rank(node, env)
    if node.fn in ("min", "max"):
        a, at = compile_expr(node.args[0], env)
        b, bt = compile_expr(node.args[1], env)
        if not (isinstance(at, IntT) and isinstance(bt, IntT)):
            raise CheckError(f"expected two ints in {text!r}, got {at.describe()} and {bt.describe()}")
        pick = min if node.fn == "min" else max
        return (lambda v, c: pick(a(v, c), b(v, c))), INT
    coll, ctype = compile_expr(node.args[0], env)
    if not isinstance(ctype, (SeqT, MapT)):
        raise CheckError(f"expected a list, set or map in {text!r}, got {ctype.describe()}")
    items = _items(coll, ctype)
    item_type = ctype.item if isinstance(ctype, SeqT) else ctype.value
    if node.fn == "sum":
        if not isinstance(item_type, IntT):
            raise CheckError(f"expected ints to add up in {text!r}, got {item_type.describe()}")
        return (lambda v, c: sum(items(v, c))), INT
    if len(node.args) == 1:  # count(items): how many items (a map: keys whose value is not the default)
        fallback = item_type.default()
        if isinstance(ctype, MapT):
            return (lambda v, c: sum(1 for x in items(v, c) if x != fallback)), INT
        return (lambda v, c: len(items(v, c))), INT
    pred = compile_bool(node.args[1], env.with_it(item_type))

    def test_each(v: Any, c: Any) -> Any:
        return (pred(v, c.scan(it)) for it in items(v, c))

    if node.fn == "count":
        return (lambda v, c: sum(1 for ok in test_each(v, c) if ok)), INT
    if node.fn == "any":
        return (lambda v, c: any(test_each(v, c))), BOOL
    return (lambda v, c: all(test_each(v, c))), BOOL


def _rank(node: Call, env: TypeEnv) -> tuple[Fn, VType]:
    """``rank(c, x)``: where item ``x`` is in list or set ``c`` (0: first; -1: not there);
    ``rank(c, x, order)``: where its table shows it, sorted by ``order`` (a field of the
    records, ``-field`` descending: a sort variable)."""
    text = unparse(node)
    coll, ctype = compile_expr(node.args[0], env)
    if not isinstance(ctype, SeqT):
        raise CheckError(f"expected a list or set as the first argument of rank() in {text!r}, got {ctype.describe()}")
    item, itype = compile_expr(node.args[1], env)
    problem = compatible(itype, ctype.item)
    if problem:
        raise CheckError(f"expected an item of {ctype.item.describe()} as the second argument of rank() in {text!r}, "
                         f"got {problem}")
    fields = dict(ctype.item.fields) if isinstance(ctype.item, RecordT) else {}
    if len(node.args) == 2:
        return (lambda v, c: table_rank(coll(v, c), item(v, c), "", fields)), INT
    order, otype = compile_expr(node.args[2], env)
    values = otype.values if isinstance(otype, (EnumT, StrT)) else None
    if not fields or values is None or any(x.lstrip("-") not in fields for x in values):
        raise CheckError(f"expected an order of the records' fields {sorted(fields)} (`field`, or `-field` descending) "
                         f"as the third argument of rank() in {text!r}, got {otype.describe()}")
    return (lambda v, c: table_rank(coll(v, c), item(v, c), order(v, c), fields)), INT


def _items(coll: Fn, ctype: VType) -> Fn:
    """The items a function iterates: a list's or set's items; a map's values (one per key)."""
    if isinstance(ctype, SeqT):
        return coll
    return lambda v, c: tuple(x for _, x in coll(v, c))


def _record(node: RecordLit, env: TypeEnv) -> tuple[Fn, VType]:
    compiled = [(name, *compile_expr(expr, env)) for name, expr in node.fields]
    fns = [(name, fn) for name, fn, _ in compiled]
    vtype = RecordT(tuple((name, t) for name, _, t in compiled))
    return (lambda v, c: Rec(tuple((n, f(v, c)) for n, f in fns))), vtype


def _list(node: ListLit, env: TypeEnv) -> tuple[Fn, VType]:
    compiled = [compile_expr(item, env) for item in node.items]
    if not compiled:
        return (lambda v, c: ()), SeqT(StrT(()), 0, ordered=True)
    types = [t for _, t in compiled]
    if all(isinstance(t, StrT) for t in types):
        item: VType = StrT(tuple(x for t in types for x in (t.values or ())))  # type: ignore[attr-defined]
    else:
        item = types[0]
        for t in types[1:]:
            if compatible(item, t):
                raise CheckError(f"expected items of one type in {unparse(node)!r}, got {item.describe()} and {t.describe()}")
    fns = [fn for fn, _ in compiled]
    return (lambda v, c: tuple(f(v, c) for f in fns)), SeqT(item, len(fns), ordered=True)


def _const(node: Const, env: TypeEnv) -> tuple[Fn, VType]:
    value = node.value
    return (lambda v, c: value), node.vtype


_HANDLERS: dict[type, Callable[[Any, TypeEnv], tuple[Fn, VType]]] = {
    Const: _const, Lit: _lit, Name: _name, Attr: _attr, Index: _index, Unary: _unary, Binary: _binary, Call: _call,
    RecordLit: _record, ListLit: _list,
}


def compatible(a: VType, b: VType) -> str | None:
    """None when values of ``a`` and ``b`` can be compared, else what is wrong (for a message)."""
    if isinstance(a, StrT) and not isinstance(b, StrT):
        a, b = b, a
    if isinstance(b, StrT):
        if isinstance(a, StrT) or b.values is None:
            return None if isinstance(a, (StrT, EnumT, TextT)) else f"{b.describe()} and {a.describe()}"
        if isinstance(a, EnumT):
            bad = [x for x in b.values if x not in a.values]
            if bad == [NONE]:
                return f"none (nothing chosen), but {a.describe()} has no such value; declare the type `optional: true`"
            return f"{bad[0]!r}, which is not one of {list(a.values)}" if bad else None
        if isinstance(a, TextT):
            bad = [x for x in b.values if x not in ("", *a.values)]
            return (f"{bad[0]!r}, which is not a text value that matters ({list(a.values)}); add it to the "
                    "variable's `values`") if bad else None
        return f"{b.describe()} and {a.describe()}"
    if isinstance(a, RecordT) and isinstance(b, MapT):
        a, b = b, a
    if isinstance(a, MapT) and isinstance(b, RecordT):  # a map written as a record literal {key: value, ...}
        if sorted(a.keys.values) != [n for n, _ in b.fields]:
            return f"a map with keys {sorted(a.keys.values)} and a record with fields {[n for n, _ in b.fields]}"
        return next((f"key {n!r}: {p}" for n, t in b.fields if (p := compatible(a.value, t))), None)
    if isinstance(a, RecordT) and isinstance(b, RecordT):
        if [n for n, _ in a.fields] != [n for n, _ in b.fields]:
            return f"records with fields {[n for n, _ in a.fields]} and {[n for n, _ in b.fields]}"
        for (name, x), (_, y) in zip(a.fields, b.fields, strict=True):
            problem = compatible(x, y)
            if problem:
                return f"field {name!r}: {problem}"
        return None
    if isinstance(a, SeqT) and isinstance(b, SeqT):
        return compatible(a.item, b.item)
    if isinstance(a, IntT) and isinstance(b, IntT):
        return None
    return None if same_shape(a, b) else f"{a.describe()} and {b.describe()}"


def converter(target: VType, source: VType) -> Callable[[Any], Any]:
    """How a value of ``source`` becomes one of ``target`` when assigned; ``CheckError`` if it cannot."""
    if isinstance(target, IntT):
        if isinstance(source, IntT):
            return target.clamp
        if isinstance(source, StrT):
            bad = [x for x in (source.values or ()) if not x.lstrip("-").isdigit()]
            if source.values is None or bad:
                raise CheckError(f"expected whole numbers to assign to {target.describe()}, got {source.describe()}")
            return lambda x: target.clamp(int(x))
    if isinstance(target, BoolT) and isinstance(source, (BoolT, StrT)):
        return lambda x: x if isinstance(x, bool) else str(x).strip().lower() in ("true", "1", "yes", "on")
    if isinstance(target, TextT) and isinstance(source, (StrT, EnumT, TextT)):
        return target.assign
    if isinstance(target, EnumT) and isinstance(source, (EnumT, StrT)):
        values = source.values
        if values is None:
            raise CheckError(f"expected values of {list(target.values)}, got any text; list the accepted `values`")
        bad = [x for x in values if x not in target.values]
        if bad == [NONE] and isinstance(source, EnumT):
            got = f"{source.origin!r}, which" if source.origin else "a value that"
            guard = source.origin or "x"
            raise CheckError(f"expected {target.describe()}, got {got} may be none (nothing chosen); "
                             f"guard the transition with `when: \"{guard} != none\"`")
        if bad:
            raise CheckError(f"{bad[0]!r} is outside the domain ({target.describe()})")
        return str
    if isinstance(target, RecordT) and isinstance(source, RecordT):
        return _record_converter(target, source)
    if isinstance(target, MapT) and isinstance(source, RecordT) and compatible(target, source) is None:
        conv = {n: converter(target.value, t) for n, t in source.fields}
        return lambda rec: Rec(tuple((n, conv[n](x)) for n, x in rec))
    problem = compatible(target, source)
    if problem is None and type(target) is type(source):
        return lambda x: x
    raise CheckError(f"expected a value of {target.describe()}, got {source.describe()}")


def _record_converter(target: RecordT, source: RecordT) -> Callable[[Any], Any]:
    if [n for n, _ in target.fields] != [n for n, _ in source.fields]:
        raise CheckError(f"expected a record with fields {[n for n, _ in target.fields]}, "
                         f"got one with {[n for n, _ in source.fields]}")
    convs = []
    for (name, t), (_, s) in zip(target.fields, source.fields, strict=True):
        try:
            convs.append(converter(t, s))
        except CheckError as exc:
            raise CheckError(f"field {name!r}: {exc}") from None
    return lambda rec: Rec(tuple((n, conv(x)) for (n, x), conv in zip(rec, convs, strict=True)))
