"""What an evaluation runs: the agent's own episodes, then, for sampled evaluation, K more
per task with the same agent sampling at a temperature.

``cua eval`` and the training runs' evaluations (``trainers.training.evaluate``) both plan
and run their episodes here, so a sampled episode is seeded, indexed and recorded the same
way wherever it runs: sample ``j`` of a task is seeded ``seed + j`` (the instances of the
greedy episodes), indexed ``episodes + j``, and carries its ``temperature``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.agents.base import Agent, SamplingAgent
from harness.env_providers import ProviderContext, make_env_provider
from harness.errors import ConfigError
from harness.records import EpisodeRecord, EpisodeSpec
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs

if TYPE_CHECKING:
    from harness.store.store import TrajectoryStore


@dataclass(frozen=True)
class Pass:
    """Episodes one agent runs with one runner config."""

    agent: Agent
    specs: list[EpisodeSpec]
    config: RunnerConfig


def evaluation_passes(agent: Agent, task_ids: list[str], config: RunnerConfig, *, episodes: int,
                      seed: int, samples: int = 0, temperature: float = 1.0,
                      agent_name: str = "") -> list[Pass]:
    """The passes of an evaluation; ``samples`` needs a ``SamplingAgent`` (else a
    ``ConfigError`` before anything runs). The sampled pass resumes into the same
    results.jsonl, so it never truncates what the first pass wrote."""
    passes = [Pass(agent, episode_specs(task_ids, episodes, seed), config)]
    if samples:
        if not isinstance(agent, SamplingAgent):
            raise ConfigError(f"--samples: expected an agent that samples at a temperature (hf, "
                              f"openai), got {agent_name or agent.name!r}; drop --samples for it")
        sampled = episode_specs(task_ids, samples, seed, first_index=episodes, temperature=temperature)
        passes.append(Pass(agent.sampling(temperature), sampled, config.model_copy(update={"resume": True})))
    return passes


def run_passes(passes: list[Pass], out: Path, store: TrajectoryStore | None = None) -> list[EpisodeRecord]:
    """Run every pass into ``out`` over one env provider (the first pass's config names it),
    so the sampled pass reuses the browsers the first one started; returns the records."""
    return asyncio.run(_run_passes(passes, out, store))


async def _run_passes(passes: list[Pass], out: Path, store: TrajectoryStore | None) -> list[EpisodeRecord]:
    config = passes[0].config
    envs = make_env_provider(config.provider_spec(), ProviderContext(bind_host=config.bind_host))
    records: list[EpisodeRecord] = []
    try:
        for one in passes:
            runner = EpisodeRunner(one.agent, one.config, out_dir=out, envs=envs, store=store)
            records += await runner.run(one.specs)
    finally:
        await envs.close()
    return records
