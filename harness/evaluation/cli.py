"""`cua eval`: run an agent on a task suite and write results.jsonl, summary.json, report.html."""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ConfigDict, Field, field_validator
from rich.console import Console
from rich.table import Table

from harness.agents.registry import agent_names, check_agent, make_agent
from harness.cli_config import ConfigCommand, check_output_dir, cli_errors, config_command, fail
from harness.env import resolve_codec
from harness.env_providers import check_sandbox
from harness.errors import ConfigError
from harness.evaluation.compare import PairGroup, compare_runs
from harness.evaluation.passes import evaluation_passes, run_passes
from harness.evaluation.report import write_report
from harness.evaluation.stats import format_rate
from harness.evaluation.summary import Summary, TaskFigures, latest, write_summary
from harness.runner import RESULTS_FILE, RunnerConfig, read_results
from harness.store.damage import verify_store
from harness.store.store import TrajectoryStore
from harness.tasks.registry import make_task, suite_task_ids, task_has_oracle

console = Console()


class EvalConfig(RunnerConfig):
    """Everything `cua eval` needs: which tasks, which agent, how many episodes, where to
    write; plus how episodes are run (RunnerConfig)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str = Field(description="tasks: 'miniwob' for all, 'miniwob:click-button,click-link' "
                       "for some, 'fsm:shop' ...; join several with '+'")
    agent: str = Field(default="random", description="a registered agent: random, oracle, hf:PATH, "
                       "openai:URL[#MODEL], ...")
    episodes: int = Field(default=1, ge=1, description="episodes per task")
    samples: int = Field(default=0, ge=0, description="sampled episodes per task besides those, "
                         "at --sample-temperature; sample j is seeded seed+j and indexed after "
                         "the episodes; needs an agent that samples (hf, openai)")
    sample_temperature: float = Field(default=1.0, gt=0.0, le=10.0,
                                      description="the sampling temperature of --samples")
    seed: int = Field(default=0, description="episode i of each task is seeded seed+i")
    out: Path = Field(default=Path("runs/eval"), description="output folder")
    store: Path | None = Field(default=None, description="also write every episode into this "
                               "trajectory store (created if missing)")

    @field_validator("agent")
    @classmethod
    def _registered(cls, agent: str) -> str:
        check_agent(agent)
        return agent

    @field_validator("suite")
    @classmethod
    def _known(cls, suite: str) -> str:
        suite_task_ids(suite)
        return suite


def check_eval(config: EvalConfig) -> list[str]:
    """Task ids of the suite; every mistake in the config is refused here, before any
    sandbox starts or any file is written."""
    task_ids = suite_task_ids(config.suite)
    check_agent(config.agent)
    resolve_codec(config.codec)
    check_output_dir(config.out, "--out")
    if config.sandbox is not None:
        check_sandbox(config.sandbox, config.provider,
                      {t: make_task(t).sandbox_request.kind for t in task_ids})
    if config.store is not None:
        check_output_dir(config.store, "--store")
        verify_store(config.store)
    if config.agent == "oracle":
        missing = [t for t in task_ids if not task_has_oracle(make_task(t))]
        if missing:
            raise ConfigError(
                f"expected tasks with an oracle for --agent oracle, got {len(missing)} without: "
                f"{', '.join(missing[:10])}; pick tasks with one or use --agent random")
    return task_ids


def _print_tables(summary: Summary, failed: int, raised: int, out: Path) -> None:
    _print_table(summary, "cua eval")
    if summary["sampled"] is not None:
        temperatures = ", ".join(f"{t:g}" for t in summary["sampled"]["temperatures"])
        _print_table(summary["sampled"], f"cua eval · sampled at temperature {temperatures}")
    if failed:
        console.print(f"[red]{failed} episode(s) failed on infrastructure errors after retries "
                      "(see 'error' in results.jsonl); rerun with --resume to retry them")
    if raised:
        console.print(f"[yellow]{raised} episode(s) ended when the agent raised (see 'agent_error' "
                      "in results.jsonl); they count as failures")
    console.print(f"report: {(out / 'report.html').resolve()}", soft_wrap=True)  # a path stays whole


def shared_prefix(task_ids: list[str]) -> str:
    """What every task id starts with, up to its last ``:``, ``/`` or ``#`` (``fsm:runs/x.jsonl#``),
    so a table can show the rest; empty when they share none."""
    if not task_ids:
        return ""
    common = os.path.commonprefix(task_ids)
    if len(task_ids) == 1:
        common = common[:-1]  # a lone id keeps its last part
    cut = max(common.rfind(sep) for sep in ":/#")
    return common[: cut + 1]


def _task_column(table: Table, task_ids: list[str]) -> str:
    """The task column (each row the id without the ids' shared prefix, never cut short) and
    a caption that gives the prefix once."""
    prefix = shared_prefix(task_ids)
    table.add_column("task", justify="left", overflow="fold")
    if prefix:
        table.caption = f"task ids begin with {prefix}"
    return prefix


def _print_table(summary: TaskFigures, title: str) -> None:
    table = Table(title=title)
    prefix = _task_column(table, list(summary["per_task"]))
    for column in ("episodes", "success [95% CI]", "mean reward", "steps", "steps/s"):
        table.add_column(column, justify="right")
    for task, f in summary["per_task"].items():
        table.add_row(task.removeprefix(prefix), str(f["episodes"]), format_rate(f["success_rate"], f["success_ci"]),
                      f"{f['mean_reward']:.3f}", str(f["steps"]), f"{f['steps_per_second']:.2f}")
    table.add_row("[bold]all", str(summary["episodes"]),
                  format_rate(summary["success_rate"], summary["success_ci"]),
                  f"{summary['mean_reward']:.3f}", str(summary["steps"]),
                  f"{summary['steps_per_second']:.2f}", end_section=True)
    console.print(table)


def run_eval(config: EvalConfig) -> None:
    """Evaluate an agent on a task suite; writes results.jsonl, summary.json and report.html."""
    task_ids = check_eval(config)
    runner_config = RunnerConfig(**{k: getattr(config, k) for k in RunnerConfig.model_fields})
    passes = evaluation_passes(make_agent(config.agent), task_ids, runner_config,
                               episodes=config.episodes, seed=config.seed, samples=config.samples,
                               temperature=config.sample_temperature, agent_name=config.agent)
    store = None
    if config.store is not None:
        store = TrajectoryStore(config.store)
    try:
        run_passes(passes, config.out, store)
    finally:
        if store is not None:
            store.close()
    out = config.out
    wanted = {s.key for one in passes for s in one.specs}
    records = [r for r in latest(read_results(out / RESULTS_FILE)) if r.key in wanted]
    summary = write_summary(out / "summary.json", records)
    write_report(out / "report.html", summary, records,
                 title=f"cua eval · {config.suite} · {config.agent} · reward {config.reward}")
    failed = sum(1 for r in records if r.error)
    _print_tables(summary, failed, sum(1 for r in records if r.agent_error), out)
    if failed:
        fail(f"{failed} episode(s) failed on infrastructure errors after retries (see 'error' in "
             f"{out / RESULTS_FILE}); rerun with --resume to retry them", code=1)


def _unless_subcommand(command: ConfigCommand) -> Callable[[typer.Context], None]:
    """``command`` as a group's callback: it runs when no subcommand is named (``cua eval
    --suite ...``) and steps aside for one (``cua eval compare A B``)."""

    def callback(ctx: typer.Context, **values: object) -> None:
        if ctx.invoked_subcommand is None:
            command(**values)

    params = list(inspect.signature(command).parameters.values())
    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    callback.__signature__ = inspect.Signature([context, *params])  # type: ignore[attr-defined]
    callback.__annotations__ = {"ctx": typer.Context, **command.__annotations__}
    callback.__doc__ = command.__doc__
    return callback


def register(app: typer.Typer) -> None:
    """Add `cua eval` and `cua eval compare` to the CLI."""
    group = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    group.callback(invoke_without_command=True)(_unless_subcommand(config_command(
        EvalConfig, run_eval, name="eval",
        doc="Evaluate an agent on a task suite; writes results.jsonl, summary.json and report.html.\n\n"
            f"Agents: {', '.join(agent_names())}. `cua eval compare RUN_A RUN_B` compares two runs.")))
    group.command("compare")(compare_command)
    app.add_typer(group, name="eval")


def compare_command(
    run_a: Annotated[Path, typer.Argument(help="a `cua eval` run folder (or its results.jsonl)",
                                          show_default=False)],
    run_b: Annotated[Path, typer.Argument(help="the run to compare it with", show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="print the comparison as JSON")] = False,
    resamples: Annotated[int, typer.Option(help="bootstrap resamples", min=100)] = 2000,
    seed: Annotated[int, typer.Option(help="the bootstrap's seed")] = 0,
) -> None:
    """Compare two runs episode by episode (paired by task, seed, index and temperature):
    per-task differences, exact McNemar test, 95% CIs of the difference in success rate."""
    with cli_errors():
        result = compare_runs(run_a, run_b, resamples=resamples, seed=seed)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    for group in result["groups"]:
        _print_comparison(group)
    if result["unpaired_a"] or result["unpaired_b"]:
        console.print(f"[yellow]unpaired episodes left out: {result['unpaired_a']} of RUN_A, "
                      f"{result['unpaired_b']} of RUN_B")


def _print_comparison(group: PairGroup) -> None:
    kind = "the agents' own episodes" if group["temperature"] is None \
        else f"episodes sampled at temperature {group['temperature']:g}"
    table = Table(title=f"cua eval compare · {kind} · A - B")
    prefix = _task_column(table, list(group["per_task"]))
    for column in ("pairs", "A", "B", "A - B"):
        table.add_column(column, justify="right")
    for task, row in group["per_task"].items():
        table.add_row(task.removeprefix(prefix), str(row["pairs"]), str(row["success_a"]), str(row["success_b"]),
                      f"{100 * row['difference']:+.1f} pts")
    table.add_row("[bold]all", str(group["pairs"]), format_rate(group["rate_a"], group["ci_a"]),
                  format_rate(group["rate_b"], group["ci_b"]),
                  f"{100 * group['difference']:+.1f} pts", end_section=True)
    console.print(table)
    low, high = group["difference_ci"]
    boot_low, boot_high = group["bootstrap_ci"]
    console.print(
        f"difference {100 * group['difference']:+.1f} points, 95% CI [{100 * low:+.1f}, {100 * high:+.1f}] "
        f"(paired, Newcombe); task bootstrap [{100 * boot_low:+.1f}, {100 * boot_high:+.1f}] "
        f"({group['tasks']} tasks, {group['bootstrap']['resamples']} resamples)\n"
        f"both solved {group['both']} · only A {group['only_a']} · only B {group['only_b']} · "
        f"neither {group['neither']} · exact McNemar p = {group['mcnemar_p']:.4g}")
