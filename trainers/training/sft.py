"""``cua train sft``: supervised fine-tuning on the store's SFT export, on TRL's SFTTrainer.

    train_sft(load_config(SFTConfig, file=Path("trainers/configs/sft-tiny.yaml")))

The loop, top to bottom: start the run (its directory and starting model), read the rows
(collecting oracle data into an empty store first), evaluate the starting model, train with
TRL (our collator encodes rows exactly as the ``hf:`` agent encodes its prompts), save the
model with its prompt format, evaluate it, write the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainers.training.config import SFTConfig
from trainers.training.data import SFTCollator, SFTExample, as_dataset, sft_examples
from trainers.training.run import Run

if TYPE_CHECKING:
    from trainers.models.policy import Policy


def train_sft(config: SFTConfig, *, callbacks: tuple[Any, ...] = ()) -> Path:
    """Run SFT as ``config`` says; returns the path of the run's report.html."""
    with Run(config, "sft").start() as run:
        examples = sft_examples(run.rows("sft"), run.out / "data" / "sft.parquet")
        run.evaluate("before", Path(config.model.path), with_prompt=True)
        policy = run.policy()
        collator = SFTCollator(policy, run.renamer([e.prompt.messages for e in examples]))
        trainer = sft_trainer(run, policy, examples, [*run.callbacks(policy), *callbacks], collator)
        run.train(trainer, rows=len(examples))
        return run.finish(policy)


def sft_trainer(run: Run, policy: Policy, examples: Sequence[SFTExample], callbacks: Sequence[Any],
                collator: SFTCollator | None = None) -> Any:
    """TRL's SFTTrainer over ``examples`` with the run's arguments and our collator (also
    what ``benchmarks.bench_throughput`` times, with a collator that counts tokens)."""
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

    return SFTTrainer(
        model=policy.model, args=run.trainer_args(TRLConfig, policy, dataset_kwargs={"skip_prepare_dataset": True}),
        train_dataset=as_dataset(examples), data_collator=collator or SFTCollator(policy),
        processing_class=policy.processor, callbacks=list(callbacks))
