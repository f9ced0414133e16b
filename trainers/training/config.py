"""The configs of ``cua train sft|dpo``: one pydantic model per component, every field described.

    out: runs/sft-tiny                  # the run directory (checkpoints, model, metrics, report)
    model: {path: runs/tiny, finetune: full}      # trainers.models.policy.PolicyConfig
    init: tiny                          # make a random-init checkpoint at model.path if missing
    data: {store: runs/store, prompt: {codec: json, observation: elements, system_prompt: false}}
    collect: {tasks: [fsm:shop/open_mug], seeds: [0, 1]}     # only when the store is empty
    train: {max_steps: 200, batch_size: 8, learning_rate: 1e-3}
    eval: {tasks: [fsm:shop/add_lamp], seed: 100, episodes: 2}

Every field can be set from YAML (``--config``) or ``--set path.to.field=value``; every bad
field is reported at once (``harness.cli_config.load_config``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.codecs import get_codec
from harness.errors import ConfigError as HarnessConfigError
from harness.errors import HarnessError
from harness.prompts import PromptConfig
from harness.store.corpus_split import read_manifest
from harness.store.export import StepSelection
from harness.tasks.registry import suite_task_ids
from trainers.errors import ConfigError
from trainers.models.policy import PolicyConfig
from trainers.training.loggers import ReportTo, report_to_field


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def task_ids(tasks: list[str]) -> list[str]:
    """Every task id the entries name (a suite such as ``fsm:TASKS.jsonl`` stands for all of
    its tasks); an unknown one is a ``ValueError`` with the registry's suggestions."""
    try:
        return suite_task_ids("+".join(tasks))
    except (HarnessError, ConfigError) as exc:
        raise ValueError(str(exc)) from None


def known_tasks(tasks: list[str]) -> list[str]:
    """A config's ``tasks`` field validator: ``tasks`` unchanged when each names a task
    (``task_ids`` raises the ValueError pydantic reports otherwise)."""
    task_ids(tasks)
    return tasks


class DataConfig(_Strict):
    """Where the training rows come from: the store's export, rendered by the one prompt builder."""

    store: Path | None = Field(default=None, description="the trajectory store to export from "
                               "(collected into first when it is empty and `collect` is set)")
    corpus: Path | None = Field(default=None, description="a corpus built by `cua data corpus`: "
                                "train on its train split (SFT only; the prompt must be the "
                                "corpus's) instead of a store's export")
    prompt: PromptConfig = Field(default_factory=PromptConfig, description="the prompt format: "
                                 "the same builder renders training rows and evaluation prompts")
    steps: StepSelection = Field(
        default="advancing", description="SFT rows: 'advancing' (steps verified to advance toward "
        "the goal) or 'all' (every step of every successful path)")
    rename_labels: float = Field(
        default=0.0, ge=0.0, le=1.0, description="label renaming (trainers.training.augment): "
        "the probability that each element label of a training row is renamed, consistently in "
        "its list, instruction, history and target, to one to three words of the training "
        "rows' labels, so that "
        "only copying from the list predicts it; a fresh renaming each time a row is batched. "
        "0: rows as exported. Needs observation: elements")
    shuffle_elements: float = Field(
        default=0.0, ge=0.0, le=1.0, description="list shuffling (trainers.training.augment): the "
        "probability that a training row's element list is shown in a random order, renumbered "
        "where the list numbers its lines (element_refs: index), the target's [k] following its "
        "element, so that only reading the list, not the usual position of content, gives the "
        "number; a fresh order each time a row is batched. 0: rows as exported. Needs an element list")

    @field_validator("prompt")
    @classmethod
    def _known_codec(cls, prompt: PromptConfig) -> PromptConfig:
        try:
            get_codec(prompt.codec)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return prompt

    @model_validator(mode="after")
    def _renaming_needs_text(self) -> DataConfig:
        if self.rename_labels and self.prompt.observation != "elements":
            raise ValueError(f"expected data.rename_labels only with observation: elements, got "
                             f"observation: {self.prompt.observation} (its screenshots would still "
                             "show the old labels); set data.rename_labels: 0")
        if self.shuffle_elements and self.prompt.observation == "screenshot":
            raise ValueError("expected data.shuffle_elements only with an element list (observation: "
                             "elements or screenshot+elements), got observation: screenshot; set "
                             "data.shuffle_elements: 0")
        return self

    @model_validator(mode="after")
    def _one_source(self) -> DataConfig:
        if (self.store is None) == (self.corpus is None):
            raise ValueError("expected exactly one of data.store or data.corpus, got "
                             f"{'both' if self.store is not None else 'neither'}; set one")
        if self.corpus is not None:
            try:
                built = read_manifest(self.corpus)["prompt"]
            except HarnessConfigError as exc:
                raise ValueError(str(exc)) from None
            if PromptConfig.model_validate(built) != self.prompt:  # a field added since takes its default
                raise ValueError(f"expected data.prompt to be the prompt the corpus was built with "
                                 f"({built}), got {self.prompt.model_dump(mode='json')}; a model "
                                 "trains on the prompts it will see: set data.prompt to the corpus's")
        return self


class CollectSpec(_Strict):
    """Verified data to collect with the oracle when the store is empty."""

    tasks: list[str] = Field(min_length=1, description="task ids (or suites) to collect on, "
                             "e.g. fsm:shop/open_mug (never the held-out evaluation tasks)")
    seeds: list[int] = Field(default=[0], min_length=1, description="layout seeds: one oracle "
                             "episode (or one explored tree) per task and seed")
    explore: Literal["episodes", "tree"] = Field(
        default="episodes", description="'episodes': one oracle episode per task and seed (SFT "
        "data); 'tree': a tree grown by `cua collect` per task and seed, whose on-path and "
        "off-path siblings are the DPO pairs")
    budget: int = Field(default=30, ge=1, description="env steps per tree (explore=tree)")
    candidates: int = Field(default=3, ge=1, description="first steps tried from each expanded "
                            "node (explore=tree): the oracle's, then random ones")
    concurrency: int = Field(default=2, ge=1, description="episodes at once (explore=episodes)")

    _tasks = field_validator("tasks")(known_tasks)


class EvalSpec(_Strict):
    """The evaluation before and after training (through the `hf:` agent and `cua eval`'s runner)."""

    tasks: list[str] = Field(min_length=1, description="task ids (or suites) to evaluate on "
                             "(held out: goals absent from the training data)")
    seed: int = Field(default=100, description="episode i of each task is seeded seed+i (the "
                      "layout seed: pick seeds absent from the training data)")
    episodes: int = Field(default=1, ge=1, description="episodes per task")
    concurrency: int = Field(default=4, ge=1, description="episodes at once (their model calls "
                             "are batched)")
    max_steps: int | None = Field(default=None, ge=1, description="steps per episode; None: the "
                                  "task's own budget")
    max_new_tokens: int = Field(default=48, ge=1, description="most tokens per reply")
    temperature: float = Field(default=0.0, ge=0.0, description="sampling temperature; 0: greedy")
    samples: int = Field(default=0, ge=0, description="sampled episodes per task besides those, at "
                         "sample_temperature (cua eval --samples): more episodes behind each rate")
    sample_temperature: float = Field(default=1.0, gt=0.0, le=10.0,
                                      description="the sampling temperature of `samples`")
    before: bool = Field(default=True, description="evaluate the starting model")
    after: bool = Field(default=True, description="evaluate the trained model")

    _tasks = field_validator("tasks")(known_tasks)


class HeldoutSpec(_Strict):
    """The dense held-out metric (trainers.training.heldout): where the held-out states are
    and how often to measure the policy on them."""

    states: Path = Field(description="an SFT export (.parquet; a corpus's heldout/sft.parquet) or "
                         "a trajectory store folder of oracle episodes on held-out tasks")
    every: int = Field(default=10, ge=1, description="measure every N optimizer steps (SFT, DPO) "
                       "or updates (GRPO), and after the last")
    max_states: int = Field(default=200, ge=1, description="at most this many states, a fixed "
                            "sample (seed 0), so a measurement takes seconds")
    batch_size: int = Field(default=8, ge=1, description="states per forward pass")


class HeldoutScoreConfig(HeldoutSpec):
    """`cua train heldout`: the dense held-out metric of one checkpoint."""

    model: Path = Field(description="a checkpoint directory; its cua_agent.yaml gives the prompt "
                        "format a store's states are rendered with")
    device: str = Field(default="auto", description="auto, cpu, cuda, cuda:N")


class LoopConfig(_Strict):
    """The optimisation (TRL's trainer arguments that matter here)."""

    max_steps: int = Field(default=200, ge=1, description="optimizer steps")
    batch_size: int = Field(default=8, ge=1, description="rows per device step")
    grad_accum: int = Field(default=1, ge=1, description="device steps per optimizer step")
    learning_rate: float = Field(default=1e-3, gt=0, description="peak learning rate")
    lr_scheduler: Literal["constant", "constant_with_warmup", "linear", "cosine"] = Field(
        default="cosine", description="learning-rate schedule")
    warmup_steps: int = Field(default=0, ge=0, description="linear warm-up steps")
    weight_decay: float = Field(default=0.0, ge=0, description="AdamW weight decay")
    max_grad_norm: float = Field(default=1.0, gt=0, description="gradient clipping norm")
    logging_steps: int = Field(default=5, ge=1, description="log the loss every N steps (metrics.jsonl)")
    save_steps: int = Field(default=100, ge=1, description="write a checkpoint every N steps (for --resume)")
    save_total_limit: int = Field(default=2, ge=1, description="checkpoints kept")
    seed: int = Field(default=0, description="seed of data order, dropout and initialisation")
    threads: int | None = Field(default=None, ge=1, description="CPU threads for torch; None: torch's default")
    report_to: ReportTo = report_to_field()
    trl: dict[str, Any] = Field(default_factory=dict, description="further SFTConfig / DPOConfig "
                                "fields passed to TRL as they are (e.g. bf16: true); they win over "
                                "what cua train sets, and one that names a field of this section "
                                "(learning_rate, ...) is that field")

    @model_validator(mode="before")
    @classmethod
    def _trl_names_our_fields(cls, data: Any) -> Any:
        """TRL's name of one of these fields is that field (a user's value wins over the
        default); the same field set both ways to different values, or a field cua train
        must own, is refused, before any data is collected."""
        return _take_from_trl(data, data.get("trl") if isinstance(data, dict) else None, MIRRORED)


#: TRL's name -> this section's field (what `cua train` passes TRL from it)
MIRRORED = {"max_steps": "max_steps", "per_device_train_batch_size": "batch_size",
            "gradient_accumulation_steps": "grad_accum", "learning_rate": "learning_rate",
            "lr_scheduler_type": "lr_scheduler", "warmup_steps": "warmup_steps",
            "weight_decay": "weight_decay", "max_grad_norm": "max_grad_norm",
            "logging_steps": "logging_steps", "save_steps": "save_steps",
            "save_total_limit": "save_total_limit", "seed": "seed"}
#: TRL fields `cua train` owns, and why
OWNED = {"output_dir": "checkpoints go to OUT/checkpoints, where --resume looks; set out",
         "report_to": "set train.report_to", "remove_unused_columns": "the collators read every "
         "column of the export", "resume_from_checkpoint": "pass --resume"}


def _take_from_trl(data: Any, trl: Any, mirrored: dict[str, str], where: str = "train") -> Any:
    """``data`` with the ``trl`` keys that name its fields moved into them (see LoopConfig)."""
    if not isinstance(data, dict) or not isinstance(trl, dict):
        return data
    for key in trl:
        if key in OWNED:
            raise ValueError(f"expected no trl.{key} (cua train sets it: {OWNED[key]}), got {trl[key]!r}")
    taken = {mirrored[k]: v for k, v in trl.items() if k in mirrored}
    for field, value in taken.items():
        if field in data and data[field] != value:
            trl_name = next(k for k, f in mirrored.items() if f == field)
            raise ValueError(f"expected {where}.{field} or trl.{trl_name}, got both ({data[field]!r} "
                             f"and {value!r}); keep one")
    rest = {k: v for k, v in trl.items() if k not in mirrored}
    return {**data, **taken, "trl": rest} if data.get("trl") is trl else {**data, **taken}


class DPOOptions(_Strict):
    """DPO's own settings (TRL's DPOConfig)."""

    beta: float = Field(default=0.1, gt=0, description="strength of the pull toward the reference model")
    loss_type: list[str] = Field(default=["sigmoid"], min_length=1, description="TRL loss types, "
                                 "e.g. [sigmoid] (DPO) or [sigmoid, sft] (DPO + NLL on the chosen)")
    loss_weights: list[float] | None = Field(default=None, description="one weight per loss type; "
                                             "None: all 1")

    @model_validator(mode="after")
    def _weights_match(self) -> DPOOptions:
        if self.loss_weights is not None and len(self.loss_weights) != len(self.loss_type):
            raise ValueError(f"expected one loss weight per loss type ({len(self.loss_type)}), "
                             f"got {len(self.loss_weights)}")
        return self


class TrainConfig(_Strict):
    """What both `cua train sft` and `cua train dpo` take."""

    out: Path = Field(description="the run directory: checkpoints/, model/, data/, eval/, "
                      "metrics.jsonl, report.html")
    model: PolicyConfig = Field(description="the policy to start from and what trains "
                                "(finetune: full or lora)")
    init: Literal["tiny", "small", "base"] | None = Field(
        default=None, description="when model.path does not exist, write a random-init "
        "checkpoint of this preset there first (`cua model init`)")
    data: DataConfig = Field(description="the training rows")
    collect: CollectSpec | None = Field(default=None, description="oracle data to collect first "
                                        "when the store is empty; None: an empty store is an error")
    train: LoopConfig = Field(default_factory=LoopConfig, description="the optimisation")
    eval: EvalSpec | None = Field(default=None, description="evaluate before and after training; "
                                  "None: no evaluation")
    heldout: HeldoutSpec | None = Field(default=None, description="the dense held-out metric "
                                        "(next-action exact match on held-out states) before, "
                                        "during and after training; None: none")
    resume: bool = Field(default=False, description="continue from the last checkpoint in "
                         "OUT/checkpoints (same data, same schedule)")

    @model_validator(mode="after")
    def _collect_needs_store(self) -> TrainConfig:
        if self.collect is not None and self.data.corpus is not None:
            raise ValueError("expected collect only with data.store, got data.corpus (a corpus is "
                             "built by `cua data corpus`); drop collect")
        return self

    @field_validator("model")
    @classmethod
    def _trains(cls, model: PolicyConfig) -> PolicyConfig:
        if model.finetune == "none":
            raise ValueError("expected finetune 'full' or 'lora' to train, got 'none'; "
                             "set model.finetune")
        return model


class SFTConfig(TrainConfig):
    """`cua train sft`: supervised fine-tuning on the store's SFT export."""


class DPOConfig(TrainConfig):
    """`cua train dpo`: preference optimisation on the store's DPO export (tree branch pairs)."""

    dpo: DPOOptions = Field(default_factory=DPOOptions, description="DPO's own settings")

    @model_validator(mode="before")
    @classmethod
    def _trl_names_dpo_fields(cls, data: Any) -> Any:
        """``train.trl``'s beta, loss_type and loss_weights are the dpo section's."""
        if not isinstance(data, dict) or not isinstance(data.get("train"), dict):
            return data
        trl = data["train"].get("trl")
        names = {k: k for k in ("beta", "loss_type", "loss_weights")}
        if not isinstance(trl, dict) or not set(trl) & set(names):
            return data
        dpo = data.get("dpo") if isinstance(data.get("dpo"), dict) else {}
        moved = _take_from_trl(dpo, trl, names, where="dpo")
        rest = {k: v for k, v in trl.items() if k not in names}
        return {**data, "dpo": {k: v for k, v in moved.items() if k != "trl"},
                "train": {**data["train"], "trl": rest}}
