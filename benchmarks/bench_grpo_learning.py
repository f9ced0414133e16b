"""Issue 14's learning result: SFT vs SFT + GRPO with outcome, step, and step + tree rewards.

    .venv/bin/cua train sft --config trainers/configs/sft-tiny.yaml --set eval.before=false \\
        --set out=runs/sft-learning --set data.store=runs/sft-learning-store \\
        --set 'collect.tasks=[fsm:benchmarks/data/learning_sft.jsonl]' \\
        --set 'eval.tasks=[fsm:benchmarks/data/learning_heldout.jsonl]' --set eval.episodes=1 --set eval.max_steps=6
    .venv/bin/python -m benchmarks.bench_grpo_learning --model runs/sft-learning/model [--seeds 0 1 2] [--updates 12]

**The split** (``benchmarks/data/learning_*.jsonl``, written by ``--make-split``): ``cua
tasks synth --seed 1 --n 30 --no-verify`` on the shop, settings and mail sites, the tasks of
shortest-path length 1 to 4 (named goals, exact target states whose instruction lists the steps, and goals over
structured state such as "make sure your cart holds exactly 2 Coffee mug"), split by a hash
of the task id into a quarter of **held-out** tasks and the **training** tasks. SFT sees
only the training tasks of length 1-2 (``learning_sft.jsonl``, one oracle episode per
layout 0-2); GRPO trains on all training tasks (lengths 1-4) at layouts 0-2; evaluation is on the held-out
tasks (goals absent from all training, lengths 2-4) at the unseen layouts 100+, plus the
first ``--seen`` training tasks at layout 100 (seen goals, unseen layouts).

Each variant is ``cua train grpo`` with ``trainers/configs/grpo-tiny.yaml`` from the SFT
model (``--model``) for ``--updates`` updates, the dead-signal stop off (an outcome-only run
may be flat for a while):

- ``outcome``: ``reward=outcome``, ``advantage.step_weight=0``, no tree rollouts;
- ``step``: ``reward=step``, ``advantage.step_weight=1``, no tree rollouts;
- ``step+tree``: as ``step``, plus one branched state per group with two continuations.

Every ``--eval-every`` updates (and before the first) each run evaluates greedily, one
episode per task; the eval line's ``by_task`` tells the held-out tasks from the seen ones.
The variants of one seed run at once (separate processes, one torch thread each). Written:
the curves (held-out success and progress against env steps), wall time and its split per
run, the JSON, and an SVG figure of held-out success against env steps for the three
variants (mean over seeds, with the seeds' range as a band; ``trainers.charts``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from benchmarks.common import console, print_table, success_cell, write_results

CONFIG = Path("trainers/configs/grpo-tiny.yaml")
TASKS = "benchmarks/data/learning_{}.jsonl"  # sft, train, heldout: see the module docstring
SITES = ("shop", "settings", "mail")
VARIANTS = {
    "outcome": ["reward=outcome", "advantage.step_weight=0", "tree.branch_states=0"],
    "step": ["reward=step", "advantage.step_weight=1", "tree.branch_states=0"],
    "step+tree": ["reward=step", "advantage.step_weight=1", "tree.branch_states=1"],
}


def make_split(folder: Path) -> dict[str, int]:
    """Write ``learning_{sft,train,heldout}.jsonl`` into ``folder`` from today's curated specs
    (``cua tasks synth --seed 1 --n 30`` on each site, the tasks of length 1-4, split by a
    hash of the task id: a quarter held out; SFT takes the training tasks of length 1-2)."""
    from fsm_sites.library import load_site
    from fsm_sites.synthesis.tasks import save_tasks, synthesize_tasks

    tasks = [t for site in SITES for t in synthesize_tasks(load_site(site), n=30, seed=1) if t.difficulty <= 4]
    held = [t for t in tasks if zlib.crc32(t.id.encode()) % 4 == 0]
    train = [t for t in tasks if t not in held]
    parts = {"heldout": held, "train": train, "sft": [t for t in train if t.difficulty <= 2]}
    folder.mkdir(parents=True, exist_ok=True)
    return {name: save_tasks(part, folder / f"learning_{name}.jsonl") for name, part in parts.items()}


def load() -> float:
    return os.getloadavg()[0]


def group_rate(by_task: dict[str, dict[str, float]], tasks: list[str], key: str) -> float:
    """The episode-weighted mean of ``key`` over ``tasks`` in an eval line's ``by_task``."""
    rows = [by_task[t] for t in tasks if t in by_task]
    episodes = sum(r["episodes"] for r in rows)
    return sum(r[key] * r["episodes"] for r in rows) / episodes if episodes else 0.0


def summarize(lines: list[dict[str, Any]], held_out: list[str], seen: list[str]) -> dict[str, Any]:
    """One run's metrics.jsonl as its curve (per eval: env steps, held-out and seen-goal
    success and progress) and its totals."""
    updates = [x for x in lines if x["event"] == "update"]
    steps_at = {0: 0, **{u["update"]: u["env_steps"] for u in updates}}
    curve = []
    for e in (x for x in lines if x["event"] == "eval"):
        curve.append({"update": e["update"], "env_steps": steps_at.get(e["update"], updates[-1]["env_steps"]),
                      "held_out_success": group_rate(e["by_task"], held_out, "success_rate"),
                      "held_out_episodes": sum(e["by_task"][t]["episodes"] for t in held_out if t in e["by_task"]),
                      "held_out_progress": round(group_rate(e["by_task"], held_out, "progress"), 4),
                      "seen_goal_success": group_rate(e["by_task"], seen, "success_rate"),
                      "seen_goal_progress": round(group_rate(e["by_task"], seen, "progress"), 4),
                      "episodes": e["episodes"]})
    last = updates[-1]
    return {"curve": curve, "env_steps": last["env_steps"], "seconds": last["seconds"],
            "train_success": [u["success"] for u in updates]}


def run_seed(args: argparse.Namespace, seed: int, root: Path, held_out: list[str], seen: list[str]) -> dict[str, Any]:
    procs = {}
    started, load_before = time.perf_counter(), load()
    for name, sets in VARIANTS.items():
        out = root / f"{name}-{seed}"
        common = [f"out={out}", f"model.path={args.model}", f"updates={args.updates}", f"seed={seed}",
                  f"tasks=[fsm:{TASKS.format('train')}]", f"rollout.max_steps={args.max_steps}",
                  "signal.patience=1000", "init=null", f"eval.every={args.eval_every}",
                  f"eval.tasks=[{', '.join(held_out + seen)}]", "eval.episodes=1",
                  f"eval.max_steps={args.max_steps}", "checkpoint_every=1000", "filmstrips=0"]
        argv = [sys.executable, "-m", "harness.cli", "train", "grpo", "--config", str(CONFIG)]
        for item in common + sets + args.set:
            argv += ["--set", item]
        procs[name] = (subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True), out)
    results = {}
    for name, (proc, out) in procs.items():
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"{name} seed {seed} failed: {err[-2000:]}")
        lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x]
        results[name] = summarize(lines, held_out, seen)
    return {"seed": seed, "wall_s": round(time.perf_counter() - started, 1),
            "load_1min": [round(load_before, 1), round(load(), 1)], "variants": results}


def figure(runs: list[dict[str, Any]], path: Path) -> None:
    """Held-out success and held-out progress against env steps, side by side (``trainers.charts``):
    each variant's mean over seeds with the seeds' range as a band."""
    from trainers.charts import Series, draw_lines, to_svg
    from trainers.charts import figure as chart_figure

    curves = {name: [r["variants"][name]["curve"] for r in runs] for name in VARIANTS}
    with chart_figure(2) as (fig, axes):
        for ax, metric, title in zip(axes, ("held_out_success", "held_out_progress"),
                                     ("held-out success (greedy)", "held-out progress (greedy)"), strict=True):
            series = [Series(name, [[(p["env_steps"], p[metric]) for p in c] for c in cs])
                      for name, cs in curves.items()]
            draw_lines(ax, title, series, x_label="env steps", percent=metric.endswith("success"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(to_svg(fig), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    from trainers.training.config import task_ids

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="the SFT model to start from")
    parser.add_argument("--make-split", action="store_true",
                        help="write benchmarks/data/learning_*.jsonl from today's specs and stop")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--updates", type=int, default=12)
    parser.add_argument("--eval-every", type=int, default=4)
    parser.add_argument("--seen", type=int, default=4, help="training tasks also evaluated at unseen layouts")
    parser.add_argument("--max-steps", type=int, default=6, help="steps per episode (rollouts and evaluation)")
    parser.add_argument("--figure", default="docs/images/grpo_learning.svg")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="one more override for every variant (e.g. loss.learning_rate=1e-3)")
    parser.add_argument("--runs", default=None, help="keep the runs' directories here (default: a temp dir)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.make_split:
        console.print(make_split(Path(TASKS).parent))
        return
    if not args.model:
        parser.error("--model is required (the SFT model to start from)")
    held_out = task_ids([f"fsm:{TASKS.format('heldout')}"])
    seen = task_ids([f"fsm:{TASKS.format('train')}"])[:args.seen]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.runs or tmp)
        for seed in args.seeds:
            runs.append(run_seed(args, seed, root, held_out, seen))
            console.print({name: v["curve"][-1] for name, v in runs[-1]["variants"].items()})
    rows = []
    for name in VARIANTS:
        firsts = [r["variants"][name]["curve"][0] for r in runs]
        lasts = [r["variants"][name]["curve"][-1] for r in runs]
        rows.append([name, " / ".join(success_cell(p["held_out_success"], p["held_out_episodes"]) for p in firsts),
                     " / ".join(success_cell(p["held_out_success"], p["held_out_episodes"]) for p in lasts),
                     " / ".join(f"{p['held_out_progress']:.2f}" for p in lasts),
                     " / ".join(f"{p['seen_goal_success']:.0%}" for p in lasts),
                     " / ".join(str(r["variants"][name]["env_steps"]) for r in runs)])
    print_table("held-out success before (the SFT model) and after GRPO, per seed",
                ["variant", "held-out before", "after", "progress after", "seen goals after", "env steps"], rows)
    figure(runs, Path(args.figure))
    path = write_results("bench_grpo_learning", {"args": vars(args), "held_out": held_out, "seen": seen,
                                                 "runs": runs}, args.out)
    console.print(f"results: {path}\nfigure: {args.figure}")


if __name__ == "__main__":
    main()
