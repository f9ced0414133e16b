"""The project's own byte-level BPE tokenizer, with Qwen's special and vision tokens.

``build_tokenizer()`` trains a byte-level BPE (the ``tokenizers`` library) on
``trainers.models.corpus.corpus()`` with Qwen2's pre-tokenizer (its split pattern: single
digits, words with a leading space or punctuation, runs of newlines), then appends Qwen's
special tokens after the learned vocabulary, as Qwen's own tokenizer does. So a Qwen-style
chat template, the Qwen2.5-VL processor (``<|image_pad|>`` expanded per image) and the model
config's token ids all work unchanged. Every byte is in the vocabulary: any text round-trips.

The result is the same on every run: a fixed corpus, no randomness in BPE training; the
tests build it in two processes and compare.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
from tokenizers.trainers import BpeTrainer

from trainers.models.corpus import corpus
from trainers.models.presets import DEFAULT_VOCAB

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

#: Qwen2's pre-tokenizer split pattern.
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
#: Qwen2.5-VL's special tokens, in Qwen's order (ids follow the learned vocabulary).
SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
)
#: Added but not special (decoding keeps them): the qwen codec's tool-call tags.
ADDED_TOKENS = ("<tool_call>", "</tool_call>")
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"


def build_tokenizer(vocab_size: int = DEFAULT_VOCAB) -> Tokenizer:
    """Train the byte-level BPE on the project corpus and add Qwen's special tokens."""
    if vocab_size < 512:
        raise ValueError(f"expected a vocab_size of at least 512 (256 bytes + merges), got {vocab_size}")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(corpus(), trainer)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED_TOKENS])
    return tokenizer


def hf_tokenizer(tokenizer: Tokenizer) -> PreTrainedTokenizerBase:
    """The transformers tokenizer (Qwen2Tokenizer, as Qwen checkpoints use) around ``tokenizer``."""
    from transformers import Qwen2Tokenizer

    # unk_token=None: a byte-level BPE has no unknown token (transformers' stub says str only)
    return Qwen2Tokenizer(tokenizer_object=tokenizer, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN,
                          unk_token=None, bos_token=None, errors="replace",  # type: ignore[arg-type]
                          clean_up_tokenization_spaces=False)
