"""Goals as data the search can read: a condition over variables plus an optional page.

A ``GoalSpec`` is also a plain predicate (``goal(state) -> bool``), so code that only
tests states keeps working. Three kinds: a named goal of the spec, an exact target state
(``state_goal``), and an expression (``expr_goal``, as task synthesis writes them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fsm_sites.engine.state import State
from fsm_sites.spec.check import Ctx, compile_bool
from fsm_sites.spec.expr import SPECIAL_NAMES, Binary, Const, Lit, Name, Node, all_of, names

if TYPE_CHECKING:
    from fsm_sites.engine.tables import Tables

EXPR_PREFIX = "expr:"


@dataclass(eq=False)
class GoalSpec:
    """What a goal asks: ``page`` (an id: any parameters; an instance: exactly) and ``node``."""

    key: str  # "goal:<id>", "state:<key>", "expr:<text>", "fn:<id>"
    node: Node | None  # None: an opaque predicate (``fn``), searched blindly
    page: str | None = None
    page_exact: bool = False
    fn: Callable[[State], bool] | None = None
    holds: Callable[[State], bool] = field(default=lambda s: False, repr=False)
    params: tuple[str, ...] = ()  # page parameters the condition names (a goal on one page)
    exact: dict[str, Any] | None = None  # a target state's values: tested as one tuple comparison

    def __call__(self, state: State) -> bool:
        return self.holds(state)

    @property
    def reads(self) -> frozenset[str] | None:
        """The variables the goal depends on; None for an opaque predicate (all of them)."""
        if self.node is None:
            return None
        return frozenset(names(self.node) - set(self.params) - set(SPECIAL_NAMES))

    def compile(self, tables: Tables) -> Callable[[str, tuple], bool]:
        """The goal over (page, values) of ``tables``' layout."""
        page, exact, page_of = self.page, self.page_exact, tables.page_of
        if self.node is None:
            fn = self.fn
            layout = tables.layout
            return lambda p, v: bool(fn(State(p, tuple(zip(layout, v, strict=True)))))  # type: ignore[misc]
        if self.exact is not None and page is not None and set(self.exact) >= set(tables.layout):
            target = tuple(self.exact[n] for n in tables.layout)
            return lambda p, v: p == page and v == target
        always = isinstance(self.node, Lit) and self.node.value is True
        env = tables.model.env(page_of(page)[0] if page and exact else (page or ""))
        env.position = tables.position
        test = None if always else compile_bool(self.node, env)

        def holds(p: str, v: tuple) -> bool:
            if page is not None and (p != page if exact else page_of(p)[0] != page):
                return False
            return test is None or bool(test(v, Ctx(page_of(p)[1])))

        return holds


def exact_state_node(values: dict[str, Any], variables: dict) -> Node:
    """``a == A and b == B ...`` for every variable of a target state."""
    return all_of([Binary("==", Name(name), Const(value, variables[name])) for name, value in sorted(values.items())])
