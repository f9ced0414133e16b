"""`cua store stats|export`, `cua view` and `cua collect`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

store_app = typer.Typer(help="Inspect and export a trajectory tree store.", no_args_is_help=True)


def _open(path: Path):
    from harness.store.store import DB_NAME, TrajectoryStore

    if not (path / DB_NAME).exists():
        raise typer.BadParameter(f"expected a store directory containing {DB_NAME}, got {path}; "
                                 "collect into it first with `cua collect --store PATH`")
    return TrajectoryStore(path)


@store_app.command("stats")
def stats_command(
    path: Annotated[Path, typer.Argument(help="the store directory")],
    as_json: Annotated[bool, typer.Option("--json", help="print the headline numbers as JSON")] = False,
) -> None:
    """Trees, nodes, episodes, screenshots, bytes versus flat storage, depth/branching."""
    from harness.store.stats import JSON_KEYS, store_stats

    stats = store_stats(_open(path))
    if as_json:
        typer.echo(json.dumps({key: stats[key] for key in JSON_KEYS}))
        return
    from rich.console import Console
    from rich.table import Table

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


@store_app.command("export")
def export_command(
    path: Annotated[Path, typer.Argument(help="the store directory")],
    fmt: Annotated[str, typer.Option("--format", help="sft, dpo or grpo")],
    out: Annotated[Path, typer.Option("--out", help="output directory")],
    codec: Annotated[str, typer.Option(help="action codec of the target text: a harness.codecs name or 'canonical'")] = "qwen",
    history_images: Annotated[int, typer.Option(help="last k screenshots per example")] = 3,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="JSONL + image files instead of Parquet")] = False,
) -> None:
    """Write SFT paths, DPO branch pairs or GRPO step groups."""
    from harness.store.export import ExportConfig, export

    target = export(_open(path), fmt, out, ExportConfig(codec=codec, history_images=history_images,
                                                       jsonl=jsonl))  # type: ignore[arg-type]
    typer.echo(str(target))


def view_command(
    path: Annotated[Path, typer.Argument(help="the store directory")],
    out: Annotated[Path, typer.Option("--out", help="where to write index.html and images")],
) -> None:
    """Write a static HTML viewer of the store (DIR/index.html)."""
    from harness.store.viewer import write_viewer

    typer.echo(str(write_viewer(_open(path), out)))


def collect_command(
    suite: Annotated[str, typer.Option("--suite", help="fsm:SITE")],
    store: Annotated[Path, typer.Option("--store", help="the store directory")],
    budget: Annotated[int, typer.Option("--budget", help="environment steps to spend")] = 200,
    seconds: Annotated[float | None, typer.Option("--seconds", help="wall-time budget")] = None,
    agent: Annotated[str, typer.Option("--agent", help="oracle or random")] = "random",
    explore: Annotated[str, typer.Option("--explore", help="tree or independent")] = "tree",
    restore: Annotated[str, typer.Option(help="auto, jump or replay")] = "auto",
    candidates: Annotated[int, typer.Option(help="candidate actions sampled per expansion")] = 3,
    max_depth: Annotated[int, typer.Option(help="longest branch, in steps")] = 12,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    episodes: Annotated[int | None, typer.Option("--episodes", help="stop after N episodes")] = None,
) -> None:
    """Grow a trajectory tree on an FSM site (resumable: rerun to spend more budget)."""
    from pydantic import ValidationError

    from harness.store.collect import CollectConfig, collect

    try:
        config = CollectConfig(suite=suite, store=store, budget=budget, seconds=seconds, agent=agent,
                               explore=explore, candidates=candidates, max_depth=max_depth,
                               seed=seed, restore=restore, max_episodes=episodes)
    except ValidationError as exc:
        problems = "; ".join(f"--{'.'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']} "
                             f"(got {e.get('input')!r})" for e in exc.errors(include_url=False))
        raise typer.BadParameter(problems) from None
    report = collect(config)
    typer.echo(json.dumps(report))


def register(app: typer.Typer) -> None:
    app.add_typer(store_app, name="store")
    app.command("view")(view_command)
    app.command("collect")(collect_command)
