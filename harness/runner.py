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
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.agents.base import Agent
from harness.env import AsyncEnv
from harness.errors import InfrastructureError
from harness.observation import Observation
from harness.resources import TaskResources
from harness.rewards import RewardMode
from harness.rollout import Episode, RolloutSink, Transition, describe_error, rollout
from harness.tasks.registry import check_task_id, make_task
from sandboxes.base import Sandbox, SandboxProvider, SandboxRequest
from sandboxes.errors import SandboxCrashed

if TYPE_CHECKING:
    from harness.store.store import TrajectoryStore

RESULTS_FILE = "results.jsonl"


class RunnerConfig(BaseModel):
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
    codec: str | None = Field(
        default=None,
        description="codec that decodes the text of agents without a codec of their own "
                    "(a ModelAgent's own codec always decodes its text); None: json",
    )
    @field_validator("codec")
    @classmethod
    def _known_codec(cls, codec: str | None) -> str | None:
        if codec is not None:
            from harness.codecs import get_codec

            get_codec(codec)
        return codec

    save_screenshots: bool = Field(default=True, description="save a JPEG per step under out/episodes/")
    screenshot_max_side: int | None = Field(
        default=None, ge=32, description="downscale saved screenshots to this; None: full size")
    resume: bool = Field(default=False, description="skip episodes already finished in results.jsonl")
    progress: bool = Field(default=True, description="show a rich progress bar")


class EpisodeSpec(BaseModel):
    """One episode to run; (task_id, seed, index) is its key in results.jsonl."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str = Field(description="the task id, e.g. 'miniwob:click-button'")
    seed: int | None = Field(description="the seed for reset")
    index: int = Field(ge=0, description="the episode's index within its task")

    @property
    def key(self) -> tuple[str, int | None, int]:
        return (self.task_id, self.seed, self.index)

    @property
    def name(self) -> str:
        """A file-system-safe episode name."""
        # Only URL- and file-system-safe characters: the report links these by relative URL.
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", self.task_id.replace(":", "__"))
        return f"{safe}-{self.index:04d}-s{self.seed}"


class StepRecord(BaseModel):
    """One step of a finished episode."""

    step: int = Field(description="1-based step number")
    action: dict | None = Field(description="the executed action, None if unparseable")
    action_text: str | None = Field(default=None, description="the agent's text, if it sent text")
    error: str | None = Field(default=None, description="the agent error of this step")
    reward: float = Field(description="the env reward of this step (in the run's reward mode)")
    raw_reward: float = Field(description="the task's raw reward of this step")
    verdict: dict | None = Field(default=None, description="the FSM step verdict, if any")
    screenshot: str | None = Field(default=None, description="the screenshot before the step, relative to out")
    agent: dict | None = Field(
        default=None, description="what the agent sent and got, where it says: prompt, "
        "image_steps, completion, token ids, log-probabilities, policy version")


class EpisodeRecord(BaseModel):
    """One line of results.jsonl."""

    task: str = Field(description="the task id")
    seed: int | None = Field(description="the reset seed")
    index: int = Field(description="the episode index within its task")
    episode: str = Field(description="the episode name (its folder under episodes/)")
    instruction: str = Field(default="", description="the task instruction")
    success: bool = Field(default=False, description="the task's goal was reached")
    reward: float = Field(default=0.0, description="the sum of the env's step rewards")
    raw_reward: float = Field(default=0.0, description="the final raw task reward")
    reward_mode: str = Field(default="outcome", description="the reward mode of the run")
    progress: float = Field(
        default=0.0, description="the fraction of the start's distance-to-goal the episode closed "
        "(1.0 on success; without verdicts 1.0 on success, else 0.0)")
    start_distance: int | None = Field(default=None, description="shortest distance from start to goal")
    steps: int = Field(default=0, description="steps taken")
    terminated: bool = Field(default=False, description="the task or the agent ended the episode")
    truncated: bool = Field(default=False, description="max_steps ended the episode")
    wall_seconds: float = Field(default=0.0, description="wall time of the last attempt")
    attempts: int = Field(default=1, description="attempts made (1 + retries used)")
    width: int = Field(default=0, description="screenshot width the actions refer to")
    height: int = Field(default=0, description="screenshot height the actions refer to")
    error: str | None = Field(
        default=None, description="the infrastructure error if every attempt failed; the episode is not scored",
    )
    agent_error: str | None = Field(
        default=None, description="the exception the agent raised, which ended the episode as a failure",
    )
    stop_reason: str | None = Field(default=None, description="why a sink ended the episode early")
    final_screenshot: str | None = Field(default=None, description="last screenshot, relative to out")
    trajectory: list[StepRecord] = Field(default_factory=list, description="the steps")

    @property
    def key(self) -> tuple[str, int | None, int]:
        return (self.task, self.seed, self.index)


#: Makes the extra sinks of one episode (its spec in hand).
SinkFactory = Callable[["EpisodeSpec"], Sequence[RolloutSink]]
#: on_episode(record); may be sync or async.
EpisodeCallback = Callable[[EpisodeRecord], Any]


def episode_specs(task_ids: Iterable[str], episodes: int, seed: int) -> list[EpisodeSpec]:
    """``episodes`` episodes per task, episode i seeded ``seed + i``."""
    return [EpisodeSpec(task_id=t, seed=seed + i, index=i) for t in task_ids for i in range(episodes)]


def read_results(path: Path) -> list[EpisodeRecord]:
    """Records in a results.jsonl; a torn last line (killed mid-write) is skipped."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                records.append(EpisodeRecord.model_validate_json(line))
            except ValueError:
                continue
    return records


async def _maybe_await(value: Any) -> None:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        await value


class RecordSink(RolloutSink):
    """Builds the results.jsonl record of one episode and saves its screenshots (JPEGs,
    off the event loop) for the report."""

    def __init__(self, spec: EpisodeSpec, attempt: int, out_dir: Path | None,
                 config: RunnerConfig) -> None:
        self.spec, self.config, self.out_dir = spec, config, out_dir
        self.record = EpisodeRecord(task=spec.task_id, seed=spec.seed, index=spec.index,
                                    episode=spec.name, attempts=attempt, reward_mode=config.reward)
        self.episode_dir = self._episode_dir()

    async def on_start(self, episode: Episode) -> None:
        first = episode.first
        self.record.instruction, self.record.width, self.record.height = (
            first.instruction, first.width, first.height)

    async def on_step(self, episode: Episode, transition: Transition) -> str | None:
        info, after = transition.info, transition.after
        shot = await self._save(f"step_{transition.before.step:03d}.jpg", transition.before)
        self.record.trajectory.append(StepRecord(
            step=after.step, action=info.action, action_text=info.action_text,
            error=after.last_action_error, reward=transition.reward, raw_reward=info.raw_reward,
            verdict=info.verdict.model_dump() if info.verdict else None, screenshot=shot,
            agent=transition.agent_step.training_fields() or None,
        ))
        return None

    async def on_end(self, episode: Episode) -> None:
        record = self.record
        record.agent_error, record.stop_reason = episode.agent_error, episode.stop_reason
        record.steps = episode.last.step
        record.success, record.reward = episode.success, round(episode.total_reward, 6)
        record.terminated, record.truncated = episode.terminated, episode.truncated
        if episode.transitions:
            record.raw_reward = episode.transitions[-1].info.raw_reward
        record.progress, record.start_distance = episode.progress, episode.start_distance
        record.wall_seconds = round(episode.wall_seconds, 4)
        record.final_screenshot = await self._save("final.jpg", episode.last)

    def _episode_dir(self) -> Path | None:
        if self.out_dir is None or not self.config.save_screenshots:
            return None
        path = self.out_dir / "episodes" / self.spec.name
        if path.exists():  # a previous attempt's frames would mix with this one's
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    async def _save(self, name: str, obs: Observation) -> str | None:
        if self.episode_dir is None or self.out_dir is None:
            return None
        path = self.episode_dir / name
        await asyncio.to_thread(_write_jpeg, obs, path, self.config.screenshot_max_side)
        return str(path.relative_to(self.out_dir))


class EpisodeRunner:
    """Runs episode specs with one shared agent over sandboxes from one provider."""

    def __init__(
        self,
        agent: Agent,
        config: RunnerConfig | None = None,
        *,
        out_dir: str | Path | None = None,
        provider: SandboxProvider | None = None,
        resources: TaskResources | None = None,
        store: TrajectoryStore | None = None,
        sinks: SinkFactory | None = None,
        on_episode: EpisodeCallback | None = None,
    ) -> None:
        self.agent = agent
        self.config = config or RunnerConfig()
        self.out_dir = Path(out_dir) if out_dir is not None else None
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
        todo = self._pending(specs)
        if not todo:
            return []
        owns_provider, owns_resources = self.provider is None, self.resources is None
        if self.provider is None:
            from sandboxes.providers import LocalProvider

            self.provider = LocalProvider()
        if self.resources is None:
            self.resources = TaskResources()
        queue: asyncio.Queue[EpisodeSpec] = asyncio.Queue()
        for spec in todo:
            queue.put_nowait(spec)
        records: list[EpisodeRecord] = []
        self._counts = {"ok": 0, "failed": 0}
        try:
            await self.provider.start()
            with self._progress(len(todo)) as progress:
                bar = progress.add_task("episodes", total=len(todo), ok=0, failed=0)
                workers = [
                    self._worker(queue, records, progress, bar)
                    for _ in range(min(self.config.concurrency, len(todo)))
                ]
                await asyncio.gather(*workers)
        finally:
            if self._results_file is not None:
                self._results_file.close()
                self._results_file = None
            if owns_resources:
                await self.resources.close()
                self.resources = None
            if owns_provider:
                await self.provider.close()
                self.provider = None
        return records

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
            TextColumn("ok {task.fields[ok]} · failed {task.fields[failed]}"),
            TimeElapsedColumn(),
            disable=not self.config.progress,
            transient=False,
        )

    async def _worker(self, queue: asyncio.Queue[EpisodeSpec], records: list[EpisodeRecord],
                      progress: Progress, bar: Any) -> None:
        sandboxes: dict[SandboxRequest, Sandbox] = {}
        try:
            while not queue.empty():
                spec = queue.get_nowait()
                record = await self._run_with_retries(spec, sandboxes)
                records.append(record)
                self._write(record)
                if self.on_episode is not None:
                    await _maybe_await(self.on_episode(record))
                self._counts["ok"] += int(record.success)
                self._counts["failed"] += int(record.error is not None)
                progress.update(bar, advance=1, **self._counts)
        finally:
            for sandbox in sandboxes.values():
                await sandbox.close()

    async def _run_with_retries(self, spec: EpisodeSpec,
                                sandboxes: dict[SandboxRequest, Sandbox]) -> EpisodeRecord:
        """One episode; infrastructure errors (setup included) are retried, then recorded."""
        error, attempt, failures, crashes = "", 0, 0, 0
        while failures <= self.config.retries:
            attempt += 1
            request: SandboxRequest | None = None
            try:
                task = make_task(spec.task_id)
                request = task.sandbox_request
                if request not in sandboxes:
                    assert self.provider is not None
                    sandboxes[request] = await self.provider.new_sandbox(request)
                return await self._run_once(spec, task, sandboxes[request], attempt)
            except InfrastructureError as exc:
                error = describe_error(exc)
                shared_crash = isinstance(exc, SandboxCrashed) and exc.shared
                if shared_crash and crashes < self.config.crash_retries:
                    crashes += 1  # another episode's crash may have taken this one down
                else:
                    failures += 1
            except Exception as exc:  # a harness bug (a task, a sink): retrying won't help
                return self._failed(spec, attempt, describe_error(exc))
            # A fresh sandbox for the retry: the old one may hold a dead context.
            if request is not None and request in sandboxes:
                await sandboxes.pop(request).close()
        return self._failed(spec, attempt, error)

    def _failed(self, spec: EpisodeSpec, attempts: int, error: str) -> EpisodeRecord:
        return EpisodeRecord(task=spec.task_id, seed=spec.seed, index=spec.index,
                             episode=spec.name, attempts=attempts, error=error,
                             reward_mode=self.config.reward)

    # ---- one episode -----------------------------------------------------------------

    async def _run_once(self, spec: EpisodeSpec, task: Any, sandbox: Sandbox,
                        attempt: int) -> EpisodeRecord:
        cfg = self.config
        env = AsyncEnv(task, sandbox, resources=self.resources, codec=cfg.codec or "json",
                       max_steps=cfg.max_steps, reward=cfg.reward,
                       step_timeout_s=cfg.step_timeout_s, reset_timeout_s=cfg.step_timeout_s)
        record_sink = RecordSink(spec, attempt, self.out_dir, cfg)
        sinks: list[RolloutSink] = [record_sink]
        if self.store is not None:
            from harness.store.sink import StoreSink, env_key

            sinks.append(StoreSink(self.store, env=env_key(spec.task_id, spec.seed),
                                   agent=self.agent.name))
        if self.sinks is not None:
            sinks.extend(self.sinks(spec))
        try:
            await rollout(env, self.agent, sinks, seed=spec.seed, index=spec.index,
                          timeout_s=cfg.episode_timeout_s)
        finally:
            await env.close()
        return record_sink.record

    def _write(self, record: EpisodeRecord) -> None:
        if self.out_dir is None:
            return
        if self._results_file is None:
            self._results_file = open(self.out_dir / RESULTS_FILE, "a", encoding="utf-8")
        self._results_file.write(json.dumps(record.model_dump(mode="json")) + "\n")
        self._results_file.flush()


def _write_jpeg(obs: Observation, path: Path, max_side: int | None) -> None:
    image = obs.image().convert("RGB")
    if max_side is not None:
        image.thumbnail((max_side, max_side))
    image.save(path, format="JPEG", quality=80)
