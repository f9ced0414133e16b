"""State abstraction: the variables a goal depends on, through the transitions.

Start from what the goal reads. A transition matters if it moves between pages or writes
a kept variable; then whatever decides whether it fires or where it goes (its guard, the
element's visibility, a repeated element's collection, the target's parameters) is kept,
and so is whatever the effects on kept variables read. Repeat until nothing changes.

The projection onto the kept variables is exact: a kept transition's guard and its effects
on kept variables read only kept variables, so from two states that agree on the kept
variables the same kept transitions fire and reach states that agree again, and every
other transition leaves the projection where it was (a self-loop, never on a shortest
path). Distances and shortest paths to the goal are therefore the same in the projection
as in the whole state graph (``tests/fsm_sites/test_equivalence.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Iterable

from fsm_sites.spec.model import SiteModel


def relevant_variables(model: SiteModel, goal_reads: Iterable[str] | None) -> frozenset[str]:
    """The closure of ``goal_reads`` (None: every variable, for an opaque goal)."""
    every = frozenset(model.schema.variables)
    if goal_reads is None:
        return every
    kept = set(goal_reads) & every
    changed = True
    while changed:
        changed = False
        for tm in model.transitions:
            if not (tm.moves or tm.writes & kept):
                continue
            need = set(tm.guard_reads)
            for var, reads in tm.plan_reads:
                if var in kept:
                    need |= reads
            if not need <= kept:
                kept |= need
                changed = True
    return frozenset(kept)
