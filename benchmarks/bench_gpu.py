"""Issue 26: the GPU path in one run: correctness, the ``gpu`` tests, and a 3B-class
Qwen2.5-VL's generation and GRPO update (time, peak memory, MFU, the largest batch).

    python -m benchmarks.bench_gpu --budget-s 300 --out $OUT/bench_gpu.json      # on a GPU
    python -m benchmarks.bench_gpu --device cpu --preset tiny                   # CI, < 1 min

Phases, in order (``benchmarks.gpu_phases`` has how each is measured):

1. ``peak``: the card's bf16 matmul TFLOP/s (fp32 on the CPU), the MFU denominator.
2. ``correctness``: the tiny model's GRPO update on the device against the CPU's.
3. ``gpu_tests``: every test file holding a ``gpu`` mark, run by pytest in a subprocess
   (``-m gpu``; per-test outcomes from its JUnit XML). ``--confcutdir tests/trainers``
   keeps the root conftest (Chromium, aiohttp fixtures) out, as no gpu test needs it.
4. ``generate``: tokens/s at batch sizes 1, 8, 32 (the 3B preset) with the KV cache.
5. ``update/<finetune>[+ckpt]``: a GRPO update over the recorded batch
   (``benchmarks/data/gpu_batch``: prompts, 1280x800 screenshots, completions), LoRA and
   full fine-tuning, each with and without gradient checkpointing.
6. ``largest/<finetune>+ckpt``: the largest batch whose update fits.

The model is ``trainers.models.real_shapes.random_policy("qwen2.5-vl-3b")`` (the released
config, random weights, bf16, the image-only processor) for ``--preset 3b`` and the tiny
checkpoint for ``--preset tiny``. Every phase runs under ``--budget-s``: one that is not
expected to finish in what is left is recorded as skipped with the reason; one that runs
out of memory is recorded as ``oom`` and the next one runs; any other failure is recorded
with its error, so one run always writes its JSON and table.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Preset:
    """How big each phase is."""

    steps: int | None  # recorded steps in the update batch (None: all)
    check_steps: int  # steps in the correctness batch
    gen_sizes: tuple[int, ...]
    new_tokens: int
    matmul: int
    largest_start: int  # the first batch the largest-batch search tries (then doubled)
    largest_cap: int
    image_scale: float  # screenshots shrunk by this (1: as recorded, 1280x800)
    estimates: dict[str, float]  # seconds a phase needs at least, to start it


PRESETS = {
    "3b": Preset(None, 2, (1, 8, 32), 32, 8192, 16, 256, 1.0, {"peak": 5, "correctness": 20, "gpu_tests": 60,
                 "generate": 45, "update": 40, "largest": 30}),
    "tiny": Preset(2, 1, (1, 2), 4, 512, 1, 2, 0.25, {"peak": 1, "correctness": 3, "gpu_tests": 15,
                   "generate": 2, "update": 2, "largest": 2}),
}
#: the gpu tests' share of a run (each test also stops at 90 s), so the 3B phases still run
TESTS_LIMIT_S = 180.0
VARIANTS = (("lora", True), ("lora", False), ("full", True), ("full", False))


class Budget:
    """Wall-clock seconds left of ``--budget-s``, and each phase's record."""

    def __init__(self, seconds: float, only: frozenset[str] | None = None) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds
        self.only = only
        self.phases: dict[str, dict[str, Any]] = {}

    def left(self) -> float:
        return self.end - time.monotonic()

    def run(self, name: str, estimate: float, work: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """``work()``'s record under ``name``; skipped when less than ``estimate`` s are left,
        or when ``--phases`` leaves it out (then it is not recorded)."""
        import torch

        if self.only is not None and name not in self.only:
            return None
        if self.left() < estimate:
            self.phases[name] = {"status": "skipped", "reason": f"needs about {estimate:.0f} s, "
                                 f"{max(self.left(), 0):.0f} s left of --budget-s {self.seconds:.0f}"}
            return None
        start = time.monotonic()
        print(f"[bench_gpu] {name} ({self.left():.0f} s left)", file=sys.stderr, flush=True)
        try:
            record = {"status": "ok", **work()}
        except Exception as exc:
            from benchmarks.gpu_phases import is_oom

            kind = "oom" if is_oom(exc) else "error"
            lines = traceback.format_exception(exc)
            record = {"status": kind, "reason": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                      **({"traceback": "".join(lines[-6:])} if kind == "error" else {})}
        finally:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        record["seconds_phase"] = time.monotonic() - start
        self.phases[name] = record
        return record


def gpu_test_files() -> list[str]:
    """Test files that hold a ``gpu`` mark."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                  if "mark.gpu" in p.read_text(encoding="utf-8"))


def run_gpu_tests(timeout: float) -> dict[str, Any]:
    """``pytest -m gpu`` over ``gpu_test_files()`` in a subprocess; outcome per test."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "--timeout=90",
                   "--confcutdir", str(ROOT / "tests" / "trainers"), f"--junitxml={report}",
                   *gpu_test_files()]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              check=False, env={**_env(), "PYTHONPATH": str(ROOT)})
        tests = _junit(report) if report.is_file() else {}
    counts: dict[str, int] = {}
    for outcome in tests.values():
        counts[outcome["outcome"]] = counts.get(outcome["outcome"], 0) + 1
    return {"exit_code": done.returncode, "counts": counts, "tests": tests,
            "output_tail": (done.stdout + done.stderr)[-3000:], "passed": done.returncode in (0, 5)
            and not counts.get("failed") and not counts.get("error")}


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def _junit(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                message = (found.get("message") or "")[:300]
        out[name] = {"outcome": outcome, "message": message, "seconds": case.get("time", "")}
    return out


def machine(device: Any) -> dict[str, Any]:
    import importlib.metadata

    import torch

    versions = {}
    for name in ("torch", "transformers", "peft", "accelerate", "tokenizers"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    card = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    memory = torch.cuda.get_device_properties(device).total_memory / 2**30 if device.type == "cuda" else None
    return {"device": str(device), "card": card, "memory_gib": memory, "cuda": torch.version.cuda,
            "python": platform.python_version(), **versions,
            "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def with_signal(steps: list[Any]) -> list[Any]:
    """``steps`` with advantages +1, -1, +1, ...: the recorded random policy earned no
    reward, so every group is flat and GRPO's own advantages are all zero, which would make
    the loss and every gradient zero (a correctness check that cannot fail)."""
    from dataclasses import replace

    return [replace(s, advantage=1.0 if i % 2 == 0 else -1.0) for i, s in enumerate(steps)]


def measure(args: argparse.Namespace, budget: Budget, tmp: Path) -> dict[str, Any]:
    """Every phase in order (the tiny checkpoint under ``tmp``); returns the run's context
    (the phases are in ``budget``)."""
    import torch

    from benchmarks import gpu_phases as ph
    from benchmarks.gpu_batch import load_steps
    from trainers.models.checkpoint import ModelInitConfig, init_checkpoint

    preset = PRESETS[args.preset]
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    steps = with_signal(load_steps(args.batch, preset.steps, preset.image_scale))
    est = preset.estimates
    tiny = init_checkpoint(ModelInitConfig(out=tmp / "tiny", preset="tiny", seed=0)).path
    peak = budget.run("peak", est["peak"], lambda: ph.matmul_peak(device, dtype, preset.matmul))
    peak_tflops = peak.get("tflops") if peak else None
    budget.run("correctness", est["correctness"], lambda: ph.correctness(tiny, steps[:preset.check_steps], device))
    if not args.skip_tests:
        budget.run("gpu_tests", est["gpu_tests"], lambda: run_gpu_tests(min(max(budget.left() - 5, 1), TESTS_LIMIT_S)))

    def make(finetune: str, checkpointing: bool) -> Any:
        if args.preset == "tiny":
            from trainers.models.policy import PolicyConfig, load_policy

            return load_policy(PolicyConfig(path=tiny, device=args.device, dtype="auto", finetune=finetune,  # type: ignore[arg-type]
                                            gradient_checkpointing=checkpointing))
        from trainers.models.real_shapes import random_policy

        return random_policy("qwen2.5-vl-3b", device=args.device, dtype="bfloat16", finetune=finetune,  # type: ignore[arg-type]
                             gradient_checkpointing=checkpointing)

    def generate() -> dict[str, Any]:
        policy = make("none", False)
        try:
            return {"batch_sizes": ph.generation(policy, [s.prompt for s in steps], preset.gen_sizes,
                                                 preset.new_tokens, budget.left)}
        finally:
            del policy
            ph.free(device)

    budget.run("generate", est["generate"], generate)
    for finetune, checkpointing in VARIANTS:
        run_variant(budget, preset, make, steps, finetune, checkpointing, peak_tflops)
        ph.free(device)
    return {"machine": machine(device), "peak_tflops": peak_tflops, "batch_steps": len(steps)}


def run_variant(budget: Budget, preset: Preset, make: Callable[[str, bool], Any], steps: list[Any],
                finetune: str, checkpointing: bool, peak_tflops: float | None) -> None:
    """The timed update of one variant and, with checkpointing, its largest batch (on the
    same model and optimizer, so the model is built once)."""
    from benchmarks import gpu_phases as ph

    name = f"{finetune}{'+ckpt' if checkpointing else ''}"
    kept: dict[str, Any] = {}

    def timed() -> dict[str, Any]:
        policy = make(finetune, checkpointing)
        batch, too_big = list(steps), None
        while True:  # the recorded batch, halved while it runs out of memory
            try:
                record, optimizer = ph.update(policy, batch, finetune, peak_tflops)
                break
            except Exception as exc:
                if not ph.is_oom(exc) or len(batch) == 1:
                    raise
            too_big = len(batch)
            batch = batch[:len(batch) // 2]
            policy.model.zero_grad(set_to_none=True)
            ph.free(policy.device)
        kept.update(policy=policy, optimizer=optimizer)
        return {**record, **({"oom_at": too_big} if too_big else {})}

    budget.run(f"update/{name}", preset.estimates["update"], timed)
    if checkpointing and kept:
        budget.run(f"largest/{name}", preset.estimates["largest"], lambda: ph.largest_batch(
            kept["policy"], kept["optimizer"], steps, preset.largest_start, preset.largest_cap,
            lambda: budget.left() - preset.estimates["update"]))
    kept.clear()


def table(phases: dict[str, dict[str, Any]]) -> str:
    """The run as plain text rows (no table library: a GPU machine may have none)."""
    rows = [("phase", "status", "seconds", "peak GiB", "result")]
    for name, p in phases.items():
        result = p.get("reason", "")
        if name == "peak" and p["status"] == "ok":
            result = f"{p['tflops']:.3g} TFLOP/s ({p['dtype']}, {p['size']}^3)"
        elif name == "correctness" and p["status"] == "ok":
            result = (f"passed={p['passed']} loss cpu {p['loss_cpu_fp32'][0]:.4f} device "
                      f"{p['loss_device_bf16'][0]:.4f}, greedy tokens equal={p['greedy_tokens_equal']}")
        elif name == "gpu_tests" and p["status"] == "ok":
            result = f"passed={p['passed']} {p['counts']}"
        elif name == "generate" and p["status"] == "ok":
            result = ", ".join(f"bs {k}: {v['tokens_per_s']:.1f} tok/s" if v.get("status") == "ok"
                               else f"bs {k}: {v['status']}" for k, v in p["batch_sizes"].items())
        elif name.startswith("update/") and p["status"] == "ok":
            mfu = f"{100 * p['mfu']:.1f}%" if p.get("mfu") is not None else "n/a"
            result = f"batch {p['batch']} ({p['tokens']} tokens), MFU {mfu}" + (
                f"; batch {p['oom_at']} ran out of memory" if p.get("oom_at") else "")
        elif name.startswith("largest/") and p["status"] == "ok":
            result = f"largest batch {p['largest']} (tried {list(p['tried'])}, cap {p['cap']})"
        peak = p.get("peak_gib")
        rows.append((name, p["status"], f"{p.get('seconds', p.get('seconds_phase', 0)):.2f}",
                     f"{peak:.1f}" if peak is not None else "n/a", result))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4]
                     for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda (default where there is one) or cpu")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="3b")
    parser.add_argument("--budget-s", type=float, default=480.0, help="wall-clock seconds for all phases")
    parser.add_argument("--batch", type=Path, default=ROOT / "benchmarks" / "data" / "gpu_batch",
                        help="recorded batch (python -m benchmarks.gpu_batch record)")
    parser.add_argument("--skip-tests", action="store_true", help="leave out the gpu-marked tests")
    parser.add_argument("--phases", default=None, help="only these phases, comma-separated names as in "
                        "the table (e.g. gpu_tests,update/lora,update/full); default: all")
    parser.add_argument("--out", type=Path, default=None, help="JSON path (default: "
                        "benchmarks/results/bench_gpu.json on CUDA, runs/bench-quick/ on the CPU)")
    args = parser.parse_args(argv)
    import torch

    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"--device: expected a usable device, got {args.device} but CUDA is not available; "
                     "pass --device cpu")
    only = frozenset(n.strip() for n in args.phases.split(",") if n.strip()) if args.phases else None
    known = {"peak", "correctness", "gpu_tests", "generate"} | {
        f"{kind}/{f}{'+ckpt' if c else ''}" for f, c in VARIANTS for kind in ("update", "largest")}
    if only is not None and not only <= known:
        parser.error(f"--phases: expected names among {', '.join(sorted(known))}, "
                     f"got {', '.join(sorted(only - known))}")
    if only is not None and any(n.startswith("update/") for n in only):
        only |= {"peak"}  # an update's MFU is against the peak measured in the same run (0.4 s)
    budget = Budget(args.budget_s, only)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        context = measure(args, budget, Path(tmp))
    out = args.out or (ROOT / ("benchmarks/results" if args.device.startswith("cuda")
                               else "runs/bench-quick") / f"bench_gpu_{args.preset}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": "bench_gpu", "command": " ".join(sys.argv), "preset": args.preset,
               "budget_s": args.budget_s, "wall_s": time.time() - started, **context,
               "phases": budget.phases}
    out.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    print(table(budget.phases))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
