"""Issue 14's throughput benchmark: GRPO rollouts with the tiny policy vs the oracle, and
the per-update time split.

    .venv/bin/python -m benchmarks.bench_grpo [--quick]

- **Rollout steps/s.** GRPO's own rollout path (``trainers.grpo.rollouts.Rollouts``: one env
  and FSM session per episode, every model call batched by the agent's ``Batcher``) runs
  ``--tasks`` groups of G=``--group`` episodes at once (concurrency = tasks x G), at most
  ``--max-steps`` steps each, with the ``hf:`` agent over a random-init ``tiny`` checkpoint
  (element-list prompts, json codec, no system prompt, temperature 1, ``--new-tokens`` per
  reply: the random model never stops early) and with the oracle (env-only: no model), the
  same tasks and seeds, interleaved; steps per wall second of each whole group round.
- **Per-update split.** ``cua train grpo`` (``trainers/configs/grpo-tiny.yaml`` with
  ``--updates`` updates, tree rollouts on, no evaluation): seconds of rollout and of training
  per update, from its metrics.jsonl.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import console, fmt, median, print_table, ratio, write_results

TASKS = ("fsm:shop/add_lamp", "fsm:settings/open_laptop", "fsm:mail/open_m2", "fsm:shop/search_open")


async def rollout_speed(args: argparse.Namespace, model_dir: Path) -> dict[str, Any]:
    from harness.agents.oracle import OracleAgent
    from harness.env_providers import EnvOptions, LocalEnvs
    from trainers.agents.hf import HFAgent
    from trainers.agents.options import HFAgentOptions
    from trainers.grpo.rollouts import Rollouts
    from trainers.models.policy import PolicyConfig, load_policy

    policy = load_policy(PolicyConfig(path=model_dir, device="cpu"))
    concurrency = args.tasks * args.group
    hf = HFAgent(policy, HFAgentOptions(codec="json", observation="elements", system_prompt=False,
                                        temperature=1.0, max_new_tokens=args.new_tokens,
                                        max_batch=concurrency, max_wait_ms=args.max_wait_ms))
    agents = {"hf": hf, "oracle": OracleAgent()}
    options = EnvOptions(codec="json", max_steps=args.max_steps, reward="step", elements=True)
    out: dict[str, list[float]] = {name: [] for name in agents}
    steps: dict[str, list[int]] = {name: [] for name in agents}
    envs = LocalEnvs()
    await envs.start()
    try:
        for repeat in range(-1, args.repeats):  # -1 warms up (browser, pages, site server)
            for name, agent in agents.items():
                rollouts = Rollouts(agent, envs, options)
                tasks = TASKS[: args.tasks]
                start = time.perf_counter()
                await asyncio.gather(*(rollouts.group(t, 0, args.group, 100 * repeat + 10 * k, t)
                                       for k, t in enumerate(tasks)))
                wall = time.perf_counter() - start
                if repeat >= 0:
                    out[name].append(rollouts.env_steps / wall)
                    steps[name].append(rollouts.env_steps)
    finally:
        await envs.close()
    return {**out, "steps_per_round": steps, "concurrency": concurrency,
            "batch_sizes": {str(k): v for k, v in sorted(hf.batcher.batch_sizes.items())}}


def update_split(args: argparse.Namespace, model_dir: Path, out: Path) -> dict[str, Any]:
    from harness.cli_config import load_config
    from trainers.grpo.config import GRPOConfig
    from trainers.grpo.train import train_grpo

    config = load_config(GRPOConfig, file=Path("trainers/configs/grpo-tiny.yaml"), sets=[
        f"out={out}", f"model.path={model_dir}", f"updates={args.updates}", "eval=null",
        "reward=progress", "signal.patience=100"])
    train_grpo(config)
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x]
    updates = [x for x in lines if x["event"] == "update"]
    return {"rollout_s": [u["rollout_s"] for u in updates], "train_s": [u["train_s"] for u in updates],
            "steps": [u["steps"] for u in updates], "episodes": [u["episodes"] + u["branches"] for u in updates]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and updates")
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-wait-ms", type=float, default=200.0,
                        help="how long a prompt waits for others (the GRPO config's default: 200)")
    parser.add_argument("--updates", type=int, default=3, help="updates of the split run; 0: skip it")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.updates = 1, 1
    from trainers.models.checkpoint import ModelInitConfig, init_checkpoint

    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = init_checkpoint(ModelInitConfig(out=Path(tmp) / "tiny", preset="tiny")).path
        speed = asyncio.run(rollout_speed(args, model_dir))
        split = update_split(args, model_dir, Path(tmp) / "grpo") if args.updates else \
            {"rollout_s": [], "train_s": [], "steps": [], "episodes": []}
    hf, oracle = median(speed["hf"]), median(speed["oracle"])
    rollout_s, train_s = median(split["rollout_s"]), median(split["train_s"])
    summary = {"hf_steps_per_s": hf, "oracle_steps_per_s": oracle, "hf_over_oracle": ratio(hf, oracle),
               "rollout_s_per_update": rollout_s, "train_s_per_update": train_s,
               "rollout_share": ratio(rollout_s, (rollout_s or 0) + (train_s or 0))}
    print_table(f"GRPO rollouts at concurrency {speed['concurrency']}", ["", "steps/s"],
                [["hf: tiny policy", fmt(hf, 2)], ["oracle (env only)", fmt(oracle, 2)],
                 ["hf / oracle", fmt(summary["hf_over_oracle"], 2, "x")]])
    print_table("per update", ["", "seconds"], [["rollout", fmt(rollout_s, 1)], ["train", fmt(train_s, 1)]])
    path = write_results("bench_grpo", {"args": vars(args), "rollouts": speed, "updates": split,
                                        "summary": summary, "load_average_before": load_before},
                         args.out, quick=args.quick)
    console.print(f"results: {path}")


if __name__ == "__main__":
    main()
