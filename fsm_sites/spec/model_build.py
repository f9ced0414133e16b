"""Building the typed model of a spec: pages, elements, transitions, goals and starts,
with every problem found (``build_model``). The model's data and shared helpers live in
``fsm_sites.spec.model``; the checks of transitions and of goals in ``model_transitions`` and
``model_goals``, which this module calls (so neither imports it).
"""

from __future__ import annotations

import re

from fsm_sites.errors import SpecProblem
from fsm_sites.spec.check import CheckError, TypeEnv, compile_expr
from fsm_sites.spec.expr import (
    ExprSyntaxError,
    Lit,
    Node,
    all_of,
    parse_expr,
)
from fsm_sites.spec.model import (
    ElementModel,
    SiteModel,
    check_template,
    item_type_of,
    when_node,
)
from fsm_sites.spec.model_goals import check_goals, check_starts
from fsm_sites.spec.model_paging import table_paging
from fsm_sites.spec.model_transitions import check_transition
from fsm_sites.spec.model_widgets import widget_conditions
from fsm_sites.spec.schema import build_schema
from fsm_sites.spec.site import Element, Option, Page, SiteSpec, Transition
from fsm_sites.spec.types import EnumT, MapT, RecordT, SeqT, VType
from fsm_sites.spec.value_widgets import WIDGET_KINDS, WidgetError, widget_options

_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def build_model(spec: SiteSpec) -> SiteModel:
    """The spec's ASTs and every static problem (empty when it is sound)."""
    schema, problems = build_schema(spec)
    model = SiteModel(spec, schema, {p.id: p for p in spec.pages}, problems=problems)
    _check_ids(model)
    if spec.start_page not in model.pages:
        model.problems.append(SpecProblem("start_page", f"expected one of the pages {sorted(model.pages)}, got {spec.start_page!r}"))
    elif schema.params.get(spec.start_page):
        model.problems.append(SpecProblem("start_page", f"expected a page without parameters, got {spec.start_page!r}"))
    for page in spec.pages:
        _page(model, page)
    for index, t in enumerate(spec.transitions):
        _transition(model, index, t)
    check_goals(model)
    check_starts(model)
    _drop_knock_ons(model)
    return model


def _drop_knock_ons(model: SiteModel) -> None:
    """A variable whose type is wrong is reported once, where it is declared: its uses, which
    would each say it "is not a variable" (every check words it so), are not reported too."""
    broken = [f"{name!r} is not a variable" for name in model.schema.broken]
    if broken:
        model.problems = [p for p in model.problems if not any(b in p.message for b in broken)]


def _check_ids(model: SiteModel) -> None:
    spec = model.spec
    groups = [("types", "type", [t.name for t in spec.types]), ("variables", "variable", [v.name for v in spec.variables]),
              ("pages", "page", [p.id for p in spec.pages]), ("transitions", "transition", [t.id for t in spec.transitions]),
              ("goals", "goal", [g.id for g in spec.goals]), ("starts", "start state", [s.id for s in spec.starts])]
    for place, what, ids in groups:
        seen: set[str] = set()
        for ident in ids:
            if not _ID.match(ident):
                model.problems.append(SpecProblem(f"{place}.{ident}", f"expected an id of letters, digits, _ and -, got {ident!r}"))
            if ident in seen:
                model.problems.append(SpecProblem(f"{place}.{ident}", f"duplicate {what} {ident!r}; give each one a unique id"))
            seen.add(ident)


def _page(model: SiteModel, page: Page) -> None:
    place = f"pages.{page.id}"
    if page.kind == "modal":
        parent = model.pages.get(page.parent or "")
        if parent is None:
            model.problems.append(SpecProblem(f"{place}.parent", f"modal {page.id!r} needs a parent page; got {page.parent!r}"))
        elif parent.kind == "modal":
            model.problems.append(SpecProblem(f"{place}.parent", f"expected a full page as parent of {page.id!r}, got modal {parent.id!r}"))
        elif [p for p, _ in model.schema.params.get(parent.id, ())] != [p for p, _ in model.schema.params.get(page.id, ())]:
            model.problems.append(SpecProblem(f"{place}.params", f"a modal takes its parent's parameters; expected "
                                              f"{[p.name for p in parent.params]}, got {[p.name for p in page.params]}"))
    elif page.parent is not None:
        model.problems.append(SpecProblem(f"{place}.parent", f"only a modal has a parent; remove it or set kind: modal on {page.id!r}"))
    env = model.env(page.id)
    for text, where in ((page.title, "title"), (page.body, "body"), (page.route, "route")):
        check_template(model, text, env, f"{place}.{where}")
    seen: set[str] = set()
    paged = table_paging(model, page, place)
    for element in page.elements:
        eplace = f"{place}.elements.{element.id}"
        if element.id in seen:
            model.problems.append(SpecProblem(eplace, f"duplicate element {element.id!r} of page {page.id!r}; give each one a unique id"))
        seen.add(element.id)
        _element(model, page, element, eplace, paged.get(element.repeat or ""))


def _element(model: SiteModel, page: Page, el: Element, place: str, paged: Node | None = None) -> None:
    env = model.env(page.id)
    repeat, rtype = None, None
    if el.repeat:
        repeat, rtype = _repeat(model, el, env, place)
        if rtype is not None:
            env = model.env(page.id, it=item_type_of(rtype))
    if el.bind is not None and (el.bind not in model.schema.variables or el.bind.startswith("_")):
        model.problems.append(SpecProblem(f"{place}.bind", f"{el.bind!r} is not a variable; expected one of "
                                          f"{sorted(v for v in model.schema.variables if not v.startswith('_'))}"))
    inside = widget_conditions(model, page, el, place)
    visible = when_node(model, (*el.visible_when, *inside), f"{place}.visible_when", env)
    disabled = when_node(model, el.disabled_when, f"{place}.disabled_when", env) if el.disabled_when else None
    for text, where in ((el.label, "label"), (el.description, "description")):
        check_template(model, text, env, f"{place}.{where}")
    options = el.options
    bound = model.schema.variables.get(el.bind or "")
    if not options and el.kind in ("select", "radio") and isinstance(bound, EnumT) and el.kind == "select":
        choices = bound.chosen if bound.optional else bound.values  # none is where a select starts, not a choice
        options = tuple(Option(value=v, label=bound.show(v) if v != bound.show(v) else None) for v in choices)
    opened = None
    if el.kind in WIDGET_KINDS:
        options, opened = _widget(model, el, bound, rtype, env, place)
    elif el.open_when or el.month:
        model.problems.append(SpecProblem(f"{place}.open_when", f"expected `open_when` and `month` only on a "
                                          f"date_picker, got them on a {el.kind}"))
    invalid = _invalid(model, el, env, place)
    if el.sort:
        _check_sort(model, el, rtype, place)
    table_visible = None
    if paged is not None and visible is not None and isinstance(rtype, SeqT):  # a row shows only on its page
        table_visible, visible = visible, all_of([n for n in (visible, paged) if n != Lit(True)])
    model.elements[(page.id, el.id)] = ElementModel(page.id, el, visible or Lit(True), disabled, repeat, rtype,
                                                    options, opened, invalid, table_visible)


def _check_sort(model: SiteModel, el: Element, rtype: SeqT | MapT | None, place: str) -> None:
    """`sort` names an enum variable of the records' field names (`-name`: descending)."""
    item = rtype.item if isinstance(rtype, SeqT) else None
    if not isinstance(item, RecordT):
        got = rtype.describe() if rtype is not None else "no `repeat`"
        model.problems.append(SpecProblem(f"{place}.sort", f"expected `sort` on an element repeated over a list or set "
                                          f"of records (a data table), got {got}"))
        return
    order = model.schema.variables.get(el.sort or "")
    fields = [n for n, _ in item.fields]
    bad = [v for v in order.values if v.lstrip("-") not in fields] if isinstance(order, EnumT) else None
    if bad is None or bad:
        got = f"{bad!r}" if bad else f"{el.sort!r}, {order.describe() if order else 'not a variable'}"
        model.problems.append(SpecProblem(f"{place}.sort", f"expected an enum variable whose values are the records' "
                                          f"fields {fields} (or -field, descending), got {got}"))


#: Kinds that are form fields: the ones that may be shown invalid with an error beside them.
FIELD_KINDS = ("text_input", "combobox", "select", "checkbox", "radio", "slider", "date_picker")


def _invalid(model: SiteModel, el: Element, env: TypeEnv, place: str) -> Node | None:
    """A form field's `invalid_when` (checked), its `error` a checked template."""
    if not el.invalid_when:
        if el.error:
            model.problems.append(SpecProblem(f"{place}.error", "expected `invalid_when` with `error` (when the "
                                              "field shows it), got `error` alone"))
        return None
    if el.kind not in FIELD_KINDS:
        model.problems.append(SpecProblem(f"{place}.invalid_when", f"expected `invalid_when` on a form field "
                                          f"({', '.join(FIELD_KINDS)}), got it on a {el.kind}"))
        return None
    check_template(model, el.error, env, f"{place}.error")
    return when_node(model, el.invalid_when, f"{place}.invalid_when", env)


def _widget(model: SiteModel, el: Element, bound: VType | None, rtype: SeqT | MapT | None, env: TypeEnv,
            place: str) -> tuple[tuple[Option, ...], Node | None]:
    """A slider's, date picker's or sortable's accepted values (as options) and when its popup is open."""
    try:
        options = widget_options(el, bound, rtype)
    except WidgetError as exc:
        at = ".repeat" if el.kind == "sortable" else ".bind"
        model.problems.append(SpecProblem(place + at, str(exc)))
        options = ()
    if el.kind != "date_picker":
        if el.open_when or el.month:
            model.problems.append(SpecProblem(f"{place}.open_when", f"expected `open_when` and `month` only on a "
                                              f"date_picker, got them on a {el.kind}"))
        return options, None
    if not el.open_when:
        model.problems.append(SpecProblem(f"{place}.open_when", "expected `open_when`: the condition (on a variable "
                                          "its `open` and `pick` transitions set) under which its month grid is open"))
        return options, None
    return options, when_node(model, el.open_when, f"{place}.open_when", env)


def _repeat(model: SiteModel, el: Element, env: TypeEnv, place: str) -> tuple[Node | None, SeqT | MapT | None]:
    try:
        node = parse_expr(el.repeat or "")
        _, rtype = compile_expr(node, env)
    except (CheckError, ExprSyntaxError) as exc:
        model.problems.append(SpecProblem(f"{place}.repeat", str(exc)))
        return None, None
    if not isinstance(rtype, (SeqT, MapT)):
        model.problems.append(SpecProblem(f"{place}.repeat", f"expected a list, set or map to repeat over, got {rtype.describe()}"))
        return None, None
    if el.kind not in ("button", "link", "card", "list_item", "text", "sortable"):
        model.problems.append(SpecProblem(f"{place}.kind", f"expected a button, link, card, list_item, text or sortable "
                                          f"to repeat, got {el.kind}"))
    return node, rtype


def _transition(model: SiteModel, index: int, t: Transition) -> None:
    place = f"transitions.{t.id}"
    page = model.pages.get(t.page)
    if page is None:
        model.problems.append(SpecProblem(f"{place}.page", f"{t.page!r} is not a page; expected one of {sorted(model.pages)}"))
    if t.target is not None and t.target not in model.pages:
        model.problems.append(SpecProblem(f"{place}.target", f"{t.target!r} is not a page; expected one of {sorted(model.pages)}"))
    if page is None:
        return
    em = model.elements.get((t.page, t.element))
    if em is None:
        ids = [e.id for e in page.elements]
        model.problems.append(SpecProblem(f"{place}.element", f"{t.element!r} is not an element of page {t.page!r}; it has {ids}"))
        return
    check_transition(model, index, t, em, place)


