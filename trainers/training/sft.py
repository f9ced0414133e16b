"""``cua train sft``: supervised fine-tuning on the store's SFT export, on TRL's SFTTrainer.

    train_sft(load_config(SFTConfig, file=Path("trainers/configs/sft-tiny.yaml")))

The loop, top to bottom: start the run (its directory and starting model), read the rows
(collecting oracle data into an empty store first), evaluate the starting model, train with
TRL (our collator encodes rows exactly as the ``hf:`` agent encodes its prompts), save the
model with its prompt format, evaluate it, write the report.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from trainers.models.inputs import keeps_masked_logits, kept_logits
from trainers.training.config import SFTConfig
from trainers.training.data import SFTCollator, SFTExample, as_dataset, sft_examples
from trainers.training.run import Run

if TYPE_CHECKING:
    import torch

    from trainers.models.policy import Policy


def train_sft(config: SFTConfig, *, callbacks: tuple[Any, ...] = ()) -> Path:
    """Run SFT as ``config`` says; returns the path of the run's report.html."""
    with Run(config, "sft").start() as run:
        examples = sft_examples(run.rows("sft"), run.out / "data" / "sft.parquet")
        run.evaluate("before", Path(config.model.path), with_prompt=True)
        policy = run.policy()
        collator = SFTCollator(policy, run.augment([e.prompt.messages for e in examples]))
        trainer = sft_trainer(run, policy, examples, [*run.callbacks(policy), *callbacks], collator)
        run.train(trainer, rows=len(examples))
        return run.finish(policy)


def sft_trainer(run: Run, policy: Policy, examples: Sequence[SFTExample], callbacks: Sequence[Any],
                collator: SFTCollator | None = None) -> Any:
    """TRL's SFTTrainer, with the label-only loss, over ``examples`` with the run's arguments
    and our collator (also what ``benchmarks.bench_throughput`` times, with a collator that
    counts tokens)."""
    from trl import SFTConfig as TRLConfig

    return label_loss_trainer()(
        model=policy.model, args=run.trainer_args(TRLConfig, policy, dataset_kwargs={"skip_prepare_dataset": True}),
        train_dataset=as_dataset(examples), data_collator=collator or SFTCollator(policy),
        processing_class=policy.processor, callbacks=list(callbacks))


@dataclass
class LabelLoss:
    """SFT's loss on one micro-batch and the sums its metrics are made of (label tokens only)."""

    loss: torch.Tensor
    tokens: torch.Tensor  # label tokens
    correct: torch.Tensor  # label tokens that are the argmax of their distribution
    entropy: torch.Tensor  # summed entropy of the label positions' distributions


def label_loss(model: torch.nn.Module, inputs: dict[str, Any],
               num_items_in_batch: torch.Tensor | int | None = None) -> LabelLoss:
    """Next-token cross-entropy of the labelled tokens, summed and divided by their count
    (``num_items_in_batch`` under gradient accumulation), as TRL's SFT loss; the LM head and
    the softmax run only at the positions whose next token has a label."""
    import torch

    labels = inputs["labels"]
    keep = torch.zeros_like(labels, dtype=torch.bool)
    keep[:, :-1] = labels[:, 1:] != -100  # position t predicts token t + 1
    logits = kept_logits(model, {k: v for k, v in inputs.items() if k != "labels"}, keep)  # (kept, vocab)
    targets = labels[:, 1:][keep[:, :-1]]
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    count = targets.numel() if num_items_in_batch is None else num_items_in_batch
    # Clamped like TRL's: a batch without labels is a differentiable zero, not 0 / 0
    loss = -logprobs.gather(-1, targets[:, None]).sum() / torch.as_tensor(count).clamp(min=1)
    with torch.no_grad():
        correct = (logits.argmax(dim=-1) == targets).sum()
        entropy = -(logprobs.exp() * logprobs).sum()
    return LabelLoss(loss, torch.tensor(targets.numel(), device=labels.device), correct, entropy)


@functools.cache
def label_loss_trainer() -> type:
    """TRL's SFTTrainer with ``label_loss`` for its loss. TRL's own (1.16) runs a fused LM
    head that, without Triton (on CPU), scores every position of the padded batch; the labels
    are a few percent of them (BENCHMARKS.md, bench_throughput). Configurations that loss does
    not cover (a custom loss function, label smoothing, DFT, MoE aux loss, sequence
    parallelism, asking for the outputs) keep TRL's, and so does all of it on a TRL before 1.16
    (its internals differ) or a transformers whose ``logits_to_keep`` takes no mask."""
    import trl
    from trl import SFTTrainer

    if Version(trl.__version__) < Version("1.16") or not keeps_masked_logits():
        return SFTTrainer

    class LabelLossSFTTrainer(SFTTrainer):
        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            parallel = getattr(self.accelerator, "parallelism_config", None)
            if (return_outputs or self.compute_loss_func is not None or self.label_smoother is not None
                    or getattr(self.args, "loss_type", "nll") != "nll" or self.aux_loss_enabled
                    or (parallel is not None and parallel.sp_enabled)):
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            result = label_loss(model, inputs, num_items_in_batch)
            loss = result.loss
            # As TRL's: num_items_in_batch counts every rank's tokens and DDP averages gradients
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * (self.accelerator.num_processes // self.get_tp_size())
            self._log_label_metrics("train" if model.training else "eval", result, inputs)
            return loss

        def _log_label_metrics(self, mode: str, result: LabelLoss, inputs: dict[str, Any]) -> None:
            """The metrics TRL's compute_loss logs, with the same names and reductions."""
            gather = self.accelerator.gather_for_metrics
            valid = gather(result.tokens).sum()
            entropy, correct = gather(result.entropy).sum(), gather(result.correct).sum()
            self._metrics[mode]["entropy"].append((entropy / valid).item() if valid > 0 else 0.0)
            self._metrics[mode]["mean_token_accuracy"].append((correct / valid).item() if valid > 0 else 0.0)
            if mode == "train":
                tokens = gather(inputs["attention_mask"].sum()).sum().item()
                self._total_train_tokens += tokens // self._tp_size
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]

    return LabelLossSFTTrainer
