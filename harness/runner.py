"""The async episode runner: many episodes over a pool of sandboxes on one Chromium.

``EpisodeRunner.run(specs)`` runs each ``EpisodeSpec`` (task, seed, index) with up to
``concurrency`` at once. Task ids are checked before any browser starts. Infrastructure
errors (``SandboxError``, ``TaskError``, ``EpisodeTimeout``) are retried up to ``retries``
times with a fresh sandbox; if every attempt fails the record carries ``error`` and is
not scored. Anything the agent does wrong is part of the episode and never retried: an
exception the agent raises ends the episode as a failure, recorded in ``agent_error``
with the trajectory so far. Each finished episode is appended to ``results.jsonl`` and
flushed at once, so a killed run keeps what it finished; ``resume=True`` skips the
(task, seed, index) keys already there without an ``error``.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import re
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.actions import Action
from harness.agents.base import Agent, AgentContext
from harness.env import AsyncBrowserEnv, sandbox_overrides_for
from harness.errors import EpisodeTimeout, TaskError
from harness.observation import Observation, StepInfo
from harness.tasks.registry import check_task_id, make_task
from sandboxes.errors import SandboxError

INFRA_ERRORS = (SandboxError, TaskError, EpisodeTimeout)
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
    codec: str | None = Field(
        default=None,
        description="codec that decodes the text of agents without a codec of their own "
                    "(a ModelAgent's own codec always decodes its text); None: json",
    )
    save_screenshots: bool = Field(default=True, description="save a JPEG per step under out/episodes/")
    screenshot_max_side: int = Field(default=480, ge=32, description="saved screenshots are downscaled to this")
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
    reward: float = Field(description="the env reward of this step")
    raw_reward: float = Field(description="the task's raw reward of this step")
    verdict: dict | None = Field(default=None, description="the FSM step verdict, if any")
    screenshot: str | None = Field(default=None, description="the screenshot before the step, relative to out")


class EpisodeRecord(BaseModel):
    """One line of results.jsonl."""

    task: str = Field(description="the task id")
    seed: int | None = Field(description="the reset seed")
    index: int = Field(description="the episode index within its task")
    episode: str = Field(description="the episode name (its folder under episodes/)")
    instruction: str = Field(default="", description="the task instruction")
    success: bool = Field(default=False, description="the task's goal was reached")
    reward: float = Field(default=0.0, description="the final env reward")
    raw_reward: float = Field(default=0.0, description="the final raw task reward")
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
    final_screenshot: str | None = Field(default=None, description="last screenshot, relative to out")
    trajectory: list[StepRecord] = Field(default_factory=list, description="the steps")

    @property
    def key(self) -> tuple[str, int | None, int]:
        return (self.task, self.seed, self.index)


@dataclass
class EpisodeContext:
    """What callbacks learn about the episode in flight."""

    spec: EpisodeSpec
    attempt: int
    env: AsyncBrowserEnv
    episode_dir: Path | None


#: on_step(ctx, obs_before, action, obs_after, reward, info); may be sync or async.
StepCallback = Callable[[EpisodeContext, Observation, "Action | str", Observation, float, StepInfo], Any]
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
    if inspect.isawaitable(value):
        await value


class EpisodeRunner:
    """Runs episode specs with one agent per worker over sandboxes of one BrowserHost."""

    def __init__(
        self,
        agent_factory: Callable[[], Agent],
        config: RunnerConfig | None = None,
        *,
        out_dir: str | Path | None = None,
        host: Any = None,
        browser_config: Any = None,
        on_step: StepCallback | None = None,
        on_episode: EpisodeCallback | None = None,
    ) -> None:
        self.agent_factory = agent_factory
        self.config = config or RunnerConfig()
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self._host = host
        self._owns_host = host is None
        self._browser_config = browser_config
        self.on_step = on_step
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
        if self._host is None:
            from sandboxes.browser_host import BrowserHost

            self._host = BrowserHost(self._browser_config)
        queue: asyncio.Queue[EpisodeSpec] = asyncio.Queue()
        for spec in todo:
            queue.put_nowait(spec)
        records: list[EpisodeRecord] = []
        self._counts = {"ok": 0, "failed": 0}
        try:
            await self._host.start()
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
            from harness.tasks.fsm import close_shared_server

            await close_shared_server()  # the FSM site server its episodes shared, if any
            if self._owns_host:
                await self._host.close()
                self._host = None
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
        agent = self.agent_factory()
        sandboxes: dict[tuple, Any] = {}
        try:
            while not queue.empty():
                spec = queue.get_nowait()
                record = await self._run_with_retries(spec, agent, sandboxes)
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

    async def _run_with_retries(self, spec: EpisodeSpec, agent: Agent, sandboxes: dict) -> EpisodeRecord:
        """One episode; infrastructure errors (setup included) are retried, then recorded."""
        error = ""
        for attempt in range(1, self.config.retries + 2):
            key: tuple | None = None
            try:
                task = make_task(spec.task_id)
                overrides = sandbox_overrides_for(task)
                key = tuple(sorted(overrides.items()))
                if key not in sandboxes:
                    sandboxes[key] = await self._host.new_sandbox(**overrides)
                return await asyncio.wait_for(
                    self._run_once(spec, task, agent, sandboxes[key], attempt),
                    self.config.episode_timeout_s,
                )
            except INFRA_ERRORS as exc:  # SandboxTimeout is a TimeoutError too: caught here first
                error = _describe(exc)
            except TimeoutError:
                error = f"EpisodeTimeout: the episode ran past episode_timeout_s={self.config.episode_timeout_s}"
            except Exception as exc:  # a harness bug (a task, a callback): retrying won't help
                return self._failed(spec, attempt, _describe(exc))
            # A fresh sandbox for the retry: the old one may hold a dead context.
            if key in sandboxes:
                await sandboxes.pop(key).close()
        return self._failed(spec, self.config.retries + 1, error)

    def _failed(self, spec: EpisodeSpec, attempts: int, error: str) -> EpisodeRecord:
        return EpisodeRecord(task=spec.task_id, seed=spec.seed, index=spec.index,
                             episode=spec.name, attempts=attempts, error=error)

    # ---- one episode -----------------------------------------------------------------

    async def _run_once(self, spec: EpisodeSpec, task: Any, agent: Agent, sandbox: Any,
                        attempt: int) -> EpisodeRecord:
        cfg = self.config
        env = AsyncBrowserEnv(task, sandbox, codec=codec_for(agent, cfg.codec), max_steps=cfg.max_steps,
                              step_timeout_s=cfg.step_timeout_s, reset_timeout_s=cfg.step_timeout_s)
        episode_dir = self._episode_dir(spec)
        ctx = EpisodeContext(spec=spec, attempt=attempt, env=env, episode_dir=episode_dir)
        start = time.perf_counter()
        try:
            obs, _ = await env.reset(seed=spec.seed)
            record = EpisodeRecord(task=spec.task_id, seed=spec.seed, index=spec.index,
                                   episode=spec.name, instruction=obs.instruction,
                                   attempts=attempt, width=obs.width, height=obs.height)
            agent_ctx = AgentContext(task_id=spec.task_id, seed=spec.seed, step=0, env=env)
            ended = False
            try:
                agent.reset(spec.seed)
            except Exception as exc:  # the agent's failure: the episode ends as a failure
                record.agent_error, ended = _describe(exc), True
            while not ended:
                agent_ctx.step = obs.step
                try:
                    action = await agent.act(obs, agent_ctx)
                except INFRA_ERRORS:
                    raise  # e.g. an oracle's env.oracle_action() timed out: infrastructure
                except Exception as exc:  # the agent's failure: the episode ends as a failure
                    record.agent_error = _describe(exc)
                    break
                shot = await self._save(episode_dir, f"step_{obs.step:03d}.jpg", obs)
                after, reward, record.terminated, record.truncated, info = await env.step(action)
                agent_ctx.history.append((obs, action))
                record.trajectory.append(StepRecord(
                    step=after.step, action=info.action, action_text=info.action_text,
                    error=after.last_action_error, reward=reward, raw_reward=info.raw_reward,
                    verdict=info.verdict.model_dump() if info.verdict else None, screenshot=shot,
                ))
                record.reward, record.raw_reward, record.success = reward, info.raw_reward, info.success
                if self.on_step is not None:
                    await _maybe_await(self.on_step(ctx, obs, action, after, reward, info))
                obs, ended = after, record.terminated or record.truncated
            record.steps = obs.step
            record.final_screenshot = await self._save(episode_dir, "final.jpg", obs)
        finally:
            await env.close()
        record.wall_seconds = round(time.perf_counter() - start, 4)
        return record

    def _episode_dir(self, spec: EpisodeSpec) -> Path | None:
        if self.out_dir is None or not self.config.save_screenshots:
            return None
        path = self.out_dir / "episodes" / spec.name
        if path.exists():  # a previous attempt's frames would mix with this one's
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    async def _save(self, episode_dir: Path | None, name: str, obs: Observation) -> str | None:
        """Save a downscaled JPEG of ``obs``; decoding and encoding run off the event loop."""
        if episode_dir is None or self.out_dir is None:
            return None
        await asyncio.to_thread(_write_jpeg, obs, episode_dir / name, self.config.screenshot_max_side)
        return str((episode_dir / name).relative_to(self.out_dir))

    def _write(self, record: EpisodeRecord) -> None:
        if self.out_dir is None:
            return
        if self._results_file is None:
            self._results_file = open(self.out_dir / RESULTS_FILE, "a", encoding="utf-8")
        self._results_file.write(json.dumps(record.model_dump(mode="json")) + "\n")
        self._results_file.flush()


def codec_for(agent: Agent, configured: str | None) -> Any:
    """The codec that decodes ``agent``'s text: its own (a ModelAgent's) if it has one,
    else ``configured``, else json."""
    return getattr(agent, "codec", None) or configured or "json"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _write_jpeg(obs: Observation, path: Path, max_side: int) -> None:
    image = obs.image().convert("RGB")
    image.thumbnail((max_side, max_side))
    image.save(path, format="JPEG", quality=75)
