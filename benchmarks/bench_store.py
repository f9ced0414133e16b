"""Issue 4's benchmark: the tree store against flat storage, restore, and exploration.

    .venv/bin/python -m benchmarks.bench_store [--quick]

1. Collect real episodes once: FSM tasks of the curated library in Chromium, independent
   rollouts from the root, each step the oracle's action with probability 0.7 and a random
   action otherwise (so episodes share prefixes and branch, as collected data does).
2. Store the same episodes (a) in ``TrajectoryStore`` (SQLite WAL + content-addressed
   blobs: PNG, the default, and WebP) and (b) flat (``benchmarks.flat_store``: a JSONL
   line per step + one image file per screenshot): bytes on disk, insert throughput (first
   pass: every screenshot new; later passes: the same episodes again, so blobs and nodes
   already exist; the kinds interleaved, medians over repeats), export time from the PNG
   store (SFT to Parquet and JSONL, DPO, GRPO; flat: SFT to JSONL).
3. Node restore from the PNG store: ``restore_node`` by jump vs by replay, per node depth.
4. Environment steps per verified (successful) trajectory: ``Explorer`` with the oracle and
   the random agent, tree exploration vs independent rollouts from the root, same budget
   and seed.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
from itertools import product
from pathlib import Path
from typing import Any

from benchmarks.common import console, fmt, median, print_table, ratio, write_results
from benchmarks.flat_store import FlatStore
from fsm_sites.library import list_sites, load_site
from fsm_sites.serving.client import LocalSiteClient
from fsm_sites.serving.server import SiteServer
from harness.actions import describe_action
from harness.env import AsyncEnv
from harness.store.explore import ExploreConfig, Explorer
from harness.store.export import ExportConfig, export
from harness.store.models import Frame, Step, Trajectory
from harness.store.restore import restore_node
from harness.store.statekey import state_key_for
from harness.store.stats import disk_bytes
from harness.store.store import TrajectoryStore
from harness.tasks.fsm import FSMTask, goal_tasks
from sandboxes.browser.config import BrowserConfig
from sandboxes.providers import LocalProvider

TARGET_INSERT = 5000
STORAGE_KINDS = ("png", "webp", "flat")  # the store's default blob format first


def pick_tasks(n: int, lo: int, hi: int) -> list[Any]:
    """``n`` goal tasks of depth lo..hi from different curated sites."""
    picked = []
    for site in list_sites():
        fitting = [t for t in goal_tasks(load_site(site)) if lo <= t.difficulty <= hi]
        if fitting:
            picked.append(fitting[len(fitting) // 2])
        if len(picked) == n:
            break
    return picked


async def collect(env: AsyncEnv, episodes: int, p_oracle: float, seed: int) -> list[Trajectory]:
    """Independent rollouts from the root with an oracle/random mixture policy."""
    from harness.agents.random_agent import RandomAgent

    rng, out = random.Random(seed), []
    for _ in range(episodes):
        obs, info = await env.reset(seed=0)
        root = Frame(screenshot=obs.screenshot, url=obs.url, state_key=state_key_for(obs, info.fsm_state))
        steps, success, total = [], False, 0.0
        for _ in range(env.max_steps):
            action = await env.oracle_action() if rng.random() < p_oracle else None
            action = action or RandomAgent().sample(obs.width, obs.height,
                                                    random.Random(rng.randrange(2**31)))
            obs, reward, terminated, truncated, info = await env.step(action)
            verdict = info.verdict
            steps.append(Step(action=info.action or action.model_dump(), action_text=describe_action(action),
                              screenshot=obs.screenshot, url=obs.url, reward=reward,
                              state_key=state_key_for(obs, verdict.state_after if verdict else None),
                              verdict=verdict.model_dump() if verdict else None, terminal=terminated))
            total, success = total + reward, success or info.success
            if terminated or truncated:
                break
        out.append(Trajectory(env=env.task_id, root=root, steps=tuple(steps), task_id=env.task_id,
                              reward=total, success=success, agent="mixture"))
    return out


def fold_wal(store: TrajectoryStore) -> None:
    """Fold SQLite's WAL back into the database file, so bytes on disk count the data once."""
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()


def insert_passes(trajectories: list[Trajectory], root: Path, passes: int, kind: str,
                  instructions: dict[str, str]) -> dict[str, Any]:
    """Insert the episodes ``passes`` times into one fresh store; time each pass."""
    shutil.rmtree(root, ignore_errors=True)
    steps = sum(len(t.steps) for t in trajectories)
    times = []
    if kind == "flat":
        flat = FlatStore(root)
        for p in range(passes):
            start = time.perf_counter()
            for i, trajectory in enumerate(trajectories):
                flat.insert(trajectory, f"p{p}e{i}")
            times.append(time.perf_counter() - start)
        flat.close()
        first_bytes = None
    else:
        store = TrajectoryStore(root, blob_format=kind)
        for task_id, instruction in instructions.items():  # exports read the task's instruction
            store.put_task(task_id, instruction)
        first_bytes = None
        for p in range(passes):
            start = time.perf_counter()
            for trajectory in trajectories:
                store.insert_trajectory(trajectory)
            times.append(time.perf_counter() - start)
            if p == 0:
                fold_wal(store)
                first_bytes = disk_bytes(root)
        fold_wal(store)
        store.close()
    return {"kind": kind, "steps_per_pass": steps, "pass_s": times,
            "first_pass_steps_per_s": steps / times[0],
            "later_steps_per_s": median(steps / t for t in times[1:]),
            "bytes_one_pass": first_bytes if kind != "flat" else disk_bytes(root) // passes,
            "bytes_all_passes": disk_bytes(root)}


def insert_repeats(trajectories: list[Trajectory], work: Path, passes: int, repeats: int,
                   instructions: dict[str, str]) -> dict[str, Any]:
    """``insert_passes`` for every storage kind, interleaved: repeats outside, kinds inside,
    the kinds' order rotating each repeat, so disk noise that drifts during the run hits
    every kind alike. Medians over the repeats, with each repeat's values kept."""
    kinds = list(STORAGE_KINDS)
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for rep in range(repeats):
        for kind in kinds[rep % len(kinds):] + kinds[: rep % len(kinds)]:
            runs[kind].append(insert_passes(trajectories, work / f"ins-{kind}", passes, kind, instructions))
    return {kind: {
        "first_pass_steps_per_s": median(r["first_pass_steps_per_s"] for r in kind_runs),
        "later_steps_per_s": median(r["later_steps_per_s"] for r in kind_runs),
        "bytes_one_pass": kind_runs[0]["bytes_one_pass"], "bytes_all_passes": kind_runs[0]["bytes_all_passes"],
        "repeats": [{key: r[key] for key in ("first_pass_steps_per_s", "later_steps_per_s", "pass_s")}
                    for r in kind_runs],
    } for kind, kind_runs in runs.items()}


def export_times(store_dir: Path, flat_dir: Path, work: Path, repeats: int) -> dict[str, Any]:
    out: dict[str, list[float]] = {}
    store = TrajectoryStore(store_dir)
    jobs = [("sft_parquet", "sft", False), ("sft_jsonl", "sft", True), ("dpo_parquet", "dpo", False),
            ("grpo_parquet", "grpo", False)]
    for _ in range(repeats):
        for name, fmt_, jsonl in jobs:
            target = work / name
            shutil.rmtree(target, ignore_errors=True)
            start = time.perf_counter()
            export(store, fmt_, target, ExportConfig(jsonl=jsonl))
            out.setdefault(f"store_{name}", []).append(time.perf_counter() - start)
        target = work / "flat_sft"
        shutil.rmtree(target, ignore_errors=True)
        flat = FlatStore(flat_dir)
        start = time.perf_counter()
        flat.export_sft(target)
        out.setdefault("flat_sft_jsonl", []).append(time.perf_counter() - start)
        flat.close()
    store.close()
    return {k: median(v) for k, v in out.items()}


async def restore_times(env: AsyncEnv, store_dir: Path, repeats: int) -> list[dict[str, Any]]:
    """jump vs replay for the nodes on the longest successful path of the env's tree."""
    store = TrajectoryStore(store_dir)
    try:
        episodes = [e for e in store.episodes(success=True) if e.task_id == env.task_id]
        if not episodes:
            return []
        leaf = max(episodes, key=lambda e: e.steps).leaf_id
        # Untimed: a sandbox's first episode opens its browser context, and the first
        # screenshot check imports the perceptual-hash stack.
        await restore_node(env, store, store.path_to(leaf)[1].id, seed=0, mode="jump")
        rows = []
        for node in store.path_to(leaf)[1:]:
            times: dict[str, list[float]] = {"jump": [], "replay": []}
            steps: dict[str, int] = {}
            for _ in range(repeats):
                for mode in ("jump", "replay"):
                    start = time.perf_counter()
                    restored = await restore_node(env, store, node.id, seed=0, mode=mode)
                    times[mode].append((time.perf_counter() - start) * 1000)
                    steps[mode] = restored.env_steps
            rows.append({"task": env.task_id, "depth": node.depth, "jump_ms": median(times["jump"]),
                         "replay_ms": median(times["replay"]), "replay_env_steps": steps["replay"]})
        return rows
    finally:
        store.close()


async def explore_compare(env: AsyncEnv, work: Path, budget: int, seeds: list[int],
                          max_depth: int) -> list[dict[str, Any]]:
    """Same budget, tree vs independent, for the oracle and the random agent. A rollout from
    the root with the oracle repeats one trajectory, so distinct successful leaves count too."""
    rows = []
    for agent, seed, mode in product(("oracle", "random"), seeds, ("tree", "independent")):
        root = work / f"explore-{agent}-{mode}-{seed}"
        shutil.rmtree(root, ignore_errors=True)
        store = TrajectoryStore(root)
        config = ExploreConfig(budget=budget, agent=agent, explore=mode, seed=seed, max_depth=max_depth)
        report = await Explorer(store, env, config, env_key=env.task_id).run()
        distinct = len({e.leaf_id for e in store.episodes(success=True)})
        store.close()
        rows.append({"task": env.task_id, "agent": agent, "seed": seed, "mode": mode,
                     "distinct_successes": distinct,
                     "steps_per_distinct_success": report.env_steps / distinct if distinct else None,
                     "seconds_per_distinct_success": report.seconds / distinct if distinct else None,
                     **report.to_dict()})
    return rows


def encode_costs(trajectories: list[Trajectory], sample: int) -> list[dict[str, Any]]:
    """ms and bytes per screenshot for blob encodings, on distinct collected screenshots."""
    import io

    from PIL import Image

    shots = list({s.screenshot: None for t in trajectories for s in t.steps})[:sample]
    settings = {"webp lossless method=4 (blob_format=webp)": dict(lossless=True, quality=80, method=4),
                "webp lossless method=0": dict(lossless=True, quality=0, method=0),
                "webp lossy q80 method=0": dict(quality=80, method=0)}
    rows = [{"encoding": "png as captured (no re-encode)", "ms_per_image": 0.0,
             "kb_per_image": sum(map(len, shots)) / len(shots) / 1024}]
    for name, params in settings.items():
        start, size = time.perf_counter(), 0
        for shot in shots:
            out = io.BytesIO()
            Image.open(io.BytesIO(shot)).convert("RGB").save(out, "WEBP", **params)
            size += out.tell()
        rows.append({"encoding": name, "ms_per_image": (time.perf_counter() - start) * 1000 / len(shots),
                     "kb_per_image": size / len(shots) / 1024})
    return rows


async def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    tasks = pick_tasks(args.tasks, 3, 5)
    explore_task = pick_tasks(1, 2, 2)[0]
    specs = [load_site(site) for site in list_sites()]
    result: dict[str, Any] = {"tasks": [f"{t.site}/{t.id}" for t in tasks]}
    async with SiteServer(specs) as server, LocalProvider(BrowserConfig()) as provider:
        sites = LocalSiteClient(server)
        sandbox = await provider.new_browser()
        trajectories, envs = [], []
        start = time.perf_counter()
        for k, task in enumerate(tasks):
            env = AsyncEnv(FSMTask([task], sites), sandbox, max_steps=task.difficulty + 4)
            trajectories += await collect(env, args.episodes, 0.7, seed=k)
            envs.append(env)
        result["collect_s"] = time.perf_counter() - start
        instructions = {env.task_id: env.task.task.instruction for env in envs}
        result["episodes"] = len(trajectories)
        result["steps"] = sum(len(t.steps) for t in trajectories)
        result["successes"] = sum(t.success for t in trajectories)
        console.print(f"collected {result['episodes']} episodes, {result['steps']} steps "
                      f"({result['successes']} successful) in {result['collect_s']:.0f}s")
        result["insert"] = insert_repeats(trajectories, work, args.passes, args.repeats, instructions)
        # Export and restore read the store as it ships: PNG blobs, the default.
        one_pass = {kind: work / f"one-{kind}" for kind in ("png", "flat")}
        insert_passes(trajectories, one_pass["png"], 1, "png", instructions)
        insert_passes(trajectories, one_pass["flat"], 1, "flat", instructions)
        result["encode"] = encode_costs(trajectories, 12 if args.quick else 40)
        result["export_s"] = export_times(one_pass["png"], one_pass["flat"], work / "export", args.repeats)
        result["restore"] = []
        for env in envs[:1]:
            result["restore"] += await restore_times(env, one_pass["png"], args.restore_repeats)
        for env in envs:
            await env.close()
        explore_env = AsyncEnv(FSMTask([explore_task], sites), sandbox, max_steps=12)
        result["explore"] = await explore_compare(explore_env, work, args.budget, args.seeds,
                                                  max_depth=explore_task.difficulty + 4)
        await explore_env.close()
        await sandbox.close()
    return result


def report(result: dict[str, Any]) -> dict[str, Any]:
    ins = result["insert"]
    flat_bytes = ins["flat"]["bytes_one_pass"]
    print_table(f"storage of the same {result['episodes']} episodes / {result['steps']} steps (medians)",
                ["storage", "bytes (1 pass)", "vs flat", "insert steps/s, new blobs",
                 "insert steps/s, repeat passes", "bytes (all passes)"],
                [[kind, f"{r['bytes_one_pass']:,}", fmt(ratio(flat_bytes, r["bytes_one_pass"]), 2) + "x smaller",
                  fmt(r["first_pass_steps_per_s"], 0), fmt(r["later_steps_per_s"], 0),
                  f"{r['bytes_all_passes']:,}"] for kind, r in ins.items()])
    print_table("export time (s, medians)", ["export", "seconds"],
                [[k, fmt(v, 3)] for k, v in result["export_s"].items()])
    print_table("node restore (ms, medians)", ["task", "depth", "jump ms", "replay ms", "replay/jump"],
                [[r["task"], str(r["depth"]), fmt(r["jump_ms"]), fmt(r["replay_ms"]),
                  fmt(ratio(r["replay_ms"], r["jump_ms"]), 2)] for r in result["restore"]])
    print_table("screenshot blob encodings", ["encoding", "ms/image", "KB/image"],
                [[r["encoding"], fmt(r["ms_per_image"]), fmt(r["kb_per_image"])] for r in result["encode"]])
    print_table("exploration, same step budget", ["task", "agent", "seed", "mode", "env steps",
                "episodes", "successes", "distinct successes", "steps/distinct success", "s/distinct success", "jumps"],
                [[r["task"], r["agent"], str(r["seed"]), r["mode"], str(r["env_steps"]), str(r["episodes"]),
                  str(r["successes"]), str(r["distinct_successes"]), fmt(r["steps_per_distinct_success"]),
                  fmt(r["seconds_per_distinct_success"]), str(r["restores_jump"])] for r in result["explore"]])
    by_mode: dict[str, list[float | None]] = {}
    for agent, mode in product(("oracle", "random"), ("tree", "independent")):
        rows = [r for r in result["explore"] if r["mode"] == mode and r["agent"] == agent]
        steps, wins = sum(r["env_steps"] for r in rows), sum(r["distinct_successes"] for r in rows)
        by_mode[f"{agent}_{mode}"] = [steps / wins if wins else None]
    summary = {  # png is the store's default blob format; webp the opt-in
        **{f"insert_{kind}_{key}_steps_per_s": ins[kind][f"{key}_steps_per_s"]
           for kind in ("png", "webp") for key in ("first_pass", "later")},
        **{f"saving_ratio_{kind}": ratio(flat_bytes, ins[kind]["bytes_one_pass"]) for kind in ("png", "webp")},
        **{f"steps_per_distinct_success_{k}": v[0] for k, v in by_mode.items()},
    }
    summary["targets"] = {
        "insert_ge_5000_steps_per_s_new_blobs": (summary["insert_png_first_pass_steps_per_s"] or 0) >= TARGET_INSERT,
        "insert_ge_5000_steps_per_s_repeat": (summary["insert_png_later_steps_per_s"] or 0) >= TARGET_INSERT,
    }
    console.print(f"summary: {summary}")
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer episodes, a smaller budget")
    parser.add_argument("--tasks", type=int, default=None, help="tasks (sites) to collect on")
    parser.add_argument("--episodes", type=int, default=None, help="episodes collected per task")
    parser.add_argument("--passes", type=int, default=None, help="insert passes per store")
    parser.add_argument("--repeats", type=int, default=None, help="repeats of insert/export timings")
    parser.add_argument("--restore-repeats", type=int, default=None, help="restores per node and mode")
    parser.add_argument("--budget", type=int, default=None, help="env steps per exploration run")
    parser.add_argument("--seeds", default=None, help="comma-separated exploration seeds")
    parser.add_argument("--keep", default=None, help="keep the stores under this directory")
    parser.add_argument("--out", default=None, help="JSON results path (default: benchmarks/results/"
                        "<name>.json, or runs/bench-quick/<name>.json with --quick)")
    args = parser.parse_args(argv)
    args.tasks = args.tasks or (2 if args.quick else 3)
    args.episodes = args.episodes or (6 if args.quick else 10)
    args.passes = args.passes or (3 if args.quick else 5)
    args.repeats = args.repeats or (2 if args.quick else 3)
    args.restore_repeats = args.restore_repeats or (1 if args.quick else 2)
    args.budget = args.budget or (40 if args.quick else 80)
    args.seeds = [int(s) for s in (args.seeds or "0").split(",")]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-store-"))
    try:
        result = asyncio.run(run(args, work))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    summary = report(result)
    path = write_results("bench_store", {"args": vars(args), "summary": summary, **result},
                         out=args.out, quick=args.quick)
    console.print(f"results: {path}")
    return summary


if __name__ == "__main__":
    main()
