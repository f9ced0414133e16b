"""What a page shows of a state: elements shown, copies of repeated ones, disabled
controls, text with values, routes, toasts. ``PageViews`` is owned by each
``fsm_sites.engine.machine.Machine`` as ``machine.views`` (``machine.views.text(state, ...)``,
``machine.views.visible_elements(state)``, ...); pure (no rendering here, see ``fsm_sites.render``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from fsm_sites.engine.state import Edge, State, UIEvent
from fsm_sites.spec.check import Ctx, Fn, compile_bool, compile_expr
from fsm_sites.spec.expr import Node, template_parts
from fsm_sites.spec.model_goals import format_arg
from fsm_sites.spec.schema import TOAST_VAR
from fsm_sites.spec.site import Element, Option
from fsm_sites.spec.types import MapT, RecordT, SeqT, VType, classified, untagged
from fsm_sites.spec.value_widgets import page_count, table_order

if TYPE_CHECKING:
    from fsm_sites.engine.tables import Tables
    from fsm_sites.spec.model import SiteModel
    from fsm_sites.spec.site import Page, SiteSpec, Transition


class PageSource(Protocol):
    """What ``PageViews`` reads of its machine (``fsm_sites.engine.machine.Machine``)."""

    spec: SiteSpec
    model: SiteModel
    full: Tables
    pages: dict[str, Page]
    transitions: dict[str, Transition]

    def node(self, state: State) -> tuple[str, tuple]: ...
    def step(self, state: State, event: UIEvent) -> tuple[Edge, State] | None: ...


class PageViews:
    """Element visibility, repeated copies, disabled state, templated text, routes, toasts
    of a machine's states, with the conditions and templates they need compiled once."""

    def __init__(self, machine: PageSource) -> None:
        self.machine = machine
        self.model = machine.model
        self.full = machine.full
        self._conditions: dict[Any, Callable] = {}
        self._texts: dict[tuple[str, str | None, str], list[str | tuple[Fn, VType]]] = {}  # a template's parts, compiled

    def visible_elements(self, state: State) -> list[Element]:
        """Elements of ``state.page`` shown in ``state`` (a repeated one: if any copy is)."""
        pid = self.full.page_of(state.page)[0]
        return [e for e in self.machine.pages[pid].elements if self.element_shown(state, pid, e.id)]

    def element_shown(self, state: State, page: str, element: str, value: str | None = None) -> bool:
        """Whether the element (with ``value``: that copy of a repeated element) is shown."""
        em = self.model.elements.get((page, element))
        if em is None:
            return False
        node = self.machine.node(state)
        vals = self.full.canonical(node[1])
        if em.repeat is None:
            return self.full.visible(em, node[0], vals)
        copies = self.instances(state, element)
        if value is not None and em.element.kind == "sortable":
            value = value.partition(">")[0]  # a drag names the copy it moved first
        return bool(copies) if value is None else any(v == value for v, _ in copies)

    def instances(self, state: State, element: str) -> list[tuple[str, Any]]:
        """(event value, item) of each shown copy of a repeated element, in order (an item's
        free text as it was typed)."""
        page, vals = self.machine.node(state)
        pid, args = self.full.page_of(page)
        em = self.model.elements[(pid, element)]
        if em.repeat is None:
            return []
        vals = self.full.canonical(vals, tag=True)  # classes, each carrying its typed text
        fn = self._repeat_fn(pid, element, em.repeat)
        coll = fn(vals, Ctx(args))
        rtype = em.repeat_type
        if isinstance(rtype, MapT):
            pairs = [(k, k) for k in rtype.keys.values]
        else:
            pairs = [(str(i), item) for i, item in enumerate(coll)]
            order = self.table_sort(pid, em.element.repeat or "")
            if order and isinstance(rtype, SeqT) and isinstance(rtype.item, RecordT):  # in the order its table shows
                fields = dict(rtype.item.fields)
                pairs = [pairs[i] for i in table_order(coll, str(state.get(order) or ""), fields)]
        return [(v, untagged(it)) for v, it in pairs if self.full.visible(em, page, vals, it)]

    def table_pages(self, state: State, element: str) -> tuple[int, int, int] | None:
        """(the page shown, how many pages, how many rows) of a paged table's element (None: not paged)."""
        page, vals = self.machine.node(state)
        pid, args = self.full.page_of(page)
        em = self.model.elements[(pid, element)]
        el = em.element
        if em.repeat is None or el.per_page is None or el.pager is None:
            return None
        rows = len(self._repeat_fn(pid, element, em.repeat)(self.full.canonical(vals), Ctx(args)))
        return int(state.get(el.pager) or 1), page_count(rows, el.per_page), rows

    def table_sort(self, page: str, repeat: str) -> str | None:
        """The sort variable of the page's table of ``repeat`` (None: it has none)."""
        return next((e.sort for e in self.machine.pages[page].elements if e.repeat == repeat and e.sort), None)

    def is_open(self, state: State, element: str) -> bool:
        """Whether a date picker's month grid is open: its ``open_when`` holds."""
        return self._holds(state, element, "opened")

    def invalid(self, state: State, element: str) -> bool:
        """Whether a form field is shown invalid: its ``invalid_when`` holds."""
        return self._holds(state, element, "invalid")

    def _holds(self, state: State, element: str, which: str) -> bool:
        page, vals = self.machine.node(state)
        pid, args = self.full.page_of(page)
        em = self.model.elements.get((pid, element))
        node = getattr(em, which) if em is not None else None
        if node is None:
            return False
        key = (which, pid, element)
        fn = self._conditions.get(key)
        if fn is None:
            fn = self._conditions[key] = compile_bool(node, self.model.env(pid))
        return bool(fn(self.full.canonical(vals), Ctx(args)))

    def _repeat_fn(self, pid: str, element: str, repeat: Node) -> Callable:
        key = ("repeat", pid, element)
        fn = self._conditions.get(key)
        if fn is None:
            fn = self._conditions[key] = compile_expr(repeat, self.model.env(pid))[0]
        return fn

    def text(self, state: State, template: str | None, *, element: str | None = None, item: Any = None,
             page: str | None = None, raw: bool = False) -> str:
        """A text with its ``{expr}`` holes filled from ``state`` (values as the page shows them:
        enum labels, Yes/No); ``element`` names the repeated element whose copy ``item`` is."""
        if not template:
            return ""
        if "{" not in template and "}" not in template:
            return template
        page_str = page or state.page
        pid, args = self.full.page_of(page_str)
        key = (pid, element, template)
        parts = self._texts.get(key)
        if parts is None:
            em = self.model.elements.get((pid, element)) if element else None
            env = self.model.env(pid, it=em.item_type if em is not None else None)
            parts = [p if isinstance(p, str) else compile_expr(p, env) for p in template_parts(template)]
            self._texts[key] = parts
        _, vals = self.machine.node(state)
        ctx = Ctx(args, None, item, item)
        if raw:
            return "".join(p if isinstance(p, str) else format_arg(p[0](vals, ctx)) for p in parts)
        return "".join(p if isinstance(p, str) else p[1].show(p[0](vals, ctx)) for p in parts)

    def route(self, state: State) -> str:
        """The URL path the page shows: its ``route`` filled in, else ``/<page>/<parameters>``
        (the start page: ``/``)."""
        pid, args = self.full.page_of(state.page)
        page = self.machine.pages[pid]
        if page.kind == "modal" and page.parent:
            page = self.machine.pages[page.parent]
        if page.route:
            return self.text(state, page.route, page=state.page, raw=True)
        if page.id == self.machine.spec.start_page:
            return "/"
        return "/" + "/".join([page.id, *(format_arg(a) for a in args.values())])

    def toast(self, state: State) -> str | None:
        """The message a transition left on the page, if any."""
        tid = dict(state.vars).get(TOAST_VAR)
        if not tid:
            return None
        return self.text(state, self.machine.transitions[tid].toast)

    def options(self, page: str, element: str) -> tuple[Option, ...]:
        """The choices of a select or radio group (a select bound to an enum: its values)."""
        return self.model.elements[(page.split("(", 1)[0], element)].options

    def disabled(self, state: State, element: Element, value: str | None = None) -> bool:
        """Shown disabled: its ``disabled_when`` holds, or it is a button none of whose
        transitions can fire (a click on it is a step that changes nothing)."""
        pid = self.full.page_of(state.page)[0]
        em = self.model.elements[(pid, element.id)]
        if em.disabled is not None:
            page, vals = self.machine.node(state)
            key = ("disabled", pid, element.id)
            fn = self._conditions.get(key)
            if fn is None:
                env = self.model.env(pid, it=em.item_type)
                fn = self._conditions[key] = compile_bool(em.disabled, env)
            copies = dict(self.instances(state, element.id)) if em.repeat is not None else {}
            item = copies.get(value) if value is not None else None
            if item is not None and em.item_type is not None:
                item = classified(em.item_type, item)
            if fn(self.full.canonical(vals), Ctx(self.full.page_of(page)[1], None, item, item)):
                return True
        if element.kind != "button" or not self.full.by_trigger.get((pid, element.id, "click")):
            return False
        return self.machine.step(state, UIEvent(state.page, element.id, "click", value)) is None
