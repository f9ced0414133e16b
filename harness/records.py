"""What an evaluation episode leaves in results.jsonl, and the sink that writes it.

``EpisodeRecord`` is one line of ``results.jsonl``; ``RecordSink`` builds it from a
rollout (one per episode) and saves the episode's screenshots as JPEGs for the report.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness.observation import Observation
from harness.rollout import Episode, RolloutSink, RolloutStep


class EpisodeSpec(BaseModel):
    """One episode to run; (task_id, seed, index) is its key in results.jsonl."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str = Field(description="the task id, e.g. 'miniwob:click-button'")
    seed: int | None = Field(description="the seed for reset")
    index: int = Field(ge=0, description="the episode's index within its task")
    temperature: float | None = Field(
        default=None, ge=0.0, description="the sampling temperature the episode's agent decides "
        "at (sampled evaluation); None: the agent's own setting (greedy for model agents)")

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
    temperature: float | None = Field(
        default=None, description="the sampling temperature of a sampled episode; None: the "
        "agent's own setting (greedy for model agents)")
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


class RecordSink(RolloutSink):
    """Builds the results.jsonl record of one episode and saves its screenshots (JPEGs,
    off the event loop) for the report."""

    def __init__(self, spec: EpisodeSpec, attempt: int, out_dir: Path | None, *,
                 reward_mode: str = "outcome", save_screenshots: bool = True,
                 screenshot_max_side: int | None = None) -> None:
        self.spec, self.out_dir = spec, out_dir
        self.save_screenshots, self.screenshot_max_side = save_screenshots, screenshot_max_side
        self.record = EpisodeRecord(task=spec.task_id, seed=spec.seed, index=spec.index,
                                    temperature=spec.temperature, episode=spec.name,
                                    attempts=attempt, reward_mode=reward_mode)
        self.episode_dir = self._episode_dir()

    async def on_start(self, episode: Episode) -> None:
        first = episode.first
        self.record.instruction, self.record.width, self.record.height = (
            first.instruction, first.width, first.height)

    async def on_step(self, episode: Episode, transition: RolloutStep) -> str | None:
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
        if self.out_dir is None or not self.save_screenshots:
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
        await asyncio.to_thread(_write_jpeg, obs, path, self.screenshot_max_side)
        return str(path.relative_to(self.out_dir))


def _write_jpeg(obs: Observation, path: Path, max_side: int | None) -> None:
    image = obs.image().convert("RGB")
    if max_side is not None:
        image.thumbnail((max_side, max_side))
    image.save(path, format="JPEG", quality=80)
