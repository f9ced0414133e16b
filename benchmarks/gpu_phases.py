"""What ``bench_gpu`` measures, one function per phase; every model, loss and update is the
project's own (``trainers.models``, ``trainers.grpo``).

- ``matmul_peak``: the card's dense throughput (TFLOP/s) from square matmuls, the MFU
  denominator measured in the same run instead of read off a spec sheet.
- ``correctness``: the tiny model's GRPO update on the device against the CPU's, same batch:
  the losses of two successive updates within bf16 tolerance, and fp32 greedy tokens equal.
- ``generation``: ``Generator`` (the ``hf:`` agent's batched ``generate`` with the KV cache)
  tokens per second at each batch size.
- ``update``: one ``optimize`` call (forward, backward and AdamW step over the whole batch as
  one minibatch) timed after a warm-up, with peak memory and MFU.
- ``largest_batch``: the batch doubled until it no longer fits (or the budget ends).

MFU counts model FLOPs: a forward is 2 x parameters x tokens plus attention (2 x layers x
width x length^2 a causal sequence; the vision tower's window and full-attention blocks
alike); full fine-tuning's backward is twice the forward, LoRA's once (activation gradients
only), the frozen vision tower's nothing. Checkpointing's recomputation is not counted, so
checkpointed runs show the MFU the same work would have without it.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from trainers.grpo.batch import TrainStep
from trainers.grpo.config import LossSpec
from trainers.grpo.optimize import optimize
from trainers.models.checkpoint import count_parameters
from trainers.models.generation import GenerationRequest, Generator
from trainers.models.inputs import encode_completions

#: |device - cpu| <= ABS + REL x |cpu| for a bf16 loss against the fp32 CPU one
BF16_ABS, BF16_REL = 0.02, 0.02


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_gib(device: torch.device) -> float | None:
    """The most memory the device held since ``reset_peak`` (None off CUDA)."""
    return torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None


def free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def is_oom(exc: BaseException) -> bool:
    """An allocation failure (CUDA's own error, or an allocator's RuntimeError)."""
    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def matmul_peak(device: torch.device, dtype: torch.dtype, size: int, rounds: int = 5) -> dict[str, Any]:
    """The best of ``rounds`` timings of ten ``size`` x ``size`` matmuls, in TFLOP/s."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    sync(device)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(10):
            a @ b
        sync(device)
        best = min(best, time.perf_counter() - start)
    return {"tflops": 10 * 2 * size**3 / best / 1e12, "size": size, "dtype": str(dtype)}


def _update_losses(policy: Any, steps: Sequence[TrainStep], updates: int) -> list[dict[str, float]]:
    """The figures of ``updates`` successive GRPO updates over ``steps`` (one minibatch each,
    fixed minibatch order), so the second loss shows that the first step moved the same way."""
    spec = LossSpec(epochs=1, minibatch=len(steps), kl_coef=0.0, learning_rate=1e-3)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=spec.learning_rate)
    shuffle = torch.Generator().manual_seed(0)
    return [optimize(policy, None, steps, spec, optimizer, shuffle, update=u) for u in range(updates)]


def correctness(tiny_dir: Any, steps: Sequence[TrainStep], device: torch.device) -> dict[str, Any]:
    """The device's GRPO update (bf16) and greedy tokens (fp32) against the CPU's (fp32).

    Every step gets advantage +1, so the loss is about -1 (minus the mean ratio) however many
    steps there are, never a near-zero sum of opposite terms that any difference hides in.
    TF32 is off for the fp32 comparison: cuDNN would otherwise run the vision tower's patch
    convolution in TF32 on Ampere and newer cards."""
    from dataclasses import replace

    from trainers.models.policy import PolicyConfig, load_policy

    def policy(where: str, dtype: str, finetune: str = "full") -> Any:
        return load_policy(PolicyConfig(path=tiny_dir, device=where, dtype=dtype, finetune=finetune))  # type: ignore[arg-type]

    steps = [replace(s, advantage=1.0) for s in steps]
    torch.manual_seed(0)
    cpu = [f["loss"] for f in _update_losses(policy("cpu", "float32"), steps, 2)]
    torch.manual_seed(0)
    dev = [f["loss"] for f in _update_losses(policy(str(device), "bfloat16"), steps, 2)]
    loss_ok = all(abs(d - c) <= BF16_ABS + BF16_REL * abs(c) for c, d in zip(cpu, dev, strict=True))
    requests = [GenerationRequest(s.prompt, max_new_tokens=16) for s in steps]
    cpu_tokens = [g.token_ids for g in Generator(policy("cpu", "float32", "none")).generate(requests)]
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        dev_tokens = [g.token_ids for g in Generator(policy(str(device), "float32", "none")).generate(requests)]
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    return {"passed": loss_ok and cpu_tokens == dev_tokens, "loss_cpu_fp32": cpu, "loss_device_bf16": dev,
            "tolerance": f"{BF16_ABS} + {BF16_REL} x |cpu|", "losses_agree": loss_ok,
            "greedy_tokens_equal": cpu_tokens == dev_tokens, "steps": len(steps),
            "greedy_tokens": sum(len(t) for t in cpu_tokens)}


def generation(policy: Any, prompts: Sequence[Any], batch_sizes: Sequence[int], new_tokens: int,
               left: Callable[[], float]) -> dict[str, Any]:
    """Tokens per second of one batched ``generate`` at each batch size, while time is left."""
    generator = Generator(policy)
    device = policy.device
    generator.generate([GenerationRequest(prompts[0], max_new_tokens=2)])  # kernels, allocator
    out: dict[str, Any] = {}
    for size in batch_sizes:
        if left() <= 0:
            out[str(size)] = {"status": "skipped", "reason": "out of budget"}
            continue
        requests = [GenerationRequest(prompts[i % len(prompts)], max_new_tokens=new_tokens)
                    for i in range(size)]
        free(device)
        reset_peak(device)
        try:
            sync(device)
            start = time.perf_counter()
            results = generator.generate(requests)
            sync(device)
        except Exception as exc:
            if not is_oom(exc):
                raise
            out[str(size)] = {"status": "oom", "reason": str(exc).splitlines()[0]}
            break
        seconds = time.perf_counter() - start
        tokens = sum(len(r.token_ids) for r in results)
        out[str(size)] = {"status": "ok", "tokens_per_s": tokens / seconds, "seconds": seconds,
                          "new_tokens": tokens, "prompt_tokens": len(results[0].prompt_token_ids),
                          "peak_gib": peak_gib(device)}
    return out


def batch_shape(policy: Any, steps: Sequence[TrainStep]) -> dict[str, Any]:
    """Token counts of ``steps`` as the model sees them: sequence lengths and image patches."""
    encoded = encode_completions(policy, [s.prompt for s in steps], [s.token_ids for s in steps])
    lengths = encoded.inputs["attention_mask"].sum(1).tolist()
    grid = encoded.inputs.get("image_grid_thw")
    patches = [int(t * h * w) for t, h, w in grid.tolist()] if grid is not None else []
    return {"lengths": lengths, "patches": patches,
            "completion_tokens": int(encoded.completion_mask.sum())}


def update_flops(model: Any, shape: dict[str, Any], finetune: str) -> float:
    """Model FLOPs of one update over a batch of ``shape`` (see the module docstring)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = base.config
    text, vision = config.text_config, config.vision_config
    params = count_parameters(base)
    tokens = sum(shape["lengths"])
    attention = sum(2 * text.num_hidden_layers * text.hidden_size * n * n for n in shape["lengths"])
    language = 2 * params.language * tokens + attention
    full_blocks = len(getattr(vision, "fullatt_block_indexes", None) or []) or vision.depth
    window = (vision.window_size // vision.patch_size) ** 2 if hasattr(vision, "window_size") else 0
    patches = sum(shape["patches"])
    vision_attention = 4 * vision.hidden_size * (full_blocks * sum(p * p for p in shape["patches"])
                                                 + (vision.depth - full_blocks) * patches * window)
    vision_flops = 2 * params.vision * patches + vision_attention
    return (3 if finetune == "full" else 2) * language + vision_flops


def update(policy: Any, steps: Sequence[TrainStep], finetune: str, peak_tflops: float | None,
           repeats: int = 1) -> tuple[dict[str, Any], Any]:
    """One warmed-up GRPO update over ``steps`` (one minibatch), timed ``repeats`` times
    (``seconds``: the median; ``seconds_each``: every timing, ``cpu_seconds_each``: this
    process's CPU time in each); the figures and the optimizer (kept for ``largest_batch``)."""
    device = policy.device
    spec = LossSpec(epochs=1, minibatch=len(steps), kl_coef=0.0, learning_rate=1e-6)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=spec.learning_rate)
    shuffle = torch.Generator().manual_seed(0)
    optimize(policy, None, steps[:1], spec, optimizer, shuffle, update=0)  # kernels, AdamW state
    free(device)
    reset_peak(device)
    timings, cpu = [], []
    for number in range(1, repeats + 1):
        sync(device)
        start, start_cpu = time.perf_counter(), time.process_time()
        figures = optimize(policy, None, steps, spec, optimizer, shuffle, update=number)
        sync(device)
        timings.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    seconds = statistics.median(timings)
    shape = batch_shape(policy, steps)
    flops = update_flops(policy.model, shape, finetune)
    tflops = flops / seconds / 1e12
    return {"status": "ok", "seconds": seconds, "seconds_each": timings, "cpu_seconds_each": cpu,
            "peak_gib": peak_gib(device), "batch": len(steps),
            "tokens": sum(shape["lengths"]), "image_patches": sum(shape["patches"]),
            "trainable_params": policy.trainable_parameters(), "model_tflops": tflops,
            "attention": getattr(policy.model.config, "_attn_implementation", None),
            "mfu": tflops / peak_tflops if peak_tflops else None, "loss": figures.get("loss")}, optimizer


def largest_batch(policy: Any, optimizer: Any, steps: Sequence[TrainStep], start: int, cap: int,
                  left: Callable[[], float]) -> dict[str, Any]:
    """The largest batch (doubling from ``start``, at most ``cap``) whose update fits."""
    device = policy.device
    tried: dict[str, Any] = {}
    fits = None
    size = start
    shuffle = torch.Generator().manual_seed(0)
    while size <= cap:
        if left() <= 0:
            tried[str(size)] = "skipped: out of budget"
            break
        batch = [steps[i % len(steps)] for i in range(size)]
        spec = LossSpec(epochs=1, minibatch=size, kl_coef=0.0, learning_rate=1e-6)
        free(device)
        reset_peak(device)
        begin = time.perf_counter()
        try:
            optimize(policy, None, batch, spec, optimizer, shuffle, update=0)
            sync(device)
        except Exception as exc:
            if not is_oom(exc):
                raise
            optimizer.zero_grad(set_to_none=True)
            tried[str(size)] = "oom"
            break
        tried[str(size)] = {"seconds": time.perf_counter() - begin, "peak_gib": peak_gib(device)}
        fits = size
        size *= 2
    free(device)
    return {"status": "ok", "largest": fits, "cap": cap, "tried": tried}
