"""`cua collect`: build the env for an FSM suite, explore into a store, emit hindsight tasks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import ConfigDict, Field

from harness.errors import ConfigError
from harness.store.explore import ExploreConfig, Explorer
from harness.store.hindsight import hindsight_tasks
from harness.store.store import TrajectoryStore


class CollectConfig(ExploreConfig):
    """Everything `cua collect` needs: the suite and the store, plus the exploration knobs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str = Field(description="'fsm:SITE' (a library site) or 'fsm:SITE/GOAL'")
    store: Path = Field(description="the store directory (created if missing)")
    hindsight: bool = Field(default=True, description="emit hindsight tasks for reached states")


def fsm_task_for(suite: str):  # -> harness.tasks.fsm.FSMTask
    """The FSM task of a suite name ('fsm:SITE' or 'fsm:SITE/GOAL') from the task registry."""
    if not suite.startswith("fsm:"):
        raise ConfigError(f"suite: expected 'fsm:SITE' or 'fsm:SITE/GOAL', got {suite!r}; "
                          "tree collection needs an FSM site")
    from harness.tasks.registry import make_task

    return make_task(suite)


def transition_describer(task):  # noqa: ANN001, ANN201 - an FSMTask; returns a Describe
    """Map transition ids of the task's site onto their instruction phrases."""
    try:
        from fsm_sites.library import load_site

        spec = load_site(task.task.site)
    except Exception:  # noqa: BLE001 - a generated site: fall back to transition ids
        return None
    phrases = {t.id: t.description for t in spec.transitions}
    return phrases.get


async def collect_async(config: CollectConfig) -> dict:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from harness.env import AsyncBrowserEnv, sandbox_overrides_for
    from harness.tasks.fsm import close_shared_server
    from sandboxes.browser_host import BrowserHost

    task = fsm_task_for(config.suite)
    store = TrajectoryStore(config.store)
    host = BrowserHost()
    await host.start()
    sandbox = await host.new_sandbox(**sandbox_overrides_for(task))
    env = AsyncBrowserEnv(task, sandbox, max_steps=config.max_depth + 1)
    env_key = f"{config.suite}@seed={config.seed}"
    try:
        with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn()) as progress:
            bar = progress.add_task(f"collect {config.suite} ({config.explore})", total=config.budget)
            explorer = Explorer(store, env, ExploreConfig(**config.model_dump(
                exclude={"suite", "store", "hindsight"})), env_key=env_key,
                progress=lambda n: progress.advance(bar, n))
            report = (await explorer.run()).to_dict()
        tree = next((t for t in store.trees() if t.env == env_key), None)
        if config.hindsight and tree is not None:
            report["hindsight_tasks"] = len(hindsight_tasks(store, tree.id,
                                                            describe=transition_describer(task)))
        return report
    finally:
        await env.close()
        await sandbox.close()
        await host.close()
        await close_shared_server()
        store.close()


def collect(config: CollectConfig) -> dict:
    """Run a collection to completion (sync entry point of `cua collect`)."""
    return asyncio.run(collect_async(config))
