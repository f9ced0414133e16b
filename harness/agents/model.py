"""The base of model-backed agents (HF generate, OpenAI-compatible endpoints, vLLM: trainers/).

A ``ModelAgent`` builds its prompt with the one prompt builder (``harness.prompts``), asks
``generate`` for a completion, and returns it as model text in an ``AgentStep`` together
with the prompt, the completion's token ids and log-probabilities (where the backend gives
them) and its policy version. The runner has the env decode the text with this agent's own
codec (``agent.codec``), so a parse failure costs a step and comes back as
``last_action_error``.

A subclass implements ``generate``; to batch across concurrent episodes, it hands each
prompt to a ``harness.agents.batching.Batcher`` over its batched model call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from harness.agents.base import AgentContext, AgentStep, episode_prompt
from harness.codecs import ActionCodec
from harness.observation import Observation
from harness.prompts import Message, Prompt, PromptBuilder, PromptConfig


@dataclass(frozen=True)
class Completion:
    """A model's reply, with what the backend knows about its tokens."""

    text: str
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_token_ids: list[int] | None = None

    def step(self, *, prompt: list[Message] | None = None, image_steps: list[int] | None = None,
             policy_version: int | None = None) -> AgentStep:
        """This reply as the agent's step: model text for the env's codec, with what a
        trainer needs (every token-level agent returns its steps through here)."""
        return AgentStep(
            text=self.text, prompt=prompt, image_steps=image_steps, completion=self.text,
            prompt_token_ids=self.prompt_token_ids, token_ids=self.token_ids,
            logprobs=self.logprobs, policy_version=policy_version,
        )


class ModelAgent(ABC):
    """Screenshot(s) + instruction + history -> model text, through ``generate``."""

    name = "model"

    def __init__(self, prompt: PromptConfig | None = None, *, policy_version: int | None = None) -> None:
        self.prompts = PromptBuilder(prompt)
        self.policy_version = policy_version

    @property
    def codec(self) -> ActionCodec:
        """The codec the model speaks; the env decodes this agent's text with it."""
        return self.prompts.codec

    @property
    def wants_elements(self) -> bool:
        """Whether the prompt shows the element list (``ElementsAgent``): the env then reads it."""
        return self.prompts.with_elements

    @abstractmethod
    async def generate(self, prompt: Prompt[bytes]) -> Completion | str:
        """The model's reply to ``prompt`` (its messages, and the encoded screenshots its
        image parts stand for, oldest first)."""

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        prompt = episode_prompt(self.prompts, obs, ctx.history)
        reply = await self.generate(prompt)
        completion = reply if isinstance(reply, Completion) else Completion(str(reply))
        return completion.step(prompt=prompt.messages, image_steps=prompt.image_steps,
                               policy_version=self.policy_version)
