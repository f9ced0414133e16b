"""The image-only processor and the chat template, on real screenshots and real prompts."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from transformers import AutoImageProcessor

from tests.harness.store.helpers import screenshot
from tests.trainers.conftest import make_prompt
from trainers.models.inputs import encode_prompts, open_image, render
from trainers.models.processor import ImageOnlyQwen2_5_VLProcessor, load_processor

VISION = "<|vision_start|><|image_pad|><|vision_end|>"


@pytest.mark.asyncio(loop_scope="session")
async def test_pixels_match_the_stock_image_processor_on_real_screenshots(tiny_dir, fsm_screenshot) -> None:
    processor = load_processor(tiny_dir)
    assert isinstance(processor, ImageOnlyQwen2_5_VLProcessor)
    assert not hasattr(processor, "video_processor")
    stock = AutoImageProcessor.from_pretrained(tiny_dir)  # transformers' own, from the saved config
    images = [open_image(fsm_screenshot), open_image(screenshot("cart", (640, 400))),
              open_image(screenshot("home"))]
    assert images[0].size == (1024, 768)  # a real Chromium capture of the shop's home page
    text = [f"{VISION}a", f"{VISION}{VISION}b"]
    ours = processor(text=text, images=images, return_tensors="np", padding=True)
    theirs = stock(images, return_tensors="np")
    assert np.array_equal(ours["pixel_values"], theirs["pixel_values"])
    assert np.array_equal(ours["image_grid_thw"], theirs["image_grid_thw"])
    pads = (ours["input_ids"] == processor.image_token_id).sum(axis=1)
    merged = theirs["image_grid_thw"].prod(axis=1) // 4
    assert pads.tolist() == [merged[0], merged[1] + merged[2]]
    assert max(merged) <= 16  # the tiny preset's budget: a screenshot is a handful of tokens


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None,
                    reason="the stock Qwen2.5-VL processor needs torchvision (for its video processor)")
def test_same_batch_as_the_stock_processor_where_it_runs(tiny_dir) -> None:
    from transformers import AutoProcessor

    images = [open_image(screenshot("cart", (640, 400)))]
    ours = load_processor(tiny_dir)(text=[f"{VISION}x"], images=images, return_tensors="np")
    theirs = AutoProcessor.from_pretrained(tiny_dir)(text=[f"{VISION}x"], images=images, return_tensors="np")
    for key in ("input_ids", "pixel_values", "image_grid_thw"):
        assert np.allclose(ours[key], theirs[key], atol=1e-5), key


def test_pixel_budget_is_configurable(tiny_dir) -> None:
    image = [open_image(screenshot("cart", (640, 400)))]
    small = load_processor(tiny_dir, max_pixels=28 * 28 * 4)(text=[VISION], images=image)
    large = load_processor(tiny_dir, min_pixels=28 * 28 * 40, max_pixels=28 * 28 * 64)(text=[VISION], images=image)
    assert small["image_grid_thw"][0].prod() // 4 <= 4
    assert 40 <= large["image_grid_thw"][0].prod() // 4 <= 64


def test_chat_template_renders_the_prompt_builder_the_qwen_way(tiny_dir) -> None:
    processor = load_processor(tiny_dir)
    prompt = make_prompt("Find Desk lamp.", [screenshot("a"), screenshot("b")], history=1)
    text = render(processor, prompt.messages)
    system = prompt.messages[0]["content"][0]["text"]
    user = prompt.messages[1]["content"][2]["text"]
    assert text == (f"<|im_start|>system\n{system}<|im_end|>\n"
                    f"<|im_start|>user\n{VISION}{VISION}{user}<|im_end|>\n<|im_start|>assistant\n")
    assert "1. {\"type\": \"click\", \"x\": 10, \"y\": 20}" in user
    assert render(processor, prompt.messages, add_generation_prompt=False).endswith("<|im_end|>\n")


def test_assistant_tokens_are_marked_for_training(tiny_dir) -> None:
    processor = load_processor(tiny_dir)
    messages = [{"role": "user", "content": [{"type": "text", "text": "Click it."}]},
                {"role": "assistant", "content": [{"type": "text", "text": '{"type": "done"}'}]}]
    out = processor.apply_chat_template(messages, tokenize=True, return_dict=True,
                                        return_assistant_tokens_mask=True)
    ids = np.array(out["input_ids"]).reshape(-1)
    mask = np.array(out["assistant_masks"]).reshape(-1).astype(bool)
    assert processor.tokenizer.decode(ids[mask]) == '{"type": "done"}<|im_end|>'


def test_encoded_prompts_are_left_padded_with_every_image(tiny_policy, prompts) -> None:
    batch = encode_prompts(tiny_policy, prompts)
    assert batch["attention_mask"][:, -1].all() and not batch["attention_mask"][:, 0].all()
    assert batch["image_grid_thw"].shape[0] == sum(len(p.images) for p in prompts)


def test_a_hub_style_checkpoint_layout_loads_too(tiny_dir, tmp_path) -> None:
    """Qwen's hub checkpoints keep the processor in preprocessor_config.json (min/max_pixels
    at the top level) and the template in chat_template.json."""
    import json
    import shutil

    hub = shutil.copytree(tiny_dir, tmp_path / "hub")
    (hub / "processor_config.json").unlink()
    template = (hub / "chat_template.jinja").read_text()
    (hub / "chat_template.jinja").unlink()
    (hub / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    (hub / "preprocessor_config.json").write_text(json.dumps({
        "min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2,
        "merge_size": 2, "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711],
        "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor"}))
    processor = load_processor(hub, max_pixels=28 * 28 * 9)
    assert processor.image_processor.size["longest_edge"] == 28 * 28 * 9  # the override wins
    assert load_processor(hub).image_processor.size == {"shortest_edge": 3136, "longest_edge": 12845056}
    out = processor(text=[VISION], images=[open_image(screenshot("x", (640, 400)))])
    assert out["image_grid_thw"][0].prod() // 4 <= 9
