"""Issue 21's rows 3 and 4: GRPO from the corpus SFT model, judged on sites it never saw.

    .venv/bin/python -m benchmarks.bench_grpo_corpus --corpus runs/corpus \\
        --model runs/sft-corpus/model --baseline runs/sft-corpus/eval/after \\
        [--seeds 0 1 2] [--env-steps 400] [--updates 20] [--runs runs/grpo-corpus]

**The split is the corpus's own** (``cua data corpus``; BENCHMARKS.md "Issue 21: the
corpus"): GRPO trains on tasks of the *training* sites whose shortest path is at most
``--max-depth`` steps (the SFT model already saw oracle rows of these sites), and every arm,
like the SFT model it starts from, is evaluated greedily on **every task of the held-out
sites** (``stats.json``'s ``heldout_tasks``: 268 tasks on 9 sites that no training row comes
from), one episode each at layout seed 100, at most ``--eval-steps`` steps.

**The arms** are ``bench_grpo_learning``'s three (``cua train grpo`` with
``trainers/configs/grpo-tiny.yaml``, the same group size and tasks per update):
``outcome`` (episode reward only), ``step`` (verified step rewards, discounted) and
``step+tree`` (plus one branched state per group). **They are compared at equal env steps**
with ``--env-steps N``: every arm's run stops after the update in which its env steps reach
N (``cua train grpo``'s ``env_steps``; ``--updates`` is then only the cap). The same number
of updates is not the same budget: dynamic sampling redraws the groups whose rewards are
all equal, far more of them under outcome rewards, so in 10 updates the outcome arm took
about twice the step arm's env steps (BENCHMARKS.md). Each run's env steps used and why it
stopped (``env_steps`` or ``updates``) are in the results. The arms of one seed run at
once, one torch thread each.

**What is written** (``benchmarks/results/bench_grpo_corpus.json``): per arm and seed the
held-out success with its Wilson CI, the paired comparison with the SFT model's evaluation
(``--baseline``, a ``cua eval`` folder over the same tasks and seed; made here when not
given) by ``cua eval compare``'s machinery (exact McNemar, the Newcombe CI of the
difference, a task bootstrap), success by the task's shortest-path length (does the gap
between step and outcome rewards grow with depth?), and row 4: each run's CPU-minutes
(the run's process tree, from ``wait4``), wall time, and its split per update into env,
generation and training (``env_s``, ``generation_s``, ``train_s`` of metrics.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_grpo_learning import CONFIG, VARIANTS, load
from benchmarks.common import console, print_table, success_cell, write_results


def corpus_tasks(corpus: Path, max_depth: int) -> tuple[list[str], list[str], dict[str, int]]:
    """The training sites' task ids of at most ``max_depth`` steps, the held-out suites
    (one ``fsm:FILE`` per held-out site) and every task id's shortest-path length."""
    from fsm_sites.synthesis.tasks import load_tasks
    from harness.store.corpus_split import read_manifest

    stats = read_manifest(corpus)
    held = set(stats["sites"]["held_out"])
    train, depth = [], {}
    for folder in sorted(p for p in (corpus / "sites").iterdir() if (p / "tasks.jsonl").is_file()):
        for task in load_tasks(folder / "tasks.jsonl"):
            task_id = f"fsm:{(folder / 'tasks.jsonl').resolve()}#{task.id}"
            depth[task_id] = task.difficulty
            if folder.name not in held and task.difficulty <= max_depth:
                train.append(task_id)
    if not train:
        raise SystemExit(f"--corpus: expected training-site tasks of at most {max_depth} steps in "
                         f"{corpus / 'sites'}, got none; raise --max-depth or build the corpus first")
    return train, list(stats["heldout_tasks"]), depth


def arm_sets(args: argparse.Namespace, name: str, seed: int, out: Path, train: list[str]) -> list[str]:
    """The ``--set`` overrides of one arm's run: the SFT model's own prompt (its
    ``cua_agent.yaml``: a corpus built with ``element_refs: index`` trains a model that answers
    ``[k]``), every arm the same budget (``--env-steps``, capped by ``--updates``), its own
    reward settings, then ``--set``'s for every arm."""
    from harness.prompts import PromptConfig
    from trainers.agents.options import read_agent_file

    prompt = [f"prompt.{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in read_agent_file(args.model).items()
              if k in PromptConfig.model_fields and v is not None]
    budget = [f"env_steps={args.env_steps}"] if args.env_steps is not None else []
    return [f"out={out}", f"model.path={args.model}", "init=null", *prompt, f"updates={args.updates}", *budget,
            f"seed={seed}", f"tasks=[{', '.join(train)}]", f"rollout.max_steps={args.max_steps}",
            "eval=null", "signal.patience=1000", "checkpoint_every=1000", "filmstrips=0",
            *VARIANTS[name], *args.set]


def start_arm(args: argparse.Namespace, name: str, seed: int, out: Path, train: list[str]) -> subprocess.Popen[bytes]:
    """``cua train grpo`` for one arm and seed (no evaluation inside: the arms are evaluated
    afterwards on the held-out sites, all in the same way)."""
    argv = [sys.executable, "-m", "harness.cli", "train", "grpo", "--config", str(CONFIG)]
    for item in arm_sets(args, name, seed, out, train):
        argv += ["--set", item]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "run.log", "wb") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def wait_cpu(proc: subprocess.Popen[bytes]) -> float:
    """Wait for ``proc``; the CPU seconds of it and of the children it reaped (Chromium)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def time_split(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Row 4: the run's seconds per update, split into env, generation and training; the env
    steps it used and why it stopped (``env_steps``: the budget reached; ``updates``: the cap;
    None: a run from before ``cua train grpo`` wrote its ``stop`` line)."""
    updates = [x for x in lines if x["event"] == "update"]
    stops = [x for x in lines if x["event"] == "stop"]
    n = len(updates)
    parts = {k: sum(u.get(k, 0.0) for u in updates) / n for k in ("env_s", "generation_s", "train_s")}
    return {"updates": n, "env_steps": updates[-1]["env_steps"], "stop_reason": stops[-1]["reason"] if stops else None,
            "per_update_s": {k: round(v, 2) for k, v in parts.items()},
            "process_cpu_per_update_s": round(sum(u.get("cpu_s", 0.0) for u in updates) / n, 2),
            "train_success": [u["success"] for u in updates], "clip_fraction": [u.get("clip_fraction") for u in updates],
            "kl": [u.get("kl") for u in updates]}


def evaluate_model(model: Path, heldout: list[str], out: Path, max_steps: int) -> dict[str, Any]:
    """Greedy, one episode per held-out task at seed 100 (``cua train``'s evaluation)."""
    from trainers.training.config import EvalSpec
    from trainers.training.evaluate import evaluate

    if (out / "summary.json").is_file():
        return json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return evaluate(model, EvalSpec(tasks=heldout, seed=100, episodes=1, max_steps=max_steps), out,
                    title="bench_grpo_corpus")


def by_depth(eval_dir: Path, depth: dict[str, int]) -> dict[str, list[int]]:
    """Held-out successes and episodes per shortest-path length: {length: [solved, episodes]}."""
    from harness.evaluation.compare import load_run

    table: dict[str, list[int]] = {}
    for record in load_run(eval_dir, str(eval_dir)):
        length = depth.get(record.task, record.start_distance if record.start_distance is not None else -1)
        cell = table.setdefault(str(length), [0, 0])
        cell[0] += int(record.success)
        cell[1] += 1
    return dict(sorted(table.items(), key=lambda kv: int(kv[0])))


def compare(arm_eval: Path, baseline: Path) -> dict[str, Any]:
    """The arm against the SFT model, paired by task and seed (``cua eval compare``)."""
    from harness.evaluation.compare import compare_runs

    group = compare_runs(arm_eval, baseline)["groups"][0]  # the greedy episodes
    return {k: group[k] for k in ("pairs", "rate_a", "rate_b", "difference", "difference_ci", "bootstrap_ci",
                                  "both", "only_a", "only_b", "neither", "mcnemar_p") if k in group}


def figure(results: dict[str, Any], path: Path) -> None:
    """Held-out-site success (percent, with the Wilson interval) of the SFT model and of each
    arm per seed, as grouped bars (``trainers.charts``)."""
    from trainers.charts import Bar, bar_chart

    def bar(group: str, key: str, rate: float | None, ci: list[float] | None) -> Bar:
        return Bar(group, key, 100 * (rate or 0.0), (100 * ci[0], 100 * ci[1]) if ci else None)

    sft = results["sft"]
    bars = [bar("SFT", f"seed {seed}", sft["success_rate"], sft["success_ci"]) for seed in results["seeds"]]
    bars += [bar(r["arm"], f"seed {r['seed']}", r["success_rate"], r["success_ci"]) for r in results["runs"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(bar_chart(f"held-out-site success, % ({sft['episodes']} tasks, greedy; 95% Wilson)",
                              bars, percent=False), encoding="utf-8")


def check_reused(args: argparse.Namespace, out: Path) -> None:
    """A finished run is reused only under the same budget: arms at unequal env steps would
    be compared as if equal."""
    import yaml

    had = yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8")).get("env_steps")
    if had != args.env_steps:
        raise SystemExit(f"--runs: expected {out} to have run with env_steps {args.env_steps}, got {had}; "
                         "give --runs a new folder for this budget")


def run_seed(args: argparse.Namespace, seed: int, root: Path, train: list[str]) -> dict[str, dict[str, Any]]:
    started, load_before = time.perf_counter(), load()
    for name in args.arms:
        if (root / f"{name}-{seed}" / "model").is_dir():
            check_reused(args, root / f"{name}-{seed}")
    procs = {name: (start_arm(args, name, seed, root / f"{name}-{seed}", train), root / f"{name}-{seed}")
             for name in args.arms if not (root / f"{name}-{seed}" / "model").is_dir()}
    runs: dict[str, dict[str, Any]] = {}
    for name, (proc, out) in procs.items():
        cpu = wait_cpu(proc)
        if proc.returncode != 0:
            raise RuntimeError(f"{name} seed {seed} failed; its log: {out / 'run.log'}")
        (out / "cpu.json").write_text(json.dumps({"cpu_s": cpu, "wall_s": time.perf_counter() - started,
                                                  "load_1min": [load_before, load()]}), encoding="utf-8")
    for name in args.arms:
        out = root / f"{name}-{seed}"
        lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines() if x]
        runs[name] = {**json.loads((out / "cpu.json").read_text(encoding="utf-8")), **time_split(lines)}
    return runs


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="a `cua data corpus` folder")
    parser.add_argument("--model", type=Path, required=True, help="the SFT model to start from")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="the SFT model's `cua eval` folder on the held-out tasks (made when not given)")
    parser.add_argument("--arms", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--env-steps", type=int, default=None, metavar="N",
                        help="every arm's env-step budget: a run stops after the update in which "
                        "its env steps reach N (--updates is then the cap); the fair comparison")
    parser.add_argument("--updates", type=int, default=8, help="updates per run (with --env-steps: the most)")
    parser.add_argument("--max-depth", type=int, default=4, help="longest training task (shortest-path steps)")
    parser.add_argument("--max-steps", type=int, default=6, help="steps per training episode")
    parser.add_argument("--eval-steps", type=int, default=15, help="steps per held-out episode")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="one more override for every arm (e.g. loss.learning_rate=4e-4)")
    parser.add_argument("--runs", type=Path, default=Path("runs/grpo-corpus"),
                        help="the runs' folders (resumable: a finished run is not run again; "
                        "one made under another --env-steps is refused)")
    parser.add_argument("--out", default=None, help="result JSON (default benchmarks/results/)")
    parser.add_argument("--figure", type=Path, default=Path("docs/images/grpo_corpus.svg"))
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.env_steps is not None and args.env_steps < 1:
        parser.error(f"--env-steps: expected a budget of at least 1 env step, got {args.env_steps}")
    train, heldout, depth = corpus_tasks(args.corpus, args.max_depth)
    console.print(f"{len(train)} training tasks (at most {args.max_depth} steps), held-out suites: {len(heldout)}")
    baseline = args.baseline or args.runs / "sft-eval"
    sft = evaluate_model(args.model, heldout, baseline, args.eval_steps)
    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "train_tasks": len(train),
                               "sft": {"success_rate": sft.get("success_rate"), "success_ci": sft.get("success_ci"),
                                       "episodes": sft.get("episodes"), "by_depth": by_depth(baseline, depth)},
                               "seeds": args.seeds, "runs": []}
    for seed in args.seeds:
        runs = run_seed(args, seed, args.runs, train)
        for name, run in runs.items():
            out = args.runs / f"{name}-{seed}"
            summary = evaluate_model(out / "model", heldout, out / "eval", args.eval_steps)
            run.update(arm=name, seed=seed, success_rate=summary.get("success_rate"),
                       success_ci=summary.get("success_ci"), episodes=summary.get("episodes"),
                       by_depth=by_depth(out / "eval", depth), vs_sft=compare(out / "eval", baseline))
            results["runs"].append(run)
            console.print(f"{name} seed {seed}: held-out {summary.get('success_rate')}, "
                          f"vs SFT {run['vs_sft'].get('difference')}")
    rows = [[r["arm"], str(r["seed"]), success_cell(r["success_rate"] or 0.0, r["episodes"] or 0),
             f"{100 * r['vs_sft']['difference']:+.1f} [{100 * r['vs_sft']['difference_ci'][0]:+.1f}, "
             f"{100 * r['vs_sft']['difference_ci'][1]:+.1f}] p={r['vs_sft']['mcnemar_p']:.2g}",
             f"{r['env_steps']} ({r.get('stop_reason') or '?'})", f"{r['cpu_s'] / 60:.1f}",
             " / ".join(f"{r['per_update_s'][k]:.0f}" for k in ("env_s", "generation_s", "train_s"))]
            for r in results["runs"]]
    print_table(f"held-out-site success after GRPO (SFT: {success_cell(sft.get('success_rate') or 0.0, sft.get('episodes') or 0)})",
                ["arm", "seed", "held-out", "vs SFT (paired)", "env steps (stopped by)", "CPU-min", "s/update env / gen / train"], rows)
    path = write_results("bench_grpo_corpus", results, args.out)
    figure(results, args.figure)
    console.print(f"results: {path}\nfigure: {args.figure}")
    return results


if __name__ == "__main__":
    main()
