"""A small imperative builder for site specs, used by the templates and the curated library.

It keeps state small on purpose: variables registered as *locals* of a page
group (a form, a wizard, a search) are cleared by every transition that leaves
the group, so form fields do not multiply the state count of the whole site.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fsm_sites.spec.site import SiteSpec

Cond = dict[str, Any]  # a condition or an effect in its dict form, {var, op, value}
Guard = Cond | str  # a `when` or goal condition: the dict form, or an expression


def cond(var: str, value: Any = None, op: str = "eq") -> Cond:
    """A condition as a dict, e.g. ``cond("cart", "lamp", "contains")``."""
    out: Cond = {"var": var, "op": op}
    if value is not None:
        out["value"] = value
    return out


def split_target(target: str) -> tuple[str, dict[str, str] | None]:
    """``folder(inbox)`` -> ("folder", {"f": "'inbox'"}) for a page whose one parameter is ``f``;
    the parameter's name is filled in by ``SiteBuilder.link`` (here: the value, quoted)."""
    if "(" not in target:
        return target, None
    pid, _, arg = target[:-1].partition("(")
    return pid, {"": f"'{arg}'"}


def effect(op: str, var: str, value: Any = None) -> Cond:
    out: Cond = {"op": op, "var": var}
    if value is not None:
        out["value"] = value
    return out



@dataclass(frozen=True)
class FormField:
    """A form field: text (accepted values), select/radio (options), checkbox, slider
    (options: the lowest and highest int, then the wanted one, as text) or date (options:
    the dates one may pick, YYYY-MM-DD in one month, the wanted one last)."""

    kind: Literal["text", "select", "radio", "checkbox", "combobox", "tooltip", "slider", "date"]  # tooltip: options[0] is the tip
    id: str
    label: str
    options: tuple[str, ...] = ()

@dataclass
class SiteBuilder:
    """Accumulates variables, pages, transitions and goals, then builds a ``SiteSpec``."""

    name: str
    title: str
    domain: str
    start_page: str = "home"
    max_states: int | None = 5000  # None: the spec sets no bound
    types: dict[str, dict[str, Any]] = field(default_factory=dict)
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    pages: dict[str, dict[str, Any]] = field(default_factory=dict)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    goals: list[dict[str, Any]] = field(default_factory=list)
    groups: list[tuple[set[str], list[str]]] = field(default_factory=list)

    # ---- declarations ----------------------------------------------------------------
    def add_type(self, name: str, type: str, **kw: Any) -> str:
        if name in self.types:
            raise ValueError(f"expected a new type name, got duplicate {name!r}")
        self.types[name] = {"name": name, "type": type, **{k: v for k, v in kw.items() if v}}
        return name

    def add_var(self, name: str, type: str, **kw: Any) -> str:
        if name in self.variables:
            raise ValueError(f"expected a new variable name, got duplicate {name!r}")
        self.variables[name] = {"name": name, "type": type, **kw}
        return name

    def add_page(self, pid: str, title: str, *, modal_of: str | None = None, body: str | None = None,
                 params: list[dict[str, Any]] | None = None, route: str | None = None) -> str:
        if pid in self.pages:
            raise ValueError(f"expected a new page id, got duplicate {pid!r}")
        page: dict[str, Any] = {"id": pid, "title": title, "elements": []}
        if modal_of:
            page |= {"kind": "modal", "parent": modal_of}
            params = params or self.pages[modal_of].get("params")
        if params:
            page["params"] = params
        if route:
            page["route"] = route
        if body:
            page["body"] = body
        self.pages[pid] = page
        return pid

    def add_element(self, page: str, eid: str, kind: str, label: str, **kw: Any) -> str:
        elements = self.pages[page]["elements"]
        if any(e["id"] == eid for e in elements):
            raise ValueError(f"expected a new element id on page {page!r}, got duplicate {eid!r}")
        elements.append({"id": eid, "kind": kind, "label": label, **{k: v for k, v in kw.items() if v}})
        return eid

    def add_transition(self, page: str, element: str, description: str, *, target: str | None = None,
                       event: str = "click", values: Sequence[str] = (),
                       when: Sequence[Guard] = (), effects: Sequence[Cond] = (),
                       tid: str | None = None, args: dict[str, Any] | None = None,
                       toast: str | None = None) -> str:
        base = tid or f"{page}__{element}"
        tid, n = base, 2
        taken = {t["id"] for t in self.transitions}
        while tid in taken:
            tid, n = f"{base}_{n}", n + 1
        t: dict[str, Any] = {"id": tid, "page": page, "element": element, "event": event,
                             "description": description}
        for key, val in (("values", list(values)), ("when", list(when)), ("effects", list(effects)),
                         ("target", target), ("args", args), ("toast", toast)):
            if val:
                t[key] = val
        self.transitions.append(t)
        return tid

    def link(self, page: str, eid: str, label: str, target: str, description: str, *,
             kind: str = "link", section: str | None = None, **kw: Any) -> str:
        """An element plus the click transition that goes to ``target``."""
        extra = {k: kw.pop(k) for k in ("description_text", "visible_when", "repeat") if k in kw}
        if kw.get("args") and "" in kw["args"]:  # one unnamed argument: the target's only parameter
            kw["args"] = {self.pages[target]["params"][0]["name"]: kw["args"][""]}
        self.add_element(page, eid, kind, label, section=section,
                         description=extra.get("description_text"),
                         visible_when=extra.get("visible_when"), repeat=extra.get("repeat"))
        return self.add_transition(page, eid, description, target=target, **kw)

    def add_goal(self, gid: str, description: str, *, page: str | None = None,
                 conditions: Sequence[Guard] = ()) -> str:
        goal: dict[str, Any] = {"id": gid, "description": description}
        if page:
            goal["page"] = page
        if conditions:
            goal["conditions"] = list(conditions)
        self.goals.append(goal)
        return gid

    def local_group(self, pages: set[str], variables: list[str]) -> None:
        """``variables`` reset to their defaults whenever a transition leaves ``pages``."""
        self.groups.append((set(pages), list(variables)))

    def nav_bar(self, links: list[tuple[str, str]], *, skip: Collection[str] = frozenset()) -> None:
        """A navigation bar on every full page: a link to each ``(page, label)``; a page with a
        parameter is named with it, ``folder(inbox)``."""
        for pid, page in list(self.pages.items()):
            if page.get("kind") == "modal" or pid in skip:
                continue
            for target, label in links:
                target_id, args = split_target(target)
                if target != pid:
                    self.link(pid, "nav_" + target.replace("(", "_").rstrip(")"), label, target_id,
                              f"open {label} from the menu", section="nav", args=args)

    # ---- output ----------------------------------------------------------------------
    def _with_group_clears(self, t: dict[str, Any]) -> dict[str, Any]:
        target = t.get("target")
        if target is None:
            return t
        clears: list[Cond] = []
        for pages, variables in self.groups:
            if t["page"] in pages and target not in pages:
                clears += [effect("clear", v) for v in variables]
        if not clears:
            return t
        return t | {"effects": list(t.get("effects", [])) + clears}

    def to_dict(self) -> dict[str, Any]:
        out = {
            "name": self.name, "title": self.title, "domain": self.domain,
            "start_page": self.start_page, "types": list(self.types.values()),
            "variables": list(self.variables.values()),
            "pages": list(self.pages.values()),
            "transitions": [self._with_group_clears(t) for t in self.transitions],
            "goals": self.goals, "max_states": self.max_states,
        }
        if not self.types:
            del out["types"]
        return out

    def build(self) -> SiteSpec:
        return SiteSpec.model_validate(self.to_dict())
