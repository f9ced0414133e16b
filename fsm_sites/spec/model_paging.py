"""A data table's pagination: its static checks and what it adds to its rows' visibility.

``per_page: N`` and ``pager: VAR`` on an element repeated over a list or set make the table
of every element of that page repeated over the same collection show N rows a page: the
rows whose place in the table (``rank``, in the order of the table's ``sort`` variable when
it has one) falls on page ``VAR`` (1 first). The engine adds that to each row's visibility,
so a row's buttons fire only while its row is shown, and distances, goals and verdicts see
pages as they see any other variable. A transition that may shorten the table gets one
more effect, ``clamp_page`` (``page_clamps``): the pager back onto the last page there is.
"""

from __future__ import annotations

from fsm_sites.errors import SpecProblem
from fsm_sites.spec.check import CheckError, compile_expr
from fsm_sites.spec.effects import Plan
from fsm_sites.spec.expr import Binary, Call, ExprSyntaxError, Lit, Name, Node, names, parse_expr
from fsm_sites.spec.model import SiteModel
from fsm_sites.spec.site import Element, Page
from fsm_sites.spec.types import IntT, SeqT
from fsm_sites.spec.value_widgets import page_count


def table_paging(model: SiteModel, page: Page, place: str) -> dict[str, Node]:
    """Check the page's paginated tables; for each collection one is paged over (its
    ``repeat`` text), the condition that a row ``it`` is on the page shown."""
    out: dict[str, Node] = {}
    owners: dict[str, str] = {}
    for el in page.elements:
        if el.per_page is None and el.pager is None:
            continue
        eplace = f"{place}.elements.{el.id}"
        if not _check(model, page, el, eplace):
            continue
        if el.repeat in owners:
            model.problems.append(SpecProblem(f"{eplace}.per_page", f"expected one `per_page` per table; "
                                              f"{owners[el.repeat]!r} already pages {el.repeat!r} on this page"))
            continue
        owners[el.repeat or ""] = el.id
        out[el.repeat or ""] = _on_page(page, el)
        pager = (parse_expr(el.repeat or ""), el.pager or "", el.per_page or 1)
        if pager not in model.pagers:
            model.pagers.append(pager)
    return out


def _check(model: SiteModel, page: Page, el: Element, place: str) -> bool:
    """Whether a paged table is well formed (each problem recorded)."""
    if el.per_page is None or el.pager is None:
        missing, given = ("pager", "per_page") if el.pager is None else ("per_page", "pager")
        model.problems.append(SpecProblem(f"{place}.{missing}", f"expected `per_page` (rows a page) and `pager` (an "
                                          f"int variable: the page shown) together, got `{given}` alone"))
        return False
    if el.per_page < 1:
        model.problems.append(SpecProblem(f"{place}.per_page", f"expected at least 1 row a page, got {el.per_page}"))
        return False
    rtype = None
    if el.repeat:
        try:
            rtype = compile_expr(parse_expr(el.repeat), model.env(page.id))[1]
        except (CheckError, ExprSyntaxError):
            return False  # reported where the repeat is checked
    if not isinstance(rtype, SeqT):
        got = rtype.describe() if rtype is not None else "no `repeat`"
        model.problems.append(SpecProblem(f"{place}.per_page", f"expected `per_page` on an element repeated over a "
                                          f"list or set (a table's rows), got {got}"))
        return False
    pages = page_count(rtype.max_len, el.per_page)
    pager = model.schema.variables.get(el.pager)
    if not (isinstance(pager, IntT) and (pager.lo, pager.hi) == (1, pages)):
        got = pager.describe() if pager is not None else "not a variable"
        model.problems.append(SpecProblem(f"{place}.pager", f"expected an int variable from 1 to {pages} (the pages of "
                                          f"up to {rtype.max_len} rows at {el.per_page} a page), got {el.pager!r}, {got}"))
        return False
    return True


def _on_page(page: Page, el: Element) -> Node:
    """``(pager - 1) * N <= rank(c, it[, sort]) and rank(...) < pager * N``."""
    sorter = next((e.sort for e in page.elements if e.repeat == el.repeat and e.sort), None)
    args: tuple[Node, ...] = (parse_expr(el.repeat or ""), Name("it"))
    rank = Call("rank", (*args, Name(sorter)) if sorter else args)
    pager, size = Name(el.pager or ""), Lit(el.per_page or 1)
    first = Binary("*", Binary("-", pager, Lit(1)), size)
    return Binary("and", Binary("<=", first, rank), Binary("<", rank, Binary("*", pager, size)))


def page_clamps(model: SiteModel, plans: tuple[Plan, ...]) -> tuple[Plan, ...]:
    """A ``clamp_page`` effect for each paged table the effects ``plans`` may shorten (an
    effect on a variable its rows read, but an ``add``, a ``move`` or an ``update`` of a list,
    which keep its length), so its pager never points past its last page."""
    out = []
    for rows, pager, per_page in model.pagers:
        read = names(rows)
        if not read <= set(model.schema.variables):
            continue  # rows that depend on a page parameter: left to the spec (see docs/fsm_spec.md)
        for plan in plans:
            vtype = model.schema.variables.get(plan.var)
            keeps_length = plan.kind in ("add", "move") or (
                plan.kind == "update" and isinstance(vtype, SeqT) and vtype.ordered)
            if plan.var in read and not keeps_length:
                out.append(Plan("clamp_page", Name(pager), rows, per_page=per_page))
                break
    return tuple(out)
