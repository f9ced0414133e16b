"""The one prompt builder: the chat messages a model sees, at inference and in every export.

Model agents build their prompt from the episode so far
(``harness.agents.base.episode_prompt``); the store's SFT, DPO and GRPO exports build
theirs from a tree path (``harness.store.export``). Both go through
:meth:`PromptBuilder.build`, so a model is trained on exactly what it will see:

- a system message: the codec's action-space description (in the chosen coordinate space);
- one user message: the last ``history_images`` screenshots (oldest first, the current one
  last) as ``{"type": "image"}`` parts, then the text::

      Instruction: <instruction>
      Previous actions:
      1. <action 1 in the codec's syntax>
      2. ...
      Last action error: <why the previous action failed>      (only after a failed one)
      Next action:

Previous actions are the actions the env *executed*, encoded with the codec against the
screenshot they were taken on, not the model's raw text; a step whose text did not parse
reads ``(no valid action)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from harness.actions import Action, parse_action
from harness.codecs import ActionCodec, get_codec
from harness.codecs.base import Size

T = TypeVar("T")
#: A chat message: {"role": ..., "content": [{"type": "text", "text": ...} | {"type": "image"}]}
Message = dict[str, Any]
NO_ACTION = "(no valid action)"
#: (the executed action as a dict, or None; the size of the screenshot it was taken on)
HistoryEntry = tuple[dict[str, Any] | None, Size]


class PromptConfig(BaseModel):
    """How prompts are built: the codec, its coordinate space, and how much history."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    codec: str = Field(default="qwen", description="the action codec (qwen, uitars, pyautogui, json)")
    coordinates: Literal["pixel", "normalized"] = Field(
        default="pixel", description="coordinate space of actions: screenshot pixels or 0-1000")
    history_images: int = Field(
        default=1, ge=1, description="screenshots per prompt: the last k, the current one included")
    history_actions: int | None = Field(
        default=None, ge=0, description="previous actions listed; None: all of them")
    system_prompt: bool = Field(default=True, description="send the codec's action-space description")


@dataclass(frozen=True)
class Prompt(Generic[T]):
    """Messages plus the images their ``{"type": "image"}`` parts stand for, oldest first."""

    messages: list[Message]
    images: list[T]
    image_steps: list[int]  # the step number of each image (0 = the reset observation)


class PromptBuilder:
    """Builds prompts and action texts for one :class:`PromptConfig`."""

    def __init__(self, config: PromptConfig | None = None) -> None:
        self.config = config or PromptConfig()

    @cached_property
    def codec(self) -> ActionCodec:
        return get_codec(self.config.codec, coordinates=self.config.coordinates)

    @cached_property
    def system_text(self) -> str:
        return self.codec.prompt()

    def action_text(self, action: dict[str, Any] | Action | None, size: Size) -> str:
        """An action in the codec's syntax (a training target, or a line of history)."""
        if action is None:
            return NO_ACTION
        parsed = parse_action(action) if isinstance(action, dict) else action
        return self.codec.encode(parsed, size=size)

    def build(self, *, instruction: str, history: Sequence[HistoryEntry], images: Sequence[T],
              image_steps: Sequence[int], error: str | None) -> Prompt[T]:
        """The prompt at one step: ``history`` is every earlier step of the episode (or tree
        path), ``images`` and ``image_steps`` its screenshots so far, the current one last."""
        k = self.config.history_images
        limit = self.config.history_actions
        first = 0 if limit is None else max(0, len(history) - limit)
        lines = [f"{i + 1}. {self.action_text(action, size)}"
                 for i, (action, size) in enumerate(history) if i >= first]
        text = f"Instruction: {instruction}\nPrevious actions:\n" + ("\n".join(lines) or "(none)")
        if error:
            text += f"\nLast action error: {error}"
        text += "\nNext action:"
        shown = list(images)[-k:]
        content: list[dict[str, Any]] = [{"type": "image"} for _ in shown]
        content.append({"type": "text", "text": text})
        messages: list[Message] = []
        if self.config.system_prompt:
            messages.append({"role": "system", "content": [{"type": "text", "text": self.system_text}]})
        messages.append({"role": "user", "content": content})
        return Prompt(messages, shown, list(image_steps)[-k:])

    def assistant(self, text: str) -> list[Message]:
        """The assistant turn holding a target action's text."""
        return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]
