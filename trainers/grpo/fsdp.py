"""FSDP for GRPO's data parallel (``distributed.strategy: fsdp``): torch's ``fully_shard`` (FSDP2).

Each block the model names as unsplittable (``_no_split_modules``: the decoder layers and
the vision blocks) is its own FSDP unit and the model is the root unit, so parameters,
gradients and AdamW's state are sharded over the ranks (a DTensor shard each) and a
unit's parameters are all-gathered only around its forward and backward.

Every all-gather is a collective: every rank must run the same sharded forwards in the same
order. The training passes do (``trainers.grpo.optimize`` agrees on one pass count), but
rollouts do not: each rank generates for its own episodes, a different number of model
calls. So rollouts and evaluation run inside :func:`full_params`: every unit is gathered
whole once, forwards run without collectives, and the shards come back afterwards. Inside,
forwards must still run one at a time (FSDP's hooks keep per-forward state; two threads
in forward at once can reshard a unit and so start a collective): the ``hf`` agents run
theirs under their ``Generator``'s lock.

The frozen reference model is sharded the same way (its log-probabilities come from the
same agreed number of passes). Checkpoints hold the full state dicts (model and AdamW,
keyed by parameter name), gathered to the main process's CPU; every rank loads the full
dicts back into its shards. Gradient clipping is ``clip_grad_norm_`` over the DTensor
gradients, whose norm is the norm over every shard.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from trainers.models.policy import AdaptedModel

if TYPE_CHECKING:
    import torch


def shard(model: Any, device_type: str, world: int) -> None:
    """Shard ``model`` in place over ``world`` ranks (a peft model: its base model's blocks).
    The optimizer must be built after this: the parameters become DTensors."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device_type, (world,))
    blocks = set(_no_split(model))
    for module in model.modules():
        if type(module).__name__ in blocks:
            fully_shard(module, mesh=mesh)
    fully_shard(model, mesh=mesh)
    # FSDP picks its root at the first forward it sees; generate runs the vision blocks before
    # the model's own forward, so the root is settled here (torch has no public call for it).
    model._get_fsdp_state()._lazy_init()


def _no_split(model: Any) -> list[str]:
    for candidate in (model, model.get_base_model() if isinstance(model, AdaptedModel) else None):
        names = getattr(candidate, "_no_split_modules", None)
        if names:
            return list(names)
    return []


def _units(model: Any) -> list[Any]:
    from torch.distributed.fsdp import FSDPModule

    return [m for m in model.modules() if isinstance(m, FSDPModule)]


@contextlib.contextmanager
def full_params(model: Any) -> Iterator[None]:
    """Every FSDP unit of ``model`` gathered whole, and kept whole across forwards (no
    collective runs inside), so ranks may call the model different numbers of times."""
    units = _units(model)
    for unit in units:
        unit.unshard()
    model.set_reshard_after_forward(False)
    try:
        yield
    finally:
        model.set_reshard_after_forward(True)
        model.set_reshard_after_forward(False, recurse=False)  # FSDP's own default for the root
        for unit in units:
            unit.reshard()


def clip_grad_norm(parameters: list[Any], max_norm: float) -> float:
    """Clip the sharded gradients to ``max_norm`` over every shard; returns the total norm."""
    import torch

    norm = torch.nn.utils.clip_grad_norm_(parameters, max_norm)
    return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)


def full_state(model: torch.nn.Module,
               optimizer: torch.optim.Optimizer | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The full model and optimizer state dicts on the main process's CPU (empty elsewhere);
    every rank must call it."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    weights = get_model_state_dict(model, options=options)
    optim = get_optimizer_state_dict(model, optimizer, options=options) if optimizer is not None else {}
    return weights, optim


def load_full_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer, weights: dict[str, Any],
                    optim: dict[str, Any]) -> None:
    """Load full state dicts (as :func:`full_state` gathers them) into this rank's shards."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True)
    set_model_state_dict(model, weights, options=options)
    set_optimizer_state_dict(model, optimizer, optim, options=options)
