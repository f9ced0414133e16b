"""Data-parallel GRPO: this process's place among the training processes (accelerate).

Under ``accelerate launch --num_processes N`` (or ``torchrun``) every rank runs the same
loop on one copy of the policy:

- the curriculum samples the same tasks on every rank from the same seeded stream; rank
  ``r`` rolls out the groups at slots ``r, r + N, ...`` (:meth:`Ranks.slots`), so a group
  never spans ranks and each rank computes its own groups' advantages;
- the policy's training forward runs through accelerate's DDP wrapper
  (:attr:`Ranks.train_model`), so each backward all-reduces the gradients; every rank takes
  the same number of backward passes per optimizer step (``trainers.grpo.optimize``);
- or, with ``distributed.strategy: fsdp``, the policy (and the frozen reference) is sharded
  in place over the ranks (``trainers.grpo.fsdp``): rollouts run inside
  :meth:`Ranks.full_params`, clipping and checkpoints go through FSDP's full-tensor paths;
- outcomes, metrics and dead-signal counts are gathered (:meth:`Ranks.gather`), so every
  rank takes the same decisions; only the main process writes metrics, the store,
  checkpoints, the report and the final model.

One process (``WORLD_SIZE`` unset or 1) builds no accelerator: the loop is exactly the
single-process one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from trainers.errors import ConfigError
from trainers.grpo.batch import BatchStats
from trainers.grpo.config import GRPOConfig
from trainers.grpo.fsdp import clip_grad_norm, full_params, full_state, load_full_state, shard

if TYPE_CHECKING:
    import torch

T = TypeVar("T")


class Ranks:
    """One process of a data-parallel run, or the only process (``accelerator`` None)."""

    def __init__(self, accelerator: Any | None = None, strategy: str = "ddp") -> None:
        self.accelerator = accelerator
        self.rank = accelerator.process_index if accelerator is not None else 0
        self.world = accelerator.num_processes if accelerator is not None else 1
        self.train_model: Any | None = None  # the DDP-wrapped (or sharded) policy model, set by wrap
        self.sharded = strategy == "fsdp" and self.world > 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def device(self) -> str | None:
        """The device this rank's policy must live on (None: the config's own)."""
        return str(self.accelerator.device) if self.accelerator is not None else None

    def slots(self, count: int) -> list[int]:
        """This rank's group slots of an update that sampled ``count`` tasks. Slot ``k`` rolls
        out task ``k % count``; with fewer tasks than ranks, tasks repeat (as separate groups
        with their own episode seeds) so that every rank has a group to train on."""
        if self.world == 1:
            return list(range(count))
        return list(range(self.rank, max(count, self.world), self.world))

    def wrap(self, model: torch.nn.Module) -> None:
        """Wrap the policy's model for gradient all-reduce (DDP through accelerate; the wrapper
        shares the parameters, so generation keeps using the bare model), or shard it in
        place (FSDP; build the optimizer after this)."""
        if self.sharded:
            shard(model, self._device_type, self.world)
            self.train_model = model
        elif self.accelerator is not None:
            self.train_model = self.accelerator.prepare_model(model)

    def wrap_frozen(self, model: torch.nn.Module) -> None:
        """The frozen reference model: sharded like the policy under FSDP, else as it is."""
        if self.sharded:
            shard(model, self._device_type, self.world)

    @property
    def _device_type(self) -> str:
        return self.accelerator.device.type if self.accelerator is not None else "cpu"

    @contextlib.contextmanager
    def full_params(self, model: torch.nn.Module) -> Iterator[None]:
        """Rollouts and evaluation: under FSDP the sharded ``model`` gathered whole for the
        block (each rank may then call it any number of times); else nothing to do."""
        if not self.sharded:
            yield
            return
        with full_params(model):
            yield

    def clip_grad_norm(self, parameters: list[Any], max_norm: float) -> float:
        """Clip the gradients to ``max_norm`` (under FSDP: over every shard); the total norm."""
        if self.sharded:
            return clip_grad_norm(parameters, max_norm)
        import torch

        return float(torch.nn.utils.clip_grad_norm_(parameters, max_norm))

    def state(self, model: torch.nn.Module,
              optimizer: torch.optim.Optimizer | None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The model's and the optimizer's full state dicts on the main process (empty dicts
        elsewhere). Under FSDP every rank must call it (the shards are gathered); the
        optimizer's state is then keyed by parameter name, not by index."""
        if self.sharded:
            return full_state(model, optimizer)
        if not self.main:
            return {}, {}
        return model.state_dict(), optimizer.state_dict() if optimizer is not None else {}

    def load_state(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, weights: dict[str, Any],
                   optim: dict[str, Any]) -> None:
        """Load full state dicts (as :meth:`state` returns them) on this rank."""
        if self.sharded:
            load_full_state(model, optimizer, weights, optim)
            return
        model.load_state_dict(weights)
        optimizer.load_state_dict(optim)

    def backward(self, loss: torch.Tensor) -> None:
        if self.accelerator is not None:
            self.accelerator.backward(loss)
        else:
            loss.backward()

    def gather(self, value: T) -> list[T]:
        """Every rank's ``value``, in rank order, on every rank (picklable objects)."""
        if self.world == 1:
            return [value]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, value)
        return out

    def gather_to_main(self, value: T) -> list[T]:
        """Every rank's ``value`` on the main process (an empty list elsewhere)."""
        if self.world == 1:
            return [value]
        import torch.distributed as dist

        out: list[Any] | None = [None] * self.world if self.main else None
        dist.gather_object(value, out, dst=0)
        return out or []

    def total(self, *values: float) -> list[float]:
        """Element-wise sums of ``values`` over the ranks (one small all-reduce)."""
        if self.world == 1:
            return list(values)
        import torch
        import torch.distributed as dist

        device = self.accelerator.device if self.accelerator is not None else "cpu"
        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(tensor)
        return tensor.tolist()

    def close(self) -> None:
        """End the process group once every rank is done (the main process writes last)."""
        if self.world == 1:
            return
        import torch.distributed as dist

        dist.barrier()
        dist.destroy_process_group()

    def first_error(self, error: str | None) -> str | None:
        """The first rank's error message, if any rank had one: every rank can then raise it."""
        return next((e for e in self.gather(error) if e is not None), None)


def unsupported(config: GRPOConfig) -> str | None:
    """What a multi-process run of ``config`` cannot do, as an error message (None: nothing)."""
    if config.curriculum.replay:
        return ("curriculum.replay: expected false with more than one process, got true; replays "
                "read the store, which only the main process holds")
    if config.rollout.backend == "openai":
        return ("rollout.backend: expected hf with more than one process, got openai; every rank "
                "would push its weights to the one server")
    if config.rollout.backend != "hf":
        return (f"rollout.backend: expected hf with more than one process, got {config.rollout.backend}; "
                "every rank would start its own engine beside its training process (untested); "
                "run vllm with one process")
    if config.distributed.strategy == "fsdp" and config.model.pointer_head:
        return ("model.pointer_head: expected false with distributed.strategy: fsdp, got true; the "
                "pointer head sits outside the sharded model, so its optimizer state cannot be "
                "gathered by parameter name (GRPO does not train it)")
    return None


def make_ranks(strategy: str = "ddp") -> Ranks:
    """The run's ranks: an accelerator when launched with more than one process, sharding the
    policy with ``strategy: fsdp``."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return Ranks()
    try:
        import torch
        from accelerate import Accelerator  # type: ignore[import-untyped]
        from accelerate.utils import DistributedDataParallelKwargs  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - accelerate is in the train extra
        raise ConfigError("expected accelerate for a multi-process run (WORLD_SIZE > 1), got none; "
                          "install the train extra") from exc
    # Prompts without an image (observation: elements) leave the vision tower without gradients.
    kwargs = DistributedDataParallelKwargs(find_unused_parameters=True)
    return Ranks(Accelerator(cpu=not torch.cuda.is_available(), kwargs_handlers=[kwargs]), strategy)


@dataclass(frozen=True)
class Outcome:
    """What one rank's rollouts of an update tell the loop's decisions and metrics."""

    stats: BatchStats
    rewards: list[float]  # every step reward (and replay return): the dead-signal check
    groups: list[tuple[str, list[bool]]]  # each group's task and its episodes' successes
    episodes: list[tuple[float, bool, float]]  # each group episode's return, success, progress
    branches: int
    env_steps: int
    tasks: list[str]

    @classmethod
    def merge(cls, parts: Sequence[Outcome]) -> Outcome:
        """The ranks' outcomes as one (rank order; one part is returned as it is)."""
        if len(parts) == 1:
            return parts[0]
        total = {f: sum(getattr(p.stats, f) for p in parts)
                 for f in ("steps", "episodes", "flat_groups", "groups", "truncated", "silent_groups",
                           "no_op_steps", "dropped_groups", "resampled_groups")}
        stats = BatchStats(**total, returns=[x for p in parts for x in p.stats.returns])
        return cls(stats, [x for p in parts for x in p.rewards], [g for p in parts for g in p.groups],
                   [e for p in parts for e in p.episodes], sum(p.branches for p in parts),
                   sum(p.env_steps for p in parts), [t for p in parts for t in p.tasks])


def merge_figures(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    """The ranks' loss figures: means weighted by each rank's minibatches, minibatches summed."""
    if len(parts) == 1:
        return parts[0]
    count = sum(p["minibatches"] for p in parts)
    names = [k for k in dict.fromkeys(k for p in parts for k in p) if k != "minibatches"]
    means = {k: sum(p.get(k, 0.0) * p["minibatches"] for p in parts) / max(count, 1) for k in names}
    return {**means, "minibatches": count}
