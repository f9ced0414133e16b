"""Errors raised by the FSM sites package.

    FsmSiteError
    ├── SpecInvalid          a spec with problems; ``.problems`` lists every one, each with its place
    ├── StateGraphTooLarge   the reachable state graph exceeds the configured bound
    ├── SearchBudgetExceeded a goal-directed search expanded more states than its budget
    ├── UnknownSite          a library site name that does not exist
    └── UnknownGoal          a goal id that the spec does not define

The engine never raises for an agent's mistake: an event that matches no
transition makes ``Machine.step`` return ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecProblem:
    """One problem of a spec: where it is (e.g. ``transitions[3].element``) and what is wrong."""

    place: str
    message: str

    def __str__(self) -> str:
        return f"{self.place}: {self.message}" if self.place else self.message


class FsmSiteError(Exception):
    """Base class of every fsm_sites error."""


class SpecInvalid(FsmSiteError, ValueError):
    """A spec that does not validate; ``problems`` holds every problem found, not just the first."""

    def __init__(self, problems: list[SpecProblem], source: str = "spec") -> None:
        self.problems = list(problems)
        self.source = source
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{source} has {len(self.problems)} problem(s); fix each one:\n{lines}")


class StateGraphTooLarge(FsmSiteError):
    """The reachable state graph has more states than allowed."""

    def __init__(self, bound: int, site: str, culprits: list[tuple[str, int]] | None = None) -> None:
        self.bound = bound
        self.culprits = list(culprits or [])
        named = ", ".join(f"{name} ({n} values)" for name, n in self.culprits)
        because = f"; these multiply them most: {named}" if named else ""
        super().__init__(
            f"expected at most {bound} reachable states in site {site!r}, got more{because}; "
            "shrink their domains, clear them when the user leaves their pages, or raise max_states"
        )


#: The states one goal's search may expand, by default, before it raises SearchBudgetExceeded
#: (validation then leaves that goal's reachability undecided).
SEARCH_BUDGET = 50_000


class SearchBudgetExceeded(FsmSiteError):
    """A goal-directed search gave up: it expanded more states than its budget allows."""

    def __init__(self, budget: int, goal: str) -> None:
        self.budget = budget
        super().__init__(
            f"expected the search for goal {goal!r} to settle within {budget} expanded states, got more; "
            "raise the search budget (when validating: `cua sites validate --budget N`), or give the variables the goal and the "
            "transitions toward it read fewer values"
        )


class UnknownSite(FsmSiteError, KeyError):
    """A site name that the library does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


class UnknownGoal(FsmSiteError, KeyError):
    """A goal id that the spec does not define."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
