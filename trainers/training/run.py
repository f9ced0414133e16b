"""The parts every training run shares: its directory, model, data, evaluations and report.

    OUT/
      config.yaml          the resolved config of the run
      data/sft.parquet     the store's export the run trains on (or dpo.parquet)
      checkpoints/         TRL's checkpoint-N folders (weights, optimizer, schedule, RNG): --resume
      model/               the final weights + cua_agent.yaml (the prompt it was trained with)
      eval/before|after/   cua eval's results.jsonl, summary.json, report.html
      metrics.jsonl        training logs and evaluation results, one JSON object per line
      tensorboard/         the same as TensorBoard event files (train.report_to; see loggers)
      report.html          loss curves and the before/after comparison

``trainers.training.sft`` and ``trainers.training.dpo`` are short loops over these parts.
"""

from __future__ import annotations

import dataclasses
import difflib
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from harness.cli_config import check_output_dir
from harness.prompts import Message
from trainers.errors import ConfigError, ModelDirError, TrainingDataError
from trainers.models.checkpoint import ModelInitConfig, init_checkpoint
from trainers.models.policy import Policy, load_policy
from trainers.training.augment import Augment, LabelRenamer, ListShuffler, chain
from trainers.training.collect import ensure_data
from trainers.training.config import TrainConfig
from trainers.training.data import export_rows, read_export
from trainers.training.evaluate import evaluate, write_agent_file
from trainers.training.heldout import HeldoutProbe, heldout_callback
from trainers.training.loggers import Loggers
from trainers.training.metrics import METRICS_FILE, MetricsLog, make_callback

if TYPE_CHECKING:
    from harness.store.export import ExportFormat


#: the TRL config class of each kind of run
TRL_CONFIGS = {"sft": "SFTConfig", "dpo": "DPOConfig"}


class Run:
    """One ``cua train`` run in ``config.out`` (see the module docstring)."""

    def __init__(self, config: TrainConfig, kind: str) -> None:
        self.config, self.kind = config, kind
        self.out = Path(config.out)
        self.checkpoints = self.out / "checkpoints"
        self.model_dir = self.out / "model"
        self.metrics = MetricsLog(self.out / METRICS_FILE)
        self.started = time.perf_counter()

    # ---- setting up ----------------------------------------------------------------------
    def start(self) -> Run:
        """Check the run directory (new, or a run to resume) and the starting model."""
        check_output_dir(self.out, "--out")
        previous = self.last_checkpoint()
        if self.config.resume and previous is None:
            raise ConfigError(f"--resume: expected a checkpoint under {self.checkpoints}, got none; "
                              "run without --resume to start this run")
        if not self.config.resume and previous is not None:
            raise ConfigError(f"--out: expected a new run directory, got {self.out} holding a "
                              "previous run's checkpoints; pass --resume to continue it or pick "
                              "another out")
        if not self.config.resume:  # what a run that never reached a checkpoint left behind
            self.metrics.path.unlink(missing_ok=True)
            for stale in ("data", "eval", "collect"):
                shutil.rmtree(self.out / stale, ignore_errors=True)
        self._check_trl()
        self.out.mkdir(parents=True, exist_ok=True)
        resolved = self.config.model_dump(mode="json")
        (self.out / "config.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False), encoding="utf-8")
        self._ensure_model()
        self.metrics.loggers = Loggers(self.config.train.report_to, self.out, config=resolved)
        return self

    def _check_trl(self) -> None:
        """Refuse a ``train.trl`` key TRL's config does not have, before any data is collected."""
        import trl

        args_class = getattr(trl, TRL_CONFIGS[self.kind])
        fields = {f.name for f in dataclasses.fields(args_class)}
        for key in self.config.train.trl:
            if key not in fields:
                near = difflib.get_close_matches(key, fields, n=1)
                raise ConfigError(f"train.trl.{key}: expected a field of TRL's {args_class.__name__}, "
                                  f"got {key!r}" + (f"; did you mean {near[0]!r}?" if near else ""))

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.metrics.close()  # a failed run's loggers too (W&B marks its run finished)

    def last_checkpoint(self) -> Path | None:
        found = sorted(self.checkpoints.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1])
                       if p.name.split("-")[-1].isdigit() else -1)
        return found[-1] if found else None

    def _ensure_model(self) -> None:
        path = Path(self.config.model.path)
        if (path / "config.json").is_file() or (path / "adapter_config.json").is_file():
            return
        if self.config.init is None:
            raise ModelDirError(f"model.path: expected a checkpoint directory, got {path}, which "
                                f"{'has no config.json' if path.exists() else 'does not exist'}; "
                                "make one with `cua model init` or set init: tiny")
        init_checkpoint(ModelInitConfig(out=path, preset=self.config.init))

    def rows(self, fmt: ExportFormat) -> list[dict[str, Any]]:
        """The store's ``fmt`` export as rows, collecting into an empty store first."""
        data = self.config.data
        export_file = self.out / "data" / f"{fmt}.parquet"
        if data.corpus is not None and not (self.config.resume and export_file.is_file()):
            export_file = _corpus_rows(data.corpus, fmt, export_file)
        elif not (self.config.resume and export_file.is_file()):  # a resumed run keeps its rows
            assert data.store is not None
            started = time.perf_counter()
            collected = ensure_data(data.store, self.config.collect, data.prompt, self.out / "collect")
            if collected is not None:
                self.metrics.write("collect", **collected,
                                   seconds=round(time.perf_counter() - started, 2))
            export_file = export_rows(data.store, fmt, self.out / "data", data.prompt, data.steps)
        return read_export(export_file)

    def policy(self) -> Policy:
        """The policy to train, on as many CPU threads as the config allows."""
        import torch

        if self.config.train.threads is not None:
            torch.set_num_threads(self.config.train.threads)
        return load_policy(self.config.model)

    def trainer_args(self, args_class: type, policy: Policy, **extra: Any) -> Any:
        """TRL's SFTConfig or DPOConfig from the loop config; ``train.trl``'s keys win over ours."""
        import torch

        loop = self.config.train
        # transformers 5.23 renamed gradient_checkpointing (older versions know only that name)
        fields = {f.name for f in dataclasses.fields(args_class)}
        name = "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"
        checkpointing = {name: self.config.model.gradient_checkpointing,
                         f"{name}_kwargs": {"use_reentrant": False}}
        ours: dict[str, Any] = dict(
            output_dir=str(self.checkpoints), max_steps=loop.max_steps,
            per_device_train_batch_size=loop.batch_size, gradient_accumulation_steps=loop.grad_accum,
            learning_rate=loop.learning_rate, lr_scheduler_type=loop.lr_scheduler,
            warmup_steps=loop.warmup_steps, weight_decay=loop.weight_decay,
            max_grad_norm=loop.max_grad_norm, logging_steps=loop.logging_steps,
            logging_first_step=True, save_steps=loop.save_steps,
            save_total_limit=loop.save_total_limit, seed=loop.seed,
            report_to=[],  # the loggers come as callbacks (self.callbacks): one writer per run
            remove_unused_columns=False, max_length=None, dataloader_num_workers=0,
            use_cpu=policy.device.type == "cpu", **checkpointing, **extra)
        if not {"bf16", "fp16"} & set(loop.trl):  # a user's precision replaces ours
            ours["bf16"] = policy.dtype == torch.bfloat16
        return args_class(**{**ours, **loop.trl})  # train.trl wins (config.py refused conflicts)

    def callbacks(self, policy: Policy) -> list[Any]:
        """The metrics callback and, with ``heldout``, the dense held-out metric's."""
        assert self.metrics.loggers is not None, "start() opens the loggers"
        callbacks = [make_callback(self.metrics), *self.metrics.loggers.callbacks()]
        if self.config.heldout is not None:
            probe = HeldoutProbe.load(self.config.heldout, self.config.data.prompt,
                                      self.out / "data" / "heldout")
            callbacks.append(heldout_callback(probe, policy, self.metrics))
        return callbacks

    def augment(self, prompts: Sequence[Sequence[Message]]) -> Augment | None:
        """The collator's row augmentations: label renaming (``data.rename_labels``, its
        vocabulary every label of the training rows), then list shuffling
        (``data.shuffle_elements``); None where the rows are trained as exported."""
        data, seed = self.config.data, self.config.train.seed
        augments: list[Augment] = []
        if data.rename_labels:
            renamer = LabelRenamer.from_messages(prompts, data.rename_labels, seed=seed)
            self.metrics.write("rename_labels", probability=data.rename_labels,
                               vocabulary=len(renamer.vocabulary))
            augments.append(renamer)
        if data.shuffle_elements:
            self.metrics.write("shuffle_elements", probability=data.shuffle_elements)
            augments.append(ListShuffler(data.shuffle_elements, seed=seed + 1))
        return chain(augments)

    # ---- running -------------------------------------------------------------------------
    def evaluate(self, phase: str, model_dir: Path, *, with_prompt: bool) -> None:
        """Evaluate ``model_dir`` (once: a resumed run keeps an evaluation it already has)."""
        spec = self.config.eval
        if spec is None or not getattr(spec, phase):
            return
        if any(r.get("phase") == phase for r in self.metrics.read() if r["event"] == "eval"):
            return
        started = time.perf_counter()
        summary = evaluate(model_dir, spec, self.out / "eval" / phase,
                           prompt=self.config.data.prompt if with_prompt else None,
                           title=f"cua train {self.kind} · {phase}")
        self.metrics.write("eval", phase=phase, **{k: summary[k] for k in (
            "episodes", "success_rate", "success_ci", "progress", "mean_reward", "steps", "agent",
            "command")}, sampled=_without_tasks(summary["sampled"]),
            seconds=round(time.perf_counter() - started, 2))

    def train(self, trainer: Any, rows: int) -> None:
        """Run TRL's loop (from the last checkpoint with --resume) and log its totals."""
        started = time.perf_counter()
        resume = str(self.last_checkpoint()) if self.config.resume else None
        if resume and self.config.model.finetune == "full":
            trainer._load_from_checkpoint = _load_full_checkpoint(trainer)
        result = trainer.train(resume_from_checkpoint=resume)
        self.metrics.write("run", kind=self.kind, rows=rows, steps=trainer.state.global_step,
                           resumed_from=resume, train_loss=result.training_loss,
                           train_seconds=round(time.perf_counter() - started, 2))

    def finish(self, policy: Policy) -> Path:
        """Save the model with its prompt format, evaluate it, write the report."""
        from trainers.training.report import write_report

        policy.save(self.model_dir)
        write_agent_file(self.model_dir, self.config.data.prompt)
        self.evaluate("after", self.model_dir, with_prompt=False)
        self.metrics.close()
        return write_report(self.out, self.config, self.kind, self.metrics.read())


def _without_tasks(figures: dict[str, Any] | None) -> dict[str, Any] | None:
    """A summary's figures without their per-task breakdown (summary.json keeps that)."""
    return None if figures is None else {k: v for k, v in figures.items() if k != "per_task"}


def _corpus_rows(corpus: Path, fmt: str, export_file: Path) -> Path:
    """The corpus's train split, copied into the run (what it trained on stays with it)."""
    source = Path(corpus) / "train" / "sft.parquet"
    if fmt != "sft":
        raise TrainingDataError(f"expected data.store for {fmt} training, got data.corpus (a "
                                "corpus holds SFT rows only); train dpo on a store's tree export")
    if not source.is_file():
        raise TrainingDataError(f"expected the train split of the corpus {corpus}, got no {source}; "
                                f"finish building it (cua data corpus {corpus})")
    export_file.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, export_file)
    return export_file


def _load_full_checkpoint(trainer: Any) -> Any:
    """Trainer's resume loader, fixed for Qwen-VL. transformers 5 saves these models under the
    hub's key names (``visual.*``, ``model.layers.*``) but Trainer reloads a checkpoint with a
    plain ``load_state_dict(strict=False)``, which then matches no key and silently keeps the
    current weights; ``from_pretrained`` maps the names back."""

    def load(checkpoint: str, model: Any = None) -> None:
        model = model or trainer.model
        saved = type(model).from_pretrained(checkpoint, dtype=next(model.parameters()).dtype)
        model.load_state_dict(saved.state_dict(), strict=True)

    return load
