"""`cua eval`: run an agent on a task suite and write results.jsonl, summary.json, report.html."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from harness.agents import AGENTS, make_agent
from harness.errors import HarnessError
from harness.evaluation.report import write_report
from harness.evaluation.summary import latest, write_summary
from harness.runner import RESULTS_FILE, EpisodeRunner, RunnerConfig, episode_specs, read_results
from harness.tasks.registry import make_task, suite_task_ids, task_has_oracle

console = Console()


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code=2)


def _check(suite: str, agent: str, codec: str | None) -> list[str]:
    """Task ids for ``suite``; refuse an agent or codec that cannot work before any browser starts."""
    if agent not in AGENTS:
        _fail(f"expected --agent in {', '.join(AGENTS)}, got {agent!r}")
    try:
        task_ids = suite_task_ids(suite)
        from harness.env import resolve_codec

        resolve_codec(codec)
    except (HarnessError, ValueError, KeyError) as exc:
        _fail(str(exc))
    if agent == "oracle":
        missing = [t for t in task_ids if not task_has_oracle(make_task(t))]
        if missing:
            _fail(f"expected tasks with an oracle for --agent oracle, got {len(missing)} without: "
                  f"{', '.join(missing[:10])}; pick tasks with one or use --agent random")
    return task_ids


def _print_table(summary: dict, failed: int, raised: int, out: Path) -> None:
    table = Table(title="cua eval")
    for column in ("task", "episodes", "success", "mean reward", "steps", "steps/s"):
        table.add_column(column, justify="left" if column == "task" else "right")
    for task, f in summary["per_task"].items():
        table.add_row(task, str(f["episodes"]), f"{f['success_rate']:.1%}", f"{f['mean_reward']:.3f}",
                      str(f["steps"]), f"{f['steps_per_second']:.2f}")
    table.add_row("[bold]all", str(summary["episodes"]), f"{summary['success_rate']:.1%}",
                  f"{summary['mean_reward']:.3f}", str(summary["steps"]),
                  f"{summary['steps_per_second']:.2f}", end_section=True)
    console.print(table)
    if failed:
        console.print(f"[red]{failed} episode(s) failed on infrastructure errors after retries "
                      "(see 'error' in results.jsonl); rerun with --resume to retry them")
    if raised:
        console.print(f"[yellow]{raised} episode(s) ended when the agent raised (see 'agent_error' "
                      "in results.jsonl); they count as failures")
    console.print(f"report: {(out / 'report.html').resolve()}")


def eval_command(
    suite: Annotated[str, typer.Option("--suite", help="'miniwob' for all tasks, 'miniwob:click-button,click-link' for some")],
    agent: Annotated[str, typer.Option("--agent", help=f"one of {', '.join(AGENTS)}")] = "random",
    episodes: Annotated[int, typer.Option("--episodes", min=1, help="episodes per task")] = 1,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="episodes run at once")] = 2,
    seed: Annotated[int, typer.Option("--seed", help="episode i of each task is seeded seed+i")] = 0,
    out: Annotated[Path, typer.Option("--out", help="output folder")] = Path("runs/eval"),
    resume: Annotated[bool, typer.Option("--resume", help="skip episodes already in OUT/results.jsonl")] = False,
    max_steps: Annotated[int | None, typer.Option(
        "--max-steps", min=1,
        help="steps before truncation [default: the task's own budget (FSM: 6 x shortest path + 6), else 30]",
        show_default=False)] = None,
    codec: Annotated[str | None, typer.Option(
        "--codec", help="codec for the text actions of agents without their own: qwen, uitars, "
                        "pyautogui, json [default: json]", show_default=False)] = None,
    step_timeout: Annotated[float, typer.Option("--step-timeout", help="seconds per reset or step")] = 30.0,
    episode_timeout: Annotated[float, typer.Option("--episode-timeout", help="seconds per episode")] = 300.0,
    retries: Annotated[int, typer.Option("--retries", min=0, help="retries after infrastructure errors")] = 2,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="show a progress bar")] = True,
) -> None:
    """Evaluate an agent on a task suite; writes results.jsonl, summary.json and report.html."""
    task_ids = _check(suite, agent, codec)
    config = RunnerConfig(
        concurrency=concurrency, max_steps=max_steps, step_timeout_s=step_timeout,
        episode_timeout_s=episode_timeout, retries=retries, codec=codec, resume=resume,
        progress=progress,
    )
    specs = episode_specs(task_ids, episodes, seed)
    runner = EpisodeRunner(lambda: make_agent(agent, seed=seed), config, out_dir=out)
    asyncio.run(runner.run(specs))
    wanted = {s.key for s in specs}
    records = [r for r in latest(read_results(out / RESULTS_FILE)) if r.key in wanted]
    summary = write_summary(out / "summary.json", records)
    write_report(out / "report.html", summary, records, title=f"cua eval · {suite} · {agent}")
    failed = sum(1 for r in records if r.error)
    _print_table(summary, failed, sum(1 for r in records if r.agent_error), out)
    if failed:
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Add `cua eval` to the CLI."""
    app.command("eval")(eval_command)
