"""The async episode runner: many episodes over a pool of sandboxes from one provider.

``EpisodeRunner(agent).run(specs)`` runs each ``EpisodeSpec`` (task, seed, index) with up
to ``concurrency`` at once, every one through the one rollout path
(``harness.rollout.rollout``); the agent is shared by every episode (its per-episode state
lives in the rollout's context), so a model agent can batch the episodes' calls. Task ids
are checked before any sandbox starts. Infrastructure errors (``InfrastructureError``)
are retried up to ``retries`` times with a fresh sandbox; a crash of a process several
sandboxes share (the browser) is retried without using up ``retries``, up to
``crash_retries`` times, since the episode that sees it need not be the one that caused
it. If every attempt fails the record carries ``error`` and is not scored. Anything the
agent does wrong is part of the episode and never retried: an exception the agent raises
ends the episode as a failure, recorded in ``agent_error`` with the trajectory so far.

What an episode leaves behind is a sink: its ``results.jsonl`` line and report
screenshots (always), the trajectory store (``store=``), and any sinks the caller adds.
Each finished episode is appended to ``results.jsonl`` and flushed at once, so a killed
run keeps what it finished; ``resume=True`` skips the (task, seed, index) keys already
there without an ``error``.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from pydantic import ConfigDict, Field, field_validator
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from harness.agents.base import Agent, wants_elements
from harness.codecs import get_codec
from harness.env_providers import (
    EnvOptions,
    EnvPlacement,
    EnvProvider,
    LocalEnvs,
    ProviderContext,
    make_env_provider,
)
from harness.errors import ConfigError, InfrastructureError
from harness.records import EpisodeRecord, EpisodeSpec, RecordSink, read_results
from harness.resources import TaskResources
from harness.rewards import RewardMode
from harness.rollout import RolloutSink, describe_error, rollout
from harness.store.sink import StoreSink, env_key
from harness.tasks.registry import check_task_id
from sandboxes.base import SandboxKind, SandboxProvider
from sandboxes.errors import SandboxCrashed
from sandboxes.viewports import parse_viewport

if TYPE_CHECKING:
    from harness.store.store import TrajectoryStore

RESULTS_FILE = "results.jsonl"
#: the progress bar's tally: goals reached, episodes that ended without (the agent's
#: failures), and episodes lost to the infrastructure after their retries
PROGRESS_COUNTS = "solved {task.fields[solved]} · unsolved {task.fields[unsolved]} · infra errors {task.fields[errors]}"


class RunnerConfig(EnvPlacement):
    """How episodes are run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: int = Field(default=2, ge=1, description="episodes run at once (one sandbox each)")
    max_steps: int | None = Field(
        default=None, ge=1,
        description="steps before an episode is truncated; None: the task's own budget "
                    "(FSM tasks: 6 x shortest path + 6), else 30",
    )
    step_timeout_s: float = Field(default=30.0, gt=0, description="limit for one env step or reset")
    episode_timeout_s: float = Field(default=300.0, gt=0, description="limit for a whole episode")
    retries: int = Field(default=2, ge=0, description="retries of an episode after an infrastructure error")
    crash_retries: int = Field(
        default=10, ge=0,
        description="further retries after crashes of a process sandboxes share (the browser), "
                    "which do not use up `retries`")
    reward: RewardMode = Field(
        default="outcome", description="the env's reward: outcome, step (verdict-shaped) or progress")
    elements: bool = Field(
        default=False, description="observe the page's interactive elements each step (element "
        "lists for prompts and exports); always on for agents whose prompt shows elements")
    sandbox: SandboxKind | None = Field(
        default=None, description="the kind of sandbox: browser or desktop; None: the kind "
        "each task asks for")
    bind_host: str = Field(
        default="127.0.0.1", description="address the run's site and page servers bind (one a "
        "sandbox in a container or on another machine can reach)")
    codec: str | None = Field(
        default=None,
        description="codec that decodes the text of agents without a codec of their own "
                    "(a ModelAgent's own codec always decodes its text); None: json",
    )
    viewport: str | None = Field(
        default=None,
        description="the browser viewport of every episode, WIDTHxHEIGHT (390x844) or desktop, "
                    "laptop, tablet, phone; overrides the task's own; None: the task's")

    @field_validator("viewport")
    @classmethod
    def _viewport_size(cls, viewport: str | None) -> str | None:
        if viewport is not None:
            parse_viewport(viewport, option=None)  # the error names the field already
        return viewport

    @property
    def viewport_size(self) -> tuple[int, int] | None:
        """``viewport`` as (width, height), None when the tasks choose."""
        return parse_viewport(self.viewport) if self.viewport is not None else None

    @field_validator("codec")
    @classmethod
    def _known_codec(cls, codec: str | None) -> str | None:
        if codec is not None:
            get_codec(codec)
        return codec

    save_screenshots: bool = Field(default=True, description="save a JPEG per step under out/episodes/")
    screenshot_max_side: int | None = Field(
        default=None, ge=32, description="downscale saved screenshots to this; None: full size")
    resume: bool = Field(default=False, description="skip episodes already finished in results.jsonl")
    progress: bool = Field(default=True, description="show a rich progress bar")


#: Makes the extra sinks of one episode (its spec in hand).
SinkFactory = Callable[[EpisodeSpec], Sequence[RolloutSink]]
#: on_episode(record); may be sync or async.
EpisodeCallback = Callable[[EpisodeRecord], object]


def episode_specs(task_ids: Iterable[str], episodes: int, seed: int, *, first_index: int = 0,
                  temperature: float | None = None) -> list[EpisodeSpec]:
    """``episodes`` episodes per task, episode i seeded ``seed + i`` and indexed
    ``first_index + i``, decided at ``temperature`` (None: the agent's own)."""
    return [EpisodeSpec(task_id=t, seed=seed + i, index=first_index + i, temperature=temperature)
            for t in task_ids for i in range(episodes)]


class _Counts(TypedDict):
    """The episodes so far by outcome (the progress bar's fields)."""

    solved: int
    unsolved: int
    errors: int


async def _maybe_await(value: object) -> None:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        await value


class EpisodeRunner:
    """Runs episode specs with one shared agent over envs from one env provider: ``envs``
    if given; else local envs over a sandbox ``provider`` and ``resources`` if either is
    given; else the provider ``config.provider`` names (default: local)."""

    def __init__(
        self,
        agent: Agent,
        config: RunnerConfig | None = None,
        *,
        out_dir: str | Path | None = None,
        envs: EnvProvider | None = None,
        provider: SandboxProvider | None = None,
        resources: TaskResources | None = None,
        store: TrajectoryStore | None = None,
        sinks: SinkFactory | None = None,
        on_episode: EpisodeCallback | None = None,
    ) -> None:
        self.agent = agent
        self.config = config or RunnerConfig()
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.envs = envs
        self.provider = provider
        self.resources = resources
        self.store = store
        self.sinks = sinks
        self.on_episode = on_episode
        self._results_file: io.TextIOBase | None = None

    async def run(self, specs: Iterable[EpisodeSpec]) -> list[EpisodeRecord]:
        """Run every spec not already finished; return the records of this run.

        Raises ``UnknownTaskError`` before anything starts if a task id names no task.
        """
        specs = list(specs)
        for task_id in dict.fromkeys(s.task_id for s in specs):
            check_task_id(task_id)
        envs, owned = self._env_provider()  # a bad provider argument fails before any file
        todo = self._pending(specs)
        if not todo:
            if owned:
                await envs.close()
            return []
        queue: asyncio.Queue[EpisodeSpec] = asyncio.Queue()
        for spec in todo:
            queue.put_nowait(spec)
        records: list[EpisodeRecord] = []
        self._counts: _Counts = {"solved": 0, "unsolved": 0, "errors": 0}
        try:
            await envs.start()
            with self._progress(len(todo)) as progress:
                bar = progress.add_task("episodes", total=len(todo), **self._counts)
                workers = [
                    self._worker(envs, queue, records, progress, bar)
                    for _ in range(min(self.config.concurrency, len(todo)))
                ]
                await asyncio.gather(*workers)
        finally:
            if self._results_file is not None:
                self._results_file.close()
                self._results_file = None
            if owned:
                await envs.close()
        return records

    def _env_provider(self) -> tuple[EnvProvider, bool]:
        """The envs of this run, and whether the run owns them (and closes them)."""
        if self.envs is not None:
            return self.envs, False
        if self.provider is not None or self.resources is not None:
            if self.config.ray:
                raise ConfigError("expected no sandbox provider or resources with ray=True, got "
                                  "some; actors make their own, or pass envs=RayEnvs(...)")
            return LocalEnvs(self.provider, resources=self.resources,
                             bind_host=self.config.bind_host), True
        context = ProviderContext(bind_host=self.config.bind_host)
        spec = self.config.provider_spec()
        return make_env_provider(spec, context), True

    # ---- scheduling ------------------------------------------------------------------

    def _pending(self, specs: list[EpisodeSpec]) -> list[EpisodeSpec]:
        if self.out_dir is None:
            return specs
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / RESULTS_FILE
        if not self.config.resume:
            path.write_text("")
            return specs
        done = {r.key for r in read_results(path) if r.error is None}
        return [s for s in specs if s.key not in done]

    def _progress(self, total: int) -> Progress:
        return Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(PROGRESS_COUNTS),
            TimeElapsedColumn(),
            disable=not self.config.progress,
            transient=False,
        )

    async def _worker(self, envs: EnvProvider, queue: asyncio.Queue[EpisodeSpec],
                      records: list[EpisodeRecord], progress: Progress, bar: TaskID) -> None:
        while not queue.empty():
            spec = queue.get_nowait()
            record = await self._run_with_retries(envs, spec)
            records.append(record)
            self._write(record)
            if self.on_episode is not None:
                await _maybe_await(self.on_episode(record))
            outcome: Literal["errors", "solved", "unsolved"] = "errors" if record.error is not None else "solved" if record.success else "unsolved"
            self._counts[outcome] += 1
            progress.update(bar, advance=1, **self._counts)

    async def _run_with_retries(self, envs: EnvProvider, spec: EpisodeSpec) -> EpisodeRecord:
        """One episode; infrastructure errors (setup included) are retried, then recorded."""
        error, attempt, failures, crashes = "", 0, 0, 0
        while failures <= self.config.retries:
            attempt += 1
            try:
                return await self._run_once(envs, spec, attempt)
            except InfrastructureError as exc:
                error = describe_error(exc)
                shared_crash = isinstance(exc, SandboxCrashed) and exc.shared
                if shared_crash and crashes < self.config.crash_retries:
                    crashes += 1  # another episode's crash may have taken this one down
                else:
                    failures += 1
            except Exception as exc:  # a harness bug (a task, a sink): retrying won't help
                return self._failed(spec, attempt, describe_error(exc))
        return self._failed(spec, attempt, error)

    def _failed(self, spec: EpisodeSpec, attempts: int, error: str) -> EpisodeRecord:
        return EpisodeRecord(task=spec.task_id, seed=spec.seed, index=spec.index,
                             temperature=spec.temperature, episode=spec.name,
                             attempts=attempts, error=error,
                             reward_mode=self.config.reward)

    # ---- one episode -----------------------------------------------------------------

    def env_options(self) -> EnvOptions:
        """How this run's envs run their episodes."""
        cfg = self.config
        return EnvOptions(codec=cfg.codec or "json", max_steps=cfg.max_steps, reward=cfg.reward,
                          elements=cfg.elements or wants_elements(self.agent),
                          step_timeout_s=cfg.step_timeout_s, reset_timeout_s=cfg.step_timeout_s,
                          sandbox=cfg.sandbox, viewport=cfg.viewport_size)

    async def _run_once(self, envs: EnvProvider, spec: EpisodeSpec, attempt: int) -> EpisodeRecord:
        cfg = self.config
        record_sink = RecordSink(spec, attempt, self.out_dir, reward_mode=cfg.reward,
                                 save_screenshots=cfg.save_screenshots,
                                 screenshot_max_side=cfg.screenshot_max_side)
        sinks: list[RolloutSink] = [record_sink]
        if self.store is not None:
            sinks.append(StoreSink(self.store, env=env_key(spec.task_id, spec.seed),
                                   agent=self.agent.name))
        if self.sinks is not None:
            sinks.extend(self.sinks(spec))
        env = await envs.open(spec.task_id, self.env_options())
        try:
            await rollout(env, self.agent, sinks, seed=spec.seed, index=spec.index,
                          timeout_s=cfg.episode_timeout_s)
        except BaseException:
            await envs.discard(env)  # a fresh sandbox for a retry: this one may be dead
            raise
        await envs.release(env)
        return record_sink.record

    def _write(self, record: EpisodeRecord) -> None:
        if self.out_dir is None:
            return
        if self._results_file is None:
            self._results_file = open(self.out_dir / RESULTS_FILE, "a", encoding="utf-8")
        self._results_file.write(json.dumps(record.model_dump(mode="json")) + "\n")
        self._results_file.flush()


