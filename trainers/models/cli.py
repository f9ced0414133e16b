"""``cua model init``: write a random-init checkpoint (see ``trainers.models.checkpoint``)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from harness.cli_config import config_command
from trainers.models.checkpoint import InitReport, ModelInitConfig, init_checkpoint

console = Console()


def run_init(config: ModelInitConfig) -> None:
    """Build the tokenizer and the model, save them, and print the parameter counts."""
    with console.status(f"building the tokenizer and a {config.preset} {config.arch} model"):
        report = init_checkpoint(config)
    _print_report(report)


def _print_report(report: InitReport) -> None:
    table = Table(title=f"cua model init · {report.preset} · {report.arch}")
    for column in ("part", "parameters"):
        table.add_column(column, justify="left" if column == "part" else "right")
    counts = report.parameters
    for part, value in (("vision tower", counts.vision), ("language model", counts.language),
                        ("total", counts.total)):
        table.add_row(part, f"{value:,}")
    console.print(table)
    console.print(f"vocabulary {report.vocab_size} · a screenshot becomes at most "
                  f"{report.max_pixels} pixels · written to {report.path.resolve()}")


def register(app: typer.Typer) -> None:
    """Add `cua model init` to the CLI."""
    model_app = typer.Typer(help="Policy checkpoints: make a random-init one for CPUs.",
                            no_args_is_help=True)
    model_app.command("init")(config_command(
        ModelInitConfig, run_init, name="model init",
        doc="Write a random-init Qwen-VL checkpoint (config, safetensors weights, the project's own "
            "tokenizer, processor config, chat template) that from_pretrained loads like a hub model."))
    app.add_typer(model_app, name="model")
