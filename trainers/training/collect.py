"""Verified data for a run whose store is empty: the oracle on the config's tasks and seeds.

- ``explore: episodes`` (SFT): one oracle episode per (task, layout seed), through the
  episode runner into the store, as ``cua eval --agent oracle --store DIR`` does.
- ``explore: tree`` (DPO): one tree per (task, seed), grown by ``cua collect --agent oracle
  --explore tree``: the oracle's step and random siblings from every expanded node, so the
  export has on-path and off-path children to pair.

Element lists are observed whenever the prompt shows them, so element-mode exports can
name the oracle's clicks by label.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness.agents.registry import make_agent
from harness.prompts import PromptConfig
from harness.records import EpisodeSpec
from harness.resources import TaskResources
from harness.runner import EpisodeRunner, RunnerConfig
from harness.store.collect import CollectConfig, collect_async
from harness.store.store import DB_NAME, TrajectoryStore
from trainers.errors import TrainingDataError
from trainers.training.config import CollectSpec, task_ids


def store_is_empty(store_dir: Path) -> bool:
    """Whether a store holds no episode yet (a missing folder counts as empty)."""
    if not (Path(store_dir) / DB_NAME).is_file():
        return True
    store = TrajectoryStore(store_dir, read_only=True)
    try:
        return store.counts()["episodes"] == 0
    finally:
        store.close()


def ensure_data(store_dir: Path, spec: CollectSpec | None, prompt: PromptConfig,
                log_dir: Path) -> dict | None:
    """Collect ``spec`` into an empty store (returns what was collected); leave a store with
    data alone (returns None); an empty store without ``spec`` is a ``TrainingDataError``."""
    if not store_is_empty(store_dir):
        return None
    if spec is None:
        raise TrainingDataError(
            f"expected training data in the store {store_dir}, got an empty store; collect into "
            "it first (cua eval --agent oracle --store DIR --elements, or cua collect) or set "
            "collect: {tasks: [...]} in the config")
    elements = prompt.observation != "screenshot"
    if spec.explore == "tree":
        return asyncio.run(_grow_trees(store_dir, spec, elements))
    return asyncio.run(_oracle_episodes(store_dir, spec, elements, log_dir))


async def _oracle_episodes(store_dir: Path, spec: CollectSpec, elements: bool, log_dir: Path) -> dict:
    specs = [EpisodeSpec(task_id=task, seed=seed, index=i)
             for task in task_ids(spec.tasks) for i, seed in enumerate(spec.seeds)]
    store = TrajectoryStore(store_dir)
    try:
        runner = EpisodeRunner(make_agent("oracle"), RunnerConfig(
            concurrency=spec.concurrency, elements=elements, save_screenshots=False),
            out_dir=log_dir, store=store)
        records = await runner.run(specs)
    finally:
        store.close()
    failed = [r for r in records if r.error or not r.success]
    if failed:
        raise TrainingDataError(f"expected the oracle to solve every collection episode, got "
                                f"{len(failed)} of {len(records)} unsolved (first: {failed[0].task} "
                                f"seed {failed[0].seed}: {failed[0].error or 'not solved'}); see "
                                f"{log_dir / 'results.jsonl'}")
    return {"episodes": len(records), "steps": sum(r.steps for r in records)}


async def _grow_trees(store_dir: Path, spec: CollectSpec, elements: bool) -> dict:
    from sandboxes.providers import LocalProvider  # Playwright: SFT trains where it is absent

    totals = {"trees": 0, "episodes": 0, "env_steps": 0}
    async with LocalProvider() as provider, TaskResources() as resources:
        for task in task_ids(spec.tasks):
            for seed in spec.seeds:
                config = CollectConfig(suite=task, store=store_dir, budget=spec.budget, agent="oracle",
                                       explore="tree", candidates=spec.candidates, seed=seed,
                                       elements=elements, hindsight=False)
                report = await collect_async(config, provider=provider, resources=resources)
                totals["trees"] += 1
                totals["episodes"] += report["episodes"]
                totals["env_steps"] += report["env_steps"]
    return totals
