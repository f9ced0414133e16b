"""`cua demo`: the whole pipeline on embedded defaults, as the commands a user would type.

Each stage runs one `cua` command in a subprocess (so the demo exercises exactly the CLI
the README documents), prints it, and the demo ends with an index page linking every
report it produced.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.console import Console
from rich.rule import Rule

from harness.cli_config import check_output_dir, cli_errors
from harness.evaluation.stats import summary_rate
from harness.templating import render
from sandboxes.extras import require_extra

console = Console()


@dataclass
class Stage:
    """One demo command and the files it leaves for the index page."""

    title: str
    args: list[str]
    links: dict[str, str] = field(default_factory=dict)  # label -> path relative to the out dir


def demo_stages(out: Path, *, quick: bool) -> list[Stage]:
    episodes = "1" if quick else "2"
    budget = "60" if quick else "150"
    site = out / "synth_site.yaml"
    tasks = out / "synth_tasks.jsonl"
    store = out / "store"
    return [
        Stage("MiniWoB++: random agent", [
            "eval", "--suite", "miniwob:click-button,click-link,click-checkboxes,enter-text",
            "--agent", "random", "--episodes", episodes, "--concurrency", "2", "--seed", "0",
            "--max-steps", "5", "--out", str(out / "miniwob_random"), "--no-progress",
        ], {"MiniWoB++ report": "miniwob_random/report.html"}),
        Stage("FSM sites: synthesize a new site", [
            "sites", "synth", "--seed", "7", "--difficulty", "easy", "--out", str(site),
        ], {"synthesized site spec": "synth_site.yaml"}),
        Stage("FSM sites: validate it", ["sites", "validate", str(site)]),
        Stage("FSM sites: synthesize tasks and verify their oracle paths in a real browser", [
            "tasks", "synth", "--site", str(site), "--n", "6", "--seed", "0", "--out", str(tasks),
        ], {"verified tasks": "synth_tasks.jsonl"}),
        Stage("FSM sites: oracle agent on the verified tasks", [
            "eval", "--suite", f"fsm:{tasks}", "--agent", "oracle", "--episodes", "1",
            "--concurrency", "2", "--out", str(out / "fsm_oracle"),
            "--no-progress",
        ], {"FSM oracle report": "fsm_oracle/report.html"}),
        Stage("FSM sites: random agent on the verified tasks", [
            "eval", "--suite", f"fsm:{tasks}", "--agent", "random", "--episodes", "1",
            "--concurrency", "2", "--max-steps", "8", "--out", str(out / "fsm_random"),
            "--no-progress",
        ], {"FSM random report": "fsm_random/report.html"}),
        Stage("Tree store: collect with tree exploration", [
            "collect", "--suite", "fsm:shop", "--store", str(store), "--budget", budget,
            "--agent", "oracle", "--explore", "tree", "--seed", "0",
        ]),
        Stage("Tree store: statistics", ["store", "stats", str(store)]),
        Stage("Tree store: export DPO pairs", [
            "store", "export", str(store), "--format", "dpo", "--out", str(out / "export_dpo"),
        ], {"DPO export": "export_dpo"}),
        Stage("Tree store: trajectory viewer", [
            "view", str(store), "--out", str(out / "viewer"),
        ], {"trajectory viewer": "viewer/index.html"}),
        *training_stages(out, tasks),
    ]


#: The tiny model's prompt: element lists (no screenshot tokens), JSON actions, no system prompt.
TINY_PROMPT = {"codec": "json", "observation": "elements", "system_prompt": False}
#: Held-out layouts: training episodes use seeds 0-2, evaluation episodes seeds 100 and 101.
EVAL_SEED = "100"


def training_stages(out: Path, tasks: Path) -> list[Stage]:
    """The tiny model evaluated on the synthesized site's verified tasks, trained with a short
    SFT on oracle episodes of those tasks (other layouts), evaluated again, trained online
    with a short GRPO run from there, and evaluated a third time."""
    tiny, model = out / "tiny", out / "sft" / "model"
    query = "&".join(f"{k}={str(v).lower()}" for k, v in TINY_PROMPT.items())

    def evaluate(agent: str, name: str) -> list[str]:
        return ["eval", "--suite", f"fsm:{tasks}", "--agent", agent, "--episodes", "2",
                "--seed", EVAL_SEED, "--concurrency", "4", "--max-steps", "8",
                "--out", str(out / name), "--no-progress"]

    return [
        Stage("Policy: a tiny random-init Qwen2.5-VL", [
            "model", "init", "--preset", "tiny", "--out", str(tiny), "--overwrite"]),
        Stage("Policy: the untrained tiny model on the verified tasks (unseen layouts)",
              evaluate(f"hf:{tiny}?{query}&max_new_tokens=32", "tiny_before"),
              {"untrained model report": "tiny_before/report.html"}),
        Stage("Training: a short SFT on oracle episodes of those tasks (layouts 0-2)", [
            "train", "sft", "--config", str(out / "sft.yaml")], {"SFT report": "sft/report.html"}),
        Stage("Policy: the SFT model on the same tasks and unseen layouts",
              evaluate(f"hf:{model}?max_new_tokens=32", "tiny_after"),
              {"SFT model report": "tiny_after/report.html"}),
        Stage("Training: a short online GRPO run from the SFT model (step rewards, tree rollouts)", [
            "train", "grpo", "--config", str(out / "grpo.yaml")], {"GRPO report": "grpo/report.html"}),
        Stage("Policy: the SFT+GRPO model on the same tasks and unseen layouts",
              evaluate(f"hf:{out / 'grpo' / 'model'}?max_new_tokens=32", "tiny_grpo"),
              {"SFT+GRPO model report": "tiny_grpo/report.html"}),
    ]


def write_sft_config(out: Path, *, quick: bool) -> Path:
    """The demo's `cua train sft` config (a fresh run each time the demo runs)."""
    for stale in ("sft", "sft_store"):
        shutil.rmtree(out / stale, ignore_errors=True)
    config = {
        "out": str(out / "sft"), "model": {"path": str(out / "tiny"), "finetune": "full", "device": "cpu"},
        "data": {"store": str(out / "sft_store"), "prompt": TINY_PROMPT},
        "collect": {"tasks": [f"fsm:{out / 'synth_tasks.jsonl'}"], "seeds": [0, 1, 2]},
        "train": {"max_steps": 150 if quick else 400, "batch_size": 16, "learning_rate": 5e-3,
                  "warmup_steps": 15, "logging_steps": 10, "save_steps": 400, "threads": 1},
    }
    path = out / "sft.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def write_grpo_config(out: Path, *, quick: bool) -> Path:
    """The demo's `cua train grpo` config: from the SFT model, on the same verified tasks
    (layouts 0-2), evaluated before and after on the unseen layouts."""
    shutil.rmtree(out / "grpo", ignore_errors=True)
    tasks = [f"fsm:{out / 'synth_tasks.jsonl'}"]
    config = {
        "out": str(out / "grpo"), "updates": 3 if quick else 8,
        "model": {"path": str(out / "sft" / "model"), "finetune": "full", "device": "cpu"},
        "prompt": TINY_PROMPT, "tasks": tasks, "group": {"tasks": 2, "size": 4, "seeds": [0, 1, 2]},
        "reward": "step", "rollout": {"max_steps": 8, "max_new_tokens": 32},
        "loss": {"epochs": 2, "minibatch": 16, "learning_rate": 1e-4, "kl_coef": 0.02},
        "tree": {"branch_states": 1, "continuations": 2},
        "eval": {"tasks": tasks, "seed": int(EVAL_SEED), "every": 3 if quick else 4, "max_steps": 8},
        "checkpoint_every": 4, "threads": 1,
    }
    path = out / "grpo.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def run_stage(stage: Stage) -> tuple[int, float]:
    console.print(Rule(stage.title))
    console.print(f"[dim]$ cua {' '.join(stage.args)}[/dim]")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "harness.cli", *stage.args], check=False)
    return proc.returncode, time.perf_counter() - started


def before_after(out: Path) -> dict[str, tuple[str, dict]]:
    """The tiny model's evaluations that ran (label -> its folder and summary), shown side by
    side on the index page where at least two did."""
    runs = {"untrained tiny model": "tiny_before", "after a short SFT": "tiny_after",
            "after SFT + a short GRPO run": "tiny_grpo"}
    return {label: (name, json.loads((out / name / "summary.json").read_text(encoding="utf-8")))
            for label, name in runs.items() if (out / name / "summary.json").is_file()}


def write_index(out: Path, results: list[tuple[Stage, int, float]]) -> Path:
    """``index.html`` (``harness/templates/demo_index.html.jinja``) and ``stages.json``."""
    stages = [(stage, code, seconds, [(label, path) for label, path in stage.links.items()
                                      if (out / path).exists()])
              for stage, code, seconds in results]
    page = render("harness", "demo_index.html.jinja", models=before_after(out), stages=stages,
                  rate=summary_rate)
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    (out / "stages.json").write_text(json.dumps(
        [{"title": s.title, "args": s.args, "exit": c, "seconds": round(t, 2)} for s, c, t in results],
        indent=2), encoding="utf-8")
    return index

#: what the stages need beyond the core (`make demo` installs them all)
DEMO_EXTRAS = ("miniwob", "export", "train")


def demo_command(
    out: Annotated[Path, typer.Option("--out", help="where the demo writes everything")] = Path("runs/demo"),
    quick: Annotated[bool, typer.Option("--quick/--full", help="fewer episodes and a smaller budget")] = True,
) -> None:
    """Run the pipeline end to end on embedded defaults and print where its report is."""
    with cli_errors():
        check_output_dir(out, "--out")
        for extra in DEMO_EXTRAS:  # up front, not after minutes of earlier stages
            require_extra(extra, "cua demo (MiniWoB++, store exports and training stages)")
    out.mkdir(parents=True, exist_ok=True)
    write_sft_config(out, quick=quick)
    write_grpo_config(out, quick=quick)
    results = []
    for stage in demo_stages(out, quick=quick):
        code, seconds = run_stage(stage)
        results.append((stage, code, seconds))
        if code != 0:
            console.print(f"[red]stage failed ({stage.title}); stopping[/red]")
            break
    index = write_index(out, results)
    failed = [s.title for s, c, _ in results if c != 0]
    console.print(Rule("demo finished" if not failed else "demo stopped"))
    console.print(f"report: {index.resolve()}", soft_wrap=True)
    if failed:
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_command)
