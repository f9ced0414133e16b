"""Policy models: Qwen-VL checkpoints from a local directory, and random-init ones for CPUs.

- ``policy``: ``PolicyConfig`` and ``load_policy`` (model + image-only processor + tokenizer;
  bf16 on GPU, gradient checkpointing, LoRA through peft or full fine-tuning).
- ``inputs``: prompts (``harness.prompts.Prompt``) -> model inputs; completion token ids and
  their log-probabilities under the policy (what SFT, DPO and GRPO build on).
- ``generation``: batched generation with per-token log-probabilities and per-request seeds.
- ``checkpoint`` / ``presets``: ``cua model init`` (tiny, small, base).
- ``tokenizer`` / ``corpus`` / ``chat_template``: the project's own tokenizer and template.
- ``processor``: the image-only processors (no torchvision).

Modules import torch and transformers only where they need them, so the CLI stays quick.
"""
