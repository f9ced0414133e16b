"""The static checks of widget elements (menus, accordions, tooltips, comboboxes, steppers)
and what ``inside`` adds to an element's visibility.

Widgets add no machinery to the engine: a menu, an accordion or a tooltip is open while
its bound bool variable holds, and an element ``inside`` one is visible only then (its
``visible_when`` gets the container's variable, and the container's own containers'), so
distances, goals and verdicts see them as they see any other element.
"""

from __future__ import annotations

from fsm_sites.errors import SpecProblem
from fsm_sites.spec.model import SiteModel
from fsm_sites.spec.site import CONTAINER_KINDS, OPENABLE_KINDS, Element, Page
from fsm_sites.spec.types import BoolT, TextT


def widget_conditions(model: SiteModel, page: Page, el: Element, place: str) -> tuple[str, ...]:
    """Check ``el`` as a widget (or an element inside one); the conditions its visibility
    gains from the containers it is inside, innermost first."""
    _check_kind(model, el, place)
    extra: list[str] = []
    seen = {el.id}
    elements = {e.id: e for e in page.elements}
    current, where = el, f"{place}.inside"
    while current.inside is not None:
        container = elements.get(current.inside)
        if container is None or container.kind not in CONTAINER_KINDS:
            kinds = " or ".join(CONTAINER_KINDS)
            found = "no such element" if container is None else f"a {container.kind}"
            ids = sorted(e.id for e in page.elements if e.kind in CONTAINER_KINDS)
            model.problems.append(SpecProblem(where, f"expected the id of a {kinds} of page {page.id!r} "
                                              f"({ids}), got {current.inside!r} ({found})"))
            break
        if container.id in seen:
            model.problems.append(SpecProblem(where, f"{container.id!r} is inside itself; remove the cycle"))
            break
        seen.add(container.id)
        if container.bind is not None:
            extra.append(container.bind)
        current = container
    return tuple(extra)


def _check_kind(model: SiteModel, el: Element, place: str) -> None:
    bound = model.schema.variables.get(el.bind or "")
    if el.kind in OPENABLE_KINDS and not isinstance(bound, BoolT):
        model.problems.append(SpecProblem(f"{place}.bind", f"a {el.kind} is open while its bound variable holds; "
                                          f"expected the name of a bool variable, got {el.bind!r}"))
    if el.kind == "combobox":
        if not isinstance(bound, TextT):
            model.problems.append(SpecProblem(f"{place}.bind", "a combobox shows what was typed; expected the name "
                                              f"of a text variable, got {el.bind!r}"))
        if not el.options:
            model.problems.append(SpecProblem(f"{place}.options", "a combobox suggests its options; expected at "
                                              "least one option"))
    if el.kind == "stepper":
        steps = [o.value for o in el.options]
        if not steps:
            model.problems.append(SpecProblem(f"{place}.options", "a stepper shows its steps; expected at least one option"))
        elif el.current not in steps:
            model.problems.append(SpecProblem(f"{place}.current", f"expected the step this page is on, one of {steps}, "
                                              f"got {el.current!r}"))
    elif el.current is not None:
        model.problems.append(SpecProblem(f"{place}.current", f"only a stepper has a current step, not a {el.kind}"))
    if el.repeat and el.kind in (*OPENABLE_KINDS, "combobox", "stepper"):
        model.problems.append(SpecProblem(f"{place}.repeat", f"a {el.kind} cannot be repeated; give each its own element"))
