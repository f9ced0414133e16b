"""A site model compiled into closures over one *layout*: the full state, or a projection
onto the variables a goal depends on (see ``fsm_sites.engine.projection``).

A state inside the engine is ``(page, values)``: the page instance string and a tuple of
variable values in layout order. ``Tables.successors`` is the search's inner loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fsm_sites.spec.check import Ctx, compile_bool, compile_expr, converter
from fsm_sites.spec.effects import Apply, compile_plan
from fsm_sites.spec.expr import SPECIAL_NAMES, Lit, names
from fsm_sites.spec.model import ElementModel, SiteModel, TransitionModel
from fsm_sites.spec.model_goals import page_string, parse_arg, split_page
from fsm_sites.spec.schema import TOAST_VAR
from fsm_sites.spec.types import EnumT, MapT, TextT, classified, holds_text
from fsm_sites.spec.value_widgets import heading_orders, move_values, page_count

Node = tuple[str, tuple]  # (page instance, values in layout order)
_SUCCESSOR_CACHE = 100_000  # states whose successors are kept (cleared when full)


@dataclass
class CTrans:
    """One transition compiled for a layout."""

    tm: TransitionModel
    id: str
    page: str
    element: str
    event: str
    guard: Callable | None  # None: always holds
    per_value: bool  # the guard reads `value` or `it`
    values: tuple | None  # None: a repeated element's instances, decided per state
    repeat: Callable | None
    repeat_keys: tuple[str, ...] | None  # a repeated map's keys, in enum order
    effects: tuple[Apply, ...]
    target: str | None
    args: tuple[tuple[Callable, Callable], ...]  # (expression, conversion) per target parameter
    toast: tuple[int, str] | None  # (position, value)
    free_text: TextT | None  # an input that accepts any text, classified by this type
    pager: tuple[int | None, int] | None = None  # a table's `page` event: (the pager's position, rows a page)
    sorter: tuple[int | None, tuple[str, ...]] | None = None  # a table's `sort`: (its variable's position, values)

    def instances(self, vals: tuple, ctx: Ctx) -> Iterator[tuple[str, Any]]:
        """(event value, item) of each copy of a repeated element; for a table's pager, each
        page the table has but the one shown (no item)."""
        coll = self.repeat(vals, ctx)  # type: ignore[misc]
        if self.sorter is not None:
            at, values = self.sorter
            for order in heading_orders(values, vals[at] if at is not None else None):
                yield order, None
        elif self.pager is not None:
            at, per_page = self.pager
            shown = vals[at] if at is not None else None
            for number in range(1, page_count(len(coll), per_page) + 1):
                if number != shown:
                    yield str(number), None
        elif self.repeat_keys is not None:
            for key in self.repeat_keys:
                yield key, key
        elif self.event == "move":  # a sortable's drag: `it` is the item that moves
            for value in move_values(len(coll)):
                yield value, coll[int(value.partition(">")[0])]
        else:
            for i, item in enumerate(coll):
                yield str(i), item


class Tables:
    """The compiled transitions of a model over ``layout`` (variable names in order)."""

    def __init__(self, model: SiteModel, layout: tuple[str, ...], keep: set[str] | None = None) -> None:
        self.model = model
        self.layout = layout
        self.position = {name: i for i, name in enumerate(layout)}
        self.params = model.schema.params
        self.by_page: dict[str, list[CTrans]] = {}
        self.by_trigger: dict[tuple[str, str, str], list[CTrans]] = {}
        # the variables that may hold free text (a text, records with a text field, ...)
        self.text_positions = tuple((i, t) for i, n in enumerate(layout)
                                    if holds_text(t := model.schema.variables[n]))
        self._pages: dict[str, tuple[str, dict[str, Any]]] = {}
        self._visible: dict[tuple[str, str], Callable] = {}
        self._successors: dict[Node, list] = {}  # searches for many goals revisit the same states
        for tm in model.transitions:
            if keep is not None and not (tm.moves or tm.writes & keep):
                continue  # changes nothing the projection keeps: a self-loop there
            ct = self._compile(tm, keep)
            self.by_page.setdefault(ct.page, []).append(ct)
            self.by_trigger.setdefault((ct.page, ct.element, ct.event), []).append(ct)

    def _env(self, page: str, **kw: Any):
        env = self.model.env(page, **kw)
        env.position = self.position
        return env

    def _compile(self, tm: TransitionModel, keep: set[str] | None) -> CTrans:
        t = tm.t
        em: ElementModel = self.model.elements[(t.page, t.element)]
        env = self._env(t.page, value=tm.value_type, it=em.item_type)
        always = isinstance(tm.guard, Lit) and tm.guard.value is True
        guard = None if always else compile_bool(tm.guard, env)
        env = env.narrow(tm.guard)  # effects and arguments: as the model checked them
        effects = tuple(compile_plan(p, env) for p in tm.plans if keep is None or p.var in keep)
        args: tuple[tuple[Callable, Callable], ...] = ()
        if tm.args:
            target_params = dict(self.params.get(t.target or t.page, ()))
            args = tuple((compile_expr(node, env)[0], converter(target_params[name], compile_expr(node, env)[1]))
                         for name, node in tm.args)
        toast = None
        if TOAST_VAR in self.position:
            toast = (self.position[TOAST_VAR], t.id if t.toast else "")
        bound = self.model.schema.variables.get(em.element.bind or "")
        free = bound if isinstance(bound, TextT) and t.event == "input" and not t.values else None
        repeat = compile_expr(em.repeat, self._env(t.page))[0] if em.repeat is not None else None
        el = em.element
        pager = (self.position.get(el.pager), el.per_page) if t.event == "page" and el.pager and el.per_page else None
        order = self.model.schema.variables.get(el.sort or "")
        sorter = ((self.position.get(el.sort or ""), order.values)
                  if t.event == "sort" and isinstance(order, EnumT) else None)
        return CTrans(
            tm, t.id, t.page, t.element, t.event, guard, bool(names(tm.guard).intersection(SPECIAL_NAMES)) or repeat is not None,
            tm.edge_values, repeat, em.repeat_type.keys.values if isinstance(em.repeat_type, MapT) else None, effects,
            t.target, args, toast, free, pager, sorter,
        )

    # ---- pages -----------------------------------------------------------------------
    def page_of(self, page: str) -> tuple[str, dict[str, Any]]:
        """(page id, parameters) of a page instance string (cached)."""
        found = self._pages.get(page)
        if found is None:
            pid, raw = split_page(page)
            params = self.params.get(pid, ())
            if len(raw) != len(params):
                raise ValueError(f"expected page {pid!r} with parameters {[p for p, _ in params]}, got {page!r}")
            found = (pid, {name: parse_arg(t, a) for (name, t), a in zip(params, raw, strict=True)})
            self._pages[page] = found
        return found

    # ---- transitions -----------------------------------------------------------------
    def fire(self, ct: CTrans, page: str, vals: tuple, ctx: Ctx) -> Node:
        """The state after ``ct`` fires (its guard already checked)."""
        if ct.effects or ct.toast:
            w = list(vals)
            for effect in ct.effects:
                effect(w, ctx)
            if ct.toast:
                w[ct.toast[0]] = ct.toast[1]
            vals = tuple(w)
        if ct.target is None:
            return page, vals
        if not ct.args:
            return ct.target, vals
        return page_string(ct.target, tuple(conv(fn(vals, ctx)) for fn, conv in ct.args)), vals

    def successors(self, page: str, vals: tuple) -> list[tuple[CTrans, str | None, Node]]:
        """Every enabled (transition, event value, next state), in spec order (cached)."""
        key = (page, vals)
        found = self._successors.get(key)
        if found is None:
            if len(self._successors) >= _SUCCESSOR_CACHE:
                self._successors.clear()
            found = self._successors[key] = self.expand(page, vals)
        return found

    def expand(self, page: str, vals: tuple) -> list[tuple[CTrans, str | None, Node]]:
        pid, args = self.page_of(page)
        out: list[tuple[CTrans, str | None, Node]] = []
        ctx = Ctx(args)
        for ct in self.by_page.get(pid, ()):
            guard = ct.guard
            if ct.values is None:
                for value, item in ct.instances(vals, ctx):
                    ctx.value, ctx.it, ctx.row = value, item, item
                    if guard is None or guard(vals, ctx):
                        out.append((ct, value, self.fire(ct, page, vals, ctx)))
                ctx.it = ctx.row = None
            elif ct.per_value:
                for value in ct.values:
                    ctx.value = value
                    if guard is None or guard(vals, ctx):
                        out.append((ct, value, self.fire(ct, page, vals, ctx)))
            elif guard is None or guard(vals, ctx):
                for value in ct.values:
                    ctx.value = value
                    out.append((ct, value, self.fire(ct, page, vals, ctx)))
        return out

    def accept(self, ct: CTrans, vals: tuple, ctx: Ctx, raw: str | None) -> tuple[str | None, str | None] | None:
        """The edge value ``ct`` takes for an event that carried ``raw`` (and the text to keep),
        with ``ctx`` set for its guard; None if ``ct`` does not accept it."""
        if ct.values is None:
            for value, item in ct.instances(vals, ctx):
                if value == raw:
                    ctx.value, ctx.it, ctx.row = value, item, item
                    return value, None
            return None
        if ct.free_text is not None and raw is not None:
            text = ct.free_text.normalize(raw)
            value = ct.free_text.classify(text)
            ctx.value = value
            return value, (text if text != value else None)
        if ct.values == (None,):
            ctx.value = None
            return None, None
        if raw in ct.values:
            ctx.value = raw
            return raw, None
        return None

    def canonical(self, vals: tuple, *, tag: bool = False) -> tuple:
        """Free text replaced by its class (what the machine tells apart); ``tag``: by a
        ``Typed`` class that carries the text (``Machine.step``)."""
        if not self.text_positions:
            return vals
        w = list(vals)
        for i, t in self.text_positions:
            w[i] = t.classify(w[i]) if isinstance(t, TextT) and not tag else classified(t, w[i], tag=tag)
        return tuple(w)

    def visible(self, em: ElementModel, page: str, vals: tuple, it: Any = None) -> bool:
        """Whether an element (one copy of a repeated one: ``it``) is shown."""
        node = em.visible
        if isinstance(node, Lit) and node.value is True:
            return True
        key = (em.page, em.element.id)
        fn = self._visible.get(key)
        if fn is None:
            fn = self._visible[key] = compile_bool(node, self._env(em.page, it=em.item_type))
        return bool(fn(vals, Ctx(self.page_of(page)[1], None, it, it)))
