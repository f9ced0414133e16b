"""FSM states and UI events (pure, hashable data).

A state's ``page`` is the page id, with its parameters for a parameterized page:
``pet_detail(rex)``. Its key (``State.key()``) is that page followed by the variables as
JSON: ``cart{"cart":["lamp"],"qty":1}``. Records and maps are JSON objects, lists and sets
JSON arrays; keys written before records existed read back unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fsm_sites.spec.site import VarValue
from fsm_sites.spec.types import from_json, to_json


@dataclass(frozen=True, order=True)
class State:
    """A page plus the values of every variable, sorted by variable name."""

    page: str
    vars: tuple[tuple[str, VarValue], ...] = ()

    def __hash__(self) -> int:  # cached: states are dict keys everywhere, and their values are deep
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.page, self.vars))
            object.__setattr__(self, "_hash", h)
        return h

    def get(self, name: str) -> VarValue:
        for key, value in self.vars:
            if key == name:
                return value
        raise KeyError(f"state has no variable {name!r}; it has {[k for k, _ in self.vars]}")

    def with_vars(self, updates: dict[str, VarValue]) -> State:
        merged = dict(self.vars) | updates
        return State(self.page, tuple(sorted(merged.items())))

    def with_page(self, page: str) -> State:
        return State(page, self.vars)

    @property
    def page_id(self) -> str:
        """The page's id without its parameters: ``pet_detail`` of ``pet_detail(rex)``."""
        return self.page.split("(", 1)[0]

    def key(self) -> str:
        """A canonical, human-readable string: ``page`` or ``page{"cart":["a"],"n":1}``."""
        if not self.vars:
            return self.page
        record = {k: to_json(v) for k, v in self.vars}
        return self.page + json.dumps(record, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_key(cls, key: str) -> State:
        """Inverse of ``key()``; ValueError if the variables are not a JSON object."""
        brace = key.find("{")
        if brace < 0:
            return cls(key)
        record = json.loads(key[brace:])
        if not isinstance(record, dict):
            raise ValueError(f"expected a JSON object of variables after the page, got {key[brace:][:40]!r}")
        return cls(key[:brace], tuple(sorted((k, from_json(v)) for k, v in record.items())))


@dataclass(frozen=True)
class UIEvent:
    """What the page reports: an event on an element, with the value it carried."""

    page: str
    element: str
    event: str
    value: str | None = None


@dataclass(frozen=True)
class Edge:
    """One expanded transition: a transition id plus the concrete event that fires it."""

    transition_id: str
    page: str
    element: str
    event: str
    value: str | None

    def to_event(self) -> UIEvent:
        return UIEvent(self.page, self.element, self.event, self.value)

    def to_dict(self) -> dict[str, Any]:
        return {"transition_id": self.transition_id, "page": self.page, "element": self.element,
                "event": self.event, "value": self.value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edge:
        return cls(data["transition_id"], data["page"], data["element"], data["event"], data.get("value"))
