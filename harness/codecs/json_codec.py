"""Plain JSON of the action model: ``{"type": "click", "x": 12, "y": 40}``.

The decoder finds the first JSON object with a ``"type"`` field anywhere in the text,
so a ```` ```json ```` fence or prose around the object is fine.
"""

from __future__ import annotations

import json

from harness.actions import AgentAction
from harness.codecs.base import (
    ACTION_NAMES,
    CodecOptions,
    Size,
    check_length,
    encode_fields,
    finish,
    parse_error,
)
from harness.codecs.prompt import build_prompt

# Trying every "{" of an adversarial string would be quadratic; real outputs put the
# action object among the first few braces.
MAX_CANDIDATES = 64
_TYPES = ", ".join(ACTION_NAMES)


def _reject_constant(name: str) -> float:
    raise ValueError(f"expected a finite number, got {name}")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


class JsonCodec:
    """The action model as one JSON object."""

    name = "json"

    def __init__(self, options: CodecOptions | None = None) -> None:
        self.options = options or CodecOptions()

    def encode(self, action: AgentAction, *, size: Size | None = None) -> str:
        fields = encode_fields(action, self.options, size)
        ordered = {"type": fields.pop("type"), **fields}
        return json.dumps(ordered, ensure_ascii=False)

    def decode(self, text: str, *, size: Size | None = None) -> AgentAction:
        text = check_length(self.name, text)
        data = _find_object(text)
        if data is None:
            raise parse_error(
                self.name, 'a JSON object like {"type": "click", "x": 10, "y": 20}', text,
                f"answer with one JSON object whose type is one of: {_TYPES}",
            )
        return finish(self.name, dict(data), self.options, size, text)

    def prompt(self) -> str:
        header = (
            "Reply with exactly one action as a JSON object on its own. The \"type\" field "
            "names the action; the other fields are listed below."
        )
        return build_prompt(header, self.encode, self.options)


def _find_object(text: str) -> dict[str, object] | None:
    start = text.find("{")
    tried = 0
    while start != -1 and tried < MAX_CANDIDATES:
        tried += 1
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict) and "type" in value:
            return value
        start = text.find("{", start + 1)
    return None
