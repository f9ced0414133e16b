"""The `cua` command line. Each area registers its own commands from its own module."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="cua",
    help="Train and evaluate GUI/web computer-use agents with step-level verifiable rewards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each module exposes `register(app: typer.Typer) -> None`.
COMMAND_MODULES = (
    "harness.evaluation.cli",  # cua eval
    "fsm_sites.cli",  # cua sites ...
    "harness.fsm_tasks_cli",  # cua tasks ...
    "harness.store.cli",  # cua store ..., cua view, cua collect
    "harness.demo",  # cua demo
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
