"""The scorers that run the LM head only where a completion token is predicted (GRPO's
``score``, ``completion_logprobs``, the held-out probe's ``score_batch``) against the same
figures from every position's logits, on the real tiny model and real GRPO steps of
different prompt and completion lengths (so the batch has padding): the same log-probs,
entropies, gradients and held-out figures, for full fine-tuning without screenshots (the
corpus's element lists) and LoRA (vision adapters too) with them."""

from __future__ import annotations

import pytest
import torch

from tests.harness.store.helpers import screenshot
from tests.trainers.conftest import make_prompt
from trainers.grpo.batch import TrainStep, score
from trainers.models.inputs import completion_ids, completion_logprobs, encode_completions
from trainers.models.policy import LoraOptions, PolicyConfig, load_policy
from trainers.training.data import SFTExample
from trainers.training.heldout import score_batch

TARGETS = ('{"type": "click", "x": 10, "y": 20}', '{"type": "done"}',
           '{"type": "type", "text": "Desk lamp"}')


def train_steps(policy, images: bool) -> list[TrainStep]:
    shots = (lambda label: [screenshot(label)]) if images else (lambda label: [])
    prompts = [make_prompt("Click the red button.", shots("red")),
               make_prompt("Open the page of Coffee mug, then add it to the cart.", shots("mug"), history=2),
               make_prompt("Find Desk lamp.", shots("lamp"), history=1)]
    return [TrainStep(p, completion_ids(policy, t), [], 1.0, truncated=False)
            for p, t in zip(prompts, TARGETS, strict=True)]


def every_position(model, policy, steps):
    """The scores as computed before: logits at every position, then the completion's picked."""
    encoded = encode_completions(policy, [s.prompt for s in steps], [s.token_ids for s in steps])
    logits = model(**encoded.inputs, use_cache=False).logits
    mask = encoded.completion_mask[:, 1:]
    picked = torch.log_softmax(logits[:, :-1][mask].float(), dim=-1)
    chosen = picked.gather(-1, encoded.inputs["input_ids"][:, 1:][mask].unsqueeze(-1)).squeeze(-1)
    return chosen, -(picked.exp() * picked).sum(-1).detach(), logits[:, :-1][mask].argmax(-1), encoded


def learn(model, policy, steps) -> None:
    """A step toward the completions: a random init's distributions are near uniform, so a
    position off by one would hardly change a log-prob, and its argmax never hits."""
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.05)
    (-score(model, policy, steps).logprobs.sum()).backward()
    optimizer.step()


def grads(model, values: torch.Tensor) -> dict[str, torch.Tensor]:
    model.zero_grad()
    weights = torch.linspace(-1.0, 2.0, values.numel())  # every token's own weight
    (values * weights).sum().backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(("finetune", "images"), [("full", False), ("lora", True)])
def test_completion_scores_equal_every_positions_and_only_completions_reach_the_head(
        tiny_dir, finetune, images) -> None:
    # no adapter dropout: the two computations must see the same network; a fixed seed for
    # the adapters' random init, whose one learning step decides whether any argmax hits
    torch.manual_seed(0)
    policy = load_policy(PolicyConfig(path=tiny_dir, device="cpu", finetune=finetune,
                                      lora=LoraOptions(dropout=0.0, vision=True)))
    model, steps = policy.model, train_steps(policy, images)
    learn(model, policy, steps)
    rows = []
    head = model.get_output_embeddings()
    hook = head.register_forward_hook(lambda _m, args, _out: rows.append(args[0].shape[:-1].numel()))
    try:
        scored = score(model, policy, steps)
    finally:
        hook.remove()
    expected, entropy, argmax, encoded = every_position(model, policy, steps)
    tokens = sum(len(s.token_ids) for s in steps)
    assert (encoded.inputs["attention_mask"] == 0).any() and expected.numel() == tokens
    assert rows == [tokens]  # the LM head saw the completion positions, not the padded batch
    assert scored.mask.sum(1).tolist() == [len(s.token_ids) for s in steps]
    got = scored.logprobs[scored.mask]
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(scored.entropy[scored.mask], entropy, atol=1e-5, rtol=1e-5)
    assert expected.std() > 0.05  # learned: neighbouring positions' log-probs differ by more than the tolerance
    ours, stock = grads(model, got), grads(model, expected)
    assert ours.keys() == stock.keys() and len(ours) > 0
    for name, grad in ours.items():
        torch.testing.assert_close(grad, stock[name], atol=1e-5, rtol=1e-4, msg=name)

    with torch.no_grad():
        each = completion_logprobs(policy, [s.prompt for s in steps], [s.token_ids for s in steps])
    torch.testing.assert_close(torch.cat(each), expected.detach(), atol=1e-5, rtol=1e-5)
    states = [SFTExample(str(i), s.prompt, t) for i, (s, t) in enumerate(zip(steps, TARGETS, strict=True))]
    figures = score_batch(policy, states)
    hits = argmax == encoded.inputs["input_ids"][:, 1:][encoded.completion_mask[:, 1:]]
    assert figures["tokens"] == tokens and figures["correct"] == int(hits.sum()) and 0 < figures["correct"] < tokens
    assert figures["nll"] == pytest.approx(-float(expected.detach().sum()), abs=1e-4)
