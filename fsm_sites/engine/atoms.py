"""The atoms of a goal's abstraction (see ``fsm_sites.engine.heuristic``): the goal's comparisons,
relaxed into parts the abstraction can follow, and what producing a wanted item needs."""

from __future__ import annotations

from typing import Any

from fsm_sites.engine.tables import CTrans, Tables
from fsm_sites.spec.check import Ctx, compile_bool, compile_expr, converter
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
    all_of,
    children,
    conjuncts,
    names,
)
from fsm_sites.spec.types import MapT, Rec, RecordT, SeqT, TextT


def leaves(node: Node | None) -> list[Node]:
    """The comparisons of a condition (``not in`` read as ``not (... in ...)``)."""
    if node is None or isinstance(node, Lit):
        return []
    if isinstance(node, Binary) and node.op in ("and", "or"):
        return leaves(node.left) + leaves(node.right)
    if isinstance(node, Unary) and node.op == "not":
        return leaves(node.operand)
    if isinstance(node, Binary) and node.op == "not in":
        return [Binary("in", node.left, node.right)]
    return [node]


def reads_vars(node: Node, tables: Tables) -> set[str]:
    return names(node) & set(tables.model.schema.variables)


def _trackable(node: Node, tables: Tables) -> bool:
    read = names(node)
    return bool(read) and read <= set(tables.position)


def item_shape(atom: Node, tables: Tables) -> tuple[str, dict[str | None, Any]] | None:
    """For ``X in S`` (X constant) or ``any(S, it.f == c and ...)``: S and the wanted fields."""
    if isinstance(atom, Binary) and atom.op == "in" and isinstance(atom.right, Name) and not names(atom.left):
        if atom.right.name not in tables.position:
            return None
        value = atom.left.value if isinstance(atom.left, Const) else compile_expr(atom.left, tables.model.env(""))[0]((), Ctx())
        return atom.right.name, dict(value) if isinstance(value, Rec) else {None: value}
    if isinstance(atom, Call) and atom.fn == "any" and isinstance(atom.args[0], Name) and atom.args[0].name in tables.position:
        wanted: dict[str | None, Any] = {}
        for part in conjuncts(atom.args[1]):
            if not (isinstance(part, Binary) and part.op == "=="):
                return None
            sides = (part.left, part.right)
            field = next((s.name for s in sides if isinstance(s, Attr) and s.obj == Name("it")), None)
            const = next((s for s in sides if isinstance(s, Lit)), None)
            if field is None or const is None:
                return None
            wanted[field] = const.value
        return atom.args[0].name, wanted
    return None


def relax(node: Node | None, tables: Tables) -> Node | None:
    """A condition the goal implies, in parts the abstraction can follow: at the top level,
    ``S == [x, y]`` becomes ``count(S) == 2 and x in S and y in S``, a map or record equal to a
    constant becomes its entries that differ from the default."""
    if node is None:
        return None
    parts: list[Node] = []
    for part in conjuncts(node):
        part = _constant_right(part, tables)
        if isinstance(part, Binary) and part.op == "==" and isinstance(part.left, Name) and isinstance(part.right, Const):
            vtype, value = part.right.vtype, part.right.value
            if isinstance(vtype, SeqT):
                parts.append(Binary("==", Call("count", (part.left,)), Lit(len(value))))
                parts.extend(Binary("in", Const(x, vtype.item), part.left) for x in value)
                continue
            if isinstance(vtype, MapT) and isinstance(value, Rec):
                parts.extend(Binary("==", Index(part.left, Lit(key)), Const(x, vtype.value))
                             for key, x in value if x != vtype.value.default())
                continue
            if isinstance(vtype, RecordT) and isinstance(value, Rec):
                parts.extend(Binary("==", Attr(part.left, key), Const(x, vtype.field_type(key))) for key, x in value)
                continue
        parts.append(part)
    return all_of(parts)


def _constant_right(part: Node, tables: Tables) -> Node:
    """``var == {a: 1, ...}`` (a literal that reads nothing) with the literal as a typed constant."""
    if not (isinstance(part, Binary) and part.op == "==" and isinstance(part.left, Name)
            and isinstance(part.right, (RecordLit, ListLit)) and not names(part.right)):
        return part
    vtype = tables.model.schema.variables.get(part.left.name)
    if vtype is None:
        return part
    try:
        fn, source = compile_expr(part.right, tables.model.env(""))
        value = converter(vtype, source)(fn((), Ctx()))
    except Exception:  # noqa: BLE001 - a literal that does not fit stays as written
        return part
    if isinstance(vtype, SeqT):
        value = vtype.canonical(value)
    return Binary("==", part.left, Const(value, vtype))


def choose_atoms(tables: Tables, goal: Node | None, compiled: list[CTrans], limit: int,
                 reference: tuple[str, tuple] | None = None) -> list[Node]:
    """Up to ``limit`` atoms: the goal's (those false in ``reference`` first), the fields its
    items need, then guards."""
    atoms: list[Node] = []

    def add(node: Node) -> None:
        if len(atoms) < limit and node not in atoms and _trackable(node, tables):
            atoms.append(node)

    goal_leaves = [leaf for leaf in leaves(goal) if _trackable(leaf, tables)]
    holds_now: dict[Node, bool] = {}
    if reference is not None:
        env = tables.model.env("")
        env.position = tables.position
        ctx = Ctx(tables.page_of(reference[0])[1])
        holds_now = {leaf: bool(compile_bool(leaf, env)(reference[1], ctx)) for leaf in goal_leaves}
    for must_change in (True, False):  # what the reference state lacks first, with what it needs
        group = [leaf for leaf in goal_leaves if holds_now.get(leaf, False) != must_change]
        for leaf in group:
            add(leaf)
        for leaf in group:
            for atom in _regressed(leaf, tables, compiled):
                add(atom)
    read = set().union(*(names(a) for a in atoms)) if atoms else set()
    for ct in compiled:
        if ct.tm.writes & read:
            for part in conjuncts(ct.tm.guard):
                for leaf in leaves(part):
                    add(leaf)
    return atoms


def _regressed(atom: Node, tables: Tables, compiled: list[CTrans]) -> list[Node]:
    """The field comparisons an ``add`` needs to make ``atom`` (an item in a set) true."""
    shape = item_shape(atom, tables)
    if shape is None:
        return []
    var, wanted = shape
    out: list[Node] = []
    for ct in compiled:
        for plan in ct.tm.plans:
            if plan.kind == "add" and plan.var == var:
                for field_node, value in field_nodes(plan.expr, wanted):
                    if isinstance(field_node, Name):
                        vtype = tables.model.schema.variables.get(field_node.name)
                        # a text's other class is no literal a condition may name: a typed constant
                        named = not isinstance(vtype, TextT) or value in ("", *vtype.values)
                        out.append(Binary("==", field_node, Lit(value) if named else Const(value, vtype)))
    return out


def entry_key(atom: Node) -> tuple[str, str] | None:
    """(map variable, key) of an atom that reads one map entry only: ``m['k'] == 2``, ``m.k > 0``."""
    found: list[tuple[str, str | None]] = []

    def walk(node: Node) -> None:
        if isinstance(node, Index) and isinstance(node.obj, Name) and isinstance(node.key, Lit):
            found.append((node.obj.name, str(node.key.value)))
        elif isinstance(node, Attr) and isinstance(node.obj, Name):
            found.append((node.obj.name, node.name))
        elif isinstance(node, Name):
            found.append((node.name, None))
        else:
            for child in children(node):
                walk(child)

    walk(atom)
    if len(found) != 1:
        return None
    var, key = found[0]
    return None if key is None else (var, key)


def field_nodes(item: Node | None, wanted: dict[str | None, Any]) -> list[tuple[Node, Any]]:
    """(expression the added item has there, wanted value) for each wanted field."""
    if item is None:
        return []
    if None in wanted:
        return [(item, wanted[None])]
    if isinstance(item, RecordLit):
        fields = dict(item.fields)
        return [(fields[f], v) for f, v in wanted.items() if f in fields]
    return [(Attr(item, f), v) for f, v in wanted.items() if f is not None]
