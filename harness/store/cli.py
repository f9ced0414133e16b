"""`cua store stats|export`, `cua view`, `cua collect` and `cua data corpus`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer
from pydantic import ConfigDict, Field
from rich.console import Console
from rich.table import Table

from harness.agents.registry import check_agent
from harness.cli_config import check_output_dir, config_command, guarded, removed_on_failure
from harness.store.collect import CollectConfig, collect, task_for
from harness.store.corpus import CorpusConfig, build_corpus
from harness.store.corpus_reexport import reexport_corpus
from harness.store.damage import verify_store
from harness.store.export import PARQUET_PURPOSE, ExportConfig, export
from harness.store.stats import JSON_KEYS, store_stats
from harness.store.store import TrajectoryStore
from harness.store.viewer import write_viewer
from sandboxes.extras import require_extra

store_app = typer.Typer(help="Inspect and export a trajectory tree store.", no_args_is_help=True)


def _open_read_only(path: Path) -> TrajectoryStore:
    return TrajectoryStore(path, read_only=True)


@store_app.command("stats")
@guarded
def stats_command(
    path: Annotated[Path, typer.Argument(help="the store directory")],
    as_json: Annotated[bool, typer.Option("--json", help="print the headline numbers as JSON")] = False,
) -> None:
    """Trees, nodes, episodes, screenshots, bytes versus flat storage, depth/branching (reads only)."""
    stats = store_stats(_open_read_only(path))
    if as_json:
        typer.echo(json.dumps({key: stats[key] for key in JSON_KEYS}))
        return
    table = Table(title=f"store {path}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in stats.items():
        if not isinstance(value, dict):
            table.add_row(key, f"{value:,}" if isinstance(value, int) else str(value))
    console = Console()
    console.print(table)
    for name in ("depth_histogram", "branching_histogram"):
        console.print(f"{name}: " + "  ".join(f"{k}:{v}" for k, v in stats[name].items()))


class ExportCommand(ExportConfig):
    """`cua store export`: the store, the format, where to write, and how rows are built."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path = Field(description="the store directory")
    format: Literal["sft", "dpo", "grpo"] = Field(description="sft, dpo or grpo")
    out: Path = Field(description="output directory")


def run_export(command: ExportCommand) -> None:
    if not command.jsonl:
        require_extra("export", PARQUET_PURPOSE)
    store = _open_read_only(command.path)
    check_output_dir(command.out, "--out")
    config = ExportConfig(**command.model_dump(include=set(ExportConfig.model_fields)))
    with removed_on_failure(command.out):
        typer.echo(str(export(store, command.format, command.out, config)))


@guarded
def view_command(
    path: Annotated[Path, typer.Argument(help="the store directory")],
    out: Annotated[Path, typer.Option("--out", help="where to write index.html and images")],
) -> None:
    """Write a static HTML viewer of the store (DIR/index.html)."""
    store = _open_read_only(path)
    check_output_dir(out, "--out")
    with removed_on_failure(out):
        typer.echo(str(write_viewer(store, out)))


def run_collect(config: CollectConfig) -> None:
    task_for(config.suite)
    check_agent(config.agent)
    check_output_dir(config.store, "--store")
    verify_store(config.store)
    typer.echo(json.dumps(collect(config)))  # a new store keeps what a failure left: episodes


def run_corpus(config: CorpusConfig) -> None:
    require_extra("export", "the corpus's Parquet splits")
    check_output_dir(config.out, "--out")
    stats = build_corpus(config) if config.source is None else reexport_corpus(config)
    summary = {"out": str(config.out), "rows": stats["rows"], "sites": stats["sites"]["total"],
               "recovery_share": stats["splits"]["train"]["recovery_share"]}
    if "reexport" in stats:  # missing source rows would make the comparison unfair: show them
        summary["reexport"] = {k: stats["reexport"][k] for k in ("source", "source_rows_missing")}
    typer.echo(json.dumps(summary))


def register(app: typer.Typer) -> None:
    store_app.command("export")(config_command(
        ExportCommand, run_export, name="store export", positional=("path",),
        doc="Write SFT steps, DPO branch pairs or GRPO step groups (prompts from the one prompt "
            "builder, verdict columns included)."))
    app.add_typer(store_app, name="store")
    app.command("view")(view_command)
    app.command("collect")(config_command(
        CollectConfig, run_collect, name="collect",
        doc="Grow a trajectory tree on one task with any agent (resumable: rerun to spend more budget)."))
    data_app = typer.Typer(help="Build training data at scale.", no_args_is_help=True)
    data_app.command("corpus")(config_command(
        CorpusConfig, run_corpus, name="data corpus", positional=("out",),
        doc="SFT data from many sites (the curated ones and generated ones): tasks verified by "
            "the oracle in the browser, oracle trees with wrong element steps (on-path, recovery "
            "and long-history steps, with verdicts), split by site, deduplicated by (prompt, "
            "target); resumable (finished sites are skipped). Writes OUT/train/sft.parquet, "
            "OUT/heldout/sft.parquet and OUT/stats.json. With --source CORPUS, no site is built: "
            "that corpus's stores are exported again in this prompt (the same rows and held-out "
            "sites; no browser). "
            "Example: cua data corpus runs/corpus --generated 40 --seed 0; "
            "cua data corpus runs/corpus-screenshot --source runs/corpus "
            "--set prompt.observation=screenshot+elements"))
    app.add_typer(data_app, name="data")
