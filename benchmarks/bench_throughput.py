"""Issue 21, row 5: training throughput. The SFT step and the GRPO update of each preset, as
tokens/s and as model FLOP/s against a matmul measured in the same run.

    python -m benchmarks.bench_throughput                  # tiny and small, about 2-3 min on 2 cores
    python -m benchmarks.bench_throughput --quick          # tiny only, fewer steps (under 30 s)
    python -m benchmarks.bench_throughput --rows /work/runs/corpus/train/sft.parquet --threads 2

**Rows** (``--rows``: any SFT export): by default ``benchmarks/data/throughput_rows.parquet``,
64 rows of issue 21's corpus (its train split at an even stride, so its spread of sites,
depths and prompt lengths; written by ``--write-sample CORPUS/train/sft.parquet``). They are
in the project's default CPU training mode: element-list observation, json codec, no
screenshot (``trainers/configs/sft-corpus.yaml``, ``grpo-tiny.yaml``).

**Cells**, for each preset (a random-init checkpoint, ``init_checkpoint`` at seed 0), each
between two peaks:
- ``peak``: ``gpu_phases.matmul_peak``, fp32 square matmuls on the same threads (best of 5
  rounds), just before and just after the cell; the higher of the two is the denominator of
  the ratio (on a shared machine, the rate the cores gave a plain matmul around that cell).
- ``sft``: ``cua train sft``'s step: TRL's SFTTrainer (with our label-only loss) as ``sft_trainer``
  builds it, with sft-corpus.yaml's ``train`` section (AdamW, cosine schedule) and the
  project's collator, trained for ``warmup`` + ``steps`` steps of ``--batch`` rows in TRL's
  shuffled order. A step's time runs from the end of the step before to its own end, so it
  holds the collation of a batch; its tokens are those the collator encoded for it.
- ``grpo``: ``gpu_phases.update``: GRPO's ``optimize`` (forward, backward, AdamW step; one
  minibatch, no KL reference) over the first ``--batch`` rows as GRPO steps: the prompt, the
  target action's tokens as the completion (what a trained policy samples), their
  log-probabilities under the starting policy as the rollout's, advantages +1 and -1 in turn;
  warmed up, then timed ``steps`` times.

**Model FLOPs** (``gpu_phases.update_flops``, for both): a forward is 2 x language parameters
(tied embeddings once: they are the output projection's matmul) x tokens, plus causal
attention, 2 x layers x width x length^2 per sequence; the backward is twice the forward, so
a step is 3 x (2 P T + 2 L d sum n^2). Tokens are the real ones (the attention mask), never
padding; there is no image, so the vision tower adds nothing. Each cell reports medians over
its timed steps: seconds per step, tokens/s, model GFLOP/s and their ratio to the peak, with
the 1-minute load average before and after it, the torch threads, and the CPU share (this
process's CPU time over the wall time of a step: about the threads on a quiet machine, less
when other processes take the cores, so a reader sees how much a loaded machine slowed it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from transformers import TrainerCallback

from benchmarks.common import fmt, print_table, write_results
from trainers.training.data import SFTCollator

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "benchmarks" / "data" / "throughput_rows.parquet"
SFT_CONFIG = ROOT / "trainers" / "configs" / "sft-corpus.yaml"


class CountingCollator(SFTCollator):
    """The project's SFT collator, keeping each batch's real and padded token counts."""

    def __init__(self, policy: Any) -> None:
        super().__init__(policy)
        self.lengths: list[list[int]] = []
        self.padded: list[int] = []

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        batch = super().__call__(features)
        self.lengths.append(batch["attention_mask"].sum(1).tolist())
        self.padded.append(batch["input_ids"].numel())
        return batch


class StepClock(TrainerCallback):
    """When each optimizer step of TRL's loop ended, in wall and in this process's CPU time
    (the first mark: the loop's start)."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, float]] = []

    def on_train_begin(self, *args: Any, **kwargs: Any) -> None:
        self.marks.append((time.perf_counter(), time.process_time()))

    def on_step_end(self, *args: Any, **kwargs: Any) -> None:
        self.marks.append((time.perf_counter(), time.process_time()))


def write_sample(corpus_rows: Path, out: Path = SAMPLE, count: int = 64) -> Path:
    """``count`` rows of an SFT export at an even stride, as a Parquet file of the same schema."""
    import pyarrow.parquet as pq

    table = pq.read_table(corpus_rows)
    if table.num_rows < count:
        raise ValueError(f"expected at least {count} rows in {corpus_rows}, got {table.num_rows}; "
                         "pass a larger export")
    pq.write_table(table.take([i * table.num_rows // count for i in range(count)]), out, compression="zstd")
    return out


def sft_cell(checkpoint: Path, examples: list[Any], batch: int, warmup: int, steps: int,
             threads: int, tmp: Path) -> dict[str, Any]:
    """``warmup`` + ``steps`` steps of the project's SFT trainer; per-step figures of the timed ones."""
    from benchmarks.gpu_phases import update_flops
    from trainers.training.config import SFTConfig
    from trainers.training.run import Run
    from trainers.training.sft import sft_trainer

    project = yaml.safe_load(SFT_CONFIG.read_text(encoding="utf-8"))
    train = {**project["train"], "max_steps": warmup + steps, "batch_size": batch, "threads": threads,
             "save_steps": warmup + steps + 1, "report_to": ["none"], "trl": {"disable_tqdm": True}}
    config = SFTConfig(out=tmp / "sft", model={**project["model"], "path": checkpoint},
                       data={"store": tmp / "unused-store", "prompt": project["data"]["prompt"]}, train=train)
    run = Run(config, "sft")
    policy = run.policy()
    collator, clock = CountingCollator(policy), StepClock()
    sft_trainer(run, policy, examples, [clock], collator).train()
    seconds = [b[0] - a[0] for a, b in zip(clock.marks, clock.marks[1:], strict=False)][warmup:]
    cpu = [b[1] - a[1] for a, b in zip(clock.marks, clock.marks[1:], strict=False)][warmup:]
    lengths = collator.lengths[warmup:warmup + steps]
    flops = [update_flops(policy.model, {"lengths": n, "patches": []}, "full") for n in lengths]
    return {"seconds_each": seconds, "cpu_seconds_each": cpu, "tokens_each": [sum(n) for n in lengths],
            "flops_each": flops,
            "padded_tokens_each": collator.padded[warmup:warmup + steps],
            "seconds": statistics.median(seconds),
            "tokens_per_s": statistics.median(sum(n) / s for n, s in zip(lengths, seconds, strict=True)),
            "gflops": statistics.median(f / s / 1e9 for f, s in zip(flops, seconds, strict=True)),
            "trainable_params": policy.trainable_parameters()}


def grpo_steps(policy: Any, examples: list[Any]) -> list[Any]:
    """The rows as GRPO training steps (see the module docstring)."""
    from dataclasses import replace

    import torch

    from benchmarks.bench_gpu import with_signal
    from trainers.grpo.batch import TrainStep, score
    from trainers.models.inputs import completion_ids

    steps = [TrainStep(e.prompt, completion_ids(policy, e.target), [], 0.0, truncated=False) for e in examples]
    with torch.no_grad():
        scored = score(policy.model, policy, steps)
    return with_signal([replace(s, logprobs=scored.logprobs[i][scored.mask[i]].tolist())
                        for i, s in enumerate(steps)])


def grpo_cell(checkpoint: Path, examples: list[Any], repeats: int) -> dict[str, Any]:
    """``gpu_phases.update`` over the rows as GRPO steps, timed ``repeats`` times."""
    from benchmarks.gpu_phases import update
    from trainers.models.policy import PolicyConfig, load_policy

    policy = load_policy(PolicyConfig(path=checkpoint, device="cpu", finetune="full"))
    record, _ = update(policy, grpo_steps(policy, examples), "full", None, repeats=repeats)
    flops = 1e12 * record["model_tflops"] * record["seconds"]
    return {"seconds_each": record["seconds_each"], "cpu_seconds_each": record["cpu_seconds_each"],
            "tokens_each": [record["tokens"]] * repeats,
            "flops_each": [flops] * repeats,
            "seconds": record["seconds"], "tokens_per_s": record["tokens"] / record["seconds"],
            "gflops": 1e3 * record["model_tflops"], "trainable_params": record["trainable_params"],
            "loss": record["loss"]}


def measure(args: argparse.Namespace, presets: list[str], tmp: Path) -> list[dict[str, Any]]:
    """Every (preset, trainer) cell, between two matmul peaks."""
    import torch

    from benchmarks.gpu_phases import matmul_peak
    from trainers.models.checkpoint import ModelInitConfig, init_checkpoint
    from trainers.training.data import read_export, sft_examples

    torch.set_num_threads(args.threads)
    examples = sft_examples(read_export(args.rows), args.rows)
    if len(examples) < args.batch:
        raise SystemExit(f"--rows: expected at least --batch {args.batch} rows, got {len(examples)} in {args.rows}")
    cells = []
    for preset in presets:
        made = init_checkpoint(ModelInitConfig(out=tmp / preset, preset=preset, seed=0))
        for trainer in ("sft", "grpo"):
            print(f"[bench_throughput] {preset} {trainer}", file=sys.stderr, flush=True)
            load_before = os.getloadavg()[0]
            peaks = [matmul_peak(torch.device("cpu"), torch.float32, args.matmul)]
            if trainer == "sft":
                cell = sft_cell(made.path, examples, args.batch, 1, args.steps, args.threads, tmp / preset)
            else:
                cell = grpo_cell(made.path, examples[:args.batch], args.steps)
            peaks.append(matmul_peak(torch.device("cpu"), torch.float32, args.matmul))
            peak_gflops = 1e3 * max(p["tflops"] for p in peaks)
            cell["cpu_share"] = statistics.median(c / s for c, s in zip(cell["cpu_seconds_each"], cell["seconds_each"],
                                                                        strict=True))
            cells.append({"preset": preset, "trainer": trainer, "batch": args.batch, "threads": args.threads,
                          "params": {"language": made.parameters.language, "vision": made.parameters.vision}, **cell,
                          "peak_gflops": peak_gflops, "peaks": peaks, "ratio": cell["gflops"] / peak_gflops,
                          "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)})
    return cells


def table(cells: list[dict[str, Any]]) -> None:
    print_table("Training throughput (model FLOPs against a fp32 matmul of the same run)",
                ["preset / trainer", "s/step", "tokens/step", "tokens/s", "model GFLOP/s", "matmul GFLOP/s",
                 "ratio", "CPU share", "load before/after", "threads"],
                [(f"{c['preset']} {c['trainer']}", fmt(c["seconds"], 2), fmt(statistics.median(c["tokens_each"]), 0),
                  fmt(c["tokens_per_s"], 0), fmt(c["gflops"], 2), fmt(c["peak_gflops"], 1),
                  fmt(100 * c["ratio"], 1, "%"), fmt(c["cpu_share"], 2),
                  f"{c['load_before']:.2f} / {c['load_after']:.2f}",
                  str(c["threads"])) for c in cells])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny only, batch 4, 2 timed steps, 512^3 matmuls")
    parser.add_argument("--presets", default="tiny,small", help="comma-separated presets (default tiny,small)")
    parser.add_argument("--rows", type=Path, default=SAMPLE, help="an SFT export (.parquet)")
    parser.add_argument("--batch", type=int, default=None, help="rows per step (default 16, quick 4)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per cell (default 4, quick 2)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as the CPU configs)")
    parser.add_argument("--matmul", type=int, default=None, help="matmul size (default 1024, quick 512)")
    parser.add_argument("--write-sample", type=Path, default=None, metavar="CORPUS_SFT_PARQUET",
                        help="write the default --rows sample from this export and stop")
    parser.add_argument("--out", type=Path, default=None, help="result JSON (default "
                        "benchmarks/results/bench_throughput.json; quick: runs/bench-quick/)")
    args = parser.parse_args(argv)
    if args.write_sample is not None:
        print(f"wrote {write_sample(args.write_sample)}")
        return {}
    args.batch = args.batch or (4 if args.quick else 16)
    args.steps = args.steps or (2 if args.quick else 4)
    args.matmul = args.matmul or (512 if args.quick else 1024)
    presets = ["tiny"] if args.quick else [p.strip() for p in args.presets.split(",") if p.strip()]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
        cells = measure(args, presets, Path(tmp))
    import torch

    payload = {"command": " ".join(["python -m benchmarks.bench_throughput", *(argv or sys.argv[1:])]),
               "rows": str(args.rows), "torch": torch.__version__, "wall_s": round(time.perf_counter() - started, 1),
               "cells": cells}
    path = write_results("bench_throughput", payload, args.out, quick=args.quick)
    table(cells)
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    main()
