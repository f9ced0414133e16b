"""A spec read into ASTs and type environments, with every static problem found on the way.

``build_model(spec)`` parses every condition, effect, template and page argument, checks
their types against the variables, and returns a ``SiteModel`` plus the problems, each
placed by id (``transitions.place.when[0].var``). Nothing here explores states: the
engine compiles the model into closures (``fsm_sites.engine.tables``), the validator adds the
behavioural checks (``fsm_sites.validation.validate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fsm_sites.errors import SpecProblem
from fsm_sites.spec.check import CheckError, StrT, TypeEnv, compile_bool, compile_expr, converter
from fsm_sites.spec.conditions import condition_node
from fsm_sites.spec.effects import Plan, compile_plan, plan_of
from fsm_sites.spec.expr import (
    SPECIAL_NAMES,
    ExprSyntaxError,
    Lit,
    Node,
    all_of,
    names,
    parse_expr,
    template_parts,
)
from fsm_sites.spec.schema import Schema
from fsm_sites.spec.site import Element, Option, Page, SiteSpec, Transition, When
from fsm_sites.spec.types import EnumT, IntT, MapT, SeqT, TextT, VType


@dataclass
class ElementModel:
    page: str
    element: Element
    visible: Node
    disabled: Node | None
    repeat: Node | None = None
    repeat_type: SeqT | MapT | None = None  # the collection's type
    options: tuple[Option, ...] = ()
    opened: Node | None = None  # a date picker's `open_when`: its month grid is shown
    invalid: Node | None = None  # a form field's `invalid_when`: shown invalid, with its `error`
    table_visible: Node | None = None  # a paged table's copy: `visible` without "its row is on the page shown"

    @property
    def item_type(self) -> VType | None:
        """The type of ``it`` in a copy of a repeated element (None: not repeated)."""
        return item_type_of(self.repeat_type)


def item_type_of(rtype: SeqT | MapT | None) -> VType | None:
    """The type of ``it`` over a collection: a list's or set's item, a map's key."""
    if rtype is None:
        return None
    return rtype.keys if isinstance(rtype, MapT) else rtype.item


@dataclass
class TransitionModel:
    t: Transition
    index: int
    guard: Node  # the element's visibility, not its `disabled_when`, and the transition's `when`
    plans: tuple[Plan, ...]
    args: tuple[tuple[str, Node], ...]  # the target page's parameters
    value_type: VType | None  # what `value` is in its expressions (None: no value)
    edge_values: tuple[str | None, ...] | None  # None: decided per state (a repeated element)
    reads: frozenset[str] = frozenset()  # everything it reads
    guard_reads: frozenset[str] = frozenset()  # what decides whether it fires and where it goes
    plan_reads: tuple[tuple[str, frozenset[str]], ...] = ()  # (variable written, what that effect reads)
    writes: frozenset[str] = frozenset()
    moves: bool = False  # may change the page
    disabled: Node | None = None  # its element's `disabled_when` where it blocks this event (validation's warnings)
    open_guard: Node = field(default_factory=lambda: Lit(True))  # ``guard`` without ``disabled``: when `when` lets it fire


@dataclass
class SiteModel:
    spec: SiteSpec
    schema: Schema
    pages: dict[str, Page]
    elements: dict[tuple[str, str], ElementModel] = field(default_factory=dict)
    transitions: list[TransitionModel] = field(default_factory=list)
    goals: dict[str, Node] = field(default_factory=dict)
    problems: list[SpecProblem] = field(default_factory=list)
    pagers: list[tuple[Node, str, int]] = field(default_factory=list)  # each paged table: (its rows, pager, rows a page)

    def env(self, page: str, *, value: VType | None = None, it: VType | None = None) -> TypeEnv:
        # ``row``, the copy's item, is defined where ``it`` is a repeated element's item
        return TypeEnv(self.schema.variables, self.schema.position(), dict(self.schema.params.get(page, ())), value, it, it)


def reads_of(node: Node | None, params: set[str]) -> set[str]:
    return set() if node is None else names(node) - params - set(SPECIAL_NAMES)


def when_node(model: SiteModel, conds: When, place: str, env: TypeEnv | None = None) -> Node | None:
    """The conjunction of ``conds``, each type-checked in ``env``; None (with a problem
    recorded) if one is wrong."""
    parts = []
    for k, cond in enumerate(conds):
        try:
            node = condition_node(cond, model.schema.variables)
            if env is not None:
                compile_bool(node, env)
        except CheckError as exc:
            model.problems.append(SpecProblem(f"{place}[{k}]{exc.at}", str(exc)))
            return None
        parts.append(node)
    return all_of(parts)


def typed_bool(model: SiteModel, node: Node | None, env: TypeEnv, place: str) -> Node | None:
    if node is None:
        return None
    try:
        compile_bool(node, env)
    except CheckError as exc:
        model.problems.append(SpecProblem(place + exc.at, str(exc)))
        return None
    return node


def check_template(model: SiteModel, text: str | None, env: TypeEnv, place: str) -> None:
    """Every ``{expr}`` of a text parses and type-checks."""
    if not text or ("{" not in text and "}" not in text):
        return
    try:
        for part in template_parts(text):
            if not isinstance(part, str):
                compile_expr(part, env)
    except (CheckError, ExprSyntaxError) as exc:
        model.problems.append(SpecProblem(place, f"in text {text!r}: {exc}; write {{{{ for a literal brace"))


def event_value(model: SiteModel, t: Transition, em: ElementModel, place: str) -> tuple[VType | None, tuple | None]:
    """What `value` is in the transition's expressions, and its edge values (None: per state)."""
    el = em.element
    options = tuple(o.value for o in em.options)
    if t.event == "sort":  # a column heading: the sort variable's values
        order = model.schema.variables.get(el.sort or "")
        values = order.values if isinstance(order, EnumT) else ()
        return StrT(values), None  # per state: the orders its headings ask for
    if t.event == "page":  # a pager's page numbers: those the table has, decided per state
        pager = model.schema.variables.get(el.pager or "")
        numbers = tuple(str(k) for k in range(pager.lo, pager.hi + 1)) if isinstance(pager, IntT) else ()
        return StrT(numbers), None
    if em.repeat_type is not None:
        rtype = em.repeat_type
        return (StrT(rtype.keys.values) if isinstance(rtype, MapT) else StrT(None)), None
    if t.values:
        return StrT(t.values), t.values
    if options and t.event in ("select", "click", "change", "pick"):
        return StrT(options), options
    bound = model.schema.variables.get(el.bind or "")
    if t.event == "input":
        if isinstance(bound, TextT):
            return StrT(bound.classes()), bound.classes()
        model.problems.append(SpecProblem(f"{place}.values", "an input transition needs the finite list of accepted "
                                          "values, or an element bound to a text variable (free text)"))
        return StrT(()), ()
    if t.event == "select":
        model.problems.append(SpecProblem(f"{place}.values", f"select {t.element!r} has no options; give values or options"))
        return StrT(()), ()
    return None, (None,)


def convert_args(model: SiteModel, t: Transition, env: TypeEnv, place: str) -> tuple[tuple[str, Node], ...]:
    """The target page's parameters as typed expressions, in the order the page declares them;
    every missing or extra one reported."""
    target = t.target or t.page
    params = dict(model.schema.params.get(target, ()))
    given = dict(t.args)
    if t.target is None and not given:
        return tuple((name, parse_expr(name)) for name in params)  # staying: the same parameters
    extra, missing = sorted(set(given) - set(params)), sorted(set(params) - set(given))
    if extra or missing:
        model.problems.append(SpecProblem(f"{place}.args", f"expected the parameters {sorted(params)} of page {target!r}, "
                                          f"got {sorted(given)}" + (f"; add {missing}" if missing else f"; remove {extra}")))
        return ()
    out = []
    for name in params:  # in the target's declared order: the order its page instance reads them back
        raw = given[name]
        try:
            node = parse_expr(raw) if isinstance(raw, str) else Lit(raw)
            _, source = compile_expr(node, env)
            converter(params[name], source)
        except (CheckError, ExprSyntaxError) as exc:
            model.problems.append(SpecProblem(f"{place}.args.{name}", str(exc)))
            continue
        out.append((name, node))
    return tuple(out)


def compile_plans(model: SiteModel, t: Transition, env: TypeEnv, place: str) -> tuple[Plan, ...]:
    plans = []
    for k, effect in enumerate(t.effects):
        try:
            plan = plan_of(effect)
            compile_plan(plan, env)
        except (CheckError, ExprSyntaxError) as exc:
            model.problems.append(SpecProblem(f"{place}.effects[{k}]{getattr(exc, 'at', '')}", str(exc)))
            continue
        env = env.forget(plan.var)  # the effects after it see what it wrote, not what the guard proved
        plans.append(plan)
    return tuple(plans)
