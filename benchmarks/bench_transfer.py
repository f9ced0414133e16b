"""Transfer: does SFT on our FSM sites help on MiniWoB++, a benchmark nobody here wrote?

    .venv/bin/python -m benchmarks.bench_transfer [--quick] [--out runs/transfer] \
        [--plain-commit 615bec1] [--episodes 10] [--rounds 2] [--result PATH]

Two data sources, one recipe (``trainers/configs/sft-transfer.yaml``: the tiny random-init
model, element-list observations, json codec, every curated library goal on layout seeds
0-2):

- **realistic**: today's FSM sites (templates, pictures, icons, themes), collected with this
  tree's code;
- **plain**: the same goals and seeds collected with the renderer before issue 12's realism
  work (``--plain-commit``, main's 615bec1), run from a detached worktree of that commit
  (``PYTHONPATH`` set to it, this venv): ``cua eval --agent oracle --elements --store``.

Both stores are collected the same way (one oracle episode per goal and seed, as ``cua train
sft``'s ``collect:`` does) and trained by this tree's ``cua train sft`` with the same config,
so only the data differs. Then ``cua eval`` runs the MiniWoB tasks of
``benchmarks.miniwob_rules.TRANSFER_TASKS`` zero-shot, with the same settings, for the
untrained model, both trained models, and (in-process, same runner settings) ``RuleAgent``,
the hand-written element-mode agent that shows what the element list allows. Episodes are
split into ``--rounds`` rounds (seeds ``seed + r*k ...``) and the agents take turns within each
round, so the machine's load falls on all of them alike.

A stage whose output exists is reused (a non-empty store, a trained ``model/``, an eval's
``summary.json``), so an interrupted run continues; the JSON says which stages ran.
Results: ``benchmarks/results/bench_transfer.json`` (``--quick``: ``runs/bench-quick/``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import console, machine, print_table, success_cell, write_results
from benchmarks.miniwob_rules import NOT_EXPRESSIBLE, TRANSFER_TASKS, RuleAgent

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "trainers" / "configs" / "sft-transfer.yaml"
PLAIN_COMMIT = "615bec1"  # main before issue 12's templates, pictures, icons and themes
PROMPT = "codec=json&observation=elements&system_prompt=false&max_new_tokens=48&temperature=0"
MODELS = ("untrained", "sft-realistic", "sft-plain")


def cua(args: list[str], *, tree: Path = REPO, log: Path | None = None) -> float:
    """Run ``cua ARGS`` with ``tree``'s code (this interpreter); seconds it took."""
    console.print(f"[dim]$ {'PYTHONPATH=' + str(tree) + ' ' if tree != REPO else ''}cua {shlex.join(args)}[/dim]")
    started = time.perf_counter()
    with open(log or Path("/dev/null"), "w") as out:
        subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=tree, check=True,
                       env={**os.environ, "PYTHONPATH": str(tree)}, stdout=out,
                       stderr=subprocess.STDOUT)
    return time.perf_counter() - started


def collect_tasks() -> list[str]:
    import yaml

    return list(yaml.safe_load(CONFIG.read_text())["collect"]["tasks"])


def plain_tree(out: Path, commit: str) -> tuple[Path, bool]:
    """A detached worktree of ``commit`` (made here when missing); whether this run made it."""
    tree = out / f"plain-src-{commit}"
    if tree.is_dir():
        return tree, False
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), commit], check=True)
    return tree, True


def collect(side: str, out: Path, tasks: list[str], seeds: int, plain_commit: str,
            stages: dict[str, Any]) -> None:
    """One oracle episode per curated goal and layout seed into ``out/store-SIDE``, with this
    tree's code (realistic) or ``plain_commit``'s (plain, from a worktree made and removed here)."""
    from trainers.training.collect import store_is_empty

    store = out / f"store-{side}"
    if not store_is_empty(store):
        stages[f"collect-{side}"] = {"reused": str(store)}
        return
    args = ["eval", "--suite", "+".join(tasks), "--agent", "oracle", "--elements",
            "--store", str(store), "--episodes", str(seeds), "--seed", "0", "--concurrency", "3",
            "--out", str(out / f"collect-{side}")]
    tree, made = plain_tree(out, plain_commit) if side == "plain" else (REPO, False)
    try:
        commit = _commit(tree)
        seconds = cua(args, tree=tree, log=out / f"collect-{side}.log")
    finally:
        if made:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=True)
    stages[f"collect-{side}"] = {"seconds": round(seconds, 1), "commit": commit,
                                 "command": "cua " + shlex.join(args)}


def _commit(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def train(side: str, out: Path, overrides: list[str], stages: dict[str, Any]) -> None:
    run = out / f"sft-{side}"
    if (run / "model").is_dir():
        stages[f"train-{side}"] = {"reused": str(run)}
        return
    args = ["train", "sft", "--config", str(CONFIG), "--set", f"out={run}", "--set",
            f"data.store={out / f'store-{side}'}", "--set", f"model.path={out / 'tiny-init'}", *overrides]
    seconds = cua(args, log=out / f"sft-{side}.log")
    stages[f"train-{side}"] = {"seconds": round(seconds, 1), "command": "cua " + shlex.join(args)}


def agent_spec(model: str, out: Path) -> str:
    path = out / "tiny-init" if model == "untrained" else out / f"sft-{model.split('-')[1]}" / "model"
    return f"hf:{path}?{PROMPT}"


def evaluate(model: str, out: Path, suite: str, seed: int, episodes: int, stages: dict[str, Any]) -> Path:
    """One round of one agent on the MiniWoB tasks; its results folder."""
    folder = out / "eval" / f"{model}-s{seed}"
    if (folder / "summary.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    if model == "rules":  # in-process: the same runner settings as cua eval's
        from harness.evaluation.summary import write_summary
        from harness.records import EpisodeSpec
        from harness.runner import EpisodeRunner, RunnerConfig

        specs = [EpisodeSpec(task_id=task, seed=seed + i, index=i)
                 for task in suite.split("+") for i in range(episodes)]
        runner = EpisodeRunner(RuleAgent(), RunnerConfig(concurrency=4, max_steps=10, elements=True),
                               out_dir=folder)
        write_summary(folder / "summary.json", asyncio.run(runner.run(specs)))
        return folder
    args = ["eval", "--suite", suite, "--agent", agent_spec(model, out), "--episodes", str(episodes),
            "--seed", str(seed), "--concurrency", "4", "--max-steps", "10", "--out", str(folder)]
    stages.setdefault("eval_commands", []).append("cua " + shlex.join(args))
    cua(args, log=folder.with_suffix(".log"))
    return folder


def step_stats(folders: list[Path]) -> dict[str, dict[str, float | int]]:
    """Per task: episodes, successes, and what the steps were (valid actions, element clicks,
    element clicks naming something in the instruction)."""
    tasks: dict[str, dict[str, float | int]] = {}
    for folder in folders:
        for line in (folder / "results.jsonl").read_text().splitlines():
            record = json.loads(line)
            cell = tasks.setdefault(record["task"], dict(episodes=0, successes=0, steps=0, valid=0,
                                                         clicks=0, named=0, infra_errors=0))
            if record["error"]:
                cell["infra_errors"] += 1
                continue
            cell["episodes"] += 1
            cell["successes"] += int(record["success"])
            for step in record["trajectory"]:
                cell["steps"] += 1
                cell["valid"] += int(step["error"] is None)
                try:
                    action = json.loads(step["action_text"] or "")
                except ValueError:
                    continue
                if isinstance(action, dict) and action.get("type") == "click_element":
                    cell["clicks"] += 1
                    name = str(action.get("element", "")).casefold()
                    cell["named"] += int(bool(name) and name in record["instruction"].casefold())
    for cell in tasks.values():
        cell["success_rate"] = cell["successes"] / cell["episodes"] if cell["episodes"] else 0.0
    return tasks


def data_overlap(out: Path) -> dict[str, Any]:
    """What the two SFT exports hold: rows, distinct (prompt text, target) pairs, and how many
    of those the two sides share (element mode sees labels, not pictures or themes)."""
    from trainers.training.data import read_export

    distinct = {}
    for side in ("realistic", "plain"):
        rows = read_export(out / f"sft-{side}" / "data" / "sft.parquet")
        distinct[side] = (len(rows), {f"{row['prompt'][-1]['content'][-1]['text']}\n=> {row['target']}"
                                      for row in rows})
    (n_real, real), (n_plain, plain) = distinct["realistic"], distinct["plain"]
    return {"rows": {"realistic": n_real, "plain": n_plain},
            "distinct": {"realistic": len(real), "plain": len(plain)}, "shared": len(real & plain)}


def in_domain(run: Path) -> dict[str, Any] | None:
    """The run's own after-training evaluation on FSM goals (unseen layout seed)."""
    metrics = run / "metrics.jsonl"
    if not metrics.is_file():
        return None
    lines = [json.loads(x) for x in metrics.read_text().splitlines() if x]
    after = [r for r in lines if r.get("event") == "eval" and r.get("phase") == "after"]
    train_lines = [r for r in lines if r.get("event") == "train" and "loss" in r]
    return {"eval_after": after[-1] if after else None,
            "first_loss": train_lines[0]["loss"] if train_lines else None,
            "last_loss": train_lines[-1]["loss"] if train_lines else None,
            "last_token_accuracy": train_lines[-1].get("mean_token_accuracy") if train_lines else None,
            "train_wall_s": train_lines[-1].get("wall_s") if train_lines else None}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 goals on 1 seed, 20 SFT steps, 3 MiniWoB tasks x 2 episodes")
    parser.add_argument("--out", type=Path, default=None, help="run folder (default runs/transfer)")
    parser.add_argument("--plain-commit", default=PLAIN_COMMIT, help="the commit of the plain renderer")
    parser.add_argument("--episodes", type=int, default=10, help="episodes per task and agent")
    parser.add_argument("--rounds", type=int, default=2, help="rounds the episodes are split into")
    parser.add_argument("--result", type=Path, default=None, help="result JSON path")
    args = parser.parse_args(argv)
    out = (args.out or Path("runs/transfer-quick" if args.quick else "runs/transfer")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    names = list(TRANSFER_TASKS)[:3] if args.quick else list(TRANSFER_TASKS)
    episodes = 2 if args.quick else args.episodes
    rounds = 1 if args.quick else args.rounds
    collected = collect_tasks()[:6] if args.quick else collect_tasks()
    overrides = ["--set", "train.max_steps=20", "--set", "eval.after=false"] if args.quick else []
    stages: dict[str, Any] = {}
    load = {"start": machine()["load_average"]}

    for side in ("realistic", "plain"):
        collect(side, out, collected, 1 if args.quick else 3, args.plain_commit, stages)
    load["collected"] = machine()["load_average"]
    for side in ("realistic", "plain"):
        train(side, out, overrides, stages)
    load["trained"] = machine()["load_average"]

    suite = "+".join(f"miniwob:{name}" for name in names)
    per_round = -(-episodes // rounds)
    folders: dict[str, list[Path]] = {m: [] for m in (*MODELS, "rules")}
    started = time.perf_counter()
    for r in range(rounds):
        order = (*MODELS, "rules") if r % 2 == 0 else ("rules", *reversed(MODELS))
        for model in order:
            folders[model].append(evaluate(model, out, suite, r * per_round, per_round, stages))
        load[f"eval_round_{r}"] = machine()["load_average"]
    stages["eval_seconds"] = round(time.perf_counter() - started, 1)

    table = {m: step_stats(f) for m, f in folders.items()}
    result = {
        "plan": {"collected": collected, "tasks": {n: TRANSFER_TASKS[n] for n in names}, "not_expressible": NOT_EXPRESSIBLE,
                 "episodes_per_task": per_round * rounds, "rounds": rounds, "max_steps": 10,
                 "concurrency": 4, "agents": {m: agent_spec(m, out) for m in MODELS} | {"rules": "RuleAgent"},
                 "config": str(CONFIG.relative_to(REPO)), "overrides": overrides,
                 "plain_commit": args.plain_commit},
        "stages": stages, "load_average": load,
        "in_domain": {side: in_domain(out / f"sft-{side}") for side in ("realistic", "plain")},
        "data": data_overlap(out),
        "results": table,
    }
    rows = []
    for name in names:
        row = [name]
        for model in (*MODELS, "rules"):
            cell = table[model].get(f"miniwob:{name}", {})
            row.append(success_cell(cell.get("success_rate", 0.0), cell.get("episodes", 0)))
        rows.append(row)
    print_table("MiniWoB++ zero-shot success (episodes)", ["task", *MODELS, "rules"], rows)
    path = write_results("bench_transfer", result, args.result, quick=args.quick)
    console.print(f"results: {path}")
    return result


if __name__ == "__main__":
    main()
