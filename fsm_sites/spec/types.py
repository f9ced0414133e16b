"""Value types of FSM variables (pure): scalars, records, bounded lists and sets, maps.

A value is always immutable and hashable, so states can be dict keys:

| type | Python value | JSON (in a state key) |
|---|---|---|
| bool, int | ``bool``, ``int`` | ``true``, ``3`` |
| enum, text | ``str`` | ``"mon"`` |
| record, map | ``Rec``: ``((name, value), ...)`` sorted by name | ``{"day": "mon", ...}`` |
| list, set | ``tuple`` of items (a set keeps a canonical order) | ``[...]`` |

``to_json``/``from_json`` convert without knowing the type, which is what lets
``State.from_key`` read any key, old flat keys included.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from math import comb, perm
from typing import Any

Value = Any  # bool | int | str | Rec | tuple


class Rec(tuple):
    """A record or map value: ``((name, value), ...)`` sorted by name. Equal to the plain
    tuple of the same pairs; only its JSON form (an object) differs."""

    __slots__ = ()

    @classmethod
    def of(cls, mapping: dict[str, Value]) -> Rec:
        return cls(sorted(mapping.items()))

    def get(self, name: str, default: Value = None) -> Value:
        for key, value in self:
            if key == name:
                return value
        return default

    def replace(self, name: str, value: Value) -> Rec:
        return Rec(tuple((k, value if k == name else v) for k, v in self))

    def as_dict(self) -> dict[str, Value]:
        return dict(self)


def to_json(value: Value) -> Any:
    """A value as JSON data: a Rec becomes an object, a tuple a list."""
    if isinstance(value, Rec):
        return {k: to_json(v) for k, v in value}
    if isinstance(value, tuple):
        return [to_json(v) for v in value]
    return value


def from_json(data: Any) -> Value:
    """The inverse of ``to_json``: objects become Recs, lists tuples."""
    if isinstance(data, dict):
        return Rec(sorted((str(k), from_json(v)) for k, v in data.items()))
    if isinstance(data, list):
        return tuple(from_json(v) for v in data)
    return data


def show_value(value: Value) -> str:
    """A value as it reads in an error message: JSON, never a Python tuple."""
    try:
        return json.dumps(to_json(value), ensure_ascii=False)
    except TypeError:
        return repr(value)


@dataclass(frozen=True)
class VType:
    """Base of all value types."""

    kind: str = field(init=False, default="")

    def default(self) -> Value:
        raise NotImplementedError

    def contains(self, value: Value) -> bool:
        """Whether ``value`` belongs to the domain."""
        raise NotImplementedError

    def size(self) -> int | None:
        """How many values the domain holds (None: unbounded, as free text)."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def show(self, value: Value) -> str:
        """Display text of a value."""
        if isinstance(value, bool):
            return "Yes" if value else "No"
        return str(value)

    def sort_key(self, value: Value) -> Any:
        return value

    def parse(self, data: Any) -> Value:
        """A YAML/JSON value (a default, a literal) as a value of this type; ValueError if not."""
        value = from_json(data)
        if not self.contains(value):
            raise ValueError(f"{show_value(data)} is outside {self.describe()}")
        return value


@dataclass(frozen=True)
class BoolT(VType):
    kind: str = field(init=False, default="bool")

    def default(self) -> Value:
        return False

    def contains(self, value: Value) -> bool:
        return isinstance(value, bool)

    def size(self) -> int | None:
        return 2

    def describe(self) -> str:
        return "true/false"

    def parse(self, data: Any) -> Value:
        if isinstance(data, str) and data.strip().lower() in ("true", "false"):
            return data.strip().lower() == "true"
        return super().parse(data)


@dataclass(frozen=True)
class IntT(VType):
    lo: int = 0
    hi: int = 9
    kind: str = field(init=False, default="int")

    def default(self) -> Value:
        return self.lo

    def contains(self, value: Value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and self.lo <= value <= self.hi

    def size(self) -> int | None:
        return self.hi - self.lo + 1

    def describe(self) -> str:
        return f"int {self.lo}..{self.hi}"

    def clamp(self, value: int) -> int:
        return max(self.lo, min(self.hi, value))


NONE = ""  # an optional enum's "nothing chosen yet" (`none` in expressions)


@dataclass(frozen=True)
class EnumT(VType):
    values: tuple[str, ...] = ()  # an optional enum's start with NONE
    labels: tuple[tuple[str, str], ...] = ()  # display label of each value that has one
    optional: bool = False  # `optional: true`: NONE (nothing chosen yet) is a value, and the default
    # where a value of this type came from (a path such as ``draft.pet``), for messages; not part of the type
    origin: str = field(default="", compare=False)
    kind: str = field(init=False, default="enum")

    @property
    def chosen(self) -> tuple[str, ...]:
        """The values that are a choice: all but NONE."""
        return tuple(v for v in self.values if v != NONE)

    def with_none(self) -> EnumT:
        """This enum, optional: NONE first (the default)."""
        return EnumT((NONE, *self.chosen), self.labels, optional=True)

    def narrowed(self) -> EnumT:
        """This enum without NONE: what a guard ``x != none`` proves ``x`` holds."""
        return EnumT(self.chosen, self.labels)

    def default(self) -> Value:
        return self.values[0] if self.values else ""

    def contains(self, value: Value) -> bool:
        return isinstance(value, str) and value in self.values

    def size(self) -> int | None:
        return len(self.values)

    def describe(self) -> str:
        return f"one of {list(self.chosen)} or none" if self.optional else f"one of {list(self.values)}"

    def show(self, value: Value) -> str:
        return dict(self.labels).get(value, str(value))

    def sort_key(self, value: Value) -> Any:
        return self.values.index(value) if value in self.values else len(self.values)


OTHER_TEXT = "something else"  # the class of any text that does not matter, unless a spec names its own


@dataclass(frozen=True)
class TextT(VType):
    """Free text: any text is accepted and classified as one of ``values`` (compared without
    case or surrounding spaces), ``""``, or other text, which the machine treats as ``other``."""

    values: tuple[str, ...] = ()
    other: str = OTHER_TEXT  # unless the spec names its own stand-in
    max_chars: int = 80
    kind: str = field(init=False, default="text")

    def default(self) -> Value:
        return ""

    def contains(self, value: Value) -> bool:
        return isinstance(value, str) and len(value) <= self.max_chars

    def size(self) -> int | None:
        return len(self.classes())

    def classes(self) -> tuple[str, ...]:
        """The values the machine tells apart: "", each value that matters, the other text."""
        return ("", *self.values, self.other)

    def normalize(self, raw: str) -> str:
        """What a form keeps of typed text: trimmed, inner spaces collapsed, bounded; a value
        that matters in its own spelling."""
        text = " ".join(str(raw).split())[: self.max_chars]
        folded = text.casefold()
        return next((v for v in self.values if v.casefold() == folded), text)

    def classify(self, text: str) -> str:
        """The class of stored text: itself when it matters or is empty, else ``other``."""
        return text if text == "" or text in self.values else self.other

    def describe(self) -> str:
        return f"text (values that matter: {list(self.values)}; any other text counts as {self.other!r})"

    def sort_key(self, value: Value) -> Any:
        return self.classify(value)  # a set of records orders typed text as the machine does its class

    def assign(self, value: Value) -> Value:
        """A value assigned to this type: normalized, but typed text (``Typed``) kept as it is."""
        return value if isinstance(value, Typed) else self.normalize(value)


class Typed(str):
    """A text class carrying the text that was typed: equal to (and hashed as) the class, so
    effects and guards compute exactly what they compute on classes, while the typed text
    rides along wherever the value is copied (``Machine.step``; never part of a state)."""

    text: str

    def __new__(cls, klass: str, text: str) -> Typed:
        obj = super().__new__(cls, klass)
        obj.text = text
        return obj


def holds_text(t: VType) -> bool:
    """Whether values of ``t`` may hold free text (a text, a record with a text field, ...)."""
    if isinstance(t, TextT):
        return True
    if isinstance(t, RecordT):
        return any(holds_text(f) for _, f in t.fields)
    if isinstance(t, SeqT):
        return holds_text(t.item)
    return False


def classified(t: VType, value: Value, *, tag: bool = False) -> Value:
    """``value`` with every free text replaced by its class (``tag``: a ``Typed`` class that
    carries the text, where they differ)."""
    if isinstance(t, TextT):
        klass = t.classify(value)
        return Typed(klass, value) if tag and klass != value else klass
    if isinstance(t, RecordT):
        return Rec(tuple((n, classified(f, v, tag=tag)) for (n, f), (_, v) in zip(t.fields, value, strict=True)))
    if isinstance(t, SeqT):
        return t.canonical(tuple(classified(t.item, v, tag=tag) for v in value))
    return value


def untagged(value: Value) -> Value:
    """The inverse of ``classified(..., tag=True)``: each ``Typed`` back to the text typed."""
    if isinstance(value, Typed):
        return value.text
    if isinstance(value, Rec):
        return Rec(tuple((n, untagged(v)) for n, v in value))
    if isinstance(value, tuple):
        return tuple(untagged(v) for v in value)
    return value


@dataclass(frozen=True)
class RecordT(VType):
    fields: tuple[tuple[str, VType], ...] = ()  # sorted by name, as in the value
    display: tuple[str, ...] = field(default=(), compare=False)  # the fields in the order the spec declares them
    kind: str = field(init=False, default="record")

    def field_type(self, name: str) -> VType | None:
        return dict(self.fields).get(name)

    def index(self, name: str) -> int:
        return [n for n, _ in self.fields].index(name)

    def default(self) -> Value:
        return Rec(tuple((n, t.default()) for n, t in self.fields))

    def contains(self, value: Value) -> bool:
        if not isinstance(value, tuple) or len(value) != len(self.fields):
            return False
        return all(isinstance(p, tuple) and len(p) == 2 and p[0] == n and t.contains(p[1])
                   for p, (n, t) in zip(value, self.fields, strict=True))

    def size(self) -> int | None:
        total = 1
        for _, t in self.fields:
            size = t.size()
            if size is None:
                return None
            total *= size
        return total

    def describe(self) -> str:
        return "record {" + ", ".join(f"{n}: {t.describe()}" for n, t in self.fields) + "}"

    def show(self, value: Value) -> str:
        types, values = dict(self.fields), dict(value)
        order = self.display or tuple(types)
        shown = (types[n].show(values[n]) for n in order)
        return ", ".join(x for x in shown if x)  # a field with nothing chosen (or typed) shows nothing

    def sort_key(self, value: Value) -> Any:
        return tuple(t.sort_key(v) for (_, t), (_, v) in zip(self.fields, value, strict=True))


@dataclass(frozen=True)
class SeqT(VType):
    """A bounded list (insertion order) or set (canonical order, no duplicates) of items."""

    item: VType = field(default_factory=lambda: EnumT(()))
    max_len: int = 4
    ordered: bool = False  # True: a list; False: a set
    unique: bool = True  # a list that refuses an item it already holds
    kind: str = field(init=False, default="seq")

    def default(self) -> Value:
        return ()

    def contains(self, value: Value) -> bool:
        if not isinstance(value, tuple) or isinstance(value, Rec) or len(value) > self.max_len:
            return False
        if not all(self.item.contains(v) for v in value):
            return False
        if self.ordered:
            return not self.unique or len(set(value)) == len(value)
        return value == self.canonical(value)

    def canonical(self, items: tuple) -> tuple:
        if self.ordered:
            return items
        return tuple(sorted(set(items), key=self.item.sort_key))

    def parse(self, data: Any) -> Value:
        value = from_json(data)
        if isinstance(value, tuple) and not isinstance(value, Rec) and not self.ordered:
            try:
                value = self.canonical(value)  # a set may be written in any order
            except TypeError:
                pass
        if not self.contains(value):
            raise ValueError(f"{show_value(data)} is outside {self.describe()}")
        return value

    def size(self) -> int | None:
        inner = self.item.size()
        if inner is None:
            return None
        pick = perm if self.ordered else comb
        return sum(pick(inner, k) for k in range(min(self.max_len, inner) + 1))

    def describe(self) -> str:
        what = "list" if self.ordered else "set"
        return f"{what} of up to {self.max_len} items of {self.item.describe()}"

    def show(self, value: Value) -> str:
        return "; ".join(self.item.show(v) for v in value) if value else "(none)"


@dataclass(frozen=True)
class MapT(VType):
    """A value for every key of an enum (a quantity per product, a folder per message)."""

    keys: EnumT = field(default_factory=lambda: EnumT(()))
    value: VType = field(default_factory=BoolT)
    kind: str = field(init=False, default="map")

    def default(self) -> Value:
        return Rec(tuple((k, self.value.default()) for k in sorted(self.keys.values)))

    def contains(self, value: Value) -> bool:
        if not isinstance(value, tuple) or len(value) != len(self.keys.values):
            return False
        return all(isinstance(p, tuple) and len(p) == 2 and p[0] in self.keys.values and self.value.contains(p[1])
                   for p in value) and [p[0] for p in value] == sorted(self.keys.values)

    def size(self) -> int | None:
        inner = self.value.size()
        return None if inner is None else inner ** len(self.keys.values)

    def describe(self) -> str:
        return f"map from {list(self.keys.values)} to {self.value.describe()}"

    def show(self, value: Value) -> str:
        shown = [f"{self.keys.show(k)}: {self.value.show(v)}" for k, v in value if v != self.value.default()]
        return ", ".join(shown) if shown else "(none)"

    def parse(self, data: Any) -> Value:
        if isinstance(data, dict):  # a default may name only the keys that differ
            merged = dict(self.default()) | {str(k): from_json(v) for k, v in data.items()}
            data = to_json(Rec(sorted(merged.items())))
        return super().parse(data)


FIELD_TYPES = (BoolT, IntT, EnumT, TextT)  # what a record's field may be


def is_scalar(t: VType) -> bool:
    return isinstance(t, (BoolT, IntT, EnumT, TextT))


def same_shape(a: VType, b: VType) -> bool:
    """Whether values of ``a`` and ``b`` can be compared or assigned (enums: shared values)."""
    if isinstance(a, (EnumT, TextT)) and isinstance(b, (EnumT, TextT)):
        if isinstance(a, EnumT) and isinstance(b, EnumT):
            return bool(set(a.values) & set(b.values))
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, RecordT):
        return [n for n, _ in a.fields] == [n for n, _ in b.fields] and all(  # type: ignore[attr-defined]
            same_shape(x, y) for (_, x), (_, y) in zip(a.fields, b.fields, strict=True))  # type: ignore[attr-defined]
    if isinstance(a, SeqT):
        return same_shape(a.item, b.item)  # type: ignore[attr-defined]
    if isinstance(a, MapT):
        return a.keys.values == b.keys.values and same_shape(a.value, b.value)  # type: ignore[attr-defined]
    return True
