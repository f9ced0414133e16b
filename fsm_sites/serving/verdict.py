"""The per-step verdict an FSM site gives each agent step (pure data)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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
