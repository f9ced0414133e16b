"""Python-call syntax for the UI-TARS and pyautogui codecs, read with ``ast`` only.

Model text is parsed into a syntax tree and inspected; it is never run. Only literal
arguments are accepted (strings, numbers, a unary minus, flat lists/tuples of those):
a name, attribute, call, operator or comprehension in an argument is refused. There is
no ``eval``, ``exec`` or ``ast.literal_eval`` here on purpose: the walker below accepts
strictly less than Python does, so its failure modes are ours to name.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TypeVar

from harness.actions import Wait, short_repr

T = TypeVar("T")

Literal_ = str | int | float | Decimal | tuple[object, ...]
#: A wait of this long is written as the format's bare wait (``WAIT``, ``wait()``).
WAIT_DEFAULT = Wait().seconds


MAX_FLOAT_EXPONENT = 400  # checked on the exponent: arithmetic on 1e999999999 overflows
#: Integer literals above 1e400 are refused too: hex, octal and binary literals have no
#: length limit in Python, and Python will not print a decimal of more than 4300 digits.
MAX_INT_BITS = 1329  # 10**400 < 2**1329


class NotLiteral(ValueError):
    """An argument, statement or call that the literal subset does not allow."""


_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(text: str) -> str:
    """A single-quoted Python string literal that reads back as exactly ``text``."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(repr(ch)[1:-1])  # \x00, \u200b, lone surrogates
    return "'" + "".join(out) + "'"


def plain(value: T) -> T | float:
    """Decimals (exact float literals) become floats for pydantic; the rest pass as is."""
    return float(value) if isinstance(value, Decimal) else value


def decimal_literal(value: int, scale: int) -> str:
    """``value / scale`` written exactly as a decimal literal (scale a power of ten)."""
    digits = len(str(scale)) - 1
    whole, frac = divmod(abs(value), scale)
    sign = "-" if value < 0 else ""
    return f"{sign}{whole}" if frac == 0 else f"{sign}{whole}.{frac:0{digits}d}".rstrip("0")


@dataclass(frozen=True)
class ParsedCall:
    """One parsed call: ``module.func(*args, **kwargs)`` with literal arguments."""

    func: str
    owner: str | None
    args: tuple[Literal_, ...] = ()
    kwargs: dict[str, Literal_] = field(default_factory=dict)


def parse_module(source: str) -> list[ast.stmt]:
    """Parse source into statements; every parser failure becomes NotLiteral."""
    try:
        with warnings.catch_warnings():  # "invalid decimal literal", "invalid escape sequence":
            warnings.simplefilter("ignore")  # a model's text is no reason to warn our logs
            return ast.parse(source, mode="exec").body
    except (SyntaxError, ValueError, MemoryError, RecursionError) as err:
        raise NotLiteral(f"not valid Python call syntax ({type(err).__name__}: {err})") from None


def call_of(stmt: ast.stmt, source: str) -> ParsedCall | str:
    """A call statement as a ParsedCall; a bare name statement (``WAIT``) as its name."""
    if not isinstance(stmt, ast.Expr):
        raise NotLiteral(f"expected a call expression, got a {type(stmt).__name__} statement")
    node = stmt.value
    if isinstance(node, ast.Name):
        return node.id
    if not isinstance(node, ast.Call):
        raise NotLiteral(f"expected a call, got {type(node).__name__}")
    owner, func = _callee(node.func)
    args = tuple(_literal(a, source) for a in node.args)
    kwargs: dict[str, Literal_] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise NotLiteral("expected keyword arguments, got **kwargs")
        kwargs[kw.arg] = _literal(kw.value, source)
    return ParsedCall(func=func, owner=owner, args=args, kwargs=kwargs)


def _callee(node: ast.expr) -> tuple[str | None, str]:
    if isinstance(node, ast.Name):
        return None, node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id, node.attr
    raise NotLiteral(f"expected a function name like pyautogui.click, got {type(node).__name__}")


def _literal(node: ast.expr, source: str, depth: int = 0) -> Literal_:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise NotLiteral(f"expected a string or number literal, got {short_repr(value, 40)}")
        if isinstance(value, float):
            return _exact_float(node, source)
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise NotLiteral(f"expected a number below 1e{MAX_FLOAT_EXPONENT}, got an integer "
                             f"of {value.bit_length()} bits")
        return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _literal(node.operand, source, depth)
        if isinstance(inner, str | tuple):
            raise NotLiteral("expected a number after a sign, got a string or list")
        if isinstance(node.op, ast.UAdd):
            return inner
        # Decimal's unary minus rounds to the context precision; copy_negate is exact.
        return inner.copy_negate() if isinstance(inner, Decimal) else -inner
    if isinstance(node, ast.List | ast.Tuple) and depth == 0:
        return tuple(_literal(e, source, depth + 1) for e in node.elts)
    raise NotLiteral(f"expected a literal argument, got {type(node).__name__}")


def _exact_float(node: ast.Constant, source: str) -> Decimal:
    """A float literal as the exact Decimal its source text spells (no binary rounding)."""
    segment = ast.get_source_segment(source, node) or repr(node.value)
    try:
        value = Decimal(segment.replace("_", ""))
    except InvalidOperation:
        value = Decimal(repr(node.value))
    # A huge exponent ("1e999999999") is finite as a Decimal but would take forever to
    # turn into an int downstream.
    if not value.is_finite() or value.adjusted() > MAX_FLOAT_EXPONENT:
        raise NotLiteral(f"expected a finite number below 1e{MAX_FLOAT_EXPONENT}, got {segment:.40}")
    return value
