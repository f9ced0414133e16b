"""The pointer head trains on CPU: it learns which screenshot token holds the target."""

from __future__ import annotations

import io
import random

import torch
from PIL import Image, ImageDraw

from harness.prompts import PromptBuilder, PromptConfig
from trainers.models.pointer import (
    POINTER_FILE,
    patch_center,
    patch_index,
    pointer_features,
    predict_points,
)
from trainers.models.policy import PolicyConfig, load_policy

SIZE = (112, 112)  # the tiny preset's budget: a 4 x 4 grid of image tokens
BUILDER = PromptBuilder(PromptConfig(codec="json", system_prompt=False))


def example(rng: random.Random):
    """A white page with two gray squares and one red one; the red one is the target."""
    image = Image.new("RGB", SIZE, "white")
    draw = ImageDraw.Draw(image)
    cells = rng.sample(range(16), 3)
    for k, cell in enumerate(cells):
        x, y = cell % 4 * 28, cell // 4 * 28
        draw.rectangle((x + 4, y + 4, x + 24, y + 24), fill=(220, 30, 30) if k == 0 else (120, 120, 120))
    data = io.BytesIO()
    image.save(data, "PNG")
    target = (cells[0] % 4 * 28 + 14, cells[0] // 4 * 28 + 14)
    prompt = BUILDER.build(instruction="Click the red square.", history=[], images=[data.getvalue()],
                           image_steps=[0], error=None)
    return prompt, target


def test_patch_indices_and_centres_invert() -> None:
    for index in range(12):
        assert patch_index(patch_center(index, (640, 400), (3, 4)), (640, 400), (3, 4)) == index
    assert patch_index((639, 399), (640, 400), (3, 4)) == 11


def test_the_pointer_head_learns_the_target_patch_and_reloads(tiny_dir, tmp_path) -> None:
    rng = random.Random(0)
    train, held_out = [example(rng) for _ in range(48)], [example(rng) for _ in range(24)]
    torch.manual_seed(0)
    policy = load_policy(PolicyConfig(path=tiny_dir, device="cpu", finetune="lora", pointer_head=True))
    with torch.no_grad():  # the model's features stay fixed here; only the head trains
        features = pointer_features(policy, [p for p, _ in train])
    assert features.grids[0] == (4, 4) and features.keys.shape[1] == 16
    targets = torch.tensor([patch_index(t, SIZE, g) for (_, t), g in zip(train, features.grids, strict=True)])
    head = policy.pointer
    optimizer = torch.optim.Adam(head.parameters(), lr=1e-2)

    def accuracy() -> float:
        points = predict_points(policy, [p for p, _ in held_out], [SIZE] * len(held_out))
        return sum(p == t for p, (_, t) in zip(points, held_out, strict=True)) / len(held_out)

    before = accuracy()
    for _ in range(40):
        loss = torch.nn.functional.cross_entropy(head(features.query, features.keys, features.mask), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    after = accuracy()
    assert before < 0.5 and after >= 0.9  # chance is 1/16
    saved = policy.save(tmp_path / "with_head")
    assert (saved / POINTER_FILE).is_file()
    reloaded = load_policy(PolicyConfig(path=saved, device="cpu", pointer_head=True))
    for name, value in head.state_dict().items():
        assert torch.equal(reloaded.pointer.state_dict()[name], value)
