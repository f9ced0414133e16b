"""``OUT/metrics.jsonl``: one JSON object per line, appended as training goes.

    {"event": "train", "step": 10, "loss": 1.92, "learning_rate": 0.001, ..., "wall_s": 4.1}
    {"event": "eval", "phase": "before", "success_rate": 0.0, "progress": 0.05, ...}
    {"event": "run", "kind": "sft", "rows": 120, "train_seconds": 61.2, ...}

``MetricsCallback`` writes TRL's logs there and checks every logged loss with
``check_signal``: a training signal that is dead stops the run with a
``TrainingSignalError`` instead of producing a model that learned nothing.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainers.errors import TrainingSignalError

if TYPE_CHECKING:
    from trainers.training.loggers import Loggers

METRICS_FILE = "metrics.jsonl"


class MetricsLog:
    """Appends events to ``metrics.jsonl`` (flushed per line, so a killed run keeps them) and
    hands each to the run's ``loggers`` (TensorBoard, W&B), but TRL's ``train`` lines, which
    TRL's own callbacks give them."""

    def __init__(self, path: Path, loggers: Loggers | None = None) -> None:
        self.path = Path(path)
        self.loggers = loggers

    def write(self, event: str, **fields: Any) -> dict[str, Any]:
        record = {"event": event, **fields}
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        if self.loggers is not None and event != "train":
            self.loggers.log(event, fields)
        return record

    def close(self) -> None:
        """Close the loggers (W&B finishes its run); metrics.jsonl needs nothing."""
        if self.loggers is not None:
            self.loggers.close()

    def read(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line]


def check_signal(logs: dict[str, Any], step: int, first: bool) -> None:
    """Refuse a dead signal: a loss that is not finite, or one exactly zero at the first log
    (nothing to learn: every label masked, or chosen and rejected replies alike). A loss that
    reaches exactly zero later is a model that fits its data, not a dead signal."""
    loss = logs.get("loss")
    if loss is None:
        return
    if not math.isfinite(loss):
        raise TrainingSignalError(f"expected a finite training loss, got {loss} at step {step}; "
                                  "lower train.learning_rate or train.max_grad_norm")
    if first and loss == 0.0:
        raise TrainingSignalError(f"expected a training loss above zero before learning, got "
                                  f"exactly 0.0 at step {step}; the rows teach nothing (check "
                                  "that targets differ from prompts and chosen from rejected)")


def train_record(logs: dict[str, Any], step: int, started: float) -> dict[str, Any]:
    """The metrics line of one TRL log: its numbers, the step and the wall time so far."""
    numbers = {k: v for k, v in logs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"step": step, **numbers, "wall_s": round(time.perf_counter() - started, 3)}


def make_callback(log: MetricsLog) -> Any:
    """A ``transformers.TrainerCallback`` that writes TRL's logs to ``log`` and checks them."""
    from transformers import TrainerCallback

    class MetricsCallback(TrainerCallback):
        def __init__(self) -> None:
            self.started = time.perf_counter()
            self.first = True

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started = time.perf_counter()
            self.first = state.global_step == 0

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None,
                   **kwargs: Any) -> None:
            logs = logs or {}
            if "loss" not in logs:
                return  # the end-of-training summary (train_runtime, ...): the run line has it
            check_signal(logs, state.global_step, self.first)
            self.first = False
            log.write("train", **train_record(logs, state.global_step, self.started))

    return MetricsCallback()
