"""The first learning result: the tiny random-init model, SFT, then DPO, on curated FSM sites.

    .venv/bin/python -m benchmarks.bench_train [--quick] [--out DIR] [--preset tiny]

The held-out split (``split``): on every curated library site, one goal is held out of the
training data (``open_*`` on even-numbered sites, the single-item "Make sure X is in your
Y" goal on odd ones), so each held-out goal's site and its kind of goal are both seen in
training, but never the goal itself. Training data: oracle episodes on every other goal of
at most ``MAX_DIFFICULTY`` steps, on layout seeds 0..3; evaluation: the held-out goals on
layout seeds 100.. that no training episode used, and the training goals on those new
seeds too. Observation mode ``elements`` with the json codec and no system prompt (the
calibration's choice for CPU learning, docs/training.md).

Each stage is one ``cua train`` command on a config this module writes into ``--out``
(the JSON result lists every command): SFT from the random init (its "before" evaluation
is the untrained model), then DPO from the SFT model on branch pairs of trees grown on the
training goals. Results: ``benchmarks/results/bench_train.json`` (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import console, machine

MAX_DIFFICULTY = 7
TRAIN_SEEDS = [0, 1, 2, 3]
EVAL_SEED = 100
PROMPT = {"codec": "json", "observation": "elements", "system_prompt": False}


def split(max_difficulty: int = MAX_DIFFICULTY) -> tuple[list[str], list[str]]:
    """(training task ids, held-out task ids) over the curated library (see the docstring)."""
    from fsm_sites.library import list_sites
    from harness.tasks.fsm import library_tasks

    train, held_out = [], []
    for i, site in enumerate(list_sites()):
        tasks = [t for t in library_tasks(site) if t.difficulty <= max_difficulty]
        single = [t for t in tasks if t.instruction.startswith("Make sure ") and " both " not in t.instruction]
        opened = [t for t in tasks if t.id.startswith("open_")]
        pick = (opened if i % 2 == 0 else single) or opened or single
        for task in tasks:
            (held_out if task is pick[0] else train).append(f"fsm:{site}/{task.id}")
    return train, held_out


def configs(out: Path, preset: str, quick: bool) -> dict[str, dict[str, Any]]:
    """The SFT and DPO configs of the benchmark (written as YAML into ``out``)."""
    train, held_out = split()
    seeds = TRAIN_SEEDS[:2] if quick else TRAIN_SEEDS
    evaluation = {"tasks": held_out, "seed": EVAL_SEED, "episodes": 1 if quick else 3,
                  "concurrency": 4, "max_steps": 10}
    sft = {
        "out": str(out / "sft"), "init": preset,
        "model": {"path": str(out / f"{preset}-init"), "finetune": "full", "device": "cpu"},
        "data": {"store": str(out / "store-sft"), "prompt": PROMPT},
        "collect": {"tasks": train, "seeds": seeds, "explore": "episodes", "concurrency": 2},
        "train": {"max_steps": 150 if quick else 600, "batch_size": 16, "learning_rate": 5e-3,
                  "lr_scheduler": "cosine", "warmup_steps": 30, "logging_steps": 10,
                  "save_steps": 500, "threads": 1},
        "eval": evaluation,
    }
    dpo = {
        "out": str(out / "dpo"),
        "model": {"path": str(out / "sft" / "model"), "finetune": "full", "device": "cpu"},
        "data": {"store": str(out / "store-dpo"), "prompt": PROMPT},
        "collect": {"tasks": train, "seeds": seeds[:1], "explore": "tree", "budget": 8, "candidates": 3},
        "train": {"max_steps": 50 if quick else 200, "batch_size": 8, "learning_rate": 5e-4,
                  "lr_scheduler": "cosine", "logging_steps": 10, "save_steps": 500, "threads": 1},
        "dpo": {"beta": 0.1, "loss_type": ["sigmoid", "sft"]},
        "eval": evaluation,
    }
    return {"sft": sft, "dpo": dpo}


def run_stage(kind: str, config_path: Path) -> tuple[float, str]:
    command = [sys.executable, "-m", "harness.cli", "train", kind, "--config", str(config_path)]
    console.print(f"[dim]$ cua train {kind} --config {config_path}[/dim]")
    started = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - started, shlex.join(["cua", "train", kind, "--config", str(config_path)])


def evals(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x]
    return {r["phase"]: r for r in lines if r["event"] == "eval"}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer seeds, steps and episodes")
    parser.add_argument("--preset", default="tiny", choices=["tiny", "small"])
    parser.add_argument("--out", type=Path, default=None, help="run folder (default runs/bench-train)")
    parser.add_argument("--result", type=Path, default=None, help="result JSON path")
    args = parser.parse_args(argv)
    out = args.out or Path("runs/bench-train-quick" if args.quick else "runs/bench-train")
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"machine_before": machine(), "stages": {}}
    for kind, config in configs(out, args.preset, args.quick).items():
        path = out / f"{kind}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        seconds, command = run_stage(kind, path)
        result["stages"][kind] = {"command": command, "config": config, "seconds": round(seconds, 1),
                                  "evals": evals(Path(config["out"])), "load_after": machine()["load_average"]}
    result["machine_after"] = machine()
    target = args.result or (Path("runs/bench-quick/bench_train.json") if args.quick
                             else Path("benchmarks/results/bench_train.json"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"results: {target}")
    return result


if __name__ == "__main__":
    main()
