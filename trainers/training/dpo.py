"""``cua train dpo``: preference optimisation on the store's DPO export, on TRL's DPOTrainer.

At every branching node of a tree, the step verified to lie on a shortest path (chosen)
against each sibling off it (rejected). The loop is SFT's (``trainers.training.sft``) with
TRL's DPOTrainer; the reference model is a frozen copy of the starting model (under LoRA,
the base model with the adapter switched off).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainers.models.policy import load_policy
from trainers.training.config import DPOConfig
from trainers.training.data import PreferenceCollator, as_dataset, preference_examples
from trainers.training.run import Run


def train_dpo(config: DPOConfig, *, callbacks: tuple[Any, ...] = ()) -> Path:
    """Run DPO as ``config`` says; returns the path of the run's report.html."""
    from trl import DPOConfig as TRLConfig
    from trl import DPOTrainer

    with Run(config, "dpo").start() as run:
        pairs = preference_examples(run.rows("dpo"), run.out / "data" / "dpo.parquet")
        run.evaluate("before", Path(config.model.path), with_prompt=True)
        policy = run.policy()
        reference = None
        if config.model.finetune == "full":
            reference = load_policy(config.model.model_copy(update={"finetune": "none"})).model
        options = config.dpo
        args = run.trainer_args(TRLConfig, policy, beta=options.beta, loss_type=options.loss_type,
                                loss_weights=options.loss_weights)
        collator = PreferenceCollator(policy, run.augment([p.prompt.messages for p in pairs]))
        trainer = DPOTrainer(model=policy.model, ref_model=reference, args=args,
                             train_dataset=as_dataset(pairs), data_collator=collator,
                             processing_class=policy.processor, callbacks=[*run.callbacks(policy), *callbacks])
        run.train(trainer, rows=len(pairs))
        return run.finish(policy)
