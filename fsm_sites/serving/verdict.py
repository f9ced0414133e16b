"""The per-step verdict an FSM site gives each agent step: its type (``StepVerdict``) and
where it is computed (``judge_step``: fire the event, measure the step against the goal).

``fsm_sites.serving.sessions.SessionStore.apply`` checks an event against the session's page,
calls ``judge_step`` and logs what it returns; the distances come from the machine's search
(``fsm_sites.engine.machine.Machine.distance``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from fsm_sites.engine.state import State, UIEvent
from fsm_sites.spec.site import table_events

if TYPE_CHECKING:
    from fsm_sites.engine.machine import Machine


class StepVerdict(BaseModel):
    """How one agent step moved the site's state machine relative to the goal."""

    model_config = ConfigDict(frozen=True)

    state_before: str = Field(description="state key before the step")
    state_after: str = Field(description="state key after the step")
    transition_fired: bool = Field(description="a defined transition fired on this step")
    transition_id: str | None = Field(default=None, description="id of the transition that fired")
    on_shortest_path: bool = Field(
        description="the step moved along some shortest path to the goal"
    )
    distance_before: int | None = Field(description="shortest distance to the goal before; None if unreachable")
    distance_after: int | None = Field(description="shortest distance to the goal after; None if unreachable")
    goal_reached: bool = Field(description="the state after satisfies the goal")
    control_disabled: bool = Field(
        default=False, description="the step acted on a control drawn disabled, so it fired nothing"
    )

    @property
    def distance_delta(self) -> int | None:
        """distance_after - distance_before (negative is progress), None if either is unknown."""
        if self.distance_before is None or self.distance_after is None:
            return None
        return self.distance_after - self.distance_before


def judge_step(machine: Machine, before: State, event: UIEvent,
               goal: Callable[[State], bool]) -> tuple[State, StepVerdict]:
    """Fire ``event`` in ``before`` (at most one transition) and judge the step against
    ``goal``: the state after it and its verdict. The event must already be one the page
    shows (``SessionStore`` checks that first); one that fires nothing leaves the state as it was."""
    fired = machine.step(before, event)
    after = fired[1] if fired else before
    verdict = StepVerdict(
        state_before=before.key(), state_after=after.key(), transition_fired=fired is not None,
        transition_id=fired[0].transition_id if fired else None,
        on_shortest_path=fired is not None and machine.on_shortest_path(before, after, goal),
        distance_before=machine.distance(before, goal), distance_after=machine.distance(after, goal),
        goal_reached=goal(after), control_disabled=fired is None and _drawn_disabled(machine, before, event),
    )
    return after, verdict


def _drawn_disabled(machine: Machine, state: State, event: UIEvent) -> bool:
    """Whether the event's control is drawn disabled (a heading or the pager is not)."""
    element = machine.elements[(state.page_id, event.element)]
    if event.event in table_events(element):
        return False
    copy = event.value if element.repeat else None
    if copy is not None and element.kind == "sortable":
        copy = copy.partition(">")[0]  # a drag names the copy it moved first
    return machine.views.disabled(state, element, copy)
