"""The MiniWoB++ tasks whose skills the FSM sites teach, and a hand-written element-mode agent
that shows each one can be solved from the element list alone (the transfer benchmark's
ceiling row, ``bench_transfer``).

``TRANSFER_TASKS`` maps each task to the skill it tests; docs/training.md ("Transfer to
MiniWoB++") lists them with the FSM widget that teaches the skill. ``RuleAgent`` reads the
names a task's instruction asks for (``targets``) and clicks the elements with those labels
by ``click_element`` (under the names the list shows them by), exploring (clicking a tab or folder it has not opened yet) while a
name is not on screen. It sees what a model in the ``elements`` observation mode sees,
nothing of the page beyond it.
"""

from __future__ import annotations

import json
import re

from harness.agents.base import AgentContext, AgentStep
from harness.observation import Observation
from harness.prompts import shown_labels

#: task -> the skill it tests (what the FSM sites' element-mode data has to teach for it)
TRANSFER_TASKS: dict[str, str] = {
    "click-test": "click the one button",
    "click-test-2": "click the button named in the instruction",
    "click-button": "click a named button among several",
    "click-button-sequence": "click two named buttons in order",
    "click-link": "click a named link in a paragraph",
    "click-dialog-2": "click a named button in a dialog (modal)",
    "click-tab": "click a named tab",
    "click-tab-2-easy": "open a tab, then click a named link in it",
    "click-checkboxes": "tick the named check boxes, then Submit",
    "click-option": "choose the named radio button, then Submit",
    "click-collapsible": "expand a section, then Submit",
    "navigate-tree": "open folders of a tree to a named file",
    "click-menu": "open nested menus to a named item",
}

#: tasks with a covered skill that the element list cannot express today, and why
NOT_EXPRESSIBLE: dict[str, str] = {
    "choose-list": "a native <select> (listed as combobox \"combobox\"); its options are not listed",
    "click-dialog": "the dialog's close button is not listed (the list is empty)",
    "social-media": "nothing is listed (the page's controls are plain spans without a pointer cursor)",
}

_QUOTED = re.compile(r'"([^"]*)"')


def targets(task: str, instruction: str) -> list[str]:
    """The element labels the instruction asks to click, in order."""
    if task in ("click-checkboxes", "click-option"):
        match = re.search(r"Select (.*?) and click Submit", instruction)
        names = [] if not match or match.group(1) == "nothing" else match.group(1).split(", ")
        return [*names, "Submit"]
    if task in ("click-test-2", "click-button-sequence"):
        return re.findall(r"button (\w+)", instruction)
    if task == "click-tab":
        return re.findall(r"(Tab #\d+)", instruction)
    if task == "click-menu":
        match = re.search(r"Select (.*)$", instruction.strip())
        return match.group(1).split(">") if match else []
    if task == "click-collapsible":
        return ["Submit"]
    return _QUOTED.findall(instruction)[-1:]


class RuleAgent:
    """Clicks the instruction's names by label, in order (see the module docstring)."""

    name = "rules"

    codec = "json"

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        task = ctx.task_id.split(":", 1)[1]
        memory = ctx.memory
        elements = obs.elements or ()
        if "todo" not in memory:
            first = [e.label for e in elements[:1]] if task == "click-test" else []
            memory.update(todo=first or targets(task, obs.instruction), clicked=[])
        if not memory["todo"]:
            return AgentStep(text=json.dumps({"type": "done"}))
        wanted = memory["todo"][0]
        if wanted not in [e.label for e in elements] or (task == "click-collapsible" and not memory["clicked"]):
            unopened = [e for e in elements  # explore: a tab (else a folder) not yet opened
                        if e.label not in memory["clicked"] and e.label not in memory["todo"]]
            unopened.sort(key=lambda e: e.role != "tab")
            wanted = unopened[0].label if unopened else wanted
        if wanted == memory["todo"][0]:
            memory["todo"].pop(0)
        memory["clicked"].append(wanted)
        # the name the list shows the element under (a row's action names its row)
        name = next((n for e, n in zip(elements, shown_labels(elements), strict=True) if e.label == wanted), wanted)
        return AgentStep(text=json.dumps({"type": "click_element", "element": name}))
