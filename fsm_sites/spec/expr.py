"""The expression language of specs: a small syntax parsed into data (never ``eval``-ed).

    count(cart) < 3 and name != ''
    {pet: pet, day: form.day} in bookings
    cart['mug'] + 1
    any(bookings, it.pet == pet) or not reminders

Grammar, loosest first: ``or``, ``and``, ``not``, comparisons (``== != < <= > >= in``,
``not in``), ``+ -``, ``*``, unary ``-``, then postfix ``.field`` and ``[key]`` on a primary:
an int, a quoted string, ``true``/``false``, ``none`` (an optional enum's nothing chosen yet,
the same value as ``''``), a name, a call ``f(args)``, ``( expr )``, a
list ``[a, b]`` or a record ``{field: expr, ...}``. Names are variables, page parameters,
``value`` (what the event carried), ``it`` (the item of a repeated element, of a predicate
in ``any``/``all``/``count`` or of an effect's ``where``) and ``row`` (the item of the
repeated element's copy the expression belongs to: ``it`` there, but unlike ``it`` it keeps
that meaning inside predicates and ``where``). Types are checked by ``fsm_sites.spec.check``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from fsm_sites.spec.types import show_value


class ExprSyntaxError(ValueError):
    """An expression that does not parse; the message names the column."""


@dataclass(frozen=True)
class Node:
    pass


@dataclass(frozen=True)
class Lit(Node):
    value: Any  # bool | int | str


@dataclass(frozen=True)
class Name(Node):
    name: str


@dataclass(frozen=True)
class Attr(Node):
    obj: Node
    name: str


@dataclass(frozen=True)
class Index(Node):
    obj: Node
    key: Node


@dataclass(frozen=True)
class Unary(Node):
    op: str  # "not" | "-"
    operand: Node


@dataclass(frozen=True)
class Binary(Node):
    op: str  # or and == != < <= > >= in "not in" + - *
    left: Node
    right: Node


@dataclass(frozen=True)
class Call(Node):
    fn: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class RecordLit(Node):
    fields: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class ListLit(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Const(Node):
    """A typed constant made by the engine (a default value), never parsed from text."""

    value: Any
    vtype: Any  # fsm_sites.spec.types.VType


FUNCTIONS = {"count": (1, 2), "any": (2, 2), "all": (2, 2), "sum": (1, 1), "min": (2, 2), "max": (2, 2),
             "rank": (2, 3)}
SPECIAL_NAMES = ("value", "it", "row")
#: the special names an item gives: a repeated element's copy (both), a predicate's or a `where`'s (``it``)
ITEM_NAMES = frozenset(SPECIAL_NAMES[1:])
_KEYWORDS = {"and", "or", "not", "in", "true", "false"}
_TOKEN = re.compile(r"""\s*(?:(?P<num>\d+)|(?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(?P<name>[A-Za-z_][A-Za-z0-9_]*)
                       |(?P<op>==|!=|<=|>=|[<>+\-*()\[\]{},.:]))""", re.VERBOSE)
_COMPARE = ("==", "!=", "<", "<=", ">", ">=", "in", "not in")


def _tokens(text: str) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ExprSyntaxError(f"expected an expression, got {text[pos:].strip()[:12]!r} at column {pos + 1} of {text!r}")
        kind = match.lastgroup or ""
        raw = match.group(kind)
        start = match.start(kind)
        if kind == "num":
            out.append(("lit", int(raw), start))
        elif kind == "str":
            out.append(("lit", re.sub(r"\\(.)", r"\1", raw[1:-1]), start))
        elif kind == "name" and raw in ("true", "false"):
            out.append(("lit", raw == "true", start))
        elif kind == "name" and raw == "none":  # an optional enum's nothing chosen yet (fsm_sites.spec.types.NONE)
            out.append(("lit", "", start))
        elif kind == "name" and raw in _KEYWORDS:
            out.append(("op", raw, start))
        else:
            out.append((kind, raw, start))
        pos = match.end()
    out.append(("end", None, len(text)))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, *ops: str) -> bool:
        kind, val, _ = self.toks[self.i]
        return kind == "op" and val in ops

    def take(self) -> tuple[str, Any, int]:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expect(self, op: str) -> None:
        kind, val, pos = self.take()
        if kind != "op" or val != op:
            shown = "the end" if kind == "end" else repr(val)
            raise ExprSyntaxError(f"expected {op!r} at column {pos + 1} of {self.text!r}, got {shown}")

    def parse(self) -> Node:
        node = self.or_()
        kind, val, pos = self.toks[self.i]
        if kind != "end":
            raise ExprSyntaxError(f"expected the end of {self.text!r} at column {pos + 1}, got {val!r}")
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.peek("or"):
            self.take()
            node = Binary("or", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.peek("and"):
            self.take()
            node = Binary("and", node, self.not_())
        return node

    def not_(self) -> Node:
        if self.peek("not"):
            self.take()
            return Unary("not", self.not_())
        return self.compare()

    def compare(self) -> Node:
        node = self.sum_()
        if self.peek("==", "!=", "<", "<=", ">", ">=", "in"):
            op = self.take()[1]
            return Binary(op, node, self.sum_())
        if self.peek("not") and self.toks[self.i + 1][:2] == ("op", "in"):
            self.take()
            self.take()
            return Binary("not in", node, self.sum_())
        return node

    def sum_(self) -> Node:
        node = self.product()
        while self.peek("+", "-"):
            op = self.take()[1]
            node = Binary(op, node, self.product())
        return node

    def product(self) -> Node:
        node = self.unary()
        while self.peek("*"):
            self.take()
            node = Binary("*", node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek("-"):
            self.take()
            return Unary("-", self.unary())
        return self.postfix(self.primary())

    def postfix(self, node: Node) -> Node:
        while self.peek(".", "["):
            if self.take()[1] == ".":
                kind, val, pos = self.take()
                if kind != "name":
                    raise ExprSyntaxError(f"expected a field name after '.' at column {pos + 1} of {self.text!r}, got {val!r}")
                node = Attr(node, val)
            else:
                key = self.or_()
                self.expect("]")
                node = Index(node, key)
        return node

    def primary(self) -> Node:
        kind, val, pos = self.take()
        if kind == "lit":
            return Lit(val)
        if kind == "name":
            if self.peek("("):
                return self.call(val, pos)
            return Name(val)
        if kind == "op" and val == "(":
            node = self.or_()
            self.expect(")")
            return node
        if kind == "op" and val == "[":
            return ListLit(tuple(self.items("]")))
        if kind == "op" and val == "{":
            return self.record()
        shown = "the end" if kind == "end" else repr(val)
        raise ExprSyntaxError(f"expected a value at column {pos + 1} of {self.text!r}, got {shown}")

    def items(self, close: str) -> list[Node]:
        out: list[Node] = []
        while not self.peek(close):
            out.append(self.or_())
            if not self.peek(close):
                self.expect(",")
        self.expect(close)
        return out

    def call(self, fn: str, pos: int) -> Node:
        self.expect("(")
        args = tuple(self.items(")"))
        if fn not in FUNCTIONS:
            raise ExprSyntaxError(f"expected a function of {sorted(FUNCTIONS)} at column {pos + 1} of {self.text!r}, got {fn!r}")
        lo, hi = FUNCTIONS[fn]
        if not lo <= len(args) <= hi:
            raise ExprSyntaxError(f"expected {lo}{'' if lo == hi else f'-{hi}'} argument(s) to {fn}() in {self.text!r}, got {len(args)}")
        return Call(fn, args)

    def record(self) -> Node:
        fields: list[tuple[str, Node]] = []
        while not self.peek("}"):
            kind, val, pos = self.take()
            if kind != "name":
                raise ExprSyntaxError(f"expected a field name at column {pos + 1} of {self.text!r}, got {val!r}")
            self.expect(":")
            fields.append((val, self.or_()))
            if not self.peek("}"):
                self.expect(",")
        self.expect("}")
        return RecordLit(tuple(sorted(fields)))


@lru_cache(maxsize=4096)
def parse_expr(text: str) -> Node:
    """The AST of an expression; ``ExprSyntaxError`` naming the column if it does not parse."""
    return _Parser(text).parse()


def names(node: Node) -> set[str]:
    """Every free name the expression reads (variables, parameters, value, it, row)."""
    if isinstance(node, Name):
        return {node.name}
    if isinstance(node, Call) and node.fn in ("any", "all", "count") and len(node.args) == 2:
        inner = names(node.args[1]) - {"it"}  # the predicate's ``it`` is the item
        return names(node.args[0]) | inner
    out: set[str] = set()
    for child in children(node):
        out |= names(child)
    return out


def children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, (Attr, Unary)):
        return (node.obj if isinstance(node, Attr) else node.operand,)
    if isinstance(node, Index):
        return (node.obj, node.key)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Call):
        return node.args
    if isinstance(node, RecordLit):
        return tuple(n for _, n in node.fields)
    if isinstance(node, ListLit):
        return node.items
    return ()


def unparse(node: Node) -> str:
    """The expression as text (parses back to the same AST)."""
    if isinstance(node, Lit):
        if isinstance(node.value, bool):
            return "true" if node.value else "false"
        if isinstance(node.value, str):
            return "'" + node.value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return str(node.value)
    if isinstance(node, Name):
        return node.name
    if isinstance(node, Attr):
        return f"{unparse(node.obj)}.{node.name}"
    if isinstance(node, Index):
        return f"{unparse(node.obj)}[{unparse(node.key)}]"
    if isinstance(node, Unary):
        return f"not {_wrap(node.operand)}" if node.op == "not" else f"-{_wrap(node.operand)}"
    if isinstance(node, Binary):
        return f"{_wrap(node.left)} {node.op} {_wrap(node.right)}"
    if isinstance(node, Call):
        return f"{node.fn}({', '.join(unparse(a) for a in node.args)})"
    if isinstance(node, RecordLit):
        return "{" + ", ".join(f"{k}: {unparse(v)}" for k, v in node.fields) + "}"
    if isinstance(node, ListLit):
        return "[" + ", ".join(unparse(i) for i in node.items) + "]"
    if isinstance(node, Const):
        return show_value(node.value)
    raise TypeError(f"expected an expression node, got {type(node).__name__}")


def _wrap(node: Node) -> str:
    return f"({unparse(node)})" if isinstance(node, Binary) else unparse(node)


def conjuncts(node: Node) -> list[Node]:
    """The parts of a top-level ``and`` chain."""
    if isinstance(node, Binary) and node.op == "and":
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def all_of(nodes: list[Node]) -> Node:
    """``a and b and ...``; ``true`` for no parts."""
    if not nodes:
        return Lit(True)
    out = nodes[0]
    for node in nodes[1:]:
        out = Binary("and", out, node)
    return out


_TEMPLATE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def template_parts(text: str) -> list[str | Node]:
    """A text with ``{expr}`` holes as literal parts and expressions (``{{``/``}}`` escape braces)."""
    out: list[str | Node] = []
    pos = 0
    for match in _TEMPLATE.finditer(text):
        out.append(text[pos:match.start()])
        token = match.group(0)
        out.append(token[0] if token in ("{{", "}}") else parse_expr(match.group(1).strip()))
        pos = match.end()
    out.append(text[pos:])
    return [p for p in out if p != ""]


def has_template(text: str | None) -> bool:
    return text is not None and ("{" in text or "}" in text)


def replace_names(node: Node, mapping: Mapping[str, Node]) -> Node:
    """``node`` with free names replaced (a predicate's ``it`` is left alone)."""
    if isinstance(node, Name):
        return mapping.get(node.name, node)
    if isinstance(node, Attr):
        return Attr(replace_names(node.obj, mapping), node.name)
    if isinstance(node, Index):
        return Index(replace_names(node.obj, mapping), replace_names(node.key, mapping))
    if isinstance(node, Unary):
        return Unary(node.op, replace_names(node.operand, mapping))
    if isinstance(node, Binary):
        return Binary(node.op, replace_names(node.left, mapping), replace_names(node.right, mapping))
    if isinstance(node, Call):
        inner = {k: v for k, v in mapping.items() if k != "it"}
        args = tuple(replace_names(a, mapping if i == 0 else inner) for i, a in enumerate(node.args))
        return Call(node.fn, args)
    if isinstance(node, RecordLit):
        return RecordLit(tuple((k, replace_names(v, mapping)) for k, v in node.fields))
    if isinstance(node, ListLit):
        return ListLit(tuple(replace_names(i, mapping) for i in node.items))
    return node
