"""The `cua` command line. Each area registers its own commands from its own module.

Packages that `harness` may not import (``trainers``, or a user's own) add commands through
an entry point in the group ``cua.commands`` whose value is ``module:register``; the
function takes the typer app, as the modules below do.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

import typer

app = typer.Typer(
    name="cua",
    help="Train and evaluate GUI/web computer-use agents with step-level verifiable rewards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

COMMAND_GROUP = "cua.commands"
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
for _entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
    _entry.load()(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
