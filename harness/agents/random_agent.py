"""An agent that samples over the whole action space from the episode's own random stream.

Its stream is ``AgentContext.rng``, which depends on the episode's (task, seed, index):
two tasks, or two episodes of one task, never play the same sequence, and a rerun of an
episode plays the same one."""

from __future__ import annotations

import random
import string

from pydantic import BaseModel, ConfigDict, Field

from harness.actions import (
    MODIFIER_KEYS,
    NAMED_KEYS,
    Action,
    Click,
    Done,
    DoubleClick,
    Drag,
    Key,
    Move,
    RightClick,
    Scroll,
    TypeText,
    Wait,
)
from harness.agents.base import AgentContext, AgentStep
from harness.errors import ConfigError
from harness.observation import Observation


class RandomAgentConfig(BaseModel):
    """Relative weights of each action type and the bounds of their arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weights: dict[str, float] = Field(
        default={
            "click": 6.0, "double_click": 1.0, "right_click": 0.5, "move": 1.0, "drag": 1.0,
            "scroll": 1.0, "type_text": 2.0, "key": 1.0, "wait": 0.25, "done": 0.0,
        },
        description="relative sampling weight per action type; 0 disables a type",
    )
    max_text_chars: int = Field(default=8, ge=1, description="longest random text to type")
    max_wait_s: float = Field(default=0.2, ge=0, description="longest random wait in seconds")
    max_scroll: int = Field(default=200, ge=1, description="largest wheel delta in pixels")


class RandomAgent:
    """Samples an action type by weight, then its arguments within the screenshot."""

    name = "random"

    def __init__(self, config: RandomAgentConfig | None = None) -> None:
        self.config = config or RandomAgentConfig()
        types = [t for t, w in self.config.weights.items() if w > 0]
        if not types:
            raise ConfigError(f"expected at least one positive weight, got {self.config.weights}")
        self._types = types
        self._weights = [self.config.weights[t] for t in types]

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        return AgentStep(action=self.sample(obs.width, obs.height, ctx.rng))

    def sample(self, width: int, height: int, rng: random.Random) -> Action:
        """One random action with coordinates inside a width x height screenshot."""
        kind = rng.choices(self._types, self._weights)[0]
        x, y = rng.randrange(width), rng.randrange(height)
        if kind in ("click", "double_click", "right_click", "move"):
            points: dict[str, type[Click | DoubleClick | RightClick | Move]] = {
                "click": Click, "double_click": DoubleClick, "right_click": RightClick, "move": Move}
            cls = points[kind]
            return cls(x=x, y=y)
        if kind == "drag":
            return Drag(x=x, y=y, to_x=rng.randrange(width), to_y=rng.randrange(height))
        if kind == "scroll":
            limit = self.config.max_scroll
            return Scroll(x=x, y=y, dy=rng.randint(-limit, limit))
        if kind == "type_text":
            alphabet = string.ascii_letters + string.digits + " "
            length = rng.randint(1, self.config.max_text_chars)
            return TypeText(text="".join(rng.choice(alphabet) for _ in range(length)))
        if kind == "key":
            return self._key(rng)
        if kind == "wait":
            return Wait(seconds=round(rng.uniform(0, self.config.max_wait_s), 3))
        return Done()

    def _key(self, rng: random.Random) -> Key:
        main = rng.choice([*NAMED_KEYS, *string.ascii_lowercase, *string.digits])
        if rng.random() < 0.2:
            return Key(keys=(rng.choice(MODIFIER_KEYS), main))
        return Key(keys=(main,))


def make(arg: str | None = None) -> RandomAgent:
    """The registry's entry for ``random``."""
    return RandomAgent()
