"""Options of the model agents, from the agent spec's query and a file next to the model.

    hf:runs/tiny                                   defaults (and runs/tiny/cua_agent.yaml, if any)
    hf:runs/tiny?codec=json&temperature=0.7&max_batch=4
    openai:http://127.0.0.1:8000/v1#tiny?max_new_tokens=64
    vllm:/models/Qwen2.5-VL-3B-Instruct?gpu_memory_utilization=0.8

Every agent option is a field of one pydantic model per backend (``HFAgentOptions``,
``OpenAIAgentOptions``, ``VLLMAgentOptions``), validated at once with every bad field named.
For a model directory (``hf:``, ``vllm:``), ``PATH/cua_agent.yaml`` holds its defaults:
the prompt format the model was trained with travels with the checkpoint (a trainer writes
``codec: json`` there), and the spec's query overrides it. ``#MODEL`` names the served model
of an ``openai:`` endpoint (the same as ``?model=``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import parse_qsl

import yaml
from pydantic import ConfigDict, Field, ValidationError

from harness.prompts import PromptConfig
from trainers.errors import ConfigError

#: The file in a model directory that holds its agent defaults.
AGENT_FILE = "cua_agent.yaml"
Options = TypeVar("Options", bound="ModelAgentOptions")


class ModelAgentOptions(PromptConfig):
    """How a model agent prompts (the prompt builder's fields) and samples."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(default=0.0, ge=0.0, le=10.0, description="sampling temperature; 0: greedy")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="nucleus sampling mass")
    max_new_tokens: int = Field(default=128, ge=1, le=8192, description="most tokens per reply")
    seed: int = Field(default=0, description="seed mixed into every episode's own sampling stream")
    policy_version: int | None = Field(default=None, description="recorded with every step")

    def prompt_config(self) -> PromptConfig:
        """The prompt builder's part of these options."""
        return PromptConfig(**self.model_dump(include=set(PromptConfig.model_fields)))


class HFAgentOptions(ModelAgentOptions):
    """``hf:PATH``: transformers generate, batched across concurrent episodes."""

    max_batch: int = Field(default=8, ge=1, description="most prompts per model call")
    max_wait_ms: float = Field(default=5.0, ge=0.0, description="how long a lone prompt waits for others")
    device: str = Field(default="auto", description="auto, cpu, cuda, cuda:N")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto", description="auto: bfloat16 on a GPU that has it, else float32")
    min_pixels: int | None = Field(default=None, ge=1, description="screenshot pixel floor; None: the checkpoint's")
    max_pixels: int | None = Field(default=None, ge=1, description="screenshot pixel budget; None: the checkpoint's")


class OpenAIAgentOptions(ModelAgentOptions):
    """``openai:URL[#MODEL]``: any OpenAI-compatible chat completions endpoint."""

    model: str | None = Field(default=None, description="served model name; None: the first one "
                              "the endpoint lists under /models")
    timeout_s: float = Field(default=120.0, gt=0.0, description="limit for one request")
    retries: int = Field(default=2, ge=0, description="further tries after a 5xx, 408, 409, 429, "
                         "timeout or lost connection (the openai SDK's max_retries, with its backoff)")
    logprobs: bool = Field(default=True, description="ask for the completion's log-probabilities")
    token_ids: bool = Field(default=True, description="ask for token ids (return_token_ids: vLLM and "
                            "cua serve have it; turn off for endpoints that refuse unknown fields)")


class VLLMAgentOptions(ModelAgentOptions):
    """``vllm:PATH``: vLLM's in-process engine (the gpu extra)."""

    max_batch: int = Field(default=32, ge=1, description="most prompts per engine call")
    max_wait_ms: float = Field(default=5.0, ge=0.0, description="how long a lone prompt waits for others")
    gpu_memory_utilization: float = Field(default=0.5, gt=0.0, le=1.0, description="GPU memory vLLM may take")
    max_model_len: int = Field(default=8192, ge=256, description="longest prompt + reply")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(default="auto", description="weight dtype")
    min_pixels: int | None = Field(default=None, ge=1, description="screenshot pixel floor")
    max_pixels: int | None = Field(default=None, ge=1, description="screenshot pixel budget")


def split_spec(agent: str, arg: str | None) -> tuple[str, str | None, dict[str, str]]:
    """``"runs/m?temperature=1#x"`` -> ``("runs/m", "x", {"temperature": "1"})`` (the fragment
    may come before or after the query)."""
    if not arg:
        raise ConfigError(f"expected {agent}:TARGET[?option=value&...], got no target; "
                          f"e.g. --agent {agent}:{'http://127.0.0.1:8000/v1' if agent == 'openai' else 'runs/model'}")
    base, _, query = arg.partition("?")
    fragment = None
    if "#" in query:
        query, _, fragment = query.partition("#")
    elif "#" in base:
        base, _, fragment = base.partition("#")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError as exc:
        raise ConfigError(f"{agent} agent: expected options as ?name=value&name=value, got {query!r}") from exc
    options: dict[str, str] = {}
    for key, value in pairs:
        if key in options:
            raise ConfigError(f"{agent} agent: expected each option once, got {key!r} twice in {query!r}")
        options[key] = value
    return base, fragment or None, options


def read_agent_file(directory: Path) -> dict[str, Any]:
    """``directory/cua_agent.yaml`` as a mapping ({} when there is none)."""
    path = Path(directory) / AGENT_FILE
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"expected YAML in {path}, got: {' '.join(str(exc).split())}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping of agent options in {path}, got {type(data).__name__}")
    return data


def parse_options(model: type[Options], agent: str, *layers: dict[str, Any]) -> Options:
    """``model`` from option layers (later ones win), every bad field named at once."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer)
    try:
        return model.model_validate(merged)
    except ValidationError as err:
        problems = []
        for item in err.errors(include_url=False):
            where = ".".join(str(p) for p in item["loc"]) or "options"
            got = "nothing" if item["type"] == "missing" else f"{item.get('input')!r:.60}"
            problems.append(f"{where}: {item['msg'].lower()}, got {got}")
        known = ", ".join(model.model_fields)
        raise ConfigError(f"{agent} agent options: {len(problems)} bad field(s): {'; '.join(problems)} "
                          f"(options: {known})") from None
