"""`cua eval`: run an agent on a task suite and write results.jsonl, summary.json, report.html."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from pydantic import ConfigDict, Field, field_validator
from rich.console import Console
from rich.table import Table

from harness.agents.registry import agent_names, check_agent, make_agent
from harness.cli_config import check_output_dir, config_command, fail
from harness.env_providers import check_sandbox
from harness.errors import ConfigError
from harness.evaluation.report import write_report
from harness.evaluation.stats import format_rate
from harness.evaluation.summary import latest, write_summary
from harness.runner import RESULTS_FILE, EpisodeRunner, RunnerConfig, episode_specs, read_results
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
    from harness.env import resolve_codec

    resolve_codec(config.codec)
    check_output_dir(config.out, "--out")
    if config.sandbox is not None:
        check_sandbox(config.sandbox, config.provider,
                      {t: make_task(t).sandbox_request.kind for t in task_ids})
    if config.store is not None:
        check_output_dir(config.store, "--store")
        from harness.store.damage import verify_store

        verify_store(config.store)
    if config.agent == "oracle":
        missing = [t for t in task_ids if not task_has_oracle(make_task(t))]
        if missing:
            raise ConfigError(
                f"expected tasks with an oracle for --agent oracle, got {len(missing)} without: "
                f"{', '.join(missing[:10])}; pick tasks with one or use --agent random")
    return task_ids


def _print_table(summary: dict, failed: int, raised: int, out: Path) -> None:
    table = Table(title="cua eval")
    for column in ("task", "episodes", "success [95% CI]", "mean reward", "steps", "steps/s"):
        table.add_column(column, justify="left" if column == "task" else "right")
    for task, f in summary["per_task"].items():
        table.add_row(task, str(f["episodes"]), format_rate(f["success_rate"], f["success_ci"]), f"{f['mean_reward']:.3f}",
                      str(f["steps"]), f"{f['steps_per_second']:.2f}")
    table.add_row("[bold]all", str(summary["episodes"]),
                  format_rate(summary["success_rate"], summary["success_ci"]),
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


def run_eval(config: EvalConfig) -> None:
    """Evaluate an agent on a task suite; writes results.jsonl, summary.json and report.html."""
    task_ids = check_eval(config)
    agent = make_agent(config.agent)
    runner_config = RunnerConfig(**{k: getattr(config, k) for k in RunnerConfig.model_fields})
    specs = episode_specs(task_ids, config.episodes, config.seed)
    store = None
    if config.store is not None:
        from harness.store.store import TrajectoryStore

        store = TrajectoryStore(config.store)
    try:
        runner = EpisodeRunner(agent, runner_config, out_dir=config.out, store=store)
        asyncio.run(runner.run(specs))
    finally:
        if store is not None:
            store.close()
    out = config.out
    wanted = {s.key for s in specs}
    records = [r for r in latest(read_results(out / RESULTS_FILE)) if r.key in wanted]
    summary = write_summary(out / "summary.json", records)
    write_report(out / "report.html", summary, records,
                 title=f"cua eval · {config.suite} · {config.agent} · reward {config.reward}")
    failed = sum(1 for r in records if r.error)
    _print_table(summary, failed, sum(1 for r in records if r.agent_error), out)
    if failed:
        fail(f"{failed} episode(s) failed on infrastructure errors after retries (see 'error' in "
             f"{out / RESULTS_FILE}); rerun with --resume to retry them", code=1)


def register(app: typer.Typer) -> None:
    """Add `cua eval` to the CLI."""
    app.command("eval")(config_command(
        EvalConfig, run_eval, name="eval",
        doc="Evaluate an agent on a task suite; writes results.jsonl, summary.json and report.html.\n\n"
            f"Agents: {', '.join(agent_names())}."))
