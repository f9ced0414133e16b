"""Wrong first steps for a tree branch, drawn from what an element-mode agent gets wrong.

The explorer's default off-path candidates are random pixel actions (``off_path="random"``).
An element-mode model does not make those mistakes: it clicks the wrong listed element, or
names an element the list does not hold (the env refuses it, and the next prompt carries
the env's error). ``off_path="elements"`` draws such steps, so that the branch the oracle
then continues from them teaches recovery from the mistakes a model actually makes:

- half of the time, a click on another listed element (one no earlier branch took here),
  named as the prompt shows it;
- otherwise, a name the list does not hold: a label the sites often use, or a listed label
  with a word missing. The env refuses it with its own message.

The step is the agent's text in the env's codec, so the env decodes and resolves it exactly
as it does a model's reply.
"""

from __future__ import annotations

import random
from collections.abc import Collection

from harness.actions import Click, ClickElement
from harness.agents.base import AgentStep
from harness.codecs.base import ActionCodec
from harness.observation import Observation
from harness.prompts import shown_labels
from sandboxes.base import UIElement

#: names models often guess; refused wherever the page lists no such element
COMMON_NAMES = ("Next page", "Next", "Submit", "Continue", "Back", "Home", "Save", "OK", "Search")


def wrong_element_step(obs: Observation, rng: random.Random, taken: Collection[dict[str, object]],
                       codec: ActionCodec) -> tuple[AgentStep, ClickElement] | None:
    """A wrong element-mode step at ``obs`` (see the module docstring) and the element action
    it holds, or None where the observation lists no element. ``taken``: the actions already
    tried at this node (clicks, and element actions drawn here before), which are not drawn
    again."""
    elements = list(obs.elements or ())
    if not elements:
        return None
    shown = shown_labels(elements)
    named = {str(a["element"]) for a in taken if a.get("type") == ClickElement.model_fields["type"].default}
    free = [name for element, name in zip(elements, shown, strict=True)
            if name.strip() and element.enabled and name not in named and not _hit(element, taken)]
    if free and rng.random() < 0.5:
        name = rng.choice(free)
    else:
        name = _absent_name(shown, named, rng)
    action = ClickElement(element=name)
    return AgentStep(text=codec.encode(action, size=(obs.width, obs.height))), action


def _hit(element: UIElement, taken: Collection[dict[str, object]]) -> bool:
    """Whether an explored child already clicked inside ``element``."""
    for action in taken:
        if action.get("type") == Click.model_fields["type"].default:
            x, y = action["x"], action["y"]
            if not isinstance(x, int | float) or not isinstance(y, int | float):
                continue  # a click holds numbers here; nothing else can be hit
            if element.x <= x < element.x + element.width and element.y <= y < element.y + element.height:
                return True
    return False


def _absent_name(shown: list[str], named: Collection[str], rng: random.Random) -> str:
    listed = {" ".join(name.split()).casefold() for name in [*shown, *named]}
    candidates = [n for n in COMMON_NAMES if n.casefold() not in listed]
    for name in shown:
        words = name.split()
        if len(words) > 1:
            shorter = " ".join(words[:-1])
            if shorter.casefold() not in listed:
                candidates.append(shorter)
    return rng.choice(candidates) if candidates else "Nothing here"
