"""SFT's label-only loss (trainers.training.sft.label_loss) against TRL 1.16's own SFT loss,
on the real tiny model and a real collated batch: the same loss, gradients and metrics, for
full fine-tuning and LoRA, with screenshots and without."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.harness.store.helpers import screenshot
from tests.trainers.conftest import make_prompt
from trainers.models.policy import LoraOptions, PolicyConfig, load_policy
from trainers.training.data import SFTCollator, SFTExample, as_dataset
from trainers.training.sft import label_loss_trainer

TARGETS = ('{"type": "click", "x": 10, "y": 20}', '{"type": "done"}',
           '{"type": "type", "text": "Desk lamp"}')


def examples(images: bool) -> list[SFTExample]:
    """Three rows of different prompt and target lengths, so the batch has padding."""
    shots = (lambda label: [screenshot(label)]) if images else (lambda label: [])
    prompts = [make_prompt("Click the red button.", shots("red")),
               make_prompt("Open the page of Coffee mug, then add it to the cart.", shots("mug"), history=2),
               make_prompt("Find Desk lamp.", shots("lamp"), history=1)]
    return [SFTExample(str(i), p, t) for i, (p, t) in enumerate(zip(prompts, TARGETS, strict=True))]


def trainer_and_batch(tiny_dir: Path, tmp_path: Path, finetune: str, images: bool):
    from trl import SFTConfig

    # no adapter dropout: the two losses must see the same network
    policy = load_policy(PolicyConfig(path=tiny_dir, device="cpu", finetune=finetune,
                                      lora=LoraOptions(dropout=0.0, vision=True)))
    rows = examples(images)
    args = SFTConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True, max_length=None,
                     remove_unused_columns=False, dataset_kwargs={"skip_prepare_dataset": True})
    collator = SFTCollator(policy)
    trainer = label_loss_trainer()(model=policy.model, args=args, train_dataset=as_dataset(rows),
                                   data_collator=collator, processing_class=policy.processor)
    batch = collator(list(as_dataset(rows)))
    learn(trainer, batch)
    assert (batch["attention_mask"] == 0).any() and (batch["labels"] == -100).float().mean() > 0.5
    return trainer, batch


def learn(trainer, batch) -> None:
    """A few steps on the batch: a random init's logits are near uniform and its argmax never
    hits, so an offset by one position or a wrong argmax would hardly show."""
    trainable = [p for p in trainer.model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=0.05)
    trainer.model.train()
    for _ in range(6):  # our loss (TRL's scores every position over the vocabulary: slow)
        optimizer.zero_grad()
        type(trainer).compute_loss(trainer, trainer.model, dict(batch)).backward()
        optimizer.step()


def loss_grads_metrics(trainer, compute_loss, batch, items) -> tuple[float, dict[str, torch.Tensor], dict]:
    model = trainer.model
    model.zero_grad()
    loss = compute_loss(trainer, model, dict(batch), num_items_in_batch=items)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    metrics = {k: v[-1] for k, v in trainer._metrics["train"].items()}
    return loss.item(), grads, metrics


@pytest.mark.parametrize(("finetune", "images"), [("full", False), ("full", True), ("lora", True)])
def test_label_only_loss_matches_trls_sft_loss(tiny_dir, tmp_path, finetune, images) -> None:
    from trl import SFTTrainer

    trainer, batch = trainer_and_batch(tiny_dir, tmp_path, finetune, images)
    assert type(trainer).compute_loss is not SFTTrainer.compute_loss  # ours, not TRL's, is under test
    trainer._total_train_tokens = 0  # learn()'s steps counted theirs
    labelled = int((batch["labels"][:, 1:] != -100).sum())
    for items in (None, torch.tensor(labelled + 7)):  # its own count; gradient accumulation's
        ours = loss_grads_metrics(trainer, type(trainer).compute_loss, batch, items)
        stock = loss_grads_metrics(trainer, SFTTrainer.compute_loss, batch, items)
        assert ours[0] == pytest.approx(stock[0], abs=1e-5)
        assert ours[1].keys() == stock[1].keys() and len(ours[1]) > 0
        for name, grad in ours[1].items():
            torch.testing.assert_close(grad, stock[1][name], atol=1e-5, rtol=1e-4, msg=name)
        assert ours[2].keys() == stock[2].keys() >= {"mean_token_accuracy", "entropy", "num_tokens"}
        for key in ("mean_token_accuracy", "entropy"):
            assert ours[2][key] == pytest.approx(stock[2][key], abs=1e-5), key
        assert 0.0 < ours[2]["mean_token_accuracy"] < 1.0  # the check sees hits and misses
    # our call counted the batch's real tokens, as TRL's did
    assert trainer._total_train_tokens == 4 * int(batch["attention_mask"].sum())
