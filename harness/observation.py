"""Typed observations and step info returned by the env."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from fsm_sites.serving.verdict import StepVerdict
from sandboxes.base import UIElement

if TYPE_CHECKING:
    import PIL.Image


class Observation(BaseModel):
    """What the agent sees after reset or a step."""

    model_config = ConfigDict(frozen=True)

    screenshot: bytes = Field(repr=False, description="the encoded screenshot (PNG or JPEG)")
    image_format: Literal["png", "jpeg"] = Field(description="encoding of `screenshot`")
    width: int = Field(description="screenshot width in pixels")
    height: int = Field(description="screenshot height in pixels")
    instruction: str = Field(description="the task instruction in natural language")
    url: str | None = Field(default=None, description="the page URL after the step (browsers only)")
    step: int = Field(description="number of steps taken so far in this episode")
    elements: tuple[UIElement, ...] | None = Field(
        default=None, description="the interactive elements on screen, where the env observes them")
    last_action_error: str | None = Field(
        default=None, description="why the last action failed (agent error), or None"
    )

    def image(self) -> PIL.Image.Image:
        """Decode the screenshot into a PIL image."""
        from PIL import Image

        return Image.open(io.BytesIO(self.screenshot))


class ResetInfo(BaseModel):
    """Info returned by ``reset``."""

    model_config = ConfigDict(frozen=True)

    task: str = Field(description="the task id, e.g. 'miniwob:click-button'")
    seed: int | None = Field(description="the seed the episode was reset with")
    episode_id: str = Field(description="a unique id of this episode")
    reset_seconds: float = Field(description="wall time of the reset")
    fsm_state: str | None = Field(default=None, description="FSM state key, for FSM tasks")
    start_distance: int | None = Field(
        default=None, description="shortest distance from the start state to the goal, where known")
    goal: str | None = Field(default=None, description="the FSM goal (an id or a state key), for FSM tasks")


class StepInfo(BaseModel):
    """Info returned by ``step``."""

    model_config = ConfigDict(frozen=True)

    task: str = Field(description="the task id")
    episode_id: str = Field(description="the episode this step belongs to")
    action: dict | None = Field(description="the executed action as a dict, None if unparseable")
    raw_reward: float = Field(description="the task's own reward before any shaping")
    message: str = Field(default="", description="the task's validation message")
    step_seconds: float = Field(description="wall time of the step")
    verdict: StepVerdict | None = Field(
        default=None, description="the FSM site's step verdict, for FSM tasks"
    )
    success: bool = Field(default=False, description="the task's goal has been reached")
    action_text: str | None = Field(
        default=None, description="the model text the action was decoded from, if any"
    )
    requested: dict | None = Field(
        default=None, description="the element action the agent asked for, where the env "
        "resolved one into the executed `action`")
