"""The typed action space (defined in ``sandboxes.actions``, which executes it; re-exported
here so that harness code and users import actions from the harness), the element
action, and a short human label for an action.

``ClickElement`` names an element of the observation's element list (observation modes
with elements) instead of a point; the env resolves it to a ``Click`` at the element's
centre before anything reaches the sandbox, and records that click as the executed
action, so data collected in element mode also trains pixel policies. To type into a
field by its label: ``click_element`` it, then ``type_text`` (the text goes to the
focused field), as a person would. ``AgentAction`` is what agents and codecs speak: every
sandbox action and the element action.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from sandboxes.actions import (
    ACTION_TYPES,
    KEY_ALIASES,
    MAX_COORDINATE,
    MAX_SCROLL,
    MAX_TEXT_CHARS,
    MAX_WAIT_S,
    MODIFIER_KEYS,
    NAMED_KEYS,
    NORMALIZED_MAX,
    POINTER_ACTIONS,
    Action,
    Click,
    Done,
    DoubleClick,
    Drag,
    Float,
    Int,
    Key,
    Move,
    RightClick,
    Scroll,
    Text,
    TypeText,
    Wait,
    action_adapter,
    canonical_key,
    duration_s,
    from_normalized,
    outside,
    parse_action,
    replace_surrogates,
    rescale,
    rescale_action,
    short_repr,
    to_normalized,
)


def describe_action(action: AgentAction | dict[str, object] | None, text: str | None = None) -> str:
    """A short human label for an action, e.g. ``click(12, 40)`` or ``type_text("hi")``;
    for text that did not parse, the start of the text."""
    if action is None:
        return f"(unparsed) {text[:60]!r}" if text else "(no action)"
    fields = (parse_agent_action(action) if isinstance(action, dict) else action).model_dump()
    kind = fields["type"]
    if kind == "click_element":
        return f"click_element({fields['element']!r})"
    if "x" in fields:
        extra = f", to=({fields['to_x']}, {fields['to_y']})" if kind == "drag" else ""
        extra += f", dy={fields['dy']}" if kind == "scroll" else ""
        return f"{kind}({fields['x']}, {fields['y']}{extra})"
    if kind == "type_text":
        return f"type_text({fields['text']!r})"
    if kind == "key":
        return "key(" + "+".join(fields["keys"]) + ")"
    if kind == "done":
        return f"done({fields['answer']!r})" if fields.get("answer") else "done()"
    return f"wait({fields.get('seconds', 1.0)})"


class ClickElement(BaseModel):
    """Click an element of the element list, named by its label (or id)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["click_element"] = "click_element"
    element: Text = Field(min_length=1, max_length=200,
                          description="the element's label (or id) as the element list shows it")


AgentAction = Annotated[
    Click | DoubleClick | RightClick | Move | Drag | Scroll | TypeText | Key | Wait | Done | ClickElement,
    Field(discriminator="type"),
]
ELEMENT_ACTIONS: tuple[type[BaseModel], ...] = (ClickElement,)
agent_action_adapter: TypeAdapter[AgentAction] = TypeAdapter(AgentAction)


def parse_agent_action(data: object) -> AgentAction:
    """Validate a dict into an action or an element action."""
    return agent_action_adapter.validate_python(data)


__all__ = [
    "ACTION_TYPES", "ELEMENT_ACTIONS", "KEY_ALIASES", "MAX_COORDINATE", "MAX_SCROLL",
    "MAX_TEXT_CHARS", "MAX_WAIT_S", "MODIFIER_KEYS", "NAMED_KEYS", "NORMALIZED_MAX",
    "POINTER_ACTIONS", "Action", "AgentAction", "Click", "ClickElement", "Done", "DoubleClick",
    "Drag", "Float", "Int", "Key", "Move", "RightClick", "Scroll", "Text", "TypeText", "Wait",
    "action_adapter", "agent_action_adapter", "canonical_key", "describe_action", "duration_s",
    "from_normalized", "outside", "parse_action", "parse_agent_action", "replace_surrogates",
    "rescale", "rescale_action", "short_repr", "to_normalized",
]
