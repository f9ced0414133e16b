"""The agent protocol, the typed step an agent returns, and the per-episode context.

An agent maps an observation to an :class:`AgentStep`: either an action or the model's
text (which the env decodes with its codec), plus, where the agent has them, everything a
trainer needs later: the prompt messages, the completion, its token ids and per-token
log-probabilities, and the policy version that produced it. The rollout records these in
its step records and the store in its episode steps.

Agents keep nothing per episode on themselves: per-episode state lives in the
:class:`AgentContext` the rollout makes for every episode (its history, its random
stream, a scratch dict). So one agent object serves any number of concurrent episodes,
which is what lets model agents batch their calls (``harness.agents.batching``).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.actions import Action
from harness.codecs.base import CodecLike
from harness.observation import Observation
from harness.prompts import Message, Prompt, PromptBuilder

if TYPE_CHECKING:
    from harness.env import Env


class AgentStep(BaseModel):
    """What an agent decided at one step, with what a trainer needs to learn from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Action | None = Field(default=None, description="the action, for agents that act directly")
    text: str | None = Field(default=None, description="model text for the env's codec to decode")
    prompt: list[Message] | None = Field(
        default=None, description="the chat messages sent to the model; images are "
        "{'type': 'image'} placeholders for the screenshots in image_steps")
    image_steps: list[int] | None = Field(
        default=None, description="which observations the prompt's images are, as step numbers "
        "of this episode (0 = the reset observation), oldest first")
    completion: str | None = Field(default=None, description="the model's reply as generated")
    prompt_token_ids: list[int] | None = Field(default=None, description="the prompt's token ids")
    token_ids: list[int] | None = Field(default=None, description="the completion's token ids")
    logprobs: list[float] | None = Field(
        default=None, description="per-token log-probabilities of token_ids under the policy")
    policy_version: int | None = Field(
        default=None, description="the version of the policy that produced this step")

    @model_validator(mode="after")
    def _one_decision(self) -> AgentStep:
        if (self.action is None) == (self.text is None):
            raise ValueError("expected exactly one of action or text in an AgentStep, got "
                             f"action={self.action!r}, text={self.text!r:.60}")
        if self.logprobs is not None and self.token_ids is not None \
                and len(self.logprobs) != len(self.token_ids):
            raise ValueError(f"expected one log-probability per token, got {len(self.logprobs)} "
                             f"for {len(self.token_ids)} tokens")
        return self

    @classmethod
    def of(cls, decision: Action | str) -> AgentStep:
        """A step holding only an action or only model text."""
        return cls(text=decision) if isinstance(decision, str) else cls(action=decision)

    def training_fields(self) -> dict[str, object]:
        """The fields beyond the decision that are set (for step records)."""
        return self.model_dump(exclude={"action", "text"}, exclude_none=True)


@dataclass(frozen=True)
class Turn:
    """One earlier step of the episode as the agent may recall it."""

    observation: Observation  # what the agent saw when it decided
    step: AgentStep  # what it decided
    action: dict[str, object] | None  # what the env executed (None: the text did not parse)


def episode_rng(task_id: str, seed: int | None, index: int) -> random.Random:
    """The random stream of one episode: depends on (task, seed, index), so two tasks (or
    two episodes of one task) never get the same stream, and a rerun gets the same one."""
    digest = hashlib.sha256(f"{task_id}\x00{seed}\x00{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass
class AgentContext:
    """What an agent may know besides the observation, for one episode.

    ``env`` is there for oracles (``env.oracle_action()``); a model agent must not peek.
    """

    task_id: str
    seed: int | None
    index: int = 0
    step: int = 0
    env: Env | None = None
    history: list[Turn] = field(default_factory=list)
    rng: random.Random = field(default_factory=random.Random)
    memory: dict[str, object] = field(default_factory=dict)

    @classmethod
    def for_episode(cls, task_id: str, seed: int | None, index: int = 0,
                    env: Env | None = None) -> AgentContext:
        """A fresh context whose ``rng`` is the episode's own stream."""
        return cls(task_id, seed, index, env=env, rng=episode_rng(task_id, seed, index))


def episode_prompt(builder: PromptBuilder, obs: Observation, history: list[Turn]) -> Prompt[bytes]:
    """The prompt a model agent sends at ``obs``, after the episode's earlier ``history``:
    every earlier executed action, against the screenshot it was taken on."""
    observations = [turn.observation for turn in history] + [obs]
    return builder.build(
        instruction=obs.instruction,
        history=[(turn.action, (turn.observation.width, turn.observation.height),
                  turn.observation.elements) for turn in history],
        images=[o.screenshot for o in observations],
        image_steps=[o.step for o in observations],
        error=obs.last_action_error,
        elements=obs.elements,
    )


@runtime_checkable
class Agent(Protocol):
    """Anything that maps an observation to an :class:`AgentStep`.

    An agent that answers in text may carry a ``codec`` (a :class:`CodecAgent`; model agents
    do): the runner then has the env decode its text with that codec, whatever its config says.
    """

    name: str

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        """The next step; per-episode state belongs in ``ctx``."""


@runtime_checkable
class ElementsAgent(Agent, Protocol):
    """An agent that declares whether its prompt shows the page's element list (model agents
    do, through their prompt config): the env then reads the elements into every observation."""

    @property
    def wants_elements(self) -> bool:
        """Whether this agent's prompt shows the element list (an element observation mode)."""


def wants_elements(agent: Agent) -> bool:
    """Whether ``agent`` asks for the element list in its observations; an agent that
    declares nothing (scripted, oracle, random) does not."""
    return isinstance(agent, ElementsAgent) and agent.wants_elements


@runtime_checkable
class CodecAgent(Agent, Protocol):
    """An agent that answers in text in a codec of its own (model agents): the rollout has
    the env decode its text with that codec, whatever the env's config says."""

    @property
    def codec(self) -> CodecLike:
        """The codec (or its name) the agent's text is in; None: the env's."""


@runtime_checkable
class SamplingAgent(Agent, Protocol):
    """An agent that can also decide by sampling at a temperature (model agents), which is
    what sampled evaluation (``cua eval --samples K``) asks of it."""

    def sampling(self, temperature: float) -> Agent:
        """This agent deciding at ``temperature``, sharing its model (nothing is reloaded)."""
