"""The config of ``cua train grpo``: one pydantic model per component, every field described.

    out: runs/grpo-tiny                 # metrics.jsonl, report.html, checkpoints/, model/
    updates: 6                          # policy updates (the cap, with env_steps)
    env_steps: 400                      # stop after the update in which the run's env steps reach 400
    model: {path: runs/tiny, finetune: full, device: cpu}
    prompt: {codec: json, observation: elements, system_prompt: false}
    tasks: [fsm:shop/add_lamp, fsm:mail/open_m2]
    group: {tasks: 2, size: 4, resample: 2}   # G episodes of each of 2 tasks; groups without signal resampled
    reward: step                        # outcome | step | progress (harness.rewards)
    advantage: {step_weight: 1.0, gamma: 0.95}  # A = A_episode + w * A_step (trainers.grpo.advantages)
    no_op: {effect: end}                # an invalid or idle step ends a training episode
    loss: {aggregation: episode-mean}   # every episode weighs the same (trainers.grpo.losses)
    tree: {branch_states: 1, continuations: 2, where: disagree}
    eval: {tasks: [fsm:shop/open_mug], every: 2}

Every field can be set from YAML (``--config``) or ``--set path.to.field=value``; every bad
field is reported at once (``harness.cli_config.load_config``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.env_providers import EnvPlacement
from harness.prompts import PromptConfig
from harness.rewards import RewardMode
from trainers.agents.options import read_agent_file
from trainers.grpo.advantages import Normalize
from trainers.models.policy import PolicyConfig
from trainers.training.config import HeldoutSpec, known_tasks, task_ids
from trainers.training.loggers import ReportTo, report_to_field


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GroupSpec(_Strict):
    """What one update rolls out."""

    tasks: int = Field(default=2, ge=1, description="tasks sampled per update (the curriculum picks them)")
    size: int = Field(default=4, ge=2, description="G: episodes per task from the same start state")
    seeds: list[int] = Field(default=[0, 1, 2], min_length=1, description="layout seeds a group's "
                             "start is drawn from (keep the held-out seeds out)")
    resample: int = Field(default=2, ge=0, description="dynamic sampling: rounds in which groups "
                          "without a training signal (every advantage zero: all their rewards "
                          "equal) are dropped and replaced by groups of other tasks; 0: train on "
                          "every group")


class RolloutSpec(_Strict, EnvPlacement):
    """How episodes are sampled, and by which backend (trainers.grpo.backends)."""

    backend: Literal["hf", "openai", "vllm"] = Field(
        default="hf", description="hf: the trained policy in this process; openai: a server with "
        "POST /v1/weights (`cua serve` on the starting checkpoint) at url; vllm: vLLM's engine in "
        "this process (the gpu extra), given the new weights after every update")
    url: str | None = Field(default=None, description="the openai backend's base URL, e.g. "
                            "http://127.0.0.1:8000/v1")
    gpu_memory_utilization: float = Field(default=0.3, gt=0.0, lt=1.0, description="the vllm "
                                          "backend: the share of the GPU's memory vLLM takes (the "
                                          "policy, reference and optimizer need the rest)")

    max_steps: int = Field(default=8, ge=1, description="steps before an episode is truncated")
    temperature: float = Field(default=1.0, gt=0.0, description="sampling temperature of rollouts")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="nucleus sampling mass")
    max_new_tokens: int = Field(default=48, ge=1, description="most tokens per reply (longer: truncated)")
    max_batch: int = Field(default=16, ge=1, description="most prompts per model call (batched "
                           "across every concurrent episode)")
    max_wait_ms: float = Field(default=200.0, ge=0.0, description="how long a prompt waits for "
                               "others (long enough for the group's env steps to line up: at 20 ms "
                               "most calls held one prompt, BENCHMARKS.md)")
    step_timeout_s: float = Field(default=60.0, gt=0, description="limit for one env step or reset")
    @model_validator(mode="after")
    def _url_for_openai(self) -> RolloutSpec:
        if self.backend == "openai" and not self.url:
            raise ValueError("expected rollout.url with backend: openai, got none; e.g. "
                             "url: http://127.0.0.1:8000/v1 (cua serve)")
        return self


class AdvantageSpec(_Strict):
    """How rewards become advantages (trainers.grpo.advantages)."""

    step_weight: float = Field(default=1.0, ge=0.0, description="weight of the step-level advantage "
                               "(steps from the same FSM state); 0: plain episode-level GRPO")
    gamma: float = Field(default=0.95, gt=0.0, le=1.0, description="discount of step returns-to-go "
                         "(below 1, so a wasted step costs the steps before it something; 1: none)")
    normalize: Normalize = Field(default="std", description="std: (r - mean) / std; mean: r - mean (Dr. GRPO)")


class LossSpec(_Strict):
    """The objective and the optimisation (trainers.grpo.losses)."""

    epochs: int = Field(default=2, ge=1, description="optimizer passes over each update's batch")
    minibatch: int = Field(default=16, ge=1, description="steps (completions) per optimizer step")
    learning_rate: float = Field(default=1e-4, gt=0, description="AdamW learning rate")
    lr_scheduler: Literal["constant", "linear"] = Field(default="constant", description="learning-rate schedule over the run")
    warmup_updates: int = Field(default=0, ge=0, description="updates over which the learning rate "
                                "rises linearly: update u (from 1) runs at u / (warmup_updates + 1) "
                                "of it, so AdamW's first, largest steps move the policy less; 0: none")
    weight_decay: float = Field(default=0.0, ge=0, description="AdamW weight decay")
    max_grad_norm: float = Field(default=1.0, gt=0, description="gradient clipping norm")
    clip_low: float = Field(default=0.2, ge=0, lt=1, description="PPO clip: ratios below 1 - this are clipped")
    clip_high: float = Field(default=0.28, ge=0, description="PPO clip: ratios above 1 + this are clipped")
    kl_coef: float = Field(default=0.02, ge=0, description="weight of the k3 KL to the frozen "
                           "starting policy; 0: no reference model is kept")
    aggregation: Literal["episode-mean", "token-mean", "seq-mean"] = Field(
        default="episode-mean", description="episode-mean (each episode's token mean over its "
        "steps, then the mean over episodes: episode length does not decide the gradient), "
        "token-mean (every token alike) or seq-mean (each step's token mean, then the mean)")

    def lr_factor(self, done: int, updates: int) -> float:
        """The learning rate's multiplier for the update after ``done`` updates of ``updates``:
        the warm-up's ramp times the schedule's (constant, or linear decay to 0)."""
        warmup = min(1.0, (done + 1) / (self.warmup_updates + 1))
        return warmup * (1.0 if self.lr_scheduler == "constant" else 1.0 - done / updates)


class NoOpSpec(_Strict):
    """What an invalid or idle step does to a training episode (trainers.grpo.rollouts). The
    step is recorded with its verdict either way; held-out evaluation is never cut short."""

    effect: Literal["end", "penalize", "off"] = Field(
        default="end", description="end: a no-op step ends the training episode; penalize: "
        "its reward loses `penalty` and the episode goes on; off: neither")
    penalty: float = Field(default=0.0, ge=0.0, description="subtracted from a no-op step's "
                           "reward (with end or penalize)")
    idle_after: int = Field(default=3, ge=1, description="an invalid step (text no codec parses, "
                            "an unknown element) is a no-op at once; a step that fires no "
                            "transition is one when it is the idle_after-th in a row (typing "
                            "into a field takes a click and the text before Enter fires)")

    @model_validator(mode="after")
    def _penalty_to_penalize(self) -> NoOpSpec:
        if self.effect == "penalize" and self.penalty <= 0:
            raise ValueError("expected no_op.penalty > 0 with effect: penalize, got "
                             f"{self.penalty}; set a penalty (e.g. 0.1) or effect: end")
        return self


class TreeSpec(_Strict):
    """Tree rollouts: restore states the group visited (env.jump) and sample continuations."""

    branch_states: int = Field(default=0, ge=0, description="states branched from per group; 0: no tree rollouts")
    continuations: int = Field(default=2, ge=1, description="M: continuations sampled from each branched state")
    where: Literal["disagree", "first", "random"] = Field(
        default="disagree", description="which states: 'disagree' (the group's episodes through "
        "the state took different actions or ended differently; the default), 'first' (the "
        "earliest visited), 'random'")


class CurriculumSpec(_Strict):
    """Task sampling by recent success, easier verified variants, retirement."""

    enabled: bool = Field(default=True, description="sample by success rate; off: uniform")
    window: int = Field(default=8, ge=1, description="recent episodes per task the rates are taken over")
    variants_after: int = Field(default=2, ge=1, description="groups without a success before a "
                                "task spawns easier variants")
    retire_after: int = Field(default=3, ge=1, description="groups with every episode solved before a task retires")
    max_pool: int | None = Field(default=None, ge=1, description="most tasks in the pool (variants "
                                 "included), at least the base tasks + 2; None: room for every "
                                 "base task's two variants")
    replay: bool = Field(default=False, description="a group without a success gets the latest stored "
                         "success of its task (from the run's store) as one more episode")


class PeriodicEvalSpec(_Strict):
    """Held-out evaluation during training (greedy, in-process, same rollout path)."""

    tasks: list[str] = Field(min_length=1, description="held-out task ids (goals absent from training)")
    seed: int = Field(default=100, description="episode i of each task is seeded seed+i (held-out layouts)")
    episodes: int = Field(default=1, ge=1, description="episodes per task")
    every: int = Field(default=2, ge=1, description="evaluate every N updates (and before the first, after the last)")
    max_steps: int = Field(default=8, ge=1, description="steps per episode")

    _tasks = field_validator("tasks")(known_tasks)


class SignalSpec(_Strict):
    """When a dead training signal stops the run."""

    patience: int = Field(default=3, ge=1, description="updates in a row whose completions were all "
                          "truncated, or whose rewards were all identical, before the run stops")


class DistributedSpec(_Strict):
    """How several training processes share the policy (trainers.grpo.distributed); one process
    ignores it."""

    strategy: Literal["ddp", "fsdp"] = Field(
        default="ddp", description="ddp: every rank holds the whole model, gradients all-reduced "
        "(accelerate); fsdp: parameters, gradients and AdamW state sharded over the ranks "
        "(torch's fully_shard), gathered whole for rollouts and checkpoints")


class GRPOConfig(_Strict):
    """`cua train grpo`: online GRPO in live sandboxes with verified step rewards."""

    out: Path = Field(description="the run directory: metrics.jsonl, report.html, checkpoints/, model/")
    updates: int = Field(default=6, ge=1, description="policy updates (with env_steps: the most)")
    env_steps: int | None = Field(
        default=None, description="env-step budget: no update starts once the run's env steps "
        "(every training rollout's, dropped groups and tree branches included) reach it, so the "
        "update that crosses it runs whole and the run reports the exact count (for comparing "
        "reward modes at equal env steps); None: updates alone decide")
    model: PolicyConfig = Field(description="the policy to start from (finetune: full or lora)")
    init: Literal["tiny", "small", "base"] | None = Field(
        default=None, description="when model.path does not exist, write a random-init checkpoint "
        "of this preset there first (`cua model init`)")
    prompt: PromptConfig = Field(default_factory=PromptConfig, description="the prompt format "
                                 "(the one the model was trained with)")
    tasks: list[str] = Field(min_length=1, description="training task ids or suites")
    group: GroupSpec = Field(default_factory=GroupSpec, description="what one update rolls out")
    reward: RewardMode = Field(default="step", description="outcome, step (verdict-shaped) or progress")
    rollout: RolloutSpec = Field(default_factory=RolloutSpec, description="episode sampling")
    advantage: AdvantageSpec = Field(default_factory=AdvantageSpec, description="advantages")
    loss: LossSpec = Field(default_factory=LossSpec, description="the objective")
    no_op: NoOpSpec = Field(default_factory=NoOpSpec, description="invalid and idle steps in training")
    tree: TreeSpec = Field(default_factory=TreeSpec, description="tree rollouts")
    curriculum: CurriculumSpec = Field(default_factory=CurriculumSpec, description="the task curriculum")
    eval: PeriodicEvalSpec | None = Field(default=None, description="held-out evaluation; None: none")
    heldout: HeldoutSpec | None = Field(default=None, description="the dense held-out metric every "
                                        "heldout.every updates (trainers.training.heldout); None: none")
    signal: SignalSpec = Field(default_factory=SignalSpec, description="dead-signal checks")
    distributed: DistributedSpec = Field(default_factory=DistributedSpec, description="data "
                                         "parallel with more than one process: ddp or fsdp")
    store: Path | None = Field(default=None, description="trajectory store every rollout (tree "
                               "branches included) is written to, with its policy version; None: OUT/store")
    checkpoint_every: int = Field(default=2, ge=1, description="write a checkpoint every N updates (for resume)")
    filmstrips: int = Field(default=3, ge=0, description="rollouts shown as filmstrips in the report")
    seed: int = Field(default=0, description="seed of task sampling, rollouts and minibatch order")
    threads: int | None = Field(default=1, ge=1, description="CPU threads for torch; None: torch's default")
    resume: bool = Field(default=False, description="continue from the last checkpoint in OUT/checkpoints")
    report_to: ReportTo = report_to_field()  # TensorBoard / W&B (trainers.training.loggers)

    _tasks = field_validator("tasks")(known_tasks)

    @field_validator("model")
    @classmethod
    def _trains(cls, model: PolicyConfig) -> PolicyConfig:
        if model.finetune == "none":
            raise ValueError("expected finetune 'full' or 'lora' to train, got 'none'; set model.finetune")
        return model

    @field_validator("env_steps")
    @classmethod
    def _budget(cls, env_steps: int | None) -> int | None:
        if env_steps is not None and env_steps < 1:
            raise ValueError(f"expected env_steps of at least 1 (an env-step budget), got {env_steps}; "
                             "set a positive budget or leave it unset (null) to run every update")
        return env_steps

    @model_validator(mode="after")
    def _pool_holds_the_tasks(self) -> GRPOConfig:
        pool = self.curriculum
        if pool.enabled and pool.max_pool is not None:
            base = len(task_ids(self.tasks))
            if pool.max_pool < base + 2:
                raise ValueError(
                    f"expected curriculum.max_pool of at least the {base} base tasks + 2 (room for "
                    f"one task's easier variants), got {pool.max_pool}: no variant would ever "
                    f"join; set curriculum.max_pool >= {base + 2}, or leave it unset")
        return self

    @model_validator(mode="after")
    def _the_models_own_prompt(self) -> GRPOConfig:
        """A start model saved with its prompt (``cua_agent.yaml``, by ``cua train``) is
        trained on in that prompt: another one (a label list for a model that answers
        ``[k]``) would start the run from a model that cannot read its prompts."""
        saved = read_agent_file(self.model.path)
        differ = {k: v for k, v in saved.items() if k in PromptConfig.model_fields and getattr(self.prompt, k) != v}
        if differ:
            raise ValueError(
                f"expected prompt to be the one {self.model.path} was trained with "
                f"({', '.join(f'{k}={v!r}' for k, v in differ.items())}, its cua_agent.yaml), got "
                f"{', '.join(f'{k}={getattr(self.prompt, k)!r}' for k in differ)}; set those prompt fields")
        return self

    @property
    def store_path(self) -> Path:
        return self.store if self.store is not None else Path(self.out) / "store"
