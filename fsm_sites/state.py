"""FSM states and UI events (pure, hashable data)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from fsm_sites.spec import VarValue


@dataclass(frozen=True, order=True)
class State:
    """A page plus the values of every variable, sorted by variable name."""

    page: str
    vars: tuple[tuple[str, VarValue], ...] = ()

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

    def key(self) -> str:
        """A canonical, human-readable string: ``page`` or ``page{"cart":["a"],"n":1}``."""
        if not self.vars:
            return self.page
        record = {k: list(v) if isinstance(v, tuple) else v for k, v in self.vars}
        return self.page + json.dumps(record, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_key(cls, key: str) -> State:
        """Inverse of ``key()``."""
        brace = key.find("{")
        if brace < 0:
            return cls(key)
        record = json.loads(key[brace:])
        items = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in record.items()))
        return cls(key[:brace], items)


@dataclass(frozen=True)
class UIEvent:
    """What the page reports: an event on an element, with the value it carried."""

    page: str
    element: str
    event: str
    value: str | None = None
