"""The dense held-out metric against numbers worked by hand: a fake at the model seam whose
logits put ``BUMP`` on the next input token (a teacher), except where told to miss, over
real prompts, the real processor and the real encoding of prompt + target."""

from __future__ import annotations

import dataclasses
import json
import math
from types import SimpleNamespace

import torch
from typer.testing import CliRunner

from harness.cli import app
from tests.harness.store.helpers import screenshot
from tests.trainers.conftest import make_prompt
from trainers.models.inputs import completion_ids
from trainers.training.config import HeldoutSpec
from trainers.training.data import SFTExample
from trainers.training.heldout import HeldoutProbe

BUMP = 10.0


class Teacher(torch.nn.Module):
    """Logits 0 everywhere but ``BUMP`` on the token that follows; in the rows of ``miss``, the
    prediction of the last token (the target's ``<|im_end|>``) goes to token 0 instead."""

    def __init__(self, vocab: int, miss: set[int]) -> None:
        super().__init__()
        self.vocab, self.miss = vocab, miss
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # gives the policy a device

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **_: object) -> SimpleNamespace:
        logits = torch.zeros(*input_ids.shape, self.vocab)
        logits[:, :-1].scatter_(-1, input_ids[:, 1:].unsqueeze(-1), BUMP)
        for row in self.miss:
            last = int(attention_mask[row].sum()) - 1
            logits[row, last - 1] = 0.0
            logits[row, last - 1, 0] = BUMP
        return SimpleNamespace(logits=logits)


def test_exact_match_token_accuracy_and_nll_by_hand(tiny_policy) -> None:
    states = [SFTExample("a", make_prompt("Click the red button.", [screenshot("red")]),
                         '{"type": "click", "x": 10, "y": 20}'),
              SFTExample("b", make_prompt("Find Desk lamp.", [screenshot("lamp")], history=1),
                         '{"type": "done"}')]
    vocab = len(tiny_policy.tokenizer)
    n_a, n_b = (len(completion_ids(tiny_policy, s.target)) for s in states)
    probe = HeldoutProbe(HeldoutSpec(states="unused.parquet", batch_size=2), states)

    perfect = dataclasses.replace(tiny_policy, model=Teacher(vocab, miss=set()))
    figures = probe.measure(perfect)
    hit = -math.log(math.exp(BUMP) / (math.exp(BUMP) + vocab - 1))  # the NLL of a bumped token
    assert (figures["heldout_exact_match"], figures["heldout_token_accuracy"]) == (1.0, 1.0)
    assert figures["heldout_nll"] == round(hit, 4) and figures["heldout_states"] == 2

    # state b misses its <|im_end|>: greedy decoding would not stop there, so not an exact match
    missing = dataclasses.replace(tiny_policy, model=Teacher(vocab, miss={1}))
    figures = probe.measure(missing)  # one batch: row b is right-padded or pads row a
    miss = -math.log(1 / (math.exp(BUMP) + vocab - 1))  # its logit is 0 against one BUMP
    assert figures["heldout_exact_match"] == 0.5
    assert figures["heldout_token_accuracy"] == round((n_a + n_b - 1) / (n_a + n_b), 4)
    assert figures["heldout_nll"] == round(((n_a + n_b - 1) * hit + miss) / (n_a + n_b), 4)


def test_cua_train_heldout_scores_a_checkpoint_on_a_store(tiny_dir, oracle_store) -> None:
    result = CliRunner().invoke(app, ["train", "heldout", "--model", str(tiny_dir), "--states",
                                      str(oracle_store), "--max-states", "3", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    line = json.loads(result.output.strip().splitlines()[-1])
    assert line["heldout_states"] == 3 and 0.0 <= line["heldout_token_accuracy"] <= 1.0
    assert line["heldout_nll"] > 0  # a random-init model knows none of the oracle's replies
    missing = CliRunner().invoke(app, ["train", "heldout", "--model", str(tiny_dir), "--states",
                                       str(oracle_store / "nope.parquet")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
