"""Static checks of goals and named start states, and page instance strings like ``pet(rex)``."""

from __future__ import annotations

from typing import Any

from fsm_sites.errors import SpecProblem
from fsm_sites.spec.model import SiteModel, when_node
from fsm_sites.spec.types import BoolT, IntT, SeqT, VType, show_value


def split_page(text: str) -> tuple[str, list[str]]:
    """``pet(rex)`` -> ("pet", ["rex"]); ``home`` -> ("home", [])."""
    if "(" not in text:
        return text, []
    if not text.endswith(")"):
        raise ValueError(f"expected a page like 'pet(rex)', got {text!r}")
    pid, _, rest = text[:-1].partition("(")
    return pid, [a.strip() for a in rest.split(",")] if rest.strip() else []


def format_arg(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def page_string(pid: str, args: tuple[Any, ...]) -> str:
    return f"{pid}({','.join(format_arg(a) for a in args)})" if args else pid


def parse_arg(vtype: VType, raw: str) -> Any:
    if isinstance(vtype, BoolT):
        if raw not in ("true", "false"):
            raise ValueError(f"expected true or false, got {raw!r}")
        return raw == "true"
    value: int | str = int(raw) if isinstance(vtype, IntT) else raw
    if not vtype.contains(value):
        raise ValueError(f"{raw!r} is outside {vtype.describe()}")
    return value


def parse_page(model: SiteModel, text: str, *, any_args: bool = False) -> tuple[str, dict[str, Any] | None]:
    """A page instance string as (page id, parameters); with ``any_args``, a bare id of a
    parameterized page means any parameters (None). ValueError saying what is wrong."""
    pid, raw = split_page(text)
    if pid not in model.pages:
        raise ValueError(f"{pid!r} is not a page; expected one of {sorted(model.pages)}")
    params = model.schema.params.get(pid, ())
    if not raw and params and any_args:
        return pid, None
    if len(raw) != len(params):
        raise ValueError(f"expected page {pid!r} with {len(params)} parameter(s) {[p for p, _ in params]}, got {text!r}")
    return pid, {name: parse_arg(t, a) for (name, t), a in zip(params, raw, strict=True)}


def check_goals(model: SiteModel) -> None:
    starts = [s.id for s in model.spec.starts]
    for goal in model.spec.goals:
        place = f"goals.{goal.id}"
        if goal.start is not None and goal.start not in starts:
            model.problems.append(SpecProblem(f"{place}.start", f"expected one of the start states {starts}, got "
                                              f"{goal.start!r}; name one declared under `starts`"))
        env = model.env("")
        if goal.page is not None:
            try:
                pid, args = parse_page(model, goal.page, any_args=True)
            except ValueError as exc:
                model.problems.append(SpecProblem(f"{place}.page", f"{goal.page!r} is not a page: {exc}"))
                continue
            if args is None:
                env = model.env(pid)  # any parameters: conditions may name them
        node = when_node(model, goal.conditions, f"{place}.conditions", env)
        if node is not None:
            model.goals[goal.id] = node


def start_values(model: SiteModel, start_vars: dict[str, Any], place: str) -> dict[str, Any] | None:
    """A start state's variables (defaults plus the ones it names), or None with problems recorded."""
    values = dict(model.schema.defaults)
    ok = True
    for name, data in start_vars.items():
        vtype = model.schema.variables.get(name)
        if vtype is None or name.startswith("_"):
            model.problems.append(SpecProblem(f"{place}.vars.{name}", f"{name!r} is not a variable; expected one of "
                                              f"{sorted(v for v in model.schema.variables if not v.startswith('_'))}"))
            ok = False
            continue
        try:
            value = vtype.parse(data)
        except ValueError:
            model.problems.append(SpecProblem(f"{place}.vars.{name}", f"{show_value(data)} is outside the domain of "
                                              f"{name!r} ({vtype.describe()})"))
            ok = False
            continue
        values[name] = vtype.canonical(value) if isinstance(vtype, SeqT) else value
    return values if ok else None


def check_starts(model: SiteModel) -> None:
    for start in model.spec.starts:
        place = f"starts.{start.id}"
        try:
            parse_page(model, start.page)
        except ValueError as exc:
            model.problems.append(SpecProblem(f"{place}.page", str(exc)))
        start_values(model, start.vars, place)
