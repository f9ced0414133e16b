"""This tree's ``bench_env`` and ``bench_fsm`` side by side with another checkout's (the
commit before a change), rounds alternating which side runs first; paired ratios.

    .venv/bin/python -m benchmarks.ab_commits --base /work/bench-base [--rounds 3]

``--base`` is a checkout of the earlier commit with its own ``.venv`` (``git worktree add
--detach ../bench-base <commit> && make -C ../bench-base setup``), outside this repository's
tree and never committed. Each round runs, on both sides, ``bench_env`` on the floors and
the env (``--systems floor,floor-judged,harness``) and ``bench_fsm --quick``, each in its own
process with the side's own code. Ratios are this tree's value over the base's, paired per
(round, cell), median over rounds: env steps/s per (task, concurrency), and the same
normalized by each run's own floor (so load that differs between the two runs of a round
cancels); FSM verified trajectories per hour, env steps/s and reset p50 per (concurrency,
mode). Results (every run's JSON path and the ratios) go to ``runs/ab/ab_commits.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import console, fmt, machine, median, print_table, ratio

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "runs" / "ab"
ENV_ARGS = ["--systems", "floor,floor-judged,harness", "--tasks", "click-button,click-link",
            "--repeats", "1", "--steps", "30"]
FSM_ARGS = ["--quick", "--seconds", "15"]


def run_side(tree: Path, bench: str, args: list[str], out: Path) -> dict[str, Any]:
    """One benchmark run in ``tree`` with its own venv; its JSON result."""
    cmd = [str(tree / ".venv" / "bin" / "python"), "-m", f"benchmarks.{bench}", *args, "--out", str(out)]
    done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"expected `{' '.join(cmd)}` in {tree} to succeed, got exit "
                           f"{done.returncode}: {tail}")
    return json.loads(out.read_text())


def env_values(result: dict[str, Any]) -> dict[str, float | None]:
    """Env steps/s per (task, n), raw and divided by the same run's floor."""
    cells = {(c["system"], c["task"], c["n"]): c for c in result["cells"] if "error" not in c}
    out: dict[str, float | None] = {}
    for (system, task, n), cell in cells.items():
        if system != "harness":
            continue
        floor = cells.get(("floor", task, n))
        out[f"env steps/s c{n} | {task}"] = cell["steps_per_s"]
        out[f"env/floor steps/s c{n} | {task}"] = ratio(cell["steps_per_s"],
                                                        floor["steps_per_s"] if floor else None)
    return out


def fsm_values(result: dict[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, cell in result["cells"].items():
        out[f"fsm verified/h {name}"] = cell["verified_per_hour"]
        out[f"fsm steps/s {name}"] = cell["steps_per_s"]
        out[f"fsm reset ms p50 {name}"] = cell["reset_ms_p50"]
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="checkout of the earlier commit, with .venv")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--benches", default="bench_env,bench_fsm", help="which benchmarks")
    args = parser.parse_args(argv)
    base = Path(args.base).resolve()
    if not (base / ".venv" / "bin" / "python").exists():
        parser.error(f"expected a checkout with .venv at --base, got {base}; run `make setup` there")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    sides = {"new": REPO, "base": base}
    benches = {"bench_env": (ENV_ARGS, env_values), "bench_fsm": (FSM_ARGS, fsm_values)}
    runs: list[dict[str, Any]] = []
    for rnd in range(args.rounds):
        order = ["new", "base"] if rnd % 2 == 0 else ["base", "new"]
        for bench in args.benches.split(","):
            bench_args, values = benches[bench]
            for side in order:
                out = OUT_DIR / f"{bench}-{side}-r{rnd}.json"
                console.print(f"round {rnd}: {bench} on {side}")
                result = run_side(sides[side], bench, bench_args, out)
                runs.append({"round": rnd, "bench": bench, "side": side, "out": str(out),
                             "load": result["machine"]["load_average"], "values": values(result)})
    ratios = paired(runs)
    for name in list(ratios):  # pooled over tasks: "env steps/s c1 | click-button" -> "env steps/s c1"
        if " | " in name:
            ratios.setdefault(name.split(" | ")[0] + " (all tasks)", []).extend(ratios[name])
    print_table("this tree / base, paired per round (median over rounds)", ["value", "ratio", "rounds"],
                [[name, fmt(median(vs), 2), str(len(vs))] for name, vs in ratios.items()])
    payload = {"machine": machine(), "base": str(base), "rounds": args.rounds, "runs": runs,
               "paired_ratios": {name: {"median": median(vs), "per_round": vs}
                                 for name, vs in ratios.items()}}
    path = OUT_DIR / "ab_commits.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    console.print(f"results: {path}")
    return payload


def paired(runs: list[dict[str, Any]]) -> dict[str, list[float]]:
    by_key = {(r["round"], r["bench"], r["side"]): r["values"] for r in runs}
    ratios: dict[str, list[float]] = {}
    for (rnd, bench, side), values in by_key.items():
        if side != "new" or (rnd, bench, "base") not in by_key:
            continue
        for name, value in values.items():
            r = ratio(value, by_key[(rnd, bench, "base")].get(name))
            if r is not None:
                ratios.setdefault(name, []).append(r)
    return ratios


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
