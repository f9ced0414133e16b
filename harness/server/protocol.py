"""The env server's wire format: OpenEnv's envelopes, carrying our typed results.

OpenEnv's protocol (``openenv-core``): ``POST /reset`` and ``POST /step`` answer
``{"observation": {...}, "reward": float | null, "done": bool}``; the WebSocket ``/ws``
takes ``{"type": "reset" | "step" | "state" | "close", "data": {...}}`` and answers
``{"type": "observation" | "state" | "error", "data": {...}}``. What our RL needs beyond
it travels inside those shapes:

- the observation: the screenshot as base64 (PNG unless the sandbox encodes JPEG; never a
  nested list of integers), its size and format, the instruction, URL, step, element list
  and the agent's last error;
- ``observation.metadata``: the session id, whether the episode terminated or was
  truncated, whether it can jump, and the typed ``ResetInfo`` / ``StepInfo`` (the step
  verdict, the executed action, the task's raw reward and message) as JSON;
- a step's action: an action dict of the union (``{"type": "click", "x": 3, "y": 4}``),
  or model text (``{"text": "...", "codec": "qwen"}``, decoded on the server), or text
  already decoded by the agent's own codec on the client (``{"text", "action"}`` or
  ``{"text", "parse_error"}``), so any codec, configured any way, decodes its own text.

``RemoteEnv`` (``harness.server.client``) rebuilds ``Observation``, ``ResetInfo`` and
``StepInfo`` from this JSON, so the rollout and every sink see what a local env gives.
"""

from __future__ import annotations

import base64
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.actions import agent_action_adapter
from harness.env_providers import EnvOptions
from harness.observation import Observation, ResetInfo, StepInfo
from sandboxes.base import UIElement

#: the largest message either side accepts (a full-HD PNG in base64 is a few MB)
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_TEXT_CHARS = 100_000

#: OpenEnv's WebSocket error codes, plus ours (INFRASTRUCTURE_ERROR, UNAUTHORIZED)
ErrorCode = Literal[
    "INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR", "EXECUTION_ERROR", "CAPACITY_REACHED",
    "SESSION_ERROR", "INFRASTRUCTURE_ERROR", "UNAUTHORIZED", "NOT_EXPOSED", "PAYLOAD_TOO_LARGE",
]


class ResetBody(BaseModel):
    """A reset: OpenEnv's ``seed`` and ``episode_id``, plus which task and how it runs."""

    model_config = ConfigDict(extra="forbid")

    seed: int | None = Field(default=None, description="the episode's seed")
    episode_id: str | None = Field(default=None, max_length=255, description="accepted for "
                                   "OpenEnv clients and ignored: the env names its episodes")
    task: str | None = Field(default=None, description="a task of the served suite; None: the "
                             "suite's only task, else its (seed mod n)-th (a random one unseeded)")
    options: dict[str, object] | None = Field(default=None, description="EnvOptions fields "
                                           "(codec, max_steps, reward, elements, timeouts) "
                                           "over the server's defaults")
    session_id: str | None = Field(default=None, description="HTTP only: the session to "
                                   "reset again")
    open_session: bool = Field(default=False, description="HTTP only: open a session that "
                               "later calls name by the answer's session id; false (and no "
                               "session_id): a stateless reset, as OpenEnv's, that holds nothing")


class TextAction(BaseModel):
    """Model text as a step's action: decoded on the server with ``codec``, or already
    decoded by the agent's codec on the client (``action`` or ``parse_error``)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=MAX_TEXT_CHARS, description="the model's text")
    codec: str | None = Field(default=None, description="codec decoding `text` on the server; "
                              "None: the session's codec")
    action: dict[str, object] | None = Field(default=None, description="what the agent's own codec "
                                          "decoded `text` into, on the client")
    parse_error: str | None = Field(default=None, max_length=MAX_TEXT_CHARS, description="why the "
                                    "agent's own codec could not decode `text`")
    metadata: dict[str, object] = Field(default_factory=dict, description="OpenEnv's action "
                                     "metadata; ignored")


class StepBody(BaseModel):
    """An HTTP step: OpenEnv's ``action`` (and ``timeout_s``, ``request_id``) plus the
    session from ``/reset``."""

    model_config = ConfigDict(extra="forbid")

    action: dict[str, object] = Field(description="an action dict, or a TextAction")
    session_id: str = Field(description="the session `/reset` answered with")
    timeout_s: float | None = Field(default=None, gt=0, description="accepted for OpenEnv "
                                    "clients; the session's step timeout applies")
    request_id: str | None = Field(default=None, max_length=255, description="echoed back")


class SessionBody(BaseModel):
    """An HTTP call on one session (state, close, oracle, observe)."""

    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(description="the session `/reset` answered with")


class JumpBody(BaseModel):
    """Move the live FSM episode straight to a stored state."""

    model_config = ConfigDict(extra="forbid")

    state_key: str = Field(min_length=1, description="the FSM state key to jump to")
    steps: int = Field(ge=0, description="steps the episode counts as taken there")
    session_id: str | None = Field(default=None, description="HTTP only: the session")


class WireMetadata(BaseModel):
    """``observation.metadata``: what our RL needs beyond OpenEnv's observation."""

    model_config = ConfigDict(extra="forbid")

    session_id: str | None = Field(description="the session this observation belongs to; "
                                   "None after a stateless HTTP reset")
    kind: Literal["reset", "step", "observe", "jump"] = Field(description="what produced it")
    terminated: bool = Field(default=False, description="the task ended the episode")
    truncated: bool = Field(default=False, description="max_steps ended the episode")
    can_jump: bool = Field(default=False, description="the episode can jump to a state")
    reset_info: ResetInfo | None = Field(default=None, description="a reset's info")
    step_info: StepInfo | None = Field(default=None, description="a step's info: the verdict, "
                                       "the executed action, raw reward, message")
    state_key: str | None = Field(default=None, description="the state a jump reached")


class WireObservation(BaseModel):
    """OpenEnv's observation dict: our ``Observation`` with the screenshot in base64."""

    model_config = ConfigDict(extra="forbid")

    screenshot: str = Field(description="the screenshot, base64 of its PNG (or JPEG) bytes")
    image_format: Literal["png", "jpeg"] = Field(description="encoding of `screenshot`")
    width: int = Field(description="screenshot width in pixels")
    height: int = Field(description="screenshot height in pixels")
    instruction: str = Field(description="the task instruction")
    url: str | None = Field(default=None, description="the page URL (browsers only)")
    step: int = Field(description="steps taken so far in the episode")
    elements: list[UIElement] | None = Field(default=None, description="interactive elements")
    last_action_error: str | None = Field(default=None, description="the agent's last mistake")
    metadata: WireMetadata = Field(description="our typed info beyond OpenEnv's observation")


class Envelope(BaseModel):
    """OpenEnv's reset/step response: observation, reward, done."""

    model_config = ConfigDict(extra="forbid")

    observation: WireObservation
    reward: float | None = Field(default=None, description="the step's reward; None at reset")
    done: bool = Field(default=False, description="terminated or truncated")


class WireState(BaseModel):
    """OpenEnv's state (``episode_id``, ``step_count``) plus the session's task."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str | None = Field(default=None, description="the current episode's id")
    step_count: int = Field(default=0, ge=0, description="steps taken in the episode")
    session_id: str = Field(description="the session")
    task: str | None = Field(default=None, description="the task the session runs")
    seed: int | None = Field(default=None, description="the episode's seed")
    done: bool = Field(default=False, description="the episode ended")
    can_jump: bool = Field(default=False, description="the episode can jump to a state")


def encode_observation(obs: Observation, metadata: WireMetadata) -> WireObservation:
    return WireObservation(
        screenshot=base64.b64encode(obs.screenshot).decode("ascii"),
        image_format=obs.image_format, width=obs.width, height=obs.height,
        instruction=obs.instruction, url=obs.url, step=obs.step,
        elements=list(obs.elements) if obs.elements is not None else None,
        last_action_error=obs.last_action_error, metadata=metadata,
    )


def decode_observation(wire: WireObservation) -> Observation:
    return Observation(
        screenshot=base64.b64decode(wire.screenshot), image_format=wire.image_format,
        width=wire.width, height=wire.height, instruction=wire.instruction, url=wire.url,
        step=wire.step, elements=tuple(wire.elements) if wire.elements is not None else None,
        last_action_error=wire.last_action_error,
    )


def validation_errors(exc: ValidationError) -> list[dict[str, object]]:
    """Pydantic's error list, as OpenEnv sends it (``errors``), made JSON-safe."""
    return [{"loc": list(item["loc"]), "msg": item["msg"], "type": item["type"]}
            for item in exc.errors(include_url=False, include_context=False)]


def describe_body(exc: ValidationError, where: str) -> str:
    """Every error of a body's validation: the field, what was expected, what arrived."""
    parts = []
    for item in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in item["loc"]) or where
        got = "nothing" if item["type"] == "missing" else f"{item.get('input')!r:.60}"
        parts.append(f"{loc}: {item['msg'].lower()}, got {got}")
    return f"{where}: {len(parts)} bad field(s): " + "; ".join(parts)


def merged_options(defaults: EnvOptions, overrides: dict[str, object] | None) -> EnvOptions:
    """The server's default options with a reset's overrides (validated as EnvOptions)."""
    if not overrides:
        return defaults
    return EnvOptions.model_validate({**defaults.model_dump(), **overrides})


def schemas() -> dict[str, object]:
    """``GET /schema``: JSON schemas of the action, observation and state."""
    action = agent_action_adapter.json_schema()
    return {
        "action": {"anyOf": [action, TextAction.model_json_schema()],
                   "description": "an action dict of the union, or model text"},
        "observation": WireObservation.model_json_schema(),
        "state": WireState.model_json_schema(),
    }
