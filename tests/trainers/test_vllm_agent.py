"""The vllm: agent without vLLM: a clear error naming the extra (the agent itself runs only
where the gpu extra installs; see test_gpu.py)."""

from __future__ import annotations

import importlib.util

import pytest

from harness.agents.registry import make_agent
from trainers.errors import ConfigError, MissingExtraError


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_without_vllm_the_error_names_the_gpu_extra(tiny_dir) -> None:
    with pytest.raises(MissingExtraError, match=r"cua-harness\[gpu\]") as caught:
        make_agent(f"vllm:{tiny_dir}")
    assert isinstance(caught.value, ConfigError)  # a one-line CLI error, exit 2


def test_bad_options_are_refused_before_any_engine_starts(tiny_dir) -> None:
    with pytest.raises(ConfigError, match="gpu_memory_utilization"):
        make_agent(f"vllm:{tiny_dir}?gpu_memory_utilization=2")
