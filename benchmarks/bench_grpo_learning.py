"""Issue 14's learning result (a pilot): SFT vs SFT + GRPO with outcome, step, and step + tree.

    .venv/bin/python -m benchmarks.bench_grpo_learning --model runs/sft-tiny/model [--seeds 0 1 2]

Each variant is ``cua train grpo`` with ``trainers/configs/grpo-tiny.yaml`` from the SFT
model (``--model``), ``--updates`` updates, held-out evaluation before and after (the
config's held-out goals at layout seeds 100+, as in ``sft-tiny.yaml``), the dead-signal stop
off (an outcome-only run may be flat for a while):

- ``outcome``: ``reward=outcome``, ``advantage.step_weight=0``, no tree rollouts;
- ``step``: ``reward=step``, ``advantage.step_weight=1``, no tree rollouts;
- ``step+tree``: as ``step``, plus one branched state per group with two continuations.

The variants of one seed run at once (separate processes). Written: held-out success and
progress before and after, env steps, wall time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import console, print_table, write_results

VARIANTS = {
    "outcome": ["reward=outcome", "advantage.step_weight=0", "tree.branch_states=0"],
    "step": ["reward=step", "advantage.step_weight=1", "tree.branch_states=0"],
    "step+tree": ["reward=step", "advantage.step_weight=1", "tree.branch_states=1"],
}


def run_seed(args: argparse.Namespace, seed: int, root: Path) -> dict[str, Any]:
    procs = {}
    started = time.perf_counter()
    for name, sets in VARIANTS.items():
        out = root / f"{name}-{seed}"
        common = [f"out={out}", f"model.path={args.model}", f"updates={args.updates}", f"seed={seed}",
                  "signal.patience=1000", f"eval.every={args.updates}", "init=null"]
        argv = [sys.executable, "-m", "harness.cli", "train", "grpo", "--config",
                "trainers/configs/grpo-tiny.yaml"]
        for item in common + sets:
            argv += ["--set", item]
        procs[name] = (subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True), out)
    results = {}
    for name, (proc, out) in procs.items():
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"{name} seed {seed} failed: {err[-2000:]}")
        lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x]
        evals = {e["phase"]: e for e in lines if e["event"] == "eval"}
        updates = [x for x in lines if x["event"] == "update"]
        results[name] = {"before": evals["before"]["success_rate"], "after": evals["after"]["success_rate"],
                         "progress_before": evals["before"]["progress"], "progress_after": evals["after"]["progress"],
                         "env_steps": updates[-1]["env_steps"], "train_success": [u["success"] for u in updates],
                         "seconds": updates[-1]["seconds"]}
    return {"seed": seed, "wall_s": round(time.perf_counter() - started, 1), "variants": results}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the SFT model to start from")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--updates", type=int, default=6)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            runs.append(run_seed(args, seed, Path(tmp)))
            console.print(runs[-1])
    rows = [[f"{name} seed {r['seed']}", f"{v['before']:.0%}", f"{v['after']:.0%}",
             f"{v['progress_before']:.2f}", f"{v['progress_after']:.2f}", str(v["env_steps"])]
            for r in runs for name, v in r["variants"].items()]
    print_table("held-out success and progress, before (the SFT model) and after GRPO",
                ["variant", "success before", "after", "progress before", "after", "env steps"], rows)
    path = write_results("bench_grpo_learning", {"args": vars(args), "runs": runs}, args.out)
    console.print(f"results: {path}")


if __name__ == "__main__":
    main()
