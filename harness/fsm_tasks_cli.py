"""`cua tasks synth`: synthesize FSM tasks for a site, verify each in a real browser.

Verification replays each task's oracle through the one rollout path (``harness.rollout``:
the oracle agent in the env, over the sandbox) and keeps a task only when the oracle
reaches the goal and every step that sent an event was on a shortest path; a sink ends
the episode at the first step that leaves it. Steps that send no event (focusing a
field, typing, opening a dropdown) are preparatory and allowed. A task is never dropped
silently: a ``SandboxError`` raises, and a reset that timed out or whose page never
settled is dropped with a reason of its own (``INFRA_DROP``), apart from tasks that are
themselves broken (``setup failed``).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from fsm_sites.serving.client import LocalSiteClient, SiteClient
from fsm_sites.serving.server import SiteServer, resolve_sites
from fsm_sites.spec.site import SiteSpec
from fsm_sites.synthesis.tasks import SkippedGoal, TaskSpec, save_tasks, synthesize_tasks
from harness.agents.oracle import OracleAgent
from harness.cli_config import check_output_file, cli_errors
from harness.env import AsyncEnv
from harness.errors import ConfigError, InfrastructureError
from harness.rollout import Episode, RolloutSink, RolloutStep, rollout
from harness.tasks.fsm import FSMTask, GoalTask
from harness.tasks.registry import suite_task_ids
from sandboxes.base import Sandbox, SandboxProvider, SandboxRequest
from sandboxes.errors import SandboxError

console = Console(stderr=True)
#: The reason of a task dropped because the browser or page failed it, not the task.
INFRA_DROP = "infrastructure error during reset (not the task's fault; verify again)"


@dataclass(frozen=True)
class Verdict:
    """The outcome of verifying one task."""

    task_id: str
    kept: bool
    reason: str  # "ok" or why it was dropped
    steps: int


class _StaysOnShortestPath(RolloutSink):
    """Ends the episode at the first step that sent events and left the shortest path."""

    def __init__(self, task: FSMTask) -> None:
        self.task = task

    async def on_step(self, episode: Episode, transition: RolloutStep) -> str | None:
        verdict = transition.info.verdict
        if self.task.step_events[-1] and verdict is not None and not verdict.on_shortest_path:
            return (f"step {transition.step} left the shortest path "
                    f"({verdict.transition_id or 'no transition fired'})")
        return None


async def verify_one(task: GoalTask | TaskSpec, sites: SiteClient, sandbox: Sandbox, *, seed: int = 0) -> Verdict:
    """Replay ``task``'s oracle in ``sandbox`` through the env; keep it only if it is clean."""
    fsm_task = FSMTask(task, sites)
    env = AsyncEnv(fsm_task, sandbox)  # the task's own step budget
    try:
        episode = await rollout(env, OracleAgent(), [_StaysOnShortestPath(fsm_task)], seed=seed)
    except SandboxError:
        raise  # infrastructure, not the task's fault: never a silent drop
    except InfrastructureError as exc:  # a slow or stuck page, not a broken task
        return Verdict(task.id, False, f"{INFRA_DROP}: {type(exc).__name__}: {exc}", 0)
    except Exception as exc:  # noqa: BLE001 - a broken task is reported and dropped
        return Verdict(task.id, False, f"setup failed: {exc}", 0)
    finally:
        await env.close()
    if episode.stop_reason is not None:
        return Verdict(task.id, False, episode.stop_reason, episode.steps)
    if episode.agent_error is not None:
        return Verdict(task.id, False, "the oracle has no path from the current state", episode.steps)
    if episode.success:
        return Verdict(task.id, True, "ok", episode.steps)
    last = episode.transitions[-1] if episode.transitions else None
    reason = (f"did not reach the goal in {episode.steps} steps" if episode.truncated
              else last.info.message if last is not None else "the episode ended before a step")
    return Verdict(task.id, False, reason, episode.steps)


async def verify_tasks(tasks: Sequence[GoalTask | TaskSpec], specs: Sequence[SiteSpec], *, seed: int = 0,
                       concurrency: int = 2, show_progress: bool = True,
                       provider: SandboxProvider | None = None) -> list[Verdict]:
    """Verify every task in one browser and one site server, ``concurrency`` at a time
    (each in its own sandbox); the verdicts come back in the order of ``tasks``. A
    ``provider`` handed in is used (and left open); else one is started for the call."""
    from sandboxes.providers import LocalProvider

    async with SiteServer(specs) as server, AsyncExitStack() as stack:
        if provider is None:
            provider = await stack.enter_async_context(LocalProvider())
        sites = LocalSiteClient(server)
        with Progress(console=console, disable=not show_progress) as progress:
            bar = progress.add_task("verifying tasks", total=len(tasks))
            return await _verify_all(tasks, sites, provider, seed, concurrency,
                                     lambda: progress.advance(bar))


async def _verify_all(tasks: Sequence[GoalTask | TaskSpec], sites: SiteClient, provider: SandboxProvider, seed: int,
                      concurrency: int, advance: Callable[[], None]) -> list[Verdict]:
    out: list[Verdict | None] = [None] * len(tasks)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(len(tasks)):
        queue.put_nowait(index)

    async def worker() -> None:
        sandbox = await provider.new_sandbox(SandboxRequest())
        try:
            while not queue.empty():
                index = queue.get_nowait()
                out[index] = await verify_one(tasks[index], sites, sandbox, seed=seed)
                advance()
        finally:
            await sandbox.close()

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(tasks))))))
    return [verdict for verdict in out if verdict is not None]


def register(app: typer.Typer) -> None:
    """Add ``cua tasks list`` and ``cua tasks synth``."""
    tasks_app = typer.Typer(help="List a suite's tasks; synthesize and verify FSM-site tasks.",
                            no_args_is_help=True)

    @tasks_app.command("list")
    def list_tasks(
        suite: Annotated[str, typer.Argument(help="a suite ('miniwob', 'fsm', 'desktop'), some of its "
                                             "tasks ('fsm:shop', 'miniwob:click-test,click-button') or "
                                             "several joined with '+'")],
    ) -> None:
        """Print the task ids a suite names, one per line (what --suite and tasks: accept)."""
        with cli_errors():
            for task_id in suite_task_ids(suite):
                typer.echo(task_id)

    @tasks_app.command("synth")
    def synth(
        site: Annotated[str, typer.Option("--site", help="a library site name or a spec file (.yaml/.json)")],
        n: Annotated[int, typer.Option("--n", min=1, help="how many tasks to synthesize")] = 20,
        out: Annotated[Path, typer.Option("--out", help="where to write the kept tasks")] = Path("tasks.jsonl"),
        seed: Annotated[int, typer.Option("--seed", help="synthesis seed and verification layout seed")] = 0,
        verify: Annotated[bool, typer.Option("--verify/--no-verify", help="replay each oracle in a browser")] = True,
        concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="tasks verified at once")] = 2,
        start: Annotated[str | None, typer.Option(
            "--start", help="where tasks start: a start state the spec names, a state key, or 'random' "
                            "(a random reachable state per task); default: the site's initial state")] = None,
        max_depth: Annotated[int, typer.Option(
            "--max-depth", min=1, help="the longest oracle path a task may have, in steps; a named goal "
                                       "deeper than this is left out, and said so")] = 15,
    ) -> None:
        """Synthesize tasks for a site and keep those whose oracle verifies in a real browser."""
        with cli_errors():
            spec = resolve_sites([site])[0]  # every mistake is refused before any work
            check_output_file(out, "--out")
            _synth(spec, n, out, seed, verify, concurrency, start, max_depth)

    app.add_typer(tasks_app, name="tasks")


def _synth(spec: SiteSpec, n: int, out: Path, seed: int, verify: bool, concurrency: int,
           start: str | None, max_depth: int = 15) -> None:
    """Synthesize, verify (unless told not to) and write the kept tasks; every named goal
    left out is reported with why."""
    skipped: list[SkippedGoal] = []
    try:
        tasks = synthesize_tasks(spec, n=n, seed=seed, start=start, max_depth=max_depth, skipped=skipped)
    except (ValueError, KeyError) as exc:
        raise ConfigError(f"--start: expected a start state of {spec.name!r} "
                          f"({[s.id for s in spec.starts]}), a reachable state key or 'random', "
                          f"got {start!r}: {exc}") from None
    for left in skipped:
        console.print(f"left out goal {left.goal!r}: {left.reason}", markup=False, soft_wrap=True)
    kept = tasks
    if verify:
        verdicts = asyncio.run(verify_tasks(tasks, [spec], seed=seed, concurrency=concurrency))
        kept = [t for t, v in zip(tasks, verdicts, strict=True) if v.kept]
        reasons = Counter(v.reason for v in verdicts if not v.kept)
        console.print(f"verified {len(tasks)} task(s): kept {len(kept)}, dropped {len(tasks) - len(kept)}")
        for reason, count in reasons.most_common():
            console.print(f"  dropped {count}: {reason}")
    out.parent.mkdir(parents=True, exist_ok=True)
    save_tasks(kept, out)
    console.print(f"wrote {len(kept)} task(s) to {out}")
    if verify and not kept:
        raise typer.Exit(code=1)
