"""The project's own tokenizer: deterministic, Qwen's special tokens, lossless on codec text."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys

import pytest
from transformers import AutoTokenizer

from harness.codecs import CODECS, get_codec
from trainers.models.corpus import SCREEN_SIZES, sample_action
from trainers.models.tokenizer import ADDED_TOKENS, SPECIAL_TOKENS, build_tokenizer

HASH = "import hashlib; from trainers.models.tokenizer import build_tokenizer; " \
       "print(hashlib.sha256(build_tokenizer().to_str().encode()).hexdigest())"


@pytest.fixture(scope="module")
def tokenizer(tiny_dir):
    return AutoTokenizer.from_pretrained(tiny_dir)


def test_the_tokenizer_is_the_same_in_another_process(tiny_dir) -> None:
    # BPE ties and Rust hash maps could differ per process; the saved file must not.
    other = subprocess.run([sys.executable, "-c", HASH], capture_output=True, text=True, check=True)
    here = hashlib.sha256(build_tokenizer().to_str().encode()).hexdigest()
    assert other.stdout.strip() == here


def test_qwen_special_tokens_follow_the_learned_vocabulary(tokenizer) -> None:
    ids = [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS + ADDED_TOKENS]
    assert ids == list(range(ids[0], ids[0] + len(ids)))  # Qwen's order, after the BPE vocabulary
    assert ids[-1] == len(tokenizer) - 1
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    text = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>hi<|im_end|>"
    pieces = tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])
    for special in ("<|im_start|>", "<|vision_start|>", "<|image_pad|>", "<|vision_end|>", "<|im_end|>"):
        assert special in pieces  # each one token, never split
    assert tokenizer.decode(tokenizer("<tool_call>x</tool_call>")["input_ids"],
                            skip_special_tokens=True) == "<tool_call>x</tool_call>"


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize("coordinates", ["pixel", "normalized"])
def test_codec_outputs_round_trip(tokenizer, codec_name, coordinates) -> None:
    codec = get_codec(codec_name, coordinates=coordinates)
    rng = random.Random(f"{codec_name}{coordinates}")  # other draws than the corpus's own
    for _ in range(60):
        size = rng.choice(SCREEN_SIZES)
        action = sample_action(rng, size)
        text = codec.encode(action, size=size)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        back = tokenizer.decode(ids, skip_special_tokens=True)
        assert back == text
        assert codec.decode(back, size=size) == codec.decode(text, size=size)


def test_any_text_round_trips_and_codec_text_is_compact(tokenizer) -> None:
    for text in ("naïve café 漢字 🙂 \t\r\n", "\x00\x7f weird bytes", "  leading and trailing  "):
        assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    action = '{"type": "click", "x": 640, "y": 360}'
    # learned from the codecs: far fewer tokens than bytes (digits stay one token each)
    assert len(tokenizer(action)["input_ids"]) <= 24 < len(action)  # 37 bytes, 6 of them digits
