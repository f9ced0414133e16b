"""A spec's types resolved: named types, variables (the state's layout) and page parameters.

``build_schema(spec)`` turns the YAML type declarations into ``fsm_sites.spec.types`` values and
reports every problem with its place named by id (``variables.cart.item``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fsm_sites.errors import SpecProblem
from fsm_sites.spec.expr import SPECIAL_NAMES
from fsm_sites.spec.site import FieldDef, SiteSpec, TypeDef
from fsm_sites.spec.types import (
    FIELD_TYPES,
    OTHER_TEXT,
    BoolT,
    EnumT,
    IntT,
    MapT,
    RecordT,
    SeqT,
    TextT,
    VType,
    show_value,
)

TOAST_VAR = "_toast"  # the message shown after a transition (only in sites with toasts)
_BUILTIN = ("bool", "int", "enum", "text", "list", "set", "map", "record")


@dataclass
class Schema:
    """The resolved types of a spec."""

    types: dict[str, VType] = field(default_factory=dict)
    variables: dict[str, VType] = field(default_factory=dict)  # includes TOAST_VAR when used
    labels: dict[str, str] = field(default_factory=dict)  # variable -> human name
    field_labels: dict[str, str] = field(default_factory=dict)  # record field name -> human name
    params: dict[str, tuple[tuple[str, VType], ...]] = field(default_factory=dict)  # page -> params
    defaults: dict[str, Any] = field(default_factory=dict)
    # variables declared with a type that could not be resolved (reported once, at the variable)
    broken: set[str] = field(default_factory=set)

    @property
    def order(self) -> tuple[str, ...]:
        """Variable names in the order of ``State.vars`` (sorted)."""
        return tuple(sorted(self.variables))

    def position(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.order)}

    def label(self, var: str) -> str:
        return self.labels.get(var) or var.replace("_", " ")


class _Resolver:
    def __init__(self, spec: SiteSpec, problems: list[SpecProblem]) -> None:
        self.defs = {t.name: t for t in spec.types}
        self.done: dict[str, VType] = {}
        self.active: set[str] = set()
        self.problems = problems
        self.field_labels: dict[str, str] = {}

    def named(self, name: str, place: str) -> VType | None:
        if name in self.done:
            return self.done[name]
        if name in self.active:
            self.problems.append(SpecProblem(place, f"type {name!r} refers to itself; records cannot nest themselves"))
            return None
        self.active.add(name)
        resolved = self.resolve(self.defs[name], f"types.{name}")
        self.active.discard(name)
        if resolved is not None:
            self.done[name] = resolved
        return resolved

    def ref(self, ref: TypeDef | str | None, place: str, *, what: str) -> VType | None:
        if ref is None:
            self.problems.append(SpecProblem(place, f"expected {what}, got nothing; add it"))
            return None
        if isinstance(ref, str):
            return self.ref(TypeDef(type=ref), place, what=what)
        return self.resolve(ref, place)

    def resolve(self, t: TypeDef, place: str) -> VType | None:
        resolved = self._resolve(t, place)
        if not t.optional or resolved is None:
            return resolved
        if not isinstance(resolved, EnumT):
            self.problems.append(SpecProblem(f"{place}.optional", f"expected `optional: true` only on an enum (a "
                                             f"choice that may be none yet), got {resolved.describe()}; remove it"))
            return None
        return resolved.with_none()

    def _resolve(self, t: TypeDef, place: str) -> VType | None:
        if t.type not in _BUILTIN:
            if t.type in self.defs:
                return self.named(t.type, place)
            self.problems.append(SpecProblem(f"{place}.type", f"expected a type of {list(_BUILTIN)} or a named "
                                             f"type of {sorted(self.defs)}, got {t.type!r}"))
            return None
        return getattr(self, f"_{t.type}")(t, place)

    def _bool(self, t: TypeDef, place: str) -> VType:
        return BoolT()

    def _int(self, t: TypeDef, place: str) -> VType | None:
        if t.min > t.max:
            self.problems.append(SpecProblem(f"{place}.min", f"expected min <= max, got {t.min} > {t.max}"))
            return None
        return IntT(t.min, t.max)

    def _enum(self, t: TypeDef, place: str) -> VType | None:
        if not t.values:
            self.problems.append(SpecProblem(f"{place}.values", "an enum needs a non-empty list of values; add them"))
            return None
        if len(set(t.values)) != len(t.values):
            self.problems.append(SpecProblem(f"{place}.values", f"expected distinct values, got {list(t.values)}"))
        unknown = sorted(set(t.labels) - set(t.values))
        if unknown:
            self.problems.append(SpecProblem(f"{place}.labels", f"expected labels of values {list(t.values)}, got {unknown}"))
        return EnumT(tuple(t.values), tuple((k, v) for k, v in t.labels.items() if k in t.values))

    def _text(self, t: TypeDef, place: str) -> VType | None:
        other = t.other or OTHER_TEXT
        if other in t.values or other == "":
            self.problems.append(SpecProblem(f"{place}.other", f"expected text that is not one of {list(t.values)} "
                                             f"and not empty, got {other!r}"))
            return None
        return TextT(tuple(t.values), other)

    def _list(self, t: TypeDef, place: str) -> VType | None:
        if t.item is None and t.values:  # the older form: a set of enum items
            return self._enum_set(t, place)
        return self._seq(t, place, ordered=True)

    def _set(self, t: TypeDef, place: str) -> VType | None:
        if t.item is None and t.values:
            return self._enum_set(t, place)
        return self._seq(t, place, ordered=False)

    def _enum_set(self, t: TypeDef, place: str) -> VType | None:
        item = self._enum(t, place)
        return None if item is None else SeqT(item, t.max_len, ordered=False)

    def _seq(self, t: TypeDef, place: str, *, ordered: bool) -> VType | None:
        item = self.ref(t.item, f"{place}.item", what="an item type (`item:`) or enum `values`")
        if item is None:
            return None
        if isinstance(item, (SeqT, MapT, TextT)) or (isinstance(item, RecordT) and _nested(item)):
            self.problems.append(SpecProblem(f"{place}.item", f"expected items that are scalars (not text) or flat "
                                             f"records, got {item.describe()}"))
            return None
        if t.max_len < 1:
            self.problems.append(SpecProblem(f"{place}.max_len", f"expected max_len >= 1, got {t.max_len}"))
            return None
        return SeqT(item, t.max_len, ordered=ordered, unique=t.unique)

    def _map(self, t: TypeDef, place: str) -> VType | None:
        keys = self.ref(t.keys, f"{place}.keys", what="the enum of keys (`keys:`)")
        value = self.ref(t.value, f"{place}.value", what="the value type (`value:`)")
        if keys is not None and not isinstance(keys, EnumT):
            self.problems.append(SpecProblem(f"{place}.keys", f"expected an enum, got {keys.describe()}"))
            return None
        if value is not None and not isinstance(value, (BoolT, IntT, EnumT)):
            self.problems.append(SpecProblem(f"{place}.value", f"expected a bool, int or enum value type, got {value.describe()}"))
            return None
        if keys is None or value is None:
            return None
        return MapT(keys, value)

    def _record(self, t: TypeDef, place: str) -> VType | None:
        if not t.fields:
            self.problems.append(SpecProblem(f"{place}.fields", "a record needs at least one field; add them"))
            return None
        out: list[tuple[str, VType]] = []
        seen: set[str] = set()
        for f in t.fields:
            fplace = f"{place}.fields.{f.name}"
            if f.name in seen:
                self.problems.append(SpecProblem(fplace, f"duplicate field {f.name!r}; give each field a unique name"))
            seen.add(f.name)
            ftype = self.resolve(_plain(f), fplace)
            if ftype is not None and not isinstance(ftype, FIELD_TYPES):
                self.problems.append(SpecProblem(fplace, f"expected a bool, int, enum or text field, got {ftype.describe()}"))
                ftype = None
            if ftype is not None:
                out.append((f.name, ftype))
            if f.label:
                self.field_labels.setdefault(f.name, f.label)
        if len(out) != len(t.fields):
            return None
        return RecordT(tuple(sorted(out)), tuple(n for n, _ in out))


def _plain(f: FieldDef) -> TypeDef:
    data = f.model_dump(exclude={"name", "label"}, exclude_defaults=True)
    return TypeDef.model_validate({"type": f.type, **data})


def _nested(record: RecordT) -> bool:
    return any(not isinstance(t, FIELD_TYPES) for _, t in record.fields)


def build_schema(spec: SiteSpec) -> tuple[Schema, list[SpecProblem]]:
    """The resolved types of ``spec`` and every problem found resolving them."""
    problems: list[SpecProblem] = []
    resolver = _Resolver(spec, problems)
    schema = Schema()
    for t in spec.types:
        resolved = resolver.named(t.name, f"types.{t.name}")
        if resolved is not None:
            schema.types[t.name] = resolved
    for var in spec.variables:
        place = f"variables.{var.name}"
        if var.name.startswith("_"):
            problems.append(SpecProblem(place, f"expected a name not starting with '_' (kept for the engine), got {var.name!r}"))
        if var.name in SPECIAL_NAMES:
            problems.append(SpecProblem(place, _reserved(var.name)))
        vtype = resolver.resolve(var, place)
        if vtype is None:
            schema.broken.add(var.name)
            continue
        schema.variables[var.name] = vtype
        schema.defaults[var.name] = _default(var.default, vtype, place, problems)
        if var.label:
            schema.labels[var.name] = var.label
    toasts = tuple(t.id for t in spec.transitions if t.toast)
    if toasts:
        schema.variables[TOAST_VAR] = EnumT(("", *toasts))
        schema.defaults[TOAST_VAR] = ""
    for page in spec.pages:
        schema.params[page.id] = _params(resolver, page.id, page.params, problems)
    schema.field_labels = resolver.field_labels
    return schema, problems


def _default(data: Any, vtype: VType, place: str, problems: list[SpecProblem]) -> Any:
    if data is None:
        return vtype.default()
    try:
        value = vtype.parse(data)
    except ValueError:
        problems.append(SpecProblem(f"{place}.default", f"{show_value(data)} is outside the domain ({vtype.describe()})"))
        return vtype.default()
    if isinstance(vtype, SeqT):
        value = vtype.canonical(value)
    return value


def _params(resolver: _Resolver, page: str, params: tuple, problems: list[SpecProblem]) -> tuple[tuple[str, VType], ...]:
    out = []
    for p in params:
        place = f"pages.{page}.params.{p.name}"
        if p.name in SPECIAL_NAMES:
            problems.append(SpecProblem(place, _reserved(p.name)))
            continue
        ptype = resolver.ref(p.type, place, what="a parameter type")
        if ptype is not None and not isinstance(ptype, (EnumT, IntT, BoolT)):
            problems.append(SpecProblem(place, f"expected an enum, int or bool parameter, got {ptype.describe()}"))
            continue
        if isinstance(ptype, EnumT) and ptype.optional:
            problems.append(SpecProblem(place, f"expected a parameter that always holds a choice, got {ptype.describe()}; "
                                        "drop `optional` and pass a value a guard proves chosen (`when: \"x != none\"`)"))
            continue
        if ptype is not None:
            out.append((p.name, ptype))
    return tuple(out)


def _reserved(name: str) -> str:
    return (f"expected a name other than {list(SPECIAL_NAMES)} (the expression language's own names: the event's "
            f"value, the item, the row), got {name!r}; rename it")
