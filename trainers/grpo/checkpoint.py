"""Checkpoints with exact resume: ``OUT/checkpoints/update-N/``.

    model.pt        the policy's full state dict (every weight, adapters included)
    optimizer.pt    AdamW's full state (keyed by parameter index; by parameter name when
                    written by an FSDP run); scheduler.pt: the learning-rate schedule
    state.pt        the loop: updates done, env steps, dead-signal streaks, time totals,
                    Python's task-sampling stream, torch's global and minibatch-order
                    streams, the curriculum's pool and variants

A checkpoint is written to a temporary folder and renamed into place, so a run killed while
saving leaves the previous checkpoint whole. Resuming restores all of it, so on the CPU the
resumed run continues bit-identically (rollouts sample from per-episode seeds; see
``trainers.agents.hf``).
"""

from __future__ import annotations

import random
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainers.errors import ConfigError

if TYPE_CHECKING:
    import torch
    from torch.optim.lr_scheduler import LRScheduler

    from trainers.grpo.curriculum import Curriculum

CHECKPOINTS = "checkpoints"


@dataclass
class LoopState:
    """Everything the loop carries from one update to the next besides the model."""

    update: int = 0  # updates done
    env_steps: int = 0
    truncated_streak: int = 0
    flat_streak: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: {"rollout": 0.0, "train": 0.0, "eval": 0.0})

    def stop_reason(self, updates: int, env_steps: int | None) -> str | None:
        """Why the run stops here: ``env_steps`` (its env steps reached that budget),
        ``updates`` (that many updates done) or None (another update runs). A resumed run
        counts the env steps its checkpoint holds."""
        if env_steps is not None and self.env_steps >= env_steps:
            return "env_steps"
        return "updates" if self.update >= updates else None


def stop_text(stop: dict[str, Any]) -> str:
    """A ``stop`` metrics line in words (the console's last line and the report's)."""
    why = (f"env-step budget of {stop['env_steps_budget']} reached" if stop["reason"] == "env_steps"
           else f"{stop['updates_cap']} updates done")
    return f"stopped after update {stop['updates']}: {why}, {stop['env_steps']} env steps used"


def checkpoints(out: Path) -> list[Path]:
    """The run's checkpoints, oldest first."""
    folder = Path(out) / CHECKPOINTS
    found = [p for p in folder.glob("update-*") if p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def save(out: Path, loop: LoopState, *, model_state: dict[str, Any], optimizer_state: dict[str, Any],
         scheduler: LRScheduler, sampler: random.Random, shuffle: torch.Generator, curriculum: Curriculum,
         strategy: str = "ddp",
         keep: int = 2) -> Path:
    """Write the checkpoint of ``loop.update`` (keeping the newest ``keep``). ``model_state``
    and ``optimizer_state``: the full state dicts (``Ranks.state``); ``strategy``: the layout
    of ``optimizer_state`` (``fsdp``: keyed by parameter name)."""
    import torch

    final = Path(out) / CHECKPOINTS / f"update-{loop.update}"
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save(model_state, tmp / "model.pt")
    torch.save(optimizer_state, tmp / "optimizer.pt")
    torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
    torch.save({"loop": asdict(loop), "sampler": sampler.getstate(), "torch": torch.get_rng_state(),
                "shuffle": shuffle.get_state(), "curriculum": curriculum.state_dict(),
                "optimizer_layout": _layout(strategy)}, tmp / "state.pt")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in checkpoints(out)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _layout(strategy: str) -> str:
    return "by-name" if strategy == "fsdp" else "by-index"


def load(path: Path, *, scheduler: LRScheduler, sampler: random.Random, shuffle: torch.Generator,
         curriculum: Curriculum,
         strategy: str = "ddp") -> tuple[LoopState, dict[str, Any], dict[str, Any]]:
    """Restore a checkpoint into the given objects; returns the loop state and the model's and
    the optimizer's full state dicts (for ``Ranks.load_state``)."""
    import torch

    state = torch.load(path / "state.pt", weights_only=False)
    found = state.get("optimizer_layout", "by-index")
    if found != _layout(strategy):
        written = "fsdp" if found == "by-name" else "ddp or one process"
        raise ConfigError(f"distributed.strategy: expected the strategy that wrote {path} ({written}), got "
                          f"{strategy}; resume with the same strategy")
    model_state = torch.load(path / "model.pt", weights_only=True)
    optimizer_state = torch.load(path / "optimizer.pt", weights_only=True)
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", weights_only=True))
    sampler.setstate(state["sampler"])
    torch.set_rng_state(state["torch"])
    shuffle.set_state(state["shuffle"])
    curriculum.load_state_dict(state["curriculum"])
    return LoopState(**state["loop"]), model_state, optimizer_state
