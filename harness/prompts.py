"""The one prompt builder: the chat messages a model sees, at inference and in every export.

Model agents build their prompt from the episode so far
(``harness.agents.base.episode_prompt``); the store's SFT, DPO and GRPO exports build
theirs from a tree path (``harness.store.export``). Both go through
:meth:`PromptBuilder.build`, so a model is trained on exactly what it will see:

- a system message: the codec's action-space description (in the chosen coordinate space);
- one user message: the last ``history_images`` screenshots (oldest first, the current one
  last) as ``{"type": "image"}`` parts (none in the ``elements`` observation mode), then
  the text::

      Instruction: <instruction>
      Elements:                                   (observation modes with elements)
      - button "Add to cart"
      - button "Archive" in row "Lunch on Friday?"
      - textbox "Search" = "lamp"
      Previous actions:
      1. <action 1 in the codec's syntax>
      2. ...
      Last action error: <why the previous action failed>      (only after a failed one)
      Next action:

With ``element_refs="index"`` (set-of-marks) each list line starts with its number instead
(``[2] button "Archive" in row "Lunch on Friday?"``) and a target element action names that
number (``"element": "[2]"``): the model copies a short number the list shows instead of a
label. Previous actions still name their elements by label (the lists they were numbered in
are not shown), and the env resolves either form (``named_element``).

Previous actions are the actions the env *executed*, encoded with the codec against the
screenshot they were taken on, not the model's raw text; a step whose text did not parse
reads ``(no valid action)``.

**Transcript mode** is the same prompt as a multi-turn chat, for the RL frameworks' adapters
(``trainers.adapters``: TRL, SkyRL, verl), where the model's own turns are the history:
:meth:`PromptBuilder.opening` is exactly ``build``'s prompt at the episode's first
observation, and :meth:`PromptBuilder.feedback` the user turn after each step: the new
screenshot, then the text::

      Last action error: <why the env refused the action>    (only after a refused one)
      Step verdict: closer to the goal (2 -> 1 steps away)   (where the adapter asks for verdicts)
      Episode over: goal reached                             (only after the last step)
      Elements:                                              (observation modes with elements)
      - ...
      Next action:                                           (unless the episode is over)
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from fsm_sites.serving.verdict import StepVerdict
from harness.actions import AgentAction, Click, ClickElement, parse_agent_action
from harness.codecs import ActionCodec, get_codec
from harness.codecs.base import Size
from harness.observation import Observation
from sandboxes.base import UIElement

T = TypeVar("T")
ObservationMode = Literal["screenshot", "screenshot+elements", "elements"]
ElementRefs = Literal["label", "index"]
#: an element named by its number in the list (``element_refs="index"``): ``[12]``
ELEMENT_NUMBER = re.compile(r"\[(\d+)\]")
#: the codec's action space in each observation mode
ACTION_SPACES = {"screenshot": "pixels", "screenshot+elements": "pixels+elements", "elements": "elements"}
#: A chat message: {"role": ..., "content": [{"type": "text", "text": ...} | {"type": "image"}]}
#: (the one explicit Any left in harness: the trainers read a message's parts as their chat
#: templates do; a TypedDict for it is their change to make)
Message = dict[str, Any]  # type: ignore[explicit-any]
NO_ACTION = "(no valid action)"
#: (the executed action as a dict, or None; the size of the screenshot it was taken on;
#: the elements that screenshot showed, where they were observed)
HistoryEntry = tuple[dict[str, object] | None, Size, "Sequence[UIElement | dict[str, object]] | None"]


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
    observation: ObservationMode = Field(
        default="screenshot", description="what the prompt shows of the screen: 'screenshot', "
        "'screenshot+elements' (and the element list) or 'elements' (the list only, no image)")
    element_refs: ElementRefs = Field(
        default="label", description="how a target element action names its element, in the observation "
        "modes with elements: 'label' (the name the list shows) or 'index' (set-of-marks: each list line "
        "starts with its number, [k], and the action names [k]); previous actions always name labels")


@dataclass(frozen=True)
class Prompt(Generic[T]):
    """Messages plus the images their ``{"type": "image"}`` parts stand for, oldest first."""

    messages: list[Message]
    images: list[T]
    image_steps: list[int]  # the step number of each image (0 = the reset observation)

    def with_images(self, part: Callable[[T], dict[str, object]]) -> list[Message]:
        """The messages with each ``{"type": "image"}`` part, in order, replaced by
        ``part(image)``: the form a framework takes (a PIL image, a ``data:`` URL)."""
        images = iter(self.images)
        return [{**message, "content": [part(next(images)) if item == {"type": "image"} else item
                                        for item in message["content"]]}
                for message in self.messages]


class PromptBuilder:
    """Builds prompts and action texts for one :class:`PromptConfig`."""

    def __init__(self, config: PromptConfig | None = None) -> None:
        self.config = config or PromptConfig()

    @property
    def with_elements(self) -> bool:
        """Whether the prompt shows the element list (and offers element actions)."""
        return self.config.observation != "screenshot"

    @cached_property
    def codec(self) -> ActionCodec:
        return get_codec(self.config.codec, coordinates=self.config.coordinates,
                         action_space=ACTION_SPACES[self.config.observation])

    @cached_property
    def system_text(self) -> str:
        return self.codec.prompt()

    def action_text(self, action: dict[str, object] | AgentAction | None, size: Size,
                    elements: Sequence[UIElement | dict[str, object]] | None = None,
                    refs: ElementRefs | None = None) -> str:
        """An action in the codec's syntax (a training target, or a line of history); in the
        modes with elements, a click on an element reads as an element action that names its
        element as ``refs`` says (default: the config's ``element_refs``; a line of history
        passes ``"label"``)."""
        if action is None:
            return NO_ACTION
        parsed = parse_agent_action(action) if isinstance(action, dict) else action
        if self.with_elements and elements:
            parsed = element_reference(as_element_action(parsed, elements), elements,
                                       refs or self.config.element_refs)
        return self.codec.encode(parsed, size=size)

    @property
    def numbered(self) -> bool:
        """Whether the element list numbers its lines (``element_refs="index"``)."""
        return self.config.element_refs == "index"

    def build(self, *, instruction: str, history: Sequence[HistoryEntry], images: Sequence[T],
              image_steps: Sequence[int], error: str | None,
              elements: Sequence[UIElement | dict[str, object]] | None = None,
              verdict: StepVerdict | None = None, over: str | None = None) -> Prompt[T]:
        """The prompt at one step: ``history`` is every earlier step of the episode (or tree
        path), ``images`` and ``image_steps`` its screenshots so far, the current one last,
        ``elements`` the current observation's element list (where it was observed);
        ``verdict`` and ``over`` (single-turn RL prompts only: verl-agent's) the last step's
        verdict and why the episode is over, as ``feedback`` writes them."""
        k = 0 if self.config.observation == "elements" else self.config.history_images
        limit = self.config.history_actions
        first = 0 if limit is None else max(0, len(history) - limit)
        lines = [f"{i + 1}. {self.action_text(action, size, shown, refs='label')}"
                 for i, (action, size, shown) in enumerate(history) if i >= first]
        text = f"Instruction: {instruction}\n"
        if self.with_elements:
            text += "Elements:\n" + element_lines(elements, numbered=self.numbered) + "\n"
        text += "Previous actions:\n" + ("\n".join(lines) or "(none)")
        text += "".join(f"\n{line}" for line in _step_lines(error, verdict, over))
        if over is None:
            text += "\nNext action:"
        messages: list[Message] = []
        if self.config.system_prompt:
            messages.append({"role": "system", "content": [{"type": "text", "text": self.system_text}]})
        return self._user_turn(messages, text, list(images)[-k:] if k else [],
                               list(image_steps)[-k:] if k else [])

    def opening(self, obs: Observation) -> Prompt[Observation]:
        """Transcript mode: the messages a multi-turn episode opens with, exactly ``build``'s
        prompt at its first observation (``obs``; the image stands for its screenshot)."""
        return self.build(instruction=obs.instruction, history=[], images=[obs],
                          image_steps=[obs.step], error=obs.last_action_error, elements=obs.elements)

    def feedback(self, obs: Observation, verdict: StepVerdict | None = None, *,
                 over: str | None = None) -> Prompt[Observation]:
        """Transcript mode: the user turn after a step that led to ``obs``: its screenshot (in
        the observation modes with one), the env's error where it refused the action, the
        step's ``verdict`` (pass it where the adapter's config asks for verdicts), why the
        episode is ``over``, the element list (in the modes with one), ``Next action:``."""
        text = "\n".join(_step_lines(obs.last_action_error, verdict, over))
        if self.with_elements:
            text += "\nElements:\n" + element_lines(obs.elements, numbered=self.numbered)
        if over is None:
            text += "\nNext action:"
        shown = [] if self.config.observation == "elements" else [obs]
        return self._user_turn([], text.lstrip("\n"), shown, [obs.step for _ in shown])

    @staticmethod
    def _user_turn(messages: list[Message], text: str, images: list[T],
                   image_steps: list[int]) -> Prompt[T]:
        """``messages`` and a user turn: ``images`` as image parts, then ``text``."""
        content: list[dict[str, object]] = [{"type": "image"} for _ in images]
        content.append({"type": "text", "text": text})
        return Prompt([*messages, {"role": "user", "content": content}], images, image_steps)

    def assistant(self, text: str) -> list[Message]:
        """The assistant turn holding a target action's text."""
        return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def verdict_text(verdict: StepVerdict) -> str:
    """A short reading of an FSM step verdict for the model."""
    if verdict.goal_reached:
        return "goal reached"
    if not verdict.transition_fired:
        return "nothing changed"
    if verdict.distance_after is None:
        return "dead end: the goal can no longer be reached"
    way = "closer to the goal" if verdict.on_shortest_path else "off the shortest path"
    return f"{way} ({verdict.distance_before} -> {verdict.distance_after} steps away)"


def _step_lines(error: str | None, verdict: StepVerdict | None, over: str | None) -> list[str]:
    """What the model is told of the last step: the env's error, the verdict, the end."""
    lines = [f"Last action error: {error}"] if error else []
    if verdict is not None:
        lines.append(f"Step verdict: {verdict_text(verdict)}")
    if over is not None:
        lines.append(f"Episode over: {over}")
    return lines


@dataclass(frozen=True)
class ShownName:
    """An element's name as the prompt shows it: its label (its role where it has none;
    numbered ``"Mailbox #2"`` as a last resort), the row it acts on, and the part of the page
    it sits in where its label alone would be shared."""

    label: str
    row: str | None = None
    section: str | None = None

    @property
    def place(self) -> str:
        """Where it sits, as the list line writes it: ``' in row "Lunch on Friday?"'``, ``' in navigation'``."""
        row = f" in row {json.dumps(self.row, ensure_ascii=False)}" if self.row else ""
        return row + (f" in {self.section}" if self.section else "")

    @property
    def text(self) -> str:
        """The name an element action writes: ``Archive in row "Lunch on Friday?"``."""
        return self.label + self.place


def shown_names(elements: Sequence[UIElement]) -> list[ShownName]:
    """Each element's name as the prompt shows it, all distinct: its label (whitespace
    collapsed; its role where it has none), with the row a row's action acts on
    (``Archive in row "Lunch on Friday?"``); a label that repeats names the part of the page
    of each copy outside the main content (``Inbox in navigation`` beside the main content's
    ``Inbox``); copies the page still shows alike are numbered, the second ``"Mailbox #2"``, a
    number some element carries as its own label skipped."""
    names = [ShownName(_words(e.label) or e.role, e.row or None) for e in elements]
    groups: dict[tuple[str, str | None], list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault((name.label, name.row), []).append(i)
    for members in groups.values():
        if len({elements[i].section for i in members}) > 1:
            for i in members:
                names[i] = replace(names[i], section=elements[i].section)
    taken = {name.text for name in names}
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name.text not in seen:
            seen.add(name.text)
            continue
        k = 2
        while replace(name, label=f"{name.label} #{k}").text in taken:
            k += 1
        names[i] = replace(name, label=f"{name.label} #{k}")
        taken.add(names[i].text)
    return names


def shown_labels(elements: Sequence[UIElement]) -> list[str]:
    """Each element's name as an element action writes it (``shown_names``), so that two
    elements named alike (a nav link and a card, a row's Archive and the next row's) each
    have a name the model can copy and the env resolves (``harness.env.resolve_element_action``)."""
    return [name.text for name in shown_names(elements)]


def element_lines(elements: Sequence[UIElement | dict[str, object]] | None, *, numbered: bool = False) -> str:
    """The element list as the prompt shows it: one ``- role "label"`` line per element
    (``[k] role "label"``, k from 1, where ``numbered``), where it sits (`` in row "Lunch on
    Friday?"``, `` in navigation``; see ``shown_names``), its value (``= "text"``) and
    ``(disabled)`` where they apply."""
    if not elements:
        return "(none)"
    lines = []
    listed = _listed(elements)
    for k, (element, name) in enumerate(zip(listed, shown_names(listed), strict=True), start=1):
        mark = f"[{k}]" if numbered else "-"
        line = f"{mark} {element.role} {json.dumps(name.label, ensure_ascii=False)}{name.place}"
        if element.value:
            line += f" = {json.dumps(element.value, ensure_ascii=False)}"
        if not element.enabled:
            line += " (disabled)"
        lines.append(line)
    return "\n".join(lines)


def _loose(text: str) -> str:
    """A name with its quotes and runs of whitespace ignored."""
    return " ".join(text.replace('"', " ").split())


def named_element(wanted: str, elements: Sequence[UIElement]) -> tuple[UIElement | None, str | None]:
    """The element ``wanted`` names, or an agent error: the name the list shows it under
    (``shown_labels``) as written, then without its quotes, then in any case; then its number
    in the list written ``[k]`` (``element_refs="index"``; from 1); then its label alone where
    one element has it (several: refused with their names); then its id; whitespace ignored.
    MiniWoB's links "eget" and "Eget" are two elements: the name as written picks its own."""
    asked = " ".join(wanted.split())
    named = list(zip(elements, (" ".join(s.split()) for s in shown_labels(elements)), strict=True))
    tries: list[Callable[[str], bool]] = [
        lambda n: n == asked, lambda n: n == asked.strip("\"'"), lambda n: _loose(n) == _loose(asked),
        lambda n: _loose(n).casefold() == _loose(asked).casefold()]
    for fits in tries:
        found = next((e for e, n in named if fits(n)), None)
        if found is not None:
            return found, None
    number = ELEMENT_NUMBER.fullmatch(asked.strip("\"'"))
    if number is not None:
        k = int(number.group(1))
        if 1 <= k <= len(elements):
            return elements[k - 1], None
        return None, f"expected an element number from [1] to [{len(elements)}], got {wanted!r}"
    for any_case in (False, True):  # the label alone, where it is one element's
        labelled = [(e, n) for e, n in named if _loose(e.label) == _loose(asked)
                    or any_case and _loose(e.label).casefold() == _loose(asked).casefold()]
        if len(labelled) == 1:
            return labelled[0][0], None
        if labelled:
            return None, (f"expected one element, got {len(labelled)} labelled {wanted!r}: "
                          f"{', '.join(repr(n) for _, n in labelled[:6])}; name one as the list does")
    found = next((e for e in elements if e.id.casefold() == asked.strip("\"'").casefold()), None)
    if found is not None:
        return found, None
    close = difflib.get_close_matches(wanted, [n for _, n in named], n=3, cutoff=0.5)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    return None, f"expected an element label or id of the element list, got {wanted!r}{hint}"


def as_element_action(action: AgentAction,
                      elements: Sequence[UIElement | dict[str, object]]) -> AgentAction:
    """A click inside an element's box as the element action that names it as the prompt
    shows it (``shown_labels``: ``Archive in row "Lunch on Friday?"``); any other action as it is."""
    if not isinstance(action, Click):
        return action
    listed = _listed(elements)
    inside = [i for i, e in enumerate(listed) if e.x <= action.x < e.x + e.width and e.y <= action.y < e.y + e.height]
    if not inside:
        return action
    target = min(inside, key=lambda i: listed[i].width * listed[i].height)
    return ClickElement(element=shown_labels(listed)[target])


def element_reference(action: AgentAction, elements: Sequence[UIElement | dict[str, object]],
                      refs: ElementRefs) -> AgentAction:
    """An element action naming its element as ``refs`` says: ``"[k]"`` (its number in the
    list) for ``"index"``, the name the list shows (``shown_labels``) for a ``"label"`` action
    that named a number; any other action, and a name the list does not hold (a refused
    step's), as it is."""
    if not isinstance(action, ClickElement) or refs == "label" and not ELEMENT_NUMBER.fullmatch(action.element.strip()):
        return action
    listed = _listed(elements)
    target, _ = named_element(action.element, listed)
    if target is None:
        return action
    k = next(i for i, element in enumerate(listed) if element is target)
    return ClickElement(element=f"[{k + 1}]" if refs == "index" else shown_labels(listed)[k])


def _listed(elements: Sequence[UIElement | dict[str, object]]) -> list[UIElement]:
    return [e if isinstance(e, UIElement) else UIElement.model_validate(e) for e in elements]


def _words(label: str) -> str:
    return " ".join(label.split())
