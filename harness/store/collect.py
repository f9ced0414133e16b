"""`cua collect`: build the env for a suite task, explore into a store, emit hindsight tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ConfigDict, Field, field_validator
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from fsm_sites.library import load_site
from harness.agents.base import wants_elements
from harness.agents.registry import make_agent
from harness.env_providers import (
    EnvOptions,
    EnvPlacement,
    EnvProvider,
    LocalEnvs,
    ProviderContext,
    make_env_provider,
)
from harness.errors import ConfigError
from harness.resources import TaskResources
from harness.rewards import RewardMode
from harness.store.explore import ExploreConfig, Explorer
from harness.store.hindsight import Describe, hindsight_tasks
from harness.store.sink import env_key
from harness.store.store import TrajectoryStore
from harness.tasks.base import Task
from harness.tasks.fsm import FSMTask
from harness.tasks.registry import make_task, suite_task_ids
from sandboxes.base import SandboxKind, SandboxProvider


class CollectConfig(ExploreConfig, EnvPlacement):
    """Everything `cua collect` needs: the suite and the store, plus the exploration knobs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str = Field(description="one task: 'fsm:SITE' (a library site), 'fsm:SITE/GOAL', or "
                       "any task id (restores replay where the task cannot jump)")
    store: Path = Field(description="the store directory (created if missing)")
    hindsight: bool = Field(default=True, description="emit hindsight tasks for reached states")
    reward: RewardMode = Field(default="outcome", description="the step reward stored in nodes: "
                               "outcome, step (verdict-shaped) or progress")
    bind_host: str = Field(default="127.0.0.1", description="address the site and page servers bind")
    elements: bool = Field(default=False, description="observe and store each step's interactive "
                           "elements (for element-mode exports); always on for agents whose "
                           "prompt shows elements")
    sandbox: SandboxKind | None = Field(default=None, description="the kind of sandbox: browser "
                                        "or desktop; None: the kind the task asks for")

    @field_validator("suite")
    @classmethod
    def _one_task(cls, suite: str) -> str:
        task_for(suite)
        return suite



def task_for(suite: str) -> Task:
    """The one task a collection grows its tree on, from the task registry."""
    ids = suite_task_ids(suite)
    if len(ids) != 1:
        raise ConfigError(f"suite: expected one task (e.g. 'fsm:shop'), got {len(ids)} "
                          f"({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}); a tree grows on one task")
    return make_task(ids[0])


def transition_describer(task: Task) -> Describe | None:
    """Map transition ids of the task's site onto their instruction phrases (None: not an
    FSM task)."""
    if not isinstance(task, FSMTask):
        return None
    try:
        spec = load_site(task.task.site)
    except Exception:  # noqa: BLE001 - a generated site: fall back to transition ids
        return None
    phrases = {t.id: t.description for t in spec.transitions}
    return phrases.get


async def collect_async(config: CollectConfig, *, envs: EnvProvider | None = None,
                        provider: SandboxProvider | None = None,
                        resources: TaskResources | None = None,
                        progress: Callable[[int], None] | None = None) -> dict:
    """Grow the config's tree. ``envs`` (or a sandbox ``provider`` and ``resources`` for
    local envs) may be handed in; otherwise ``config.provider`` names where the env runs.
    ``progress`` takes the env steps spent as they are spent; without it the collection
    shows its own progress bar (a caller with a bar of its own passes it)."""

    task = task_for(config.suite)
    agent = make_agent(config.agent)
    store = TrajectoryStore(config.store)
    owned = envs is None
    if envs is None and (provider is not None or resources is not None):
        envs = LocalEnvs(provider, resources=resources, bind_host=config.bind_host)
    elif envs is None:
        envs = make_env_provider(config.provider_spec(),
                                 ProviderContext(bind_host=config.bind_host))
    env = None
    try:
        await envs.start()
        options = EnvOptions(max_steps=config.max_depth + 1, reward=config.reward,
                             elements=config.elements or wants_elements(agent),
                             sandbox=config.sandbox)
        env = await envs.open(task.id, options)
        key = env_key(config.suite, config.seed)
        explore = ExploreConfig(**config.model_dump(include=set(ExploreConfig.model_fields)))
        if progress is not None:
            explorer = Explorer(store, env, explore, env_key=key, agent=agent, progress=progress)
            report = (await explorer.run()).to_dict()
        else:
            with _bar(f"collect {config.suite} ({config.explore})", config.budget) as advance:
                explorer = Explorer(store, env, explore, env_key=key, agent=agent, progress=advance)
                report = (await explorer.run()).to_dict()
        tree = next((t for t in store.trees() if t.env == key), None)
        if config.hindsight and tree is not None:
            report["hindsight_tasks"] = len(hindsight_tasks(store, tree.id,
                                                            describe=transition_describer(task)))
        return report
    finally:
        if env is not None:
            await envs.release(env)
        if owned:
            await envs.close()
        store.close()


@contextmanager
def _bar(title: str, total: int) -> Iterator[Callable[[int], None]]:
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn()) as progress:
        bar = progress.add_task(title, total=total)
        yield lambda n: progress.advance(bar, n)


def collect(config: CollectConfig) -> dict:
    """Run a collection to completion (sync entry point of `cua collect`)."""
    return asyncio.run(collect_async(config))
