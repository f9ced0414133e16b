"""Issue 13's side by side: our ``cua train grpo`` vs TRL's ``GRPOTrainer`` driving our env
through the adapter, at the same env-step budget, from the same starting model.

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.bench_adapters --model runs/sft-qwen/model \
        [--rounds 1] [--updates 3] [--tree]

Every arm trains on ``trainers/configs/grpo-tiny.yaml``'s tasks, layouts, group shape (2
tasks x G=4 per update or generation batch), step limit (5), temperature, learning rate,
KL coefficient and epochs, in the element-list mode with the ``qwen`` codec
(``prompt.codec=qwen``: Qwen's ``computer_use`` tool call is what TRL's tool loop parses),
from ``--model``:

- ``ours outcome``: ``cua train grpo``, ``reward=outcome``, ``advantage.step_weight=0``,
  no tree: ``--updates`` updates;
- ``TRL outcome``: ``benchmarks.trl_arm`` (TRL's ``GRPOTrainer`` with the adapter's
  environment in the element mode, ``get_reward`` in the ``outcome`` mode) until it has
  taken as many env steps as ``ours outcome`` took in the same round (counted in the env);
- ``ours step``: ``reward=step``, ``advantage.step_weight=1``, no tree;
- with ``--tree``, ``ours step+tree``: as ``ours step`` plus one branched state per group.

Each arm is a subprocess, one at a time (the 2 cores are not shared between arms), in a
rotated order per round (``TRL`` always after ``ours outcome``, whose env steps it
matches), with ``uptime`` before and after. Then every trained model, and the starting model
once, is evaluated the same way: ``trainers.training.evaluate.evaluate`` (``cua eval``'s
runner and the ``hf:`` agent with the model's ``cua_agent.yaml``), greedy, on the config's
held-out goals at layout seeds 100+, at most 5 steps.
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

from benchmarks.common import console, fmt, median, print_table, ratio, success_cell, write_results

CONFIG = "trainers/configs/grpo-tiny.yaml"
#: ``--set`` values every arm shares: the prompt format of the starting model, no checkpoints
#: (TRL writes none), no dead-signal stop (an outcome-only run may be flat for a while)
COMMON = ["prompt.codec=qwen", "prompt.observation=elements", "signal.patience=1000",
          "checkpoint_every=1000", "init=null", "eval=null"]
OURS = {
    "ours outcome": ["reward=outcome", "advantage.step_weight=0", "tree.branch_states=0"],
    "ours step": ["reward=step", "advantage.step_weight=1", "tree.branch_states=0"],
    "ours step+tree": ["reward=step", "advantage.step_weight=1", "tree.branch_states=1"],
}
TRL = "TRL outcome"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def run_arm(argv: list[str], name: str) -> tuple[float, dict[str, str]]:
    """Run one arm's subprocess; its wall seconds and the load around it."""
    load = {"before": uptime()}
    started = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          check=False)
    wall = time.perf_counter() - started
    load["after"] = uptime()
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed (exit {proc.returncode}): {proc.stderr[-3000:]}")
    return wall, load


def ours(args: argparse.Namespace, name: str, seed: int, out: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "harness.cli", "train", "grpo", "--config", CONFIG]
    for item in [f"out={out}", f"model.path={args.model}", f"updates={args.updates}",
                 f"seed={seed}", *COMMON, *OURS[name]]:
        argv += ["--set", item]
    wall, load = run_arm(argv, name)
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x]
    updates = [x for x in lines if x["event"] == "update"]
    rollout_s = sum(u["rollout_s"] for u in updates)
    train_s = sum(u["train_s"] for u in updates)
    return {"wall_s": round(wall, 1), "load": load, "env_steps": updates[-1]["env_steps"],
            "updates": len(updates), "episodes": sum(u["episodes"] for u in updates),
            "successes": round(sum(u["success"] * u["episodes"] for u in updates)),
            "rollout_s": round(rollout_s, 1), "train_s": round(train_s, 1),
            "train_reward": [u["reward"] for u in updates],
            "train_success": [u["success"] for u in updates], "model": str(out / "model")}


def trl(args: argparse.Namespace, seed: int, out: Path, budget: int) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.trl_arm", "--config", CONFIG,
            "--model", str(args.model), "--out", str(out), "--env-steps", str(budget),
            "--max-generations", str(args.trl_max_generations)]
    for item in [f"seed={seed}", "reward=outcome", *COMMON]:
        argv += ["--set", item]
    wall, load = run_arm(argv, TRL)
    tally = json.loads((out / "trl_arm.json").read_text())
    log = tally.pop("trl_log")
    rollout_s = tally["generate_s"] + tally["env_s"]
    return {"wall_s": round(wall, 1), "load": load, "budget": budget, **tally,
            "rollout_s": round(rollout_s, 1), "train_s": round(tally["trainer_s"] - rollout_s, 1),
            "train_reward": [e["rewards/ElementEnvironment/mean"] for e in log
                             if "rewards/ElementEnvironment/mean" in e],
            "tools_failure_frequency": [e["tools/failure_frequency"] for e in log
                                        if "tools/failure_frequency" in e],
            "model": str(out / "model")}


def evaluate(args: argparse.Namespace, model: Path, out: Path) -> dict[str, Any]:
    from harness.cli_config import load_config
    from trainers.grpo.config import GRPOConfig
    from trainers.training.config import EvalSpec
    from trainers.training.evaluate import evaluate as run_eval

    held_out = load_config(GRPOConfig, file=Path(CONFIG)).eval
    assert held_out is not None, f"{CONFIG} names no held-out goals"
    spec = EvalSpec(tasks=held_out.tasks, seed=held_out.seed, episodes=args.eval_episodes,
                    max_steps=held_out.max_steps, max_new_tokens=args.eval_tokens, concurrency=3)
    started = time.perf_counter()
    summary = run_eval(model, spec, out)
    return {"success_rate": summary["success_rate"], "progress": summary["progress"],
            "episodes": summary["episodes"], "eval_s": round(time.perf_counter() - started, 1),
            "command": summary["command"]}


def run_round(args: argparse.Namespace, seed: int, root: Path) -> dict[str, Any]:
    names = ["ours outcome", TRL, "ours step"] + (["ours step+tree"] if args.tree else [])
    order = names[seed % len(names):] + names[:seed % len(names)]
    if order.index(TRL) < order.index("ours outcome"):  # TRL matches ours' env steps
        order.remove(TRL)
        order.insert(order.index("ours outcome") + 1, TRL)
    arms: dict[str, Any] = {}
    for name in order:
        out = root / f"{name.replace(' ', '-')}-{seed}"
        console.print(f"round {seed}: {name} ...")
        if name == TRL:
            arms[name] = trl(args, seed, out, arms["ours outcome"]["env_steps"])
        else:
            arms[name] = ours(args, name, seed, out)
        arms[name]["eval_after"] = evaluate(args, Path(arms[name]["model"]), out / "eval")
        console.print(f"  {name}: {arms[name]['wall_s']} s, {arms[name]['env_steps']} env steps, "
                      f"held-out {success_cell(**rate_of(arms[name]['eval_after']))}")
    return {"seed": seed, "order": order, "arms": arms}


def rate_of(summary: dict[str, Any]) -> dict[str, Any]:
    """An evaluation's success rate and episodes, as ``success_cell`` takes them."""
    return {"rate": summary["success_rate"], "episodes": summary["episodes"]}


def table(before: dict[str, Any], rounds: list[dict[str, Any]]) -> list[list[str]]:
    rows = [["start (the SFT model)", "-", "-", "-", "-", "-", "-", "-",
             success_cell(**rate_of(before)), f"{before['progress']:.2f}"]]
    for name in rounds[0]["arms"]:
        arms = [r["arms"][name] for r in rounds]
        wall = median(a["wall_s"] for a in arms)
        steps = median(a["env_steps"] for a in arms)
        rows.append([
            name, fmt(wall, 0), fmt(steps, 0), fmt(median(a["episodes"] for a in arms), 0),
            fmt(ratio(wall, steps), 2),
            " / ".join(f"{a['successes']}/{a['episodes']}" for a in arms),
            fmt(median(a["rollout_s"] for a in arms), 0), fmt(median(a["train_s"] for a in arms), 0),
            " / ".join(success_cell(**rate_of(a["eval_after"])) for a in arms),
            " / ".join(f"{a['eval_after']['progress']:.2f}" for a in arms)])
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="the starting model "
                        "(trained with prompt.codec=qwen in the element mode)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (seeds 0, 1, ...)")
    parser.add_argument("--updates", type=int, default=3, help="updates of our GRPO per arm")
    parser.add_argument("--tree", action="store_true", help="add ours step+tree")
    parser.add_argument("--trl-max-generations", type=int, default=30, help="TRL stops after "
                        "this many generation batches even below the env-step budget")
    parser.add_argument("--eval-episodes", type=int, default=2, help="episodes per held-out goal")
    parser.add_argument("--eval-tokens", type=int, default=64, help="tokens per reply in evaluation")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        before = evaluate(args, args.model, root / "eval-before")
        rounds = [run_round(args, seed, root) for seed in range(args.rounds)]
    print_table("GRPO through ours vs TRL's GRPOTrainer through the adapter (medians over rounds; "
                "held-out per round)",
                ["arm", "wall s", "env steps", "episodes", "s / env step", "training successes",
                 "rollout s", "train s",
                 "held-out success", "held-out progress"], table(before, rounds))
    path = write_results("bench_adapters", {
        "args": {k: str(v) for k, v in vars(args).items()}, "config": CONFIG, "common_sets": COMMON,
        "eval_before": before, "rounds": rounds,
        "total_s": round(time.perf_counter() - started, 1)}, args.out)
    console.print(f"results: {path}")


if __name__ == "__main__":
    main()
