"""Where a training run's metrics go besides ``metrics.jsonl``: TensorBoard, W&B, or neither.

    train: {report_to: [tensorboard]}           # the default: OUT/tensorboard/ event files
    train: {report_to: [tensorboard, wandb]}    # and a Weights & Biases run in OUT/wandb/
    report_to: [none]                           # `cua train grpo`: the field is top-level

`cua train sft|dpo` hands these writers to TRL's trainer as transformers' own callbacks
(``TensorBoardCallback``, ``WandbCallback``), so TRL's logs (``train/loss``,
``train/learning_rate``, ...) reach them as TRL writes them. Every other ``metrics.jsonl``
line (`cua train grpo`'s ``update`` lines, the ``eval`` and ``heldout`` lines of every
trainer) goes through the same writers, its numbers as ``EVENT/NAME`` scalars
(``update/reward``, ``eval/success_rate``). Event files land under ``OUT/tensorboard``, so
``tensorboard --logdir runs/`` shows every run kept under ``runs/``.

W&B takes its settings from its own variables: ``WANDB_MODE=offline`` keeps the run on disk
(``wandb sync`` uploads it later), ``WANDB_PROJECT`` names the project (default ``cua``).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from trainers.errors import MissingExtraError

ReportTarget = Literal["tensorboard", "wandb", "none"]


def _alone_none(targets: list[ReportTarget]) -> list[ReportTarget]:
    if "none" in targets and len(targets) > 1:
        raise ValueError(f"expected [none] alone or loggers without it, got {targets}")
    return list(dict.fromkeys(targets))


ReportTo = Annotated[list[ReportTarget], AfterValidator(_alone_none)]


def report_to_field() -> Any:
    """The ``report_to`` field both training configs share."""
    return Field(default_factory=lambda: ["tensorboard"], min_length=1, description=(
        "where metrics go besides metrics.jsonl: tensorboard (OUT/tensorboard), wandb (OUT/wandb; "
        "WANDB_MODE=offline keeps it local), or [none]"))


class Loggers:
    """The run's TensorBoard writer and W&B run, as ``report_to`` asks (see the module docstring)."""

    def __init__(self, report_to: list[ReportTarget], out: Path, *, config: dict[str, Any]) -> None:
        self.out = Path(out)
        self.writer: Any = None
        self.wandb: Any = None
        self._counts: Counter[str] = Counter()
        if "tensorboard" in report_to:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:
                raise MissingExtraError(
                    "report_to: expected the tensorboard package for tensorboard, got none installed; "
                    "pip install 'cua-harness[train]' (or tensorboard), or set report_to: [none]") from exc
            self.writer = SummaryWriter(log_dir=str(self.out / "tensorboard"))
        if "wandb" in report_to:
            try:
                import wandb
            except ImportError as exc:
                raise MissingExtraError("report_to: expected the wandb package for wandb, got none "
                                        "installed; pip install 'cua-harness[train]' (or wandb)") from exc
            self.wandb = wandb.init(project=os.environ.get("WANDB_PROJECT", "cua"), name=self.out.name,
                                    dir=str(self.out), config=config)

    def callbacks(self) -> list[Any]:
        """transformers' own callbacks over these writers, for TRL's trainers."""
        from transformers.integrations import TensorBoardCallback, WandbCallback

        callbacks: list[Any] = []
        if self.writer is not None:
            callbacks.append(TensorBoardCallback(tb_writer=self.writer))
        if self.wandb is not None:
            callbacks.append(WandbCallback())  # takes up the run opened here
        return callbacks

    def log(self, event: str, fields: dict[str, Any]) -> None:
        """A metrics line's numbers as ``event/name`` scalars, at its update or step (else
        the count of such lines so far)."""
        self._counts[event] += 1
        step = fields.get("update", fields.get("step", self._counts[event]))
        numbers = {f"{event}/{k}": float(v) for k, v in _flat(fields).items()
                   if k not in ("update", "step")}
        if not numbers or not isinstance(step, int):
            return
        if self.writer is not None:
            for name, value in numbers.items():
                self.writer.add_scalar(name, value, step)
            self.writer.flush()
        if self.wandb is not None:
            self.wandb.log(numbers)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.wandb is not None:
            self.wandb.finish()
            self.wandb = None


def _flat(fields: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """The numbers of a (nested) metrics line, named ``a/b``; booleans and text left out."""
    out: dict[str, float] = {}
    for key, value in fields.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}/"))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = value
    return out
